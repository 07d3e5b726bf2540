"""Phase 1's class 2 for profiles: their identifier tuples finalized, and profile.db's order of them.

hpcrun writes each profile's identity (node, rank, thread, GPU context and stream...) as a tuple of
(kind, physical id, logical id); where the logical ids were left for the aggregation to generate, hpcprof
numbers them. profile.db lists the profiles in the order of their finalized tuples, the same for any number
of workers or ranks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hpcsa.aggregate.profile_table import ProfileInputs
from hpcsa.core.arrays import run_starts
from hpcsa.core.binfmt import field_names
from hpcsa.core.ragged import Ragged
from hpcsa.formats.db import profiledb
from hpcsa.formats.measurement.hpcrun import BOTH_VALID, ID_KIND_MASK, LOGIC_GLOBAL, LOGIC_LOCAL


def finalize_id_tuples(raw: Ragged, let_go: Callable[[], None] | None = None) -> Ragged:
    """profile.db identifier tuples: generated logical ids (LOCAL per prefix, GLOBAL per kind) are dense
    ranks of the physical ids in sorted order (hpcprof numbers them first-come), and marked physical. The
    rows have profile.db's IDENTIFIER fields, packed, the physical ids as wide as the raw ones (4 bytes where
    they fit: 11 bytes a row, not 16; :func:`hpcsa.formats.db.profiledb.identifier_rows` widens them as they
    are written).

    Vectorized over all profiles' rows: a LOCAL id's group is its kind and the (kind, physical id) path of
    the levels above it, numbered level by level (a loop over levels, not profiles), down to the deepest
    level with a LOCAL id only (hpcrun's NODE, the first level, needs none). Memory: a few rows per profile,
    so each column here is as long as the profiles; the result is written a block of rows at a time, the
    physical ids read where they are (no copy), and what is kept per row beside the result is its kind and
    interpretation (3 bytes): this was the peak of class 2. ``let_go`` is called once the raw rows are read,
    for the caller to let go of them before the logical ids are numbered (as does this function)."""
    rows = raw.rows
    n = len(rows)
    out = np.zeros(n, finalized_rows(rows.dtype["physical"]))
    k = np.empty(n, np.uint16)
    interp = np.empty(n, np.uint8)
    generated = False
    for a in range(0, n, FINALIZE_BLOCK):
        b = min(n, a + FINALIZE_BLOCK)
        kind = rows["kind"][a:b].astype(np.uint16)
        k[a:b] = kind & np.uint16(ID_KIND_MASK)
        interp[a:b] = kind >> np.uint16(14)
        block = interp[a:b]
        made = (block == LOGIC_GLOBAL) | (block == LOGIC_LOCAL)
        generated = generated or bool(made.any())
        out["kind"][a:b] = k[a:b]
        out["flags"][a:b] = np.where(made | (block == BOTH_VALID), np.uint16(profiledb.IS_PHYSICAL), np.uint16(0))
        out["logicalId"][a:b] = rows["logical"][a:b] & np.uint64(0xFFFFFFFF)
        out["physicalId"][a:b] = rows["physical"][a:b]
    offsets = raw.offsets
    del raw, rows
    if let_go is not None:
        let_go()
    if not generated:
        return Ragged(out, offsets)
    phys = out["physicalId"]  # (the raw ones, as written: a view)
    starts, lengths = offsets[:-1], np.diff(offsets)
    local = np.flatnonzero(interp == LOGIC_LOCAL)
    deepest = int((local - starts[np.searchsorted(offsets, local, side="right") - 1]).max()) if len(local) else 0
    del local
    prefix = np.zeros(n, np.int64) if deepest else None  # an id of the path above each row (0: none)
    next_id = 1
    for j in range(1, deepest + 1):
        assert prefix is not None
        at = starts[lengths > j] + j  # the level's row of each profile that has it
        ids, inverse = _distinct_rows(prefix[at - 1], k[at - 1], phys[at - 1])
        prefix[at] = next_id + inverse
        next_id += ids
        del at, inverse
    for mode in (LOGIC_GLOBAL, LOGIC_LOCAL):
        at = np.flatnonzero(interp == mode)
        group = k[at].astype(np.int64)
        if mode == LOGIC_LOCAL and prefix is not None:
            group += prefix[at] * (ID_KIND_MASK + 1)
        out["logicalId"][at] = _dense_ranks(group, phys[at]) & np.uint64(0xFFFFFFFF)
        del at, group
    return Ragged(out, offsets)


def finalized_rows(physical: np.dtype) -> np.dtype:
    """Finalized identifier rows: profile.db's IDENTIFIER fields, packed, with physical ids of this type."""
    native = np.dtype(f"{physical.kind}{physical.itemsize}")
    return np.dtype([(name, native if name == "physicalId" else profiledb.IDENTIFIER[name])
                     for name in field_names(profiledb.IDENTIFIER)])


#: Rows of identifier tuples finalized at once (the temporaries of a block, not of every row).
FINALIZE_BLOCK = 1 << 16


def _distinct_rows(*cols: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct rows of the columns, each row's number in sorted order of the distinct rows)."""
    order = np.lexsort(cols[::-1])
    new = run_starts(*(c[order] for c in cols))
    number = np.empty(len(order), np.int64)
    number[order] = np.cumsum(new) - 1
    return int(new.sum()), number


def _dense_ranks(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values of its group, in ascending order."""
    order = np.lexsort((value, group))
    new_group = run_starts(group[order])
    new_value = new_group.copy()
    v = value[order]
    new_value[1:] |= v[1:] != v[:-1]
    del v
    distinct = np.cumsum(new_value) - 1
    del new_value
    distinct -= np.maximum.accumulate(np.where(new_group, distinct, 0))  # less the group's first distinct value
    ranks = np.empty(len(order), np.uint64)
    ranks[order] = distinct
    return ranks


def profile_order(inputs: ProfileInputs, tuples: Ragged) -> np.ndarray:
    """profile.db's order of profiles: by identifier tuple, compared as Python compares tuples of (kind,
    logical id, physical id) per level (a tuple before those it is a prefix of), then by path; sorted by
    columns (one key per level and field), the paths compared only where tuples are equal."""
    n = len(tuples)
    lengths = tuples.lengths
    keys: list[np.ndarray] = []  # most significant first
    for j in range(int(lengths.max()) if n else 0):
        has = lengths > j
        if not has.all():
            keys.append(has.astype(np.int8))  # a missing level sorts first
        at = tuples.offsets[:-1][has] + j  # the level's row of each profile that has it (none per row)
        for name in ("kind", "logicalId", "physicalId"):
            column = np.zeros(n, tuples.rows.dtype[name])
            column[has] = tuples.rows[name][at]
            if len(column) and (column != column[0]).any():  # (a key the same for all orders nothing)
                keys.append(column)
            del column
        del has, at
    order = np.lexsort(keys[::-1]) if keys else np.arange(n, dtype=np.int64)
    tied = np.ones(max(0, n - 1), bool)  # each profile's tuple the same as the one before it, in that order
    for key in keys:
        ranked = key[order]
        tied &= ranked[1:] == ranked[:-1]
        del ranked
    del keys
    if not tied.any():  # distinct tuples (a run's profiles, most often): the paths order nothing
        return order
    run = np.concatenate([[0], np.cumsum(~tied)])  # runs of equal tuples, numbered in order
    del tied
    return order[np.lexsort((inputs.path_order()[order], run))]  # by path within each run
