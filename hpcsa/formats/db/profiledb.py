"""``profile.db`` v4.0: performance values arranged by profile (thread, GPU stream, summary).

Reading (:class:`ProfileDB`) parses the header, the profile infos and every
identifier tuple eagerly (vectorized); one profile's values are read only when
asked for (:meth:`ProfileDB.profile`), as a :class:`ProfileValues`.

Writing is streamed (:class:`ProfileDBWriter`): the header, profile-info and
identifier-tuple area is reserved up front, then profile blobs are placed one at
a time, at offsets taken from an internal counter or chosen by the caller (for
workers writing the same file), then the summary profile, and the footer last.
Profile 0 is always the canonical summary profile; its metric ids are
statMetricIds, every other profile's are propMetricIds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO, ClassVar

import numpy as np

from hpcsa.core.binfmt import align, field_names
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.core.fileio import pwrite_all
from hpcsa.core.ragged import Ragged
from hpcsa.formats.db import dbformat as dbf

TAG = b"prof"
SECTIONS = ("ProfileInfos", "IdTuples")
HEADER_SIZE = 0x10 + 16 * len(SECTIONS)

PROFILE_INFOS_HDR_FIELDS = [("pProfiles", 0x00, "u8"), ("nProfiles", 0x08, "u4"), ("szProfile", 0x0C, "u1")]
PROFILE_INFO_FIELDS = [("nValues", 0x00, "u8"), ("pValues", 0x08, "u8"), ("nCtxs", 0x10, "u4"),
                       ("pCtxIndices", 0x18, "u8"), ("pIdTuple", 0x20, "u8"), ("flags", 0x28, "u4")]
VALUE_FIELDS = [("metricId", 0x00, "u2"), ("value", 0x02, "f8")]  # {Val}: unaligned f64
CTX_INDEX_FIELDS = [("ctxId", 0x00, "u4"), ("startIndex", 0x04, "u8")]  # {Idx}: unaligned u64
ID_TUPLE_HDR_FIELDS = [("nIds", 0x00, "u2")]
IDENTIFIER_FIELDS = [("kind", 0x00, "u1"), ("flags", 0x02, "u2"), ("logicalId", 0x04, "u4"),
                     ("physicalId", 0x08, "u8")]

SZ_PROFILE_INFOS_HDR, SZ_PROFILE_INFO = 0x0D, 0x30
SZ_VALUE, SZ_CTX_INDEX, SZ_ID_TUPLE_HDR, SZ_IDENTIFIER = 0x0A, 0x0C, 0x08, 0x10

PROFILE_INFOS_HDR = dbf.record_dtype(PROFILE_INFOS_HDR_FIELDS, SZ_PROFILE_INFOS_HDR)
PROFILE_INFO = dbf.record_dtype(PROFILE_INFO_FIELDS, SZ_PROFILE_INFO)
VALUE = dbf.record_dtype(VALUE_FIELDS, SZ_VALUE)
CTX_INDEX = dbf.record_dtype(CTX_INDEX_FIELDS, SZ_CTX_INDEX)
IDENTIFIER = dbf.record_dtype(IDENTIFIER_FIELDS, SZ_IDENTIFIER)

#: The profile-info size of the early-2022 development snapshots that already said "4.0".
PRE_RELEASE_PROFILE_INFO_SIZE = 40

IS_SUMMARY = 0x1
IS_PHYSICAL = 0x1
PROFILE_INFOS_AT = HEADER_SIZE
PROFILES_AT = align(PROFILE_INFOS_AT + SZ_PROFILE_INFOS_HDR, 8)


@dataclass
class ProfileValues(dbf.SparseRuns):
    """One profile's non-zero values: contexts sorted by id, values sorted by metric within each."""

    ctx_ids: np.ndarray  # uint32 [nCtxs]
    starts: np.ndarray  # int64 [nCtxs], index of each context's first value
    metric_ids: np.ndarray  # uint16 [nValues]
    values: np.ndarray  # float64 [nValues]
    KEYS: ClassVar[str] = "ctx_ids"  # get(ctx_id) -> {metric id: value}
    INNER: ClassVar[str] = "metric_ids"

    def value_ctx_ids(self) -> np.ndarray:
        """The context id of every value (aligned with ``metric_ids`` and ``values``)."""
        return self.value_keys()

    @classmethod
    def empty(cls) -> ProfileValues:
        return cls(np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.uint16),
                   np.zeros(0, np.float64))

    @classmethod
    def from_triples(cls, ctx_ids: np.ndarray, metric_ids: np.ndarray, values: np.ndarray) -> ProfileValues:
        """Sort (context, metric, value) triples into the on-disk order; zeros are dropped (absent).

        Two values for the same (context, metric) are a caller error (ValueError).
        """
        ctx = np.asarray(ctx_ids, np.uint32)
        met = np.asarray(metric_ids, np.uint16)
        val = np.asarray(values, np.float64)
        keep = val != 0
        ctx, met, val = ctx[keep], met[keep], val[keep]
        key = (ctx.astype(np.uint64) << np.uint64(16)) | met.astype(np.uint64)
        order = np.argsort(key, kind="stable")
        key, ctx, met, val = key[order], ctx[order], met[order], val[order]
        if len(key) > 1 and (key[1:] == key[:-1]).any():
            dup = int(np.flatnonzero(key[1:] == key[:-1])[0])
            raise ValueError(f"two values for context {int(ctx[dup])}, metric {int(met[dup])}")
        first = np.r_[True, ctx[1:] != ctx[:-1]] if len(ctx) else np.zeros(0, bool)
        starts = np.flatnonzero(first)
        return cls(ctx[starts], starts.astype(np.int64), met, val)


# -- identifier tuples ---------------------------------------------------------------------------------


def id_tuple(items: Sequence[tuple[int, int, int, int]]) -> np.ndarray:
    """An identifier tuple from (kind, flags, logical id, physical id) items."""
    arr = np.zeros(len(items), IDENTIFIER)
    for i, (kind, flags, logical, physical) in enumerate(items):
        arr[i] = (kind, flags, logical, physical)
    return arr


def id_tuple_text(ids: np.ndarray | None, names: Sequence[str]) -> str:
    """``NODE 0 [0x11ac0300] / CORE 0 / THREAD 0``: physical ids in brackets where they matter."""
    if ids is None:
        return "summary"
    parts = []
    for kind, flags, logical, physical in ids[["kind", "flags", "logicalId", "physicalId"]].tolist():
        name = names[kind] if kind < len(names) else f"KIND{kind}"
        parts.append(f"{name} {logical} [{physical:#x}]" if flags & IS_PHYSICAL else f"{name} {logical}")
    return " / ".join(parts)


# -- reading -------------------------------------------------------------------------------------------


class ProfileDB(dbf.DbReader):
    """An open profile.db: infos and identifier tuples in memory, values read per profile on request."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path, TAG, SECTIONS)
        blob = self.blob
        hdr = self.section_header(0, PROFILE_INFOS_HDR, SZ_PROFILE_INFOS_HDR, "Profile Info")
        if int(hdr["szProfile"]) == PRE_RELEASE_PROFILE_INFO_SIZE:
            raise UnsupportedError(blob.path, "pre-release profile.db layout: it says version 4.0 but its "
                                   "profile infos are 40 bytes (released 4.0: 48); it was written by an "
                                   "HPCToolkit development snapshot from before format 4.0 was final; "
                                   "re-run a released hpcprof on the measurements")
        infos = self.section_array(0, hdr, PROFILE_INFO_FIELDS, SZ_PROFILE_INFO,
                                   ("szProfile", "pProfiles", "nProfiles"), "profile info", "Profile Info")
        self.n_values = infos["nValues"].astype(np.int64)
        self.p_values = infos["pValues"].astype(np.int64)
        self.n_ctxs = infos["nCtxs"].astype(np.int64)
        self.p_ctx_indices = infos["pCtxIndices"].astype(np.int64)
        self.flags = infos["flags"].astype(np.uint32)
        self._read_id_tuples(infos["pIdTuple"].astype(np.int64))

    def __len__(self) -> int:
        return len(self.flags)

    def _read_id_tuples(self, p_tuple: np.ndarray) -> None:
        blob = self.blob
        sz, lo = self.header.sections[1]
        hi = lo + sz
        has = p_tuple != 0
        bad = has & ((p_tuple < lo) | (p_tuple + SZ_ID_TUPLE_HDR > hi) | (p_tuple % 8 != 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise blob.fail(f"profile {i}'s identifier tuple pointer {int(p_tuple[i]):#x} lies outside the "
                            f"Identifier Tuple section [{lo:#x}, {hi:#x})")
        buf = np.frombuffer(blob.data, np.uint8)
        at = p_tuple[has]
        n_ids = np.zeros(len(p_tuple), np.int64)
        if len(at):
            n_ids[has] = dbf.gather_records(buf, at, np.dtype("<u2"))
        end = p_tuple + SZ_ID_TUPLE_HDR + SZ_IDENTIFIER * n_ids
        over = has & (end > hi)
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise blob.fail(f"profile {i}'s identifier tuple ({int(n_ids[i])} ids) runs past the end of the "
                            f"Identifier Tuple section")
        self.id_offsets = np.zeros(len(p_tuple) + 1, np.int64)
        np.cumsum(n_ids, out=self.id_offsets[1:])
        total = int(self.id_offsets[-1])
        owner = np.repeat(np.arange(len(p_tuple)), n_ids)
        k = np.arange(total) - self.id_offsets[owner]
        pos = p_tuple[owner] + SZ_ID_TUPLE_HDR + SZ_IDENTIFIER * k
        self.ids = dbf.gather_records(buf, pos, IDENTIFIER)
        self.has_id_tuple = has

    def is_summary(self, index: int) -> bool:
        return bool(self.flags[index] & IS_SUMMARY)

    def id_tuple(self, index: int) -> np.ndarray | None:
        """Profile ``index``'s identifier tuple (IDENTIFIER records), or None (the summary has none)."""
        if not self.has_id_tuple[index]:
            return None
        return self.ids[self.id_offsets[index]:self.id_offsets[index + 1]]

    def _check_block(self, index: int) -> tuple[int, int, int, int]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        nv, pv = int(self.n_values[index]), int(self.p_values[index])
        nc, pc = int(self.n_ctxs[index]), int(self.p_ctx_indices[index])
        limit = len(self.blob) - dbf.FOOTER_SIZE
        if nv and (pv < HEADER_SIZE or pv + nv * SZ_VALUE > limit):
            raise self.blob.fail(f"profile {index}'s {nv} values at {pv:#x} lie outside the file")
        if nc and (pc < HEADER_SIZE or pc + nc * SZ_CTX_INDEX > limit):
            raise self.blob.fail(f"profile {index}'s {nc} context indices at {pc:#x} lie outside the file")
        return nv, pv, nc, pc

    def ctx_index(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """(context ids, start indices) of one profile, without its values (for the cct.db transpose)."""
        nv, _, nc, pc = self._check_block(index)
        idx = self.blob.array(CTX_INDEX, pc, nc, f"profile {index} context indices")
        ctx = idx["ctxId"].astype(np.uint32)
        starts = idx["startIndex"].astype(np.int64)
        if nc and (starts[0] != 0 or (np.diff(starts) < 0).any() or starts[-1] > nv):
            raise self.blob.fail(f"profile {index}'s context index is not an increasing list of starts "
                                 f"within its {nv} values")
        if nc > 1 and (np.diff(ctx.astype(np.int64)) <= 0).any():
            raise self.blob.fail(f"profile {index}'s contexts are not sorted by id")
        return ctx, starts

    def value_slice(self, index: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(metric ids, values) of values ``lo..hi`` of one profile."""
        nv, pv, _, _ = self._check_block(index)
        vals = self.blob.array(VALUE, pv + lo * SZ_VALUE, hi - lo, f"profile {index} values")
        return vals["metricId"].astype(np.uint16), vals["value"].astype(np.float64)

    def profile(self, index: int) -> ProfileValues:
        """All values of profile ``index`` (0 is the summary profile)."""
        nv = int(self.n_values[index]) if 0 <= index < len(self) else 0
        ctx, starts = self.ctx_index(index)
        metric, value = self.value_slice(index, 0, nv)
        return ProfileValues(ctx, starts, metric, value)

    def summary(self) -> ProfileValues:
        return self.profile(0)

    def profiles(self) -> Iterator[tuple[int, ProfileValues]]:
        for i in range(len(self)):
            yield i, self.profile(i)


def read_profiledb(path: str | os.PathLike[str]) -> ProfileDB:
    return ProfileDB(path)


def ctx_indices_at(n_values: Any) -> Any:
    """Where a blob's context index begins, from the blob's start: after its values, padded to 4 bytes (one
    count or an array of them)."""
    return align(n_values * SZ_VALUE, 4)


# -- writing -------------------------------------------------------------------------------------------


@dataclass
class ProfileBlob:
    """One profile's values encoded for the file: {Val}[nValues], padding to 4, {Idx}[nCtxs].

    The bytes hold no pointers, so a blob can be encoded anywhere (another
    process) and placed at any 4-aligned offset; :meth:`info` gives the
    profile-info fields for that offset.
    """

    data: bytes
    n_values: int
    n_ctxs: int

    @property
    def ctx_indices_at(self) -> int:
        return int(ctx_indices_at(self.n_values))

    @property
    def size(self) -> int:
        return len(self.data)

    @classmethod
    def encode(cls, values: ProfileValues) -> ProfileBlob:
        nv, nc = len(values.values), len(values.ctx_ids)
        vals = np.zeros(nv, VALUE)
        vals["metricId"] = values.metric_ids
        vals["value"] = values.values
        idx = np.zeros(nc, CTX_INDEX)
        idx["ctxId"] = values.ctx_ids
        idx["startIndex"] = values.starts
        pad = align(nv * SZ_VALUE, 4) - nv * SZ_VALUE
        return cls(vals.tobytes() + bytes(pad) + idx.tobytes(), nv, nc)

    def info(self, offset: int) -> tuple[int, int, int, int]:
        """(nValues, pValues, nCtxs, pCtxIndices) for the blob placed at ``offset``."""
        return self.n_values, offset, self.n_ctxs, offset + self.ctx_indices_at


def write_blob_at(fd: int, offset: int, blob: ProfileBlob) -> None:
    """Place an encoded blob in an open (partial) profile.db; safe from several processes."""
    if offset % 4:
        raise ValueError(f"profile blobs must start on a 4-byte boundary, not {offset:#x}")
    pwrite_all(fd, blob.data, offset)


def layout_id_tuples(lengths: np.ndarray) -> tuple[int, int, np.ndarray]:
    """(start of the Identifier Tuple section, its size, pointer of each tuple) for the thread profiles'
    tuples of these lengths (the summary, profile 0, has none)."""
    start = id_tuples_at(len(lengths))
    before = np.cumsum(lengths, dtype=np.int64) - lengths  # identifiers of the tuples before each
    ptrs = id_tuple_pointers(start, 0, before)
    return start, id_tuples_size(len(lengths), int(np.sum(lengths))), ptrs


def id_tuples_at(n_threads: int) -> int:
    """Where the Identifier Tuple section starts: after the infos of the summary and ``n_threads`` profiles."""
    return align(PROFILES_AT + SZ_PROFILE_INFO * (n_threads + 1), 8)


def id_tuples_size(n_threads: int, n_identifiers: int) -> int:
    return SZ_ID_TUPLE_HDR * n_threads + SZ_IDENTIFIER * n_identifiers


def id_tuple_pointers(start: int, first: int, before: np.ndarray) -> np.ndarray:
    """Pointers of the tuples ``first``, ``first + 1``, ... in a section at ``start``, ``before`` giving the
    identifiers of all the tuples before each."""
    return start + SZ_ID_TUPLE_HDR * np.arange(first, first + len(before), dtype=np.int64) + SZ_IDENTIFIER * before


def id_tuple_rows(id_tuples: Ragged | Sequence[np.ndarray | Sequence[tuple]]) -> Ragged:
    """Identifier tuples as one array of IDENTIFIER rows (fields copied by name, padding zero) and offsets."""
    if not isinstance(id_tuples, Ragged):
        tuples = [t if isinstance(t, np.ndarray) else id_tuple(t) for t in id_tuples]
        rows = np.zeros(sum(len(t) for t in tuples), IDENTIFIER)
        for name in field_names(IDENTIFIER):
            rows[name] = np.concatenate([t[name] for t in tuples]) if tuples else []
        return Ragged.from_lengths(rows, [len(t) for t in tuples])
    return Ragged(identifier_rows(id_tuples.rows), id_tuples.offsets)


def identifier_rows(rows: np.ndarray) -> np.ndarray:
    """Rows with IDENTIFIER's fields (of any widths that hold their values) as IDENTIFIER records, fields
    copied by name, padding zero; IDENTIFIER rows themselves as they are (not copied)."""
    if rows.dtype == IDENTIFIER:
        return rows
    out = np.zeros(len(rows), IDENTIFIER)
    for name in field_names(IDENTIFIER):
        out[name] = rows[name]
    return out


#: Bytes of zeros written at once to reserve profile.db's metadata area.
RESERVE_CHUNK = 1 << 20


class ProfileDBWriter(dbf.StreamedWriter):
    """Stream a profile.db: reserve the metadata area, place profile blobs, then summary and footer.

    ``id_tuples[i]`` is the identifier tuple of profile ``i + 1`` (profile 0 is
    the summary). Use as a context manager; the file appears under ``path`` only
    when the block completes. Blobs go where :meth:`allocate` says (an internal
    counter) unless the caller gives an offset; workers can open :attr:`.temp_path`
    and place blobs with :func:`write_blob_at`, then the owner calls
    :meth:`record` with what they placed.
    """

    def __init__(self, path: str | os.PathLike[str], id_tuples: Ragged | Sequence[np.ndarray | Sequence[tuple]],
                 *, summary_flags: int = IS_SUMMARY, flags: Sequence[int] | None = None) -> None:
        super().__init__(path)
        self.tuples = id_tuple_rows(id_tuples)
        n = len(self.tuples) + 1
        self.infos = np.zeros(n, PROFILE_INFO)
        self.infos["flags"][0] = summary_flags
        if flags is not None:
            self.infos["flags"][1:] = flags
        self.ids_at, self.ids_size, ptrs = layout_id_tuples(self.tuples.lengths)
        self.infos["pIdTuple"][1:] = ptrs
        self.data_start = self.ids_at + self.ids_size
        self._next = self.data_start
        self._end = self.data_start
        self._written = np.zeros(n, bool)

    def _start(self, fh: BinaryIO) -> None:
        # reserved: header, profile infos, identifier tuples (zeros, a MiB at a time: about 100 bytes a
        # profile, not all in memory at once)
        zeros = bytes(min(self.data_start, RESERVE_CHUNK))
        for at in range(0, self.data_start, RESERVE_CHUNK):
            fh.write(zeros[:min(RESERVE_CHUNK, self.data_start - at)])
        fh.flush()

    # -- placing blobs --

    def allocate(self, size: int) -> int:
        """A 4-aligned offset for ``size`` bytes from the internal counter."""
        at = self._next
        self._next = align(at + size, 4)
        self._end = max(self._end, self._next)
        return at

    def allocate_many(self, sizes: np.ndarray) -> np.ndarray:
        """4-aligned offsets for blobs of ``sizes`` bytes placed one after the other (as :meth:`allocate`), with
        one temporary as long as the blobs beside the result (a quarter of a million profiles' blobs are
        placed at once)."""
        padded = align(np.asarray(sizes, np.int64), 4)
        offsets = np.empty(len(padded), np.int64)
        if len(padded):
            offsets[0] = 0
            np.cumsum(padded[:-1], out=offsets[1:])
            offsets += self._next
            self._next = int(offsets[-1] + padded[-1])
            self._end = max(self._end, self._next)
        return offsets

    def record_many(self, indices: np.ndarray, n_values: np.ndarray, n_ctxs: np.ndarray, offsets: np.ndarray,
                    sizes: np.ndarray) -> None:
        """:meth:`record` for many blobs at once (placed by :meth:`allocate_many` and copied by the caller)."""
        idx = np.asarray(indices, np.int64)
        offsets = np.asarray(offsets, np.int64)
        outside = (idx < 0) | (idx >= len(self.infos))
        if outside.any():
            raise IndexError(f"profile index {int(idx[outside][0])} outside 0..{len(self.infos) - 1}")
        again = self._written[idx].copy()
        if len(idx) > 1:  # a profile twice among these
            order = np.argsort(idx, kind="stable")
            again[order[1:]] |= idx[order[1:]] == idx[order[:-1]]
        if again.any():
            raise ValueError(f"profile {int(idx[again][0])} was already written")
        low = offsets < self.data_start
        if low.any():
            raise ValueError(f"offset {int(offsets[low][0]):#x} lies in the reserved area (data starts at "
                             f"{self.data_start:#x})")
        nv = np.asarray(n_values, np.int64)
        self.infos["nValues"][idx] = nv
        self.infos["pValues"][idx] = offsets
        self.infos["nCtxs"][idx] = n_ctxs
        self.infos["pCtxIndices"][idx] = offsets + ctx_indices_at(nv)
        self._written[idx] = True
        if len(idx):
            self._end = max(self._end, int(np.max(align(offsets + np.asarray(sizes, np.int64), 4))))

    def record(self, index: int, blob: ProfileBlob, offset: int) -> None:
        """Note that profile ``index``'s blob now lies at ``offset`` (placed here or by a worker). One blob
        at a time in plain Python (:meth:`record_many`'s arrays cost ten times as much for one)."""
        if not 0 <= index < len(self.infos):
            raise IndexError(f"profile index {index} outside 0..{len(self.infos) - 1}")
        if self._written[index]:
            raise ValueError(f"profile {index} was already written")
        if offset < self.data_start:
            raise ValueError(f"offset {offset:#x} lies in the reserved area (data starts at {self.data_start:#x})")
        nv, pv, nc, pc = blob.info(offset)
        for name, v in zip(("nValues", "pValues", "nCtxs", "pCtxIndices"), (nv, pv, nc, pc), strict=True):
            self.infos[name][index] = v
        self._written[index] = True
        self._end = max(self._end, align(offset + blob.size, 4))

    def write_profile(self, index: int, values: ProfileValues | ProfileBlob, offset: int | None = None) -> int:
        """Encode (if needed) and place one profile's values; returns the offset used."""
        blob = values if isinstance(values, ProfileBlob) else ProfileBlob.encode(values)
        if offset is None:
            offset = self.allocate(blob.size)
        write_blob_at(self.fileno, offset, blob)
        self.record(index, blob, offset)
        return offset

    def write_summary(self, values: ProfileValues | ProfileBlob) -> int:
        return self.write_profile(0, values)

    def _finish(self) -> None:
        assert self._fh is not None
        fh = self._fh
        # Profiles that never got data: empty blocks pointing at the end of the data.
        empty = ~self._written
        self.infos["pValues"][empty] = self._end
        self.infos["pCtxIndices"][empty] = self._end
        # The metadata area [0, data_start) written a section at a time, each from its own array, the gaps
        # with zeros (the same bytes): assembled in one buffer and copied, some 120 bytes per profile were in
        # memory three times at once (hpcsa prof at 65,536 profiles: 10 MiB of its last step's 59).
        infos_end = PROFILES_AT + self.infos.nbytes
        ids_end = self.ids_at + self.ids_size
        if infos_end > self.ids_at or ids_end > self.data_start:
            raise ValueError("profile.db's metadata sections overlap")
        fd = fh.fileno()
        self._write_head(fd, len(self.infos))
        pwrite_all(fd, self.infos.view(np.uint8).data, PROFILES_AT)
        pwrite_all(fd, bytes(self.ids_at - infos_end), infos_end)
        self._write_id_tuples(fd)
        pwrite_all(fd, bytes(self.data_start - ids_end), ids_end)
        self._write_footer()

    def _write_head(self, fd: int, n_profiles: int) -> None:
        """The file header and the Profile Info section's header, for ``n_profiles`` profile infos (the
        bytes before :data:`PROFILES_AT`)."""
        infos_hdr = np.zeros(1, PROFILE_INFOS_HDR)
        infos_hdr[0] = (PROFILES_AT, n_profiles, SZ_PROFILE_INFO)
        infos_size = PROFILES_AT - PROFILE_INFOS_AT + SZ_PROFILE_INFO * n_profiles
        header = dbf.encode_header(TAG, [(infos_size, PROFILE_INFOS_AT), (self.ids_size, self.ids_at)])
        if len(header) > PROFILE_INFOS_AT:
            raise ValueError("profile.db's metadata sections overlap")
        prefix = bytearray(PROFILES_AT)
        prefix[:len(header)] = header
        prefix[PROFILE_INFOS_AT:PROFILE_INFOS_AT + SZ_PROFILE_INFOS_HDR] = infos_hdr.tobytes()
        pwrite_all(fd, memoryview(prefix), 0)

    def _write_footer(self) -> None:
        """The footer after the last blob, the file cut there."""
        assert self._fh is not None
        os.pwrite(self._fh.fileno(), dbf.footer(TAG), self._end)
        self._fh.truncate(self._end + dbf.FOOTER_SIZE)
        self._fh.flush()

    def _write_id_tuples(self, fd: int) -> None:
        """Write the Identifier Tuple section at :attr:`ids_at` (its :attr:`ids_size` bytes)."""
        ids = self._id_tuple_section()
        if len(ids) != self.ids_size:
            raise ValueError("profile.db's identifier tuples do not fill their section")
        pwrite_all(fd, ids.data, self.ids_at)

    def _id_tuple_section(self) -> np.ndarray:
        """The Identifier Tuple section (uint8): per tuple its header (nIds) and its identifiers, laid out at
        once."""
        lengths = self.tuples.lengths
        n = len(lengths)
        area = np.zeros(self.ids_size, np.uint8)
        at = (self.infos["pIdTuple"][1:].astype(np.int64) - self.ids_at)
        head = np.zeros(n, dbf.record_dtype(ID_TUPLE_HDR_FIELDS, SZ_ID_TUPLE_HDR))
        head["nIds"] = lengths
        area[at[:, None] + np.arange(SZ_ID_TUPLE_HDR)] = head.view(np.uint8).reshape(n, SZ_ID_TUPLE_HDR)
        owner = np.repeat(np.arange(n), lengths)
        k = np.arange(len(self.tuples.rows)) - self.tuples.offsets[owner]
        pos = at[owner] + SZ_ID_TUPLE_HDR + SZ_IDENTIFIER * k
        area[pos[:, None] + np.arange(SZ_IDENTIFIER)] = self.tuples.rows.view(np.uint8).reshape(-1, SZ_IDENTIFIER)
        return area


def write_profiledb(path: str | os.PathLike[str], source: ProfileDB) -> None:
    """Copy every profile of an open profile.db (thread profiles first, summary last, as hpcprof does)."""
    tuples: list[np.ndarray] = []
    for i in range(1, len(source)):
        ids = source.id_tuple(i)
        if ids is None:
            raise FormatError(source.path, "a non-summary profile has no identifier tuple")
        tuples.append(ids)
    with ProfileDBWriter(path, tuples, summary_flags=int(source.flags[0]) if len(source) else IS_SUMMARY,
                         flags=source.flags[1:].tolist()) as w:
        for i in range(1, len(source)):
            w.write_profile(i, source.profile(i))
        if len(source):
            w.write_summary(source.profile(0))
