"""The union of measured trees (aggregate/rawtree.py): one row per distinct path, in any grouping.

Expectations are computed independently: a node's path is spelled out in Python as the tuple of (kind,
flag, module, ip) from its root, and the union must hold exactly one row per distinct path.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.aggregate import rawtree


def _forest(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """A random forest in parent-first order over a small alphabet (so that profiles share many paths)."""
    parent = np.array([-1 if i == 0 or rng.random() < 0.05 else int(rng.integers(0, i)) for i in range(n)],
                      np.int64)
    kind = rng.integers(0, 2, n).astype(np.uint8)
    flag = rng.integers(0, 2, n).astype(np.uint8)
    module = rng.integers(1, 3, n).astype(np.uint64)
    ip = rng.integers(0, 4, n).astype(np.uint64)
    return parent, kind, flag, module, ip


def _paths(parent: np.ndarray, *fields: np.ndarray) -> set[tuple[tuple[int, ...], ...]]:
    out: list[tuple[tuple[int, ...], ...]] = []
    for i in range(len(parent)):
        step = tuple(int(f[i]) for f in fields)
        out.append((out[parent[i]] if parent[i] >= 0 else ()) + (step,))
    return set(out)


def _profiles(seed: int, count: int) -> tuple[list[rawtree.RawNodes], set[tuple[tuple[int, ...], ...]]]:
    rng = np.random.default_rng(seed)
    parts, paths = [], set()
    for _ in range(count):
        parent, *fields = _forest(rng, int(rng.integers(1, 60)))
        parts.append(rawtree.RawNodes(rawtree.make_nodes(parent, *fields)))
        paths |= _paths(parent, *fields)
    return parts, paths


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_union_has_one_row_per_path_in_any_grouping(seed: int) -> None:
    parts, paths = _profiles(seed, 24)
    flat = rawtree.union(parts)
    assert flat.is_union and len(flat) == len(paths)
    h1 = flat.nodes["h1"]
    assert (h1[1:] > h1[:-1]).all()  # sorted, unique
    # A running union merged with new parts (only what is new to it is inserted), and nested groupings.
    running = rawtree.union(parts[:5])
    for i in range(5, len(parts), 4):
        running = rawtree.union([running, *parts[i:i + 4]])
    nested = rawtree.union([rawtree.union(parts[12:]), rawtree.union(parts[:12])])
    for other in (running, nested):
        assert other.is_union
        assert np.array_equal(other.nodes, flat.nodes)
    # Every profile finds each of its nodes in the union.
    for p in parts:
        assert (rawtree.find(h1, p.nodes["h1"], flat.nodes["h2"], p.nodes["h2"]) >= 0).all()


def test_union_refuses_a_hash_collision_against_the_running_union() -> None:
    parts, _ = _profiles(4, 6)
    running = rawtree.union(parts)
    forged = running.nodes[:1].copy()
    forged["ip"] += np.uint64(1)  # the same hash for another path
    with pytest.raises(rawtree.HashCollision):
        rawtree.union([running, rawtree.RawNodes(forged)])
    with pytest.raises(rawtree.HashCollision):
        rawtree.union([rawtree.RawNodes(running.nodes[:3].copy()), rawtree.RawNodes(forged)])
