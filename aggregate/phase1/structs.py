"""Phase 1's structure files: which ones a profile's load modules need, each parsed (or its parsed-structure
cache entry mapped) once, like hpcprof's lazy loading.

A structure file is parsed as soon as a profile is known to sample a module it may describe
(:func:`structs_for`), by a worker (:func:`parse_struct`), ahead of the profiles still waiting; rank 0
parses what the other ranks' profiles need at the end (:func:`.phase1.share.complete_structs`).
"""

from __future__ import annotations

import os

from hpcsa.aggregate import lexical, rawtree
from hpcsa.aggregate.handoff import Parsed
from hpcsa.aggregate.inputs import Inputs, StructInput
from hpcsa.core.threads import map_in_threads
from hpcsa.core.workers import pool_min_bytes
from hpcsa.formats.hpcstruct.model import StructureFile
from hpcsa.formats.hpcstruct.parsedcache import (
    read_cached,
    read_entry,
    read_structure,
    remembered,
    store_structure,
)


def file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the worker reports it


def parse_struct(s: StructInput) -> Parsed | tuple[StructInput, str]:
    """A worker's task: parse a structure file and store it in the parsed-structure cache. Where it is stored,
    only the cache entry's digest comes back: the caller maps the entry (cheaper than this worker's copy
    sent back); see :func:`struct_result`."""
    digest = store_structure(s.path)
    if digest is not None:
        return s, digest
    return [(s.path, s.measdir, m) for m in read_structure(s.path).modules]


def struct_result(result: Parsed | tuple[StructInput, str]) -> Parsed:
    """What :func:`parse_struct` returned, as parsed modules (a cached one mapped: the worker's hash of the
    bytes it parsed names the entry)."""
    if isinstance(result, list):
        return result
    s, digest = result
    cached = read_entry(digest)
    sf = cached if cached is not None else read_structure(s.path)  # the entry went away meanwhile
    return [(s.path, s.measdir, m) for m in sf.modules]


def structs_for(refs: list[rawtree.ModuleRef], structs: list[StructInput]) -> list[StructInput]:
    """The structure files that may describe any of these load modules (by recorded or resolved path, or by
    the content hash in a gpubin's name, or, for a file given with ``-S``, by file name); files whose LM was
    not found in their head always qualify."""
    keys = {r.key for r in refs} | {os.path.normpath(r.path) for r in refs}
    names = {lexical.hashed_name(r.key) for r in refs} - {None}
    basenames = {os.path.basename(r.path) for r in refs}
    out = []
    for s in structs:
        if s.module is None:
            out.append(s)
            continue
        key = lexical.module_key(s.module, s.measdir) if s.measdir else os.path.normpath(s.module)
        if key in keys or os.path.normpath(s.module) in keys or lexical.hashed_name(s.module) in names:
            out.append(s)
        elif s.measdir is None and os.path.basename(s.module) in basenames:  # -S: a binary moved since
            out.append(s)
    return out


def remembered_if_small(inputs: Inputs, cpu_structs: list[StructInput]) -> bool:
    """Whether the profiles are fewer bytes than a pool pays for and every CPU structure file is unchanged
    since it was hashed, with an entry for its bytes (:func:`.parsedcache.remembered`: no file read). Phase 1
    then runs in this process, and the entries are checked on the lookup thread while it reads the profiles
    (:mod:`.phase1.cache_lookups`); one found damaged meanwhile is parsed again, here."""
    return inputs.total_bytes < pool_min_bytes() and all(remembered(s.path) for s in cpu_structs)


def mapped_if_small(inputs: Inputs, cpu_structs: list[StructInput], jobs: int
                    ) -> dict[str, StructureFile] | None:
    """Every CPU structure file's cache entry, mapped, when the profiles are fewer bytes than a pool pays for
    and every entry exists (the usual second run of a small measurement): phase 1 then runs in this process.
    None otherwise. The smallest file is looked up first, so a first run hashes little before it knows; the
    others on ``jobs`` threads, largest first (hashing and checking an entry release the GIL)."""
    if inputs.total_bytes >= pool_min_bytes():
        return None
    by_size = sorted(cpu_structs, key=lambda s: (file_size(s.path), s.path))
    if not by_size:
        return {}
    smallest = read_cached(by_size[0].path)
    if smallest is None:
        return None
    rest = [s.path for s in reversed(by_size[1:])]
    found = dict(zip(rest, map_in_threads(read_cached, rest, jobs), strict=True))
    if any(sf is None for sf in found.values()):
        return None
    return {by_size[0].path: smallest, **found}
