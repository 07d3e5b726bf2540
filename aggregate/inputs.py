"""What ``hpcsa prof`` reads: the profiles, traces and structure files of measurement directories.

hpcprof takes measurement directories (and loose ``.hpcrun`` files), finds
``structs/*.hpcstruct`` and ``kernel_symbols/`` inside each directory by
itself, and adds the structure files named with ``-S``. Nothing here reads
a profile: only names and sizes (sizes balance the work between workers).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import field, replace

import numpy as np

from hpcsa.aggregate.lexical import hashed_name
from hpcsa.aggregate.profile_table import HPCRUN, HPCTRACE, ProfileInputs
from hpcsa.core.arrays import narrow_counts
from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import blake2b
from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import input_error
from hpcsa.core.packed_strings import PackedStrings
from hpcsa.formats.hpcstruct.peek import first_module_path


@dataclass(frozen=True)
class StructInput:
    """A structure file and the load-module path its (first) ``LM`` names (None: not found in the head)."""

    path: str
    module: str | None
    measdir: str | None

    @property
    def is_gpu(self) -> bool:
        """Whether it describes a GPU binary: a ``.gpubin``, by its name or by the load module it names."""
        named = hashed_name(self.module) if self.module is not None else None
        return ".gpubin" in os.path.basename(self.path) or (named is not None and named[0] == "gpubins")


@dataclass
class Inputs:
    """The profiles and structure files of the measurement directories, as listed before reading them."""

    profiles: ProfileInputs = field(default_factory=lambda: ProfileInputs.of([]))  # columns, no object each
    structs: list[StructInput] = field(default_factory=list)
    #: Structure files of the measurement directories left out by ``--ignore-structs``: they are not used
    #: for attribution, only to check that a binary read in their place is the measured one.
    witnesses: list[StructInput] = field(default_factory=list)
    measdirs: list[str] = field(default_factory=list)
    #: Folders where binaries moved from the paths the measurement recorded are looked for by file name
    #: (``--binaries``).
    binary_folders: list[str] = field(default_factory=list)

    def release_profiles(self) -> None:
        """Let go of the listing of the profiles (``profiles`` becomes empty): ``hpcsa prof`` does once class 2
        holds them in its own table, in profile.db's order, so that the two are not both held through phases
        2 and 3 (some 26 bytes a profile with the names packed: at a quarter of a million profiles, 7 MiB)."""
        self.profiles = ProfileInputs.of([])

    @property
    def total_bytes(self) -> int:
        return int(self.profiles.cost.sum())

    @property
    def cpu_structs(self) -> list[StructInput]:
        """The structure files of CPU binaries (phase 1 parses them; phase 0 reads the GPU ones)."""
        return [s for s in self.structs if not s.is_gpu]


def find_inputs(paths: list[str], structs: list[str] | None = None, *, ignore_structs: bool = False,
                share: tuple[int, int] = (0, 1), binaries: list[str] | None = None) -> Inputs:
    """Profiles of every measurement directory or ``.hpcrun`` file in ``paths``, plus structure files.

    Structure files come from ``structs`` (``-S``: files or directories) and,
    unless ``ignore_structs``, from each measurement directory's ``structs/``.
    With ``share = (k, n)`` only profiles k, k + n, k + 2n, ... are measured (sizes, whether the trace is a
    file); the others are left at size 0 without a trace, for :func:`merge_measurements` to complete with the
    parts that other MPI ranks measured.
    """
    out = Inputs()
    for folder in binaries or []:
        if not os.path.isdir(folder):
            raise HpcsaError(folder, "--binaries: not a folder")
        out.binary_folders.append(os.path.abspath(folder))
    if not paths:
        raise HpcsaError(None, "no measurement directory given")
    # per directory (or loose file): its folder, measurement directory, names (sorted) and which have a trace
    listings: list[tuple[str, str, np.ndarray, np.ndarray]] = []
    seen_dirs: set[str] = set()
    loose: dict[str, None] = {}
    for given in paths:
        path = os.path.abspath(given)
        if os.path.isdir(path):
            out.measdirs.append(path)
            if path in seen_dirs:  # (its profiles are listed once)
                continue
            seen_dirs.add(path)
            runs, traced = _listing(path)
            if not len(runs):
                raise HpcsaError(given, "no .hpcrun profiles in this directory (is it a measurement directory?)")
            listings.append((os.path.join(path, ""), path, runs, traced))
        elif os.path.isfile(path) and path.endswith(HPCRUN):
            loose[path] = None
        elif not os.path.exists(path):
            raise HpcsaError(given, "no such file or directory")
        else:
            raise HpcsaError(given, "neither a measurement directory nor an .hpcrun profile")
    for path in loose:  # a loose file of a directory also given is listed with it, once
        folder, n = os.path.split(path)
        if folder not in seen_dirs:
            listings.append((os.path.join(folder, ""), folder, np.array([os.fsencode(n)]), np.ones(1, bool)))
    out.profiles = _measure(listings, share)
    struct_paths: list[tuple[str, str | None]] = []
    for s in structs or []:
        full = os.path.abspath(s)
        if os.path.isdir(full):
            struct_paths += [(os.path.join(full, n), None) for n in sorted(os.listdir(full))
                             if n.endswith(".hpcstruct")]
        elif os.path.isfile(full):
            struct_paths.append((full, None))
        else:
            raise HpcsaError(s, "no such structure file")
    for d in out.measdirs:
        sdir = os.path.join(d, "structs")
        if os.path.isdir(sdir):
            found = [(os.path.join(sdir, n), d) for n in sorted(os.listdir(sdir)) if n.endswith(".hpcstruct")]
            if ignore_structs:
                out.witnesses += [StructInput(p, first_module_path(p), m) for p, m in found]
            else:
                struct_paths += found
    done: set[str] = set()
    for p, measdir in struct_paths:
        if p in done:
            continue
        done.add(p)
        out.structs.append(StructInput(p, first_module_path(p), measdir))
    return out


def _listing(path: str) -> tuple[np.ndarray, np.ndarray]:
    """A measurement directory's profiles (file names as bytes, sorted), and which may have a trace (all: a
    stat says, as for any profile): one pass over the directory, the names gathered into arrays a chunk at a
    time, not kept as a Python object each (a run's hundreds of thousands of profiles)."""
    chunks: list[np.ndarray] = []
    part: list[bytes] = []
    with os.scandir(os.fsencode(path)) as entries:
        for entry in entries:
            if entry.name.endswith(_HPCRUN_B):
                part.append(entry.name)
                if len(part) >= LISTING_CHUNK:
                    chunks.append(np.array(part, dtype=bytes))
                    part = []
    chunks.append(np.array(part, dtype=bytes))
    width = max(c.dtype.itemsize for c in chunks)
    names = np.concatenate([c.astype(f"S{width}", copy=False) for c in chunks])  # (one copy of the names)
    del chunks
    names.sort()
    return names, np.ones(len(names), bool)


#: Names of a directory's listing gathered at once into an array.
LISTING_CHUNK = 1 << 14
_HPCRUN_B, _HPCTRACE_B = os.fsencode(HPCRUN), os.fsencode(HPCTRACE)


def _measure(listings: list[tuple[str, str, np.ndarray, np.ndarray]], share: tuple[int, int]) -> ProfileInputs:
    """The listed profiles as columns, with the sizes of this share of them (a profile's trace counts when it
    is a file, as ``os.path.isfile`` says)."""
    first, step = share
    dirs: dict[str, int] = {}
    folder = np.concatenate([np.full(len(n), dirs.setdefault(f, len(dirs)), np.int32) for f, _, n, _ in listings])
    measdir = np.concatenate([np.full(len(n), dirs.setdefault(m, len(dirs)), np.int32) for _, m, n, _ in listings])
    width = max(n.dtype.itemsize for _, _, n, _ in listings)
    parts = [n.astype(f"S{width}", copy=False) for _, _, n, _ in listings]
    names = parts[0] if len(parts) == 1 else np.concatenate(parts)  # (one directory: its listing, not a copy)
    del parts
    trace_listed = np.concatenate([t for _, _, _, t in listings])
    count = len(names)
    size = np.zeros(count, np.int64)
    trace_size = np.zeros(count, np.int64)
    has_trace = np.zeros(count, bool)
    folders = [os.fsencode(d) for d in dirs]
    stat_ = os.stat
    for i in range(first, count, step):
        path = folders[folder[i]] + names[i]
        try:
            size[i] = stat_(path).st_size
        except OSError as exc:
            raise input_error(os.fsdecode(path), exc) from None
        if trace_listed[i]:
            try:
                st = stat_(path[: -len(_HPCRUN_B)] + _HPCTRACE_B)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                has_trace[i] = True
                trace_size[i] = st.st_size
    return ProfileInputs(tuple(dirs), folder, measdir, PackedStrings.pack(names), narrow_counts(size),
                         narrow_counts(trace_size), has_trace)


#: What one MPI rank measured of the inputs: (fingerprint of the listing, size, trace_size, has_trace).
Measurement = tuple[bytes, np.ndarray, np.ndarray, np.ndarray]


def measurement(inputs: Inputs) -> Measurement:
    """This rank's sizes, with a fingerprint of everything it listed (which every rank must agree on)."""
    p = inputs.profiles
    digest = blake2b(digest_size=16)
    digest.update(repr((p.dirs, inputs.measdirs, inputs.structs, inputs.witnesses)).encode("utf-8", "backslashreplace"))
    for column in (p.folder, p.measdir, p.names.varying, p.names.rest):
        digest.update(np.ascontiguousarray(column).tobytes())
    digest.update(p.names.template)
    return digest.digest(), p.size, p.trace_size, p.has_trace


def merge_measurements(parts: list[Measurement]) -> Measurement:
    """The sizes of every profile from the ranks' shares (each profile is measured by exactly one rank)."""
    if any(part[0] != parts[0][0] for part in parts):
        raise HpcsaError(None, "the MPI ranks listed different inputs (were profiles being added or removed?); "
                         "run again once the measurement is complete")
    return (parts[0][0], np.sum([p[1] for p in parts], axis=0), np.sum([p[2] for p in parts], axis=0),
            np.logical_or.reduce([p[3] for p in parts]))


def with_measurement(inputs: Inputs, merged: Measurement) -> Inputs:
    """``inputs`` with every profile's size, from the merged measurement of all ranks."""
    _, size, trace_size, has_trace = merged
    return replace(inputs, profiles=replace(inputs.profiles, size=narrow_counts(size), trace_size=narrow_counts(trace_size),
                                            has_trace=has_trace))


def default_output_name(measdirs: list[str], program: str | None) -> str:
    """hpcprof's naming: ``hpctoolkit-<app>-measurements[-x]`` gives ``hpctoolkit-<app>-database[-x]``;
    otherwise ``hpctoolkit-<program>-database``."""
    if measdirs:
        base = os.path.basename(measdirs[0].rstrip(os.sep))
        m = re.fullmatch(r"hpctoolkit-(.+)-measurements(.*)", base)
        if m:
            return f"hpctoolkit-{m.group(1)}-database{m.group(2)}"
    name = os.path.basename(program or "") or "unnamed"
    return f"hpctoolkit-{name}-database"
