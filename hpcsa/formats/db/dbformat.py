"""What every HPCToolkit v4 ``*.db`` file shares: the file header, the version rules, the footer.

Each file starts with ``HPCTOOLKIT``, a 4-byte format tag, a major and a minor
version, then (size, pointer) pairs for its sections; it ends with an 8-byte
footer that the writer puts last, so a missing footer means the file was not
completely written. All integers are little-endian.

Readers use the stored ``sz*`` strides of every "extendable" record
(:func:`stride_dtype`), which is what lets them accept newer minor versions; a
file with a newer minor version is read with a note saying so, a different
major version is refused.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence
from types import TracebackType
from typing import BinaryIO, ClassVar, Self

import numpy as np

from hpcsa.core.arrays import as_void, byte_strided, gapless, records_at
from hpcsa.core.binfmt import Blob, Field, layout
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.core.outputs import atomic_file

MAGIC = b"HPCTOOLKIT"
MAJOR_VERSION = 4
MINOR_VERSION = 0
ENDIAN = "<"

#: format tag -> (conventional file name, footer)
FORMATS: dict[bytes, tuple[str, bytes]] = {
    b"meta": ("meta.db", b"_meta.db"),
    b"prof": ("profile.db", b"_prof.db"),
    b"ctxt": ("cct.db", b"__ctx.db"),
    b"trce": ("trace.db", b"trace.db"),
}
FOOTER_SIZE = 8

FILE_HEADER = layout(ENDIAN, 16, [("magic", 0, "S10"), ("format", 10, "S4"), ("major", 14, "u1"),
                                  ("minor", 15, "u1")])
SECTION = layout(ENDIAN, 16, [("size", 0, "u8"), ("ptr", 8, "u8")])


@functools.cache
def _dtype(fields: tuple[Field, ...], size: int) -> np.dtype:
    return layout(ENDIAN, size, fields)


def record_dtype(fields: Sequence[Field], size: int) -> np.dtype:
    """The layout of a v4.0 record (``fields``) with its on-disk ``size``."""
    return _dtype(tuple(fields), size)


def stride_dtype(blob: Blob, fields: Sequence[Field], base_size: int, stored_size: int, what: str) -> np.dtype:
    """The dtype to read an array whose element size is stored in the file (``sz*`` fields).

    A larger stored size (a newer minor version added fields at the end) is read
    with the v4.0 fields at their v4.0 offsets; a smaller one cannot hold them.
    """
    if stored_size < base_size:
        raise blob.fail(f"{what} records are {stored_size} bytes, smaller than the {base_size} bytes of "
                        f"format version 4.0; the file is corrupt")
    return record_dtype(fields, stored_size)


@dataclass(frozen=True)
class DbHeader:
    """The common header of one ``*.db`` file, checked."""

    format: str
    major: int
    minor: int
    sections: tuple[tuple[int, int], ...]  # (size, pointer) per section, in the format's order
    notes: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        return f"{self.major}.{self.minor}"


def read_header(blob: Blob, tag: bytes, section_names: Sequence[str]) -> DbHeader:
    """Check magic, format tag, version, footer and section bounds; one clear error for each."""
    name, footer = FORMATS[tag]
    size = len(blob)
    if size < 16:
        raise blob.fail(f"too short to be an HPCToolkit {name} ({size} bytes)")
    head = blob.record(FILE_HEADER, 0, "file header")
    if bytes(head["magic"]) != MAGIC:
        raise blob.fail(f"not an HPCToolkit database file (the first bytes are {bytes(head['magic'])!r}, "
                        f"expected {MAGIC.decode()!r})")
    found = bytes(head["format"])
    if found != tag:
        other = FORMATS.get(found, (None,))[0]
        what = f"an HPCToolkit {other}" if other else f"an HPCToolkit file of unknown format {found!r}"
        raise blob.fail(f"is {what}, not a {name}")
    major, minor = int(head["major"]), int(head["minor"])
    if major != MAJOR_VERSION:
        raise blob.fail(f"{name} format version {major}.{minor} is not supported (hpcsa reads version "
                        f"{MAJOR_VERSION}.x)")
    header_end = 16 + 16 * len(section_names)
    if size < header_end + FOOTER_SIZE:
        raise blob.fail(f"truncated: {size} bytes cannot hold the {header_end}-byte {name} header and its "
                        f"footer")
    if bytes(blob.data[size - FOOTER_SIZE:size]) != footer:
        raise blob.fail(f"the {name} footer {footer.decode()!r} is missing: the file is truncated or was not "
                        f"completely written")
    pairs = blob.array(SECTION, 16, len(section_names), "section table")
    sections = []
    for sec_name, (sz, ptr) in zip(section_names, pairs.tolist(), strict=True):
        if sz and (ptr < header_end or ptr + sz > size - FOOTER_SIZE):
            raise blob.fail(f"the {sec_name} section ({sz} bytes at {ptr:#x}) lies outside the file "
                            f"({size} bytes); the file is truncated or corrupt")
        sections.append((int(sz), int(ptr)))
    notes = []
    if minor > MINOR_VERSION:
        notes.append(f"written by a newer format version {major}.{minor}; read as {MAJOR_VERSION}."
                     f"{MINOR_VERSION} (fields added since are ignored)")
    return DbHeader(name, major, minor, tuple(sections), tuple(notes))


def open_db(path: str, tag: bytes, section_names: Sequence[str]) -> tuple[Blob, DbHeader]:
    blob = Blob(path)
    return blob, read_header(blob, tag, section_names)


class DbReader:
    """An open ``*.db`` file whose header is checked (:func:`read_header`); the readers of the formats
    extend it with their sections (``tag`` and ``sections`` are the format's)."""

    def __init__(self, path: str | os.PathLike[str], tag: bytes, sections: Sequence[str]) -> None:
        self.path = os.fspath(path)
        self.blob, self.header = open_db(self.path, tag, sections)

    @property
    def version(self) -> str:
        return self.header.version

    @property
    def notes(self) -> tuple[str, ...]:
        return self.header.notes

    def section_header(self, index: int, dtype: np.dtype, size: int, section: str) -> np.void:
        """The header record at the start of section ``index`` (``size`` bytes in format 4.0)."""
        ptr = section_blob(self.blob, self.header, index, size, section)
        return self.blob.record(dtype, ptr, f"{section} header")

    def section_array(self, index: int, hdr: np.void, fields: Sequence[Field], base_size: int,
                      keys: tuple[str, str, str], what: str, section: str) -> np.ndarray:
        """The array of ``what`` records a section header points at; ``keys`` name the header's stride,
        pointer and count fields. The array must lie inside the section."""
        sz, ptr = self.header.sections[index]
        dt = stride_dtype(self.blob, fields, base_size, int(hdr[keys[0]]), what)
        at, n = int(hdr[keys[1]]), int(hdr[keys[2]])
        if n and (at < ptr or at + n * dt.itemsize > ptr + sz):
            raise self.blob.fail(f"the {n} {what}s at {at:#x} do not fit in the {section} section")
        return self.blob.array(dt, at, n, f"{what}s")


def gather_records(buf: np.ndarray, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Records of ``dtype`` at arbitrary byte ``positions`` of ``buf`` (uint8): one fancy index over
    an overlapping byte-strided view, whatever the alignment. Callers bounds-check the positions."""
    return records_at(buf, positions, dtype)


def scatter_records(image: np.ndarray, positions: np.ndarray, records: np.ndarray) -> None:
    """Write ``records`` at byte ``positions`` of the writable uint8 ``image`` (the twin of :func:`gather_records`)."""
    if not len(positions):
        return
    at = np.asarray(positions, np.int64)
    if gapless(records.dtype):  # a record's bytes at once (as_void), where no gap may be left alone
        as_void(byte_strided(image, records.dtype))[at] = as_void(np.ascontiguousarray(records))
    else:
        byte_strided(image, records.dtype)[at] = records


def encode_header(tag: bytes, sections: Sequence[tuple[int, int]], reserve: int = 0) -> bytes:
    """The file header for ``sections`` [(size, pointer)], zero-padded to ``reserve`` bytes."""
    head = np.zeros(1, FILE_HEADER)
    head["magic"], head["format"], head["major"], head["minor"] = MAGIC, tag, MAJOR_VERSION, MINOR_VERSION
    pairs = np.zeros(len(sections), SECTION)
    if len(sections):
        pairs["size"] = [s for s, _ in sections]
        pairs["ptr"] = [p for _, p in sections]
    raw = head.tobytes() + pairs.tobytes()
    return raw + bytes(max(0, reserve - len(raw)))


def footer(tag: bytes) -> bytes:
    return FORMATS[tag][1]


def section_blob(blob: Blob, header: DbHeader, index: int, min_size: int, what: str) -> int:
    """The pointer of section ``index``, checked to hold at least its ``min_size``-byte header."""
    sz, ptr = header.sections[index]
    if sz < min_size:
        raise blob.fail(f"the {what} section is {sz} bytes, too small for its {min_size}-byte header")
    return ptr


def check_pointer(blob: Blob, ptr: int, lo: int, hi: int, what: str) -> None:
    """``ptr`` must lie in [lo, hi) (a section); the message names what it points at."""
    if not lo <= ptr < hi:
        raise FormatError(blob.path, f"{what} pointer {ptr:#x} lies outside its section [{lo:#x}, {hi:#x})")


def run_keys(keys: np.ndarray, starts: np.ndarray, total: int) -> np.ndarray:
    """The key of every item of a sparse list stored as runs (``keys[i]`` owns items ``starts[i]`` up to the
    next start, the last run up to ``total``): profile.db's values by context, cct.db's by metric."""
    return np.repeat(keys, np.diff(np.append(starts, total)))


def run_of(keys: np.ndarray, starts: np.ndarray, total: int, key: int) -> slice | None:
    """The items of ``key`` in such a list (keys sorted), or None when it has none."""
    i = int(np.searchsorted(keys, key))
    if i == len(keys) or int(keys[i]) != key:
        return None
    return slice(int(starts[i]), int(starts[i + 1]) if i + 1 < len(starts) else total)


class SparseRuns:
    """Sparse values stored as runs, as profile.db and cct.db store them: key ``i`` (the field named by
    ``KEYS``) owns the values from ``starts[i]`` up to the next start, each tagged by an id of the field
    named by ``INNER``. The dataclasses of the two formats extend it with their fields."""

    KEYS: ClassVar[str]
    INNER: ClassVar[str]
    starts: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def value_keys(self) -> np.ndarray:
        """The key of every value (aligned with the inner ids and ``values``)."""
        return run_keys(getattr(self, self.KEYS), self.starts, len(self.values))

    def get(self, key: int) -> dict[int, float]:
        """inner id -> value for one key (empty if it has none)."""
        sl = run_of(getattr(self, self.KEYS), self.starts, len(self.values), key)
        return {} if sl is None else dict(zip(getattr(self, self.INNER)[sl].tolist(), self.values[sl].tolist(),
                                              strict=True))


class StreamedWriter:
    """A ``*.db`` file written in place, by this process and by workers, under a temporary name.

    Use as a context manager: on entry the file is created and ``_start()`` lays
    out what comes first (reserved headers); on a normal exit ``_finish()``
    writes what comes last (headers, footer) and the file appears under ``path``;
    on an error, in the block or in ``_finish()``, the partial file is removed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._cm: contextlib.AbstractContextManager[BinaryIO] | None = None
        self._fh: BinaryIO | None = None

    def __enter__(self) -> Self:
        self._cm = atomic_file(self.path, "w+b")
        self._fh = self._cm.__enter__()
        self._start(self._fh)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool | None:
        assert self._cm is not None
        if exc_type is None:
            try:
                self._finish()
            except BaseException as err:
                self._cm.__exit__(type(err), err, err.__traceback__)  # removes the partial file
                raise
        return self._cm.__exit__(exc_type, exc, tb)

    @property
    def temp_path(self) -> str:
        """The file being written (workers open it to place their parts)."""
        assert self._fh is not None, "use the writer as a context manager"
        return self._fh.name

    @property
    def fileno(self) -> int:
        assert self._fh is not None, "use the writer as a context manager"
        return self._fh.fileno()

    def _start(self, fh: BinaryIO) -> None:
        """Lay out the beginning of the new file."""

    def _finish(self) -> None:
        """Write what comes last (the block completed without an error)."""
