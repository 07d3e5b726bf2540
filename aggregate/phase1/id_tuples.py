"""Phase 1's class 2 for profiles: their identifier tuples finalized, and profile.db's order of them.

hpcrun writes each profile's identity (node, rank, thread, GPU context and stream...) as a tuple of
(kind, physical id, logical id); where the logical ids were left for the aggregation to generate, hpcprof
numbers them. profile.db lists the profiles in the order of their finalized tuples, the same for any number
of workers or ranks.
"""

from __future__ import annotations

import numpy as np

from hpcsa.aggregate.profile_table import ProfileTable
from hpcsa.core.arrays import run_starts
from hpcsa.core.ragged import Ragged
from hpcsa.formats.db import profiledb
from hpcsa.formats.measurement.hpcrun import BOTH_VALID, ID_KIND_MASK, LOGIC_GLOBAL, LOGIC_LOCAL


def finalize_id_tuples(raw: Ragged) -> Ragged:
    """profile.db identifier tuples: generated logical ids (LOCAL per prefix, GLOBAL per kind) are dense
    ranks of the physical ids in sorted order (hpcprof numbers them first-come), and marked physical.

    Vectorized over all profiles' rows: a LOCAL id's group is its kind and the (kind, physical id) path of
    the levels above it, numbered level by level (a loop over levels, not profiles). Memory: a few rows per
    profile, so each column here is as long as the profiles; columns are as narrow as their values and
    written into the result as soon as they are known (this was the peak of class 2: some 150 bytes a row)."""
    rows = raw.rows
    n = len(rows)
    out = np.zeros(n, profiledb.IDENTIFIER)
    kind = rows["kind"].astype(np.uint16)
    k = kind & np.uint16(ID_KIND_MASK)
    interp = (kind >> np.uint16(14)).astype(np.uint8)
    del kind
    out["kind"] = k
    generated = (interp == LOGIC_GLOBAL) | (interp == LOGIC_LOCAL)
    out["flags"] = np.where(generated | (interp == BOTH_VALID), profiledb.IS_PHYSICAL, 0)
    out["logicalId"] = rows["logical"] & np.uint64(0xFFFFFFFF)
    phys = rows["physical"].astype(np.uint64)
    out["physicalId"] = phys
    if not generated.any():
        return Ragged(out, raw.offsets)
    del generated
    level = np.arange(n, dtype=np.int64)
    level -= np.repeat(raw.offsets[:-1], raw.lengths)
    level = level.astype(np.int32)
    prefix = np.zeros(n, np.int64)  # an id of the path above each row (0: none)
    next_id = 1
    for j in range(1, int(raw.lengths.max()) if n else 0):
        at = np.flatnonzero(level == j)
        ids, inverse = _distinct_rows(prefix[at - 1], k[at - 1], phys[at - 1])
        prefix[at] = next_id + inverse
        next_id += ids
        del at, inverse
    del level
    for mode in (LOGIC_GLOBAL, LOGIC_LOCAL):
        at = np.flatnonzero(interp == mode)
        group = k[at].astype(np.int64)
        if mode == LOGIC_LOCAL:
            group += prefix[at] * (ID_KIND_MASK + 1)
        out["logicalId"][at] = _dense_ranks(group, phys[at]) & np.uint64(0xFFFFFFFF)
    return Ragged(out, raw.offsets)


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


def canonical_order(profiles: ProfileTable, tuples: Ragged) -> tuple[ProfileTable, Ragged]:
    """Profiles and their finalized tuples in profile.db's order: by identifier tuple, compared as Python
    compares tuples of (kind, logical id, physical id) per level (a tuple before those it is a prefix of),
    then by path; sorted by columns (one key per level and field), then one ``take`` per column."""
    n = len(tuples)
    lengths = tuples.lengths
    keys: list[np.ndarray] = []  # most significant first
    for j in range(int(lengths.max()) if n else 0):
        has = lengths > j
        keys.append(has.astype(np.int8))  # a missing level sorts first
        at = tuples.offsets[:-1][has] + j  # the level's row of each profile that has it (none per row)
        for name in ("kind", "logicalId", "physicalId"):
            column = np.zeros(n, tuples.rows.dtype[name])
            column[has] = tuples.rows[name][at]
            keys.append(column)
        del has, at
    keys.append(profiles.inputs.path_order())
    order = np.lexsort(keys[::-1])
    del keys  # (a few per profile: not kept while the columns are reordered)
    tuples = tuples.take(order)  # (the caller passes the only reference: the unordered ones are let go)
    return profiles.take(order), tuples
