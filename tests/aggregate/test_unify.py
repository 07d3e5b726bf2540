"""Class 2's canonical ids (:func:`phase1.unify.canonical_ids`) against the rule written out: a depth-first walk
from the global context, siblings in (relation, scope) order, ids in the order of the walk."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.aggregate import lexical as lx
from hpcsa.aggregate import metadb_tables
from hpcsa.aggregate.phase1 import unify as phase1_unify
from hpcsa.formats.db import metadb
from hpcsa.formats.db.metadb_model import CALL
from hpcsa.formats.measurement.placeholders import FENCE_MAIN


def _random_builder(seed: int, n: int) -> phase1_unify.ContextBuilder:
    """Contexts created in a random order below random earlier ones, with scopes of every kind that share
    names, files and lines (so siblings are often ordered by a later field of their tuples)."""
    rng = np.random.default_rng(seed)
    names, files = ["main", "f", "g", "operator<<", ""], ["a.c", "b.h", ""]

    def scope() -> lx.Scope:
        kind = int(rng.integers(0, 6))
        if kind == lx.UNKNOWN_KIND:
            return lx.UNKNOWN
        if kind == lx.PLACEHOLDER:
            return lx.placeholder_scope(int(rng.integers(0, 3)))
        if kind == lx.FUNCTION:
            return lx.function_scope(str(rng.choice(names)), "libx.so", int(rng.integers(-1, 3)),
                                     str(rng.choice(files)), int(rng.integers(-1, 4)))
        if kind == lx.LOOP:
            return (lx.LOOP, str(rng.choice(files)), int(rng.integers(1, 4)), "libx.so", int(rng.integers(0, 3)))
        if kind == lx.LINE:
            return (lx.LINE, str(rng.choice(files)), int(rng.integers(1, 6)))
        return lx.point_scope("libx.so", int(rng.integers(0, 40)))

    b = phase1_unify.ContextBuilder()
    while len(b) < n:
        parent = int(rng.integers(0, len(b)))
        if rng.random() < 0.6:  # deep chains too
            parent = len(b) - 1
        b.ensure(parent, int(rng.integers(0, 3)), scope())
    return b


def _walk(b: phase1_unify.ContextBuilder) -> list[int]:
    children: dict[int, list[int]] = {}
    for node in range(1, len(b)):
        children.setdefault(b.parent[node], []).append(node)
    order: list[int] = []

    def visit(node: int) -> None:
        order.append(node)
        for kid in sorted(children.get(node, []), key=lambda c: (b.relation[c], b.scope[c])):
            visit(kid)

    visit(0)
    return order


@pytest.mark.parametrize(("seed", "n"), [(1, 1), (2, 2), (3, 40), (4, 700), (5, 3000)])
def test_canonical_ids_are_the_sorted_depth_first_walk(seed: int, n: int) -> None:
    b = _random_builder(seed, n)
    tree, new_id = phase1_unify.canonical_ids(b)
    order = _walk(b)
    assert len(tree) == len(b) == len(order)
    assert new_id.tolist() == np.argsort(order).tolist()  # the walk's position of each provisional context
    assert tree.scopes == [b.scope[o] for o in order]
    assert tree.relation.tolist() == [b.relation[o] for o in order]
    assert tree.parent.tolist() == [-1] + [int(new_id[b.parent[o]]) for o in order[1:]]
    depth = {0: 0}
    for o in order[1:]:
        depth[o] = depth[b.parent[o]] + 1
    assert tree.depth.tolist() == [depth[o] for o in order]
    for c in range(len(tree)):  # pre-order: a subtree is the id range c .. end[c]-1, and nothing else is
        inside = np.arange(c + 1, int(tree.end[c]))
        up = tree.parent[inside]
        assert ((up >= c) & (up < tree.end[c])).all()
        after = tree.parent[int(tree.end[c]):]
        assert not ((after >= c) & (after < tree.end[c])).any()


@pytest.mark.parametrize(("seed", "n"), [(6, 2), (7, 60), (8, 3000)])
def test_meta_tables_rows_are_the_preorder_of_meta_db(seed: int, n: int) -> None:
    """meta_tables hands its rows over as meta.db's pre-order with their depth (no second walk): walking the
    same columns from their parent links gives the same rows in the same order, at the same depths."""
    b = _random_builder(seed, n)
    entries = phase1_unify.ContextBuilder()  # meta.db's entry points below the global context, the rest below them
    tops = [entries.ensure(0, CALL, lx.UNKNOWN), entries.ensure(0, CALL, lx.placeholder_scope(FENCE_MAIN))]
    new = {0: 0}
    for node in range(1, len(b)):
        up = tops[node % 2] if b.parent[node] == 0 else new[b.parent[node]]
        new[node] = entries.ensure(up, b.relation[node], b.scope[node])
    tree, _ = phase1_unify.canonical_ids(entries)
    ctree = metadb_tables.meta_tables(tree)[0]
    assert len(ctree) == len(tree) - 3
    columns = {c: getattr(ctree, c) for c in metadb.CONTEXT_COLUMNS if c != "depth"}
    walked = metadb.ContextTree.from_columns(ctree.entry_points, **columns)
    for c in metadb.CONTEXT_COLUMNS:
        assert np.array_equal(getattr(walked, c), getattr(ctree, c)), c
