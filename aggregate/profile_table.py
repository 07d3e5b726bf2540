"""Per-profile state of ``hpcsa prof`` as columns: a few numpy arrays per table (file names in one fixed-width
bytes column, identifier tuples as concatenated rows with offsets).

A run over thousands of profiles keeps, for each, its input files (names and sizes) and its class-2 facts
(identifier tuple, trace facts, metric table, load map, where phase 1 kept its arrays) from the start of
phase 1 to the end of phase 3, in every process: the parent, its forked workers (which would touch the
pages of per-profile objects through their reference counts) and, pickled, the other MPI ranks. Held as
one small Python object per profile that costs about a kilobyte and grows the peak with the profile
count; held as columns it costs the bytes of the columns, pickles as arrays, and concatenates, selects
and reorders with a few vectorized operations. Readers that want one profile get the small dataclasses
(:class:`ProfileInput`, :class:`ProfileFacts`), built on the fly by indexing; the columns are public for
vectorized users.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from hpcsa.core.arrays import narrow_counts
from hpcsa.core.dataclass import dataclass
from hpcsa.core.packed_strings import PackedStrings
from hpcsa.core.ragged import Ragged
from hpcsa.formats.measurement.hpcrun import ID_ELEMENT

HPCRUN, HPCTRACE = ".hpcrun", ".hpctrace"


@dataclass(frozen=True, slots=True)
class ProfileInput:
    """One profile: its ``.hpcrun`` file, its ``.hpctrace`` (or None), their sizes and directory."""

    path: str
    trace: str | None
    size: int
    trace_size: int
    measdir: str


@dataclass(slots=True)
class ProfileFacts:
    """The class-2 facts of one profile (what :class:`ProfileTable` holds of it, as one object)."""

    input: ProfileInput
    id_tuple: np.ndarray          # hpcrun ID_ELEMENT rows (kind with interpretation bits, physical, logical; or
    #                               those fields narrowed: narrow_id_rows)
    trace_disorder: int           # hpcrun's bound on the disorder of its trace (0: in order)
    metrics: int                  # index into Discovery.metric_tables
    trace_records: int            # records in its .hpctrace (0 without one)
    loadmap: int = 0              # index into Discovery.loadmaps
    kept: tuple[str, int, int] | None = None  # (scratch file, offset, size) of what phase 2 needs of it


def _remap(strings: dict[str, int], names: Sequence[str]) -> np.ndarray:
    """Indexes of ``names`` in the table ``strings`` (new ones added)."""
    return np.array([strings.setdefault(s, len(strings)) for s in names], np.int32).reshape(-1)


@dataclass(frozen=True, eq=False)
class ProfileInputs(Sequence[ProfileInput]):
    """Profile inputs as columns. A path is its folder (up to and with the last separator: one of ``dirs``)
    followed by its file name (file-system encoded, fixed-width and packed: the names of one measurement differ
    in a few digits, which are all a profile keeps of its name; selection is one fancy index); the trace, when
    ``has_trace``, is the path with ``.hpctrace`` in place of ``.hpcrun`` (hpcrun's naming). Sizes are held
    as :func:`~hpcsa.core.arrays.narrow_counts` makes them (sum them as int64: :attr:`cost` does)."""

    dirs: tuple[str, ...]   # the distinct folders and measurement directories
    folder: np.ndarray      # int32 index into dirs, per profile
    measdir: np.ndarray     # int32 index into dirs
    names: PackedStrings    # file names
    size: np.ndarray        # bytes of the .hpcrun (uint32 or int64)
    trace_size: np.ndarray  # bytes of the .hpctrace (0: none; uint32 or int64)
    has_trace: np.ndarray   # bool

    @classmethod
    def of(cls, items: Sequence[ProfileInput]) -> ProfileInputs:
        folders, names = [], []
        for p in items:
            cut = p.path.rfind(os.sep) + 1
            folders.append(p.path[:cut])
            names.append(p.path[cut:])
            if p.trace is not None and (not p.path.endswith(HPCRUN) or p.trace != _trace_of(p.path)):
                raise ValueError(f"{p.trace}: a trace not named after its profile {p.path}")
        return cls.from_columns(folders, [p.measdir for p in items], names, [p.size for p in items],
                                [p.trace_size for p in items], [p.trace is not None for p in items])

    @classmethod
    def from_columns(cls, folders: Sequence[str], measdirs: Sequence[str], names: Sequence[str],
                     size: Sequence[int] | np.ndarray, trace_size: Sequence[int] | np.ndarray,
                     has_trace: Sequence[bool] | np.ndarray) -> ProfileInputs:
        """Profiles given per column: folder (with its trailing separator), measurement directory, file name."""
        dirs: dict[str, int] = {}
        folder = _remap(dirs, folders)
        measdir = _remap(dirs, measdirs)
        return cls(tuple(dirs), folder, measdir, PackedStrings.pack([os.fsencode(n) for n in names]),
                   narrow_counts(np.asarray(size, np.int64).reshape(-1)),
                   narrow_counts(np.asarray(trace_size, np.int64).reshape(-1)), np.asarray(has_trace, bool).reshape(-1))

    @classmethod
    def concat(cls, parts: Sequence[ProfileInputs]) -> ProfileInputs:
        parts = [p for p in parts if len(p)] or list(parts[:1])  # (an empty part's columns would widen the rest)
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.of([])
        dirs: dict[str, int] = {}
        maps = [_remap(dirs, p.dirs) for p in parts]
        return cls(tuple(dirs), np.concatenate([m[p.folder] for m, p in zip(maps, parts, strict=True)]),
                   np.concatenate([m[p.measdir] for m, p in zip(maps, parts, strict=True)]),
                   PackedStrings.concat([p.names for p in parts]),
                   *(np.concatenate([getattr(p, c) for p in parts]) for c in ("size", "trace_size", "has_trace")))

    def take(self, index: np.ndarray) -> ProfileInputs:
        index = np.asarray(index, np.int64)
        return ProfileInputs(self.dirs, self.folder[index], self.measdir[index], self.names.take(index),
                             self.size[index], self.trace_size[index], self.has_trace[index])

    def __len__(self) -> int:
        return len(self.size)

    def path(self, i: int) -> str:
        return self.dirs[self.folder[i]] + os.fsdecode(self.names[i])

    def trace(self, i: int) -> str | None:
        """Profile ``i``'s trace file, None without one."""
        return _trace_of(self.path(i)) if self.has_trace[i] else None

    def paths(self) -> list[str]:
        """Every profile's path, at once (the names unpacked together: a group's, not a whole run's)."""
        dirs = [self.dirs[f] for f in self.folder.tolist()]
        return [d + os.fsdecode(name) for d, name in zip(dirs, self.names.unpacked().tolist(), strict=True)]

    def traces(self, paths: Sequence[str] | None = None) -> list[str | None]:
        """Every profile's trace file (None without one), from their ``paths`` where the caller has them."""
        paths = self.paths() if paths is None else paths
        return [_trace_of(p) if has else None for p, has in zip(paths, self.has_trace.tolist(), strict=True)]

    def __getitem__(self, i: int) -> ProfileInput:  # type: ignore[override]  # one profile; no slices
        i = _position(i, len(self))
        path = self.path(i)
        trace = _trace_of(path) if self.has_trace[i] else None
        return ProfileInput(path, trace, int(self.size[i]), int(self.trace_size[i]), self.dirs[self.measdir[i]])

    def __iter__(self) -> Iterator[ProfileInput]:
        return (self[i] for i in range(len(self)))

    @property
    def cost(self) -> np.ndarray:
        """Bytes to read per profile (its .hpcrun and .hpctrace), int64."""
        return self.size.astype(np.int64) + self.trace_size

    def path_order(self) -> np.ndarray:
        """Ranks of the paths in sorted order, as Python sorts the strings (computed, not kept): by their
        bytes when every path is ASCII (the same order), else by the strings themselves."""
        n = len(self)
        folders = [os.fsencode(d) for d in self.dirs]
        ascii_names = self.names.is_ascii()
        if ascii_names and (n == 0 or not (self.folder != self.folder[0]).any()):  # one folder: the names' order (no joined copy)
            order = self.names.argsort()
        elif all(b.isascii() for b in folders) and ascii_names:
            order = np.argsort(np.char.add(np.array(folders, dtype=bytes)[self.folder], self.names.unpacked()),
                               kind="stable")
        else:
            paths = [self.path(i) for i in range(n)]
            order = np.array(sorted(range(n), key=paths.__getitem__), np.int64)
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        return rank


def narrow_id_rows(rows: np.ndarray) -> np.ndarray:
    """Identifier-tuple rows (ID_ELEMENT's fields) in the narrowest native fields that hold their values:
    physical and logical ids in 4 bytes where they fit (hpcrun's host ids, ranks, threads, streams: 10 bytes
    a row instead of 18). Tables joined with others of other widths take the widest (``ProfileTable.concat``)."""
    def width(name: str) -> str:
        column = rows[name]
        return "<u4" if not len(column) or int(column.max()) <= 0xFFFFFFFF else "<u8"
    out = np.empty(len(rows), np.dtype([("kind", "<u2"), ("physical", width("physical")),
                                        ("logical", width("logical"))]))
    for name in ("kind", "physical", "logical"):
        out[name] = rows[name]
    return out


def _common_rows(dtypes: Iterator[np.dtype]) -> np.dtype:
    """The dtype that holds identifier-tuple rows of all these (each field as wide as its widest)."""
    seen = list(dtypes)
    if all(d == seen[0] for d in seen):
        return seen[0]
    return np.dtype([(name, f"<u{max(d[name].itemsize for d in seen)}") for name in ("kind", "physical", "logical")])


def _position(i: int, n: int) -> int:
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError("profile index out of range")
    return i + n if i < 0 else i


def _trace_of(path: str) -> str:
    return path[: -len(HPCRUN)] + HPCTRACE


#: The columns of :class:`ProfileInputs` and of :class:`ProfileTable` that are one array each, a value per profile.
_INPUT_COLUMNS = ("names", "folder", "measdir", "size", "trace_size", "has_trace")
_ARRAY_COLUMNS = ("trace_disorder", "metrics", "trace_records", "loadmap", "kept_file", "kept_offset", "kept_size")


@dataclass(frozen=True, eq=False)
class ProfileTable(Sequence[ProfileFacts]):
    """The class-2 facts of profiles as columns (see :class:`ProfileFacts` for their meaning). What phase 1
    kept of profile ``i`` is ``kept_size[i]`` bytes at ``kept_offset[i]`` of ``kept_files[kept_file[i]]``
    (``kept_file[i] < 0``: nothing was kept)."""

    inputs: ProfileInputs
    id_tuple: Ragged             # ID_ELEMENT rows
    trace_disorder: np.ndarray   # uint32 or int64 (as :func:`~hpcsa.core.arrays.narrow_counts` makes them)
    metrics: np.ndarray          # int32
    trace_records: np.ndarray    # uint32 or int64
    loadmap: np.ndarray          # int32
    kept_files: tuple[str, ...]
    kept_file: np.ndarray        # int32
    kept_offset: np.ndarray      # uint32 or int64
    kept_size: np.ndarray        # uint32 or int64

    @classmethod
    def of(cls, facts: Sequence[ProfileFacts]) -> ProfileTable:
        files: dict[str, int] = {}
        file = [files.setdefault(f.kept[0], len(files)) if f.kept is not None else -1 for f in facts]
        kept = [f.kept or ("", 0, 0) for f in facts]

        def column(name: str, dtype: type[np.generic]) -> np.ndarray:
            return np.array([getattr(f, name) for f in facts], dtype).reshape(-1)

        return cls(ProfileInputs.of([f.input for f in facts]), Ragged.of([f.id_tuple for f in facts], ID_ELEMENT),
                   narrow_counts(column("trace_disorder", np.int64)), column("metrics", np.int32),
                   narrow_counts(column("trace_records", np.int64)), column("loadmap", np.int32),
                   tuple(files), np.array(file, np.int32).reshape(-1),
                   narrow_counts(np.array([k[1] for k in kept], np.int64).reshape(-1)),
                   narrow_counts(np.array([k[2] for k in kept], np.int64).reshape(-1)))

    @classmethod
    def concat(cls, parts: Sequence[ProfileTable]) -> ProfileTable:
        return cls.concat_taking(list(parts))  # a list of its own: the caller's tables stay whole

    @classmethod
    def concat_taking(cls, parts: list[ProfileTable]) -> ProfileTable:
        """``concat`` of ``parts``, which the caller hands over (the list is emptied): each column of the
        parts is let go as soon as it is joined, so that the parts and their union are not both whole in memory
        (phase 1's running union merged with new batches' tables: some 190 bytes a profile, twice at once)."""
        parts[:] = [p for p in parts if len(p)] or parts[:1]  # (an empty part's columns would widen the rest)
        if len(parts) <= 1:
            out = parts[0] if parts else cls.of([])
            parts.clear()
            return out
        files: dict[str, int] = {}
        maps = [np.append(_remap(files, p.kept_files), -1).astype(np.int32) for p in parts]  # [-1] -> -1
        joined: dict[str, Any] = {
            "kept_files": tuple(files),
            "kept_file": np.concatenate([m[p.kept_file] for m, p in zip(maps, parts, strict=True)])}
        empty: dict[str, Any] = {"kept_file": np.zeros(0, np.int32)}
        parts[:] = [replace(p, **empty) for p in parts]
        del maps
        for name in ("inputs", "id_tuple", *(c for c in _ARRAY_COLUMNS if c != "kept_file")):  # (kept_file: above)
            columns = [getattr(p, name) for p in parts]
            if name == "inputs":
                joined[name] = ProfileInputs.concat(columns)
                gone: Any = ProfileInputs.of([])
            elif name == "id_tuple":
                common = _common_rows(c.rows.dtype for c in columns)
                columns = [c if c.rows.dtype == common else Ragged(c.rows.astype(common), c.offsets) for c in columns]
                joined[name] = Ragged.concat(columns)
                gone = Ragged.empty(ID_ELEMENT)
            else:
                joined[name] = np.concatenate(columns)
                gone = np.zeros(0, columns[0].dtype)
            del columns
            parts[:] = [replace(p, **{name: gone}) for p in parts]
        parts.clear()
        return cls(**joined)

    @classmethod
    def take_taking(cls, parts: list[ProfileTable], index: np.ndarray) -> ProfileTable:
        """``take(index)`` of the one table the caller hands over in ``parts`` (the list is emptied): each
        column is let go as soon as its reordered copy is made, so that the table and its reordered copy are
        not both whole in memory (class 2's reorder of the union into profile.db's order: at a quarter of a
        million profiles, some 30 MiB each)."""
        (table,) = parts
        parts.clear()
        index = np.asarray(index, np.int64)
        inputs: dict[str, Any] = {"dirs": table.inputs.dirs}
        for name in _INPUT_COLUMNS:
            column = getattr(table.inputs, name)
            table = replace(table, inputs=replace(table.inputs, **{name: column.take(index[:0])}))  # (not a view)
            inputs[name] = column.take(index)
            del column
        out: dict[str, Any] = {"inputs": ProfileInputs(**inputs), "kept_files": table.kept_files}
        del inputs
        ragged = table.id_tuple
        table = replace(table, id_tuple=Ragged.empty(ragged.rows.dtype))
        out["id_tuple"] = ragged.take(index)
        del ragged
        for name in _ARRAY_COLUMNS:
            column = getattr(table, name)
            table = replace(table, **{name: column.take(index[:0])})
            out[name] = column.take(index)
            del column
        return cls(**out)

    def remapped(self, metrics: Sequence[int], loadmaps: Sequence[int]) -> ProfileTable:
        """The same profiles with their metric-table and load-map indexes mapped through these tables (itself
        where both maps are the identity, as for the running union of phase 1: no copy of two columns)."""
        if list(metrics) == list(range(len(metrics))) and list(loadmaps) == list(range(len(loadmaps))):
            return self
        return replace(self, metrics=np.asarray(metrics, np.int32).reshape(-1)[self.metrics],
                       loadmap=np.asarray(loadmaps, np.int32).reshape(-1)[self.loadmap])

    def without_id_tuples(self) -> ProfileTable:
        """The same profiles with empty identifier tuples: once class 2 has finalized them (profile.db's), the
        raw ones are not kept through the phases (a few dozen bytes a profile)."""
        return replace(self, id_tuple=Ragged.empty(self.id_tuple.rows.dtype, len(self)))

    def take(self, index: np.ndarray) -> ProfileTable:
        """Profiles ``index``, in that order (one vectorized selection per column)."""
        index = np.asarray(index, np.int64)
        return ProfileTable(self.inputs.take(index), self.id_tuple.take(index), self.trace_disorder[index],
                            self.metrics[index], self.trace_records[index], self.loadmap[index], self.kept_files,
                            self.kept_file[index], self.kept_offset[index], self.kept_size[index])

    def __len__(self) -> int:
        return len(self.metrics)

    def __getitem__(self, i: int) -> ProfileFacts:  # type: ignore[override]  # one profile; no slices
        i = _position(i, len(self))
        f = int(self.kept_file[i])
        kept = (self.kept_files[f], int(self.kept_offset[i]), int(self.kept_size[i])) if f >= 0 else None
        return ProfileFacts(self.inputs[i], self.id_tuple[i], int(self.trace_disorder[i]), int(self.metrics[i]),
                            int(self.trace_records[i]), int(self.loadmap[i]), kept)

    def __iter__(self) -> Iterator[ProfileFacts]:
        return (self[i] for i in range(len(self)))
