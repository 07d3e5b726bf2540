"""The four-scope propagation rule (:mod:`hpcsa.formats.db.propagate`) against hand-computed values, its
choices (:class:`ScopeRule`) one at a time, and an independent oracle on random trees."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.formats.db import metadb
from hpcsa.formats.db.propagate import (
    HPCPROF_RULE,
    Propagated,
    ScopeRule,
    TreeArrays,
    propagate,
    propagate_scopes,
)
from tests.formats.trees import preorder
from tests.views import synthetic

# A tree with every case, ids in pre-order, and the point value measured at each context:
#
#   0 root                            = 128
#   1   entry            (call)       = 256
#   2     main           (call)       = 1
#   3       loop L1                          no value of its own; holds a loop with one
#   4         line a                  = 2
#   5           f        (call)       = 4
#   6         loop L2                 = 8    a value of its own
#   7           line b                = 16
#   8       g            (inlined)
#   9         line c                  = 32
#  10       loop L3                          no value of its own, nor anything but a nested loop
#  11         loop L4                        no value of its own, no nested loop
#  12           line d                = 64
PARENT = np.array([-1, 0, 1, 2, 3, 4, 3, 6, 2, 8, 2, 10, 11])
DEPTH = np.array([0, 1, 2, 3, 4, 5, 4, 5, 3, 4, 3, 4, 5])
CALL = np.isin(np.arange(13), [1, 2, 5, 8])  # entered by a call or an inlined call
LOOP = np.isin(np.arange(13), [3, 6, 10, 11])
POINTS = {0: 128.0, 1: 256.0, 2: 1.0, 4: 2.0, 5: 4.0, 6: 8.0, 7: 16.0, 9: 32.0, 12: 64.0}

# By hand, per context 0..12:
POINT = [128, 256, 1, 0, 2, 4, 8, 16, 0, 32, 0, 0, 64]
EXECUTION = [511, 383, 127, 30, 6, 4, 24, 16, 32, 32, 64, 64, 64]
# without crossing a call or inlined-call edge: line a leaves f out, main leaves g out, the root the entry
FUNCTION = [128, 256, 91, 26, 2, 4, 24, 16, 32, 32, 64, 64, 64]
# a loop's loop-free sum: L1 = itself + line a (not L2, not f), L3 = nothing (L4 is a loop)
NOLOOPS = {3: 2, 6: 24, 10: 0, 11: 64}
# hpcprof's thread lex_aware: a loop without a value of its own (L1, L3, L4) reports its function sum
LEX_AWARE_HPCPROF = FUNCTION
# the definition: every loop its loop-free sum
LEX_AWARE_EVERY_LOOP = [NOLOOPS.get(c, f) for c, f in enumerate(FUNCTION)]


def _tree() -> TreeArrays:
    end = np.arange(len(PARENT)) + 1
    for c in range(len(PARENT) - 1, 0, -1):
        end[PARENT[c]] = max(end[PARENT[c]], end[c])
    return TreeArrays.build(PARENT, DEPTH, CALL, LOOP, end)


def _points() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ctx = np.array(list(POINTS), np.int64)
    return ctx, np.zeros(len(ctx), np.int64), np.array(list(POINTS.values()))


def _by_context(p: Propagated, scope: str) -> list[float]:
    assert p.ctx.tolist() == list(range(13)) and set(p.metric.tolist()) == {0}
    return getattr(p, scope).tolist()


def test_hpcprof_rule_by_hand() -> None:
    p = propagate(*_points(), _tree())
    assert _by_context(p, "point") == POINT
    assert _by_context(p, "execution") == EXECUTION
    assert _by_context(p, "function") == FUNCTION
    assert _by_context(p, "lex_aware") == LEX_AWARE_HPCPROF
    assert [p.noloops[c] for c in NOLOOPS] == list(NOLOOPS.values())
    # the loop-free sums the thread values do not carry, kept aside for the summary: L1 and L3 (L4's equals
    # its function sum)
    assert np.flatnonzero(p.aside).tolist() == [3, 10]


def test_propagate_is_propagate_scopes_under_hpcprofs_rule() -> None:
    a = propagate(*_points(), _tree())
    b = propagate_scopes(*_points(), _tree(), None, HPCPROF_RULE)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in Propagated.__dataclass_fields__)


def test_every_loop_its_loop_free_sum() -> None:
    p = propagate_scopes(*_points(), _tree(), rule=ScopeRule(loops_need_own_value=False))
    assert _by_context(p, "lex_aware") == LEX_AWARE_EVERY_LOOP
    assert _by_context(p, "function") == FUNCTION and _by_context(p, "execution") == EXECUTION
    assert not p.aside.any()  # the thread values carry every loop-free sum


def test_loop_with_a_value_of_its_own_is_the_same_under_both() -> None:
    hp = propagate(*_points(), _tree())
    every = propagate_scopes(*_points(), _tree(), rule=ScopeRule(loops_need_own_value=False))
    assert hp.lex_aware[6] == every.lex_aware[6] == 24


def test_execution_only_contexts_keep_point_and_execution() -> None:
    top = np.isin(np.arange(13), [0, 1])
    p = propagate_scopes(*_points(), _tree(), rule=ScopeRule(execution_only=top))
    assert _by_context(p, "point") == POINT and _by_context(p, "execution") == EXECUTION
    assert _by_context(p, "function") == [0, 0, *FUNCTION[2:]]
    assert _by_context(p, "lex_aware") == [0, 0, *LEX_AWARE_HPCPROF[2:]]


def test_the_summation_order() -> None:
    """Three terms under the root whose sum depends on the order: by id one after the other, or by rank."""
    parent, depth = np.array([-1, 0, 0, 0]), np.array([0, 1, 1, 1])
    no = np.zeros(4, bool)
    tree = TreeArrays.build(parent, depth, no, no, np.array([4, 2, 3, 4]))
    ctx, met, val = np.array([1, 2, 3]), np.zeros(3, np.int64), np.array([-1e16, 1e16, 1.0])
    assert propagate(ctx, met, val, tree).execution[0] == 1.0  # (-1e16 + 1e16) + 1
    ranked = ScopeRule(sum_rank=np.array([0, 3, 1, 2]))  # 1e16, then 1 (lost beside it), then -1e16
    assert propagate_scopes(ctx, met, val, tree, rule=ranked).execution[0] == 0.0


def test_profiles_and_metrics_stay_apart_under_a_rule() -> None:
    ctx, _, val = _points()
    rule = ScopeRule(loops_need_own_value=False, execution_only=np.isin(np.arange(13), [0, 1]),
                     sum_rank=np.arange(13)[::-1].copy())
    alone = propagate_scopes(ctx, np.zeros(len(ctx), np.int64), val, _tree(), rule=rule)
    n = len(ctx)
    both = propagate_scopes(np.tile(ctx, 2), np.r_[np.zeros(n, np.int64), np.full(n, 3)], np.r_[val, val * 2],
                            _tree(), np.r_[np.zeros(n, np.int64), np.ones(n, np.int64)], rule)
    assert both.prof.tolist() == [0] * 13 + [1] * 13 and set(both.metric[13:].tolist()) == {3}
    for scope in ("point", "function", "lex_aware", "execution"):
        assert getattr(both, scope)[:13].tolist() == getattr(alone, scope).tolist()
        assert getattr(both, scope)[13:].tolist() == (2 * getattr(alone, scope)).tolist()


@pytest.mark.parametrize("seed", range(4))
def test_every_loop_rule_matches_an_independent_oracle(seed: int) -> None:
    """Random trees (calls, inlined calls, nested loops), integer points (exact sums in any order):
    the oracle of tests/views/synthetic.py walks up level by level and gives every loop its loop-free sum."""
    rng = np.random.default_rng(seed)
    n = 300
    _order, parent, depth, end = preorder(np.r_[-1, [int(rng.integers(0, k)) for k in range(1, n)]])
    relation = rng.choice([metadb.LEXICAL, metadb.LEXICAL, metadb.CALL, metadb.INLINED_CALL], n)
    kind = rng.choice([metadb.LOOP, metadb.LINE, metadb.FUNCTION], n)
    relation[0] = metadb.LEXICAL
    tree = TreeArrays.build(parent, depth, relation != metadb.LEXICAL, kind == metadb.LOOP, end)
    point = np.where(rng.random(n) < 0.4, rng.integers(1, 1000, n), 0).astype(np.float64)
    want = synthetic.propagate(parent, depth, relation, kind, point)
    ctx = np.flatnonzero(point)
    p = propagate_scopes(ctx, np.zeros(len(ctx), np.int64), point[ctx], tree,
                         rule=ScopeRule(loops_need_own_value=False))
    for scope in ("point", "function", "lex_aware", "execution"):
        got = np.zeros(n)
        got[p.ctx] = getattr(p, scope)
        assert got.tolist() == want[scope][:, 0].tolist(), scope
