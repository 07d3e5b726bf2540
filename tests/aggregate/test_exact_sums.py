"""Phase 2's propagation with exact prefix sums for whole-number metrics (:mod:`hpcsa.aggregate.phase2.exact_sums`)
gives the rows and bits of :func:`hpcsa.formats.db.propagate.propagate`, for any mix of whole-number metrics
(counts, which take the prefix sums), real ones, zeros and duplicates."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.aggregate.phase2 import exact_sums
from hpcsa.formats.db.propagate import Propagated, TreeArrays, propagate
from tests.formats.trees import preorder


def _count_general(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The points of each call of the general propagation from here on (its real result returned)."""
    general: list[int] = []

    def counted(*args: object) -> Propagated:
        general.append(len(args[0]))  # type: ignore[arg-type]
        return propagate(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(exact_sums, "propagate", counted)
    return general


def _tree(rng: np.random.Generator, n: int) -> TreeArrays:
    parent = np.array([-1] + [int(rng.integers(0, c)) for c in range(1, n)], np.int64)
    _, par, depth, end = preorder(parent)
    is_call = rng.random(n) < 0.3
    is_loop = ~is_call & (rng.random(n) < 0.3)
    is_call[0] = is_loop[0] = False
    return TreeArrays.build(par, depth, is_call, is_loop, end)


def _same(got: Propagated, want: Propagated) -> None:
    for name in Propagated.__dataclass_fields__:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("seed", range(30))
def test_the_same_rows_and_bits_as_the_general_propagation(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    tree = _tree(rng, int(rng.integers(2, 120)))
    n_ctx = len(tree.parent)
    n = int(rng.integers(0, 600))
    prof = np.sort(rng.integers(0, int(rng.integers(1, 9)), n))
    ctx = rng.integers(0, n_ctx, n)
    metric = rng.integers(0, 7, n)
    value = rng.integers(-50, 10**6, n).astype(np.float64)  # whole numbers, some negative
    real = metric % 3 == 2
    value[real] = rng.random(int(real.sum())) * 1e3  # real-valued metrics
    value[rng.random(n) < 0.02] = 0.0
    value[rng.random(n) < 0.01] = -0.0
    if seed % 5 == 0:
        value[metric == 1] = 2.0**52  # whole numbers too large to add exactly: the general sums
    if seed % 4 == 1:  # dense blocks of a few series at a time
        monkeypatch.setattr(exact_sums, "DENSE_CELLS", 3 * n_ctx)
    _same(exact_sums.propagate_batch(ctx, metric, value, tree, prof), propagate(ctx, metric, value, tree, prof))


@pytest.mark.parametrize("seed", range(20))
def test_real_valued_series_of_one_point_give_the_same_rows_and_bits(seed: int, monkeypatch: pytest.MonkeyPatch
                                                                      ) -> None:
    """A real-valued metric whose series (profile, metric) have one point each (a GPU stream's CPU time) takes
    the prefix sums (the general propagation is not called) with its bits; the general propagation takes
    every real point where some series have two points, a zero or an infinity, and the whole batch where the
    dense matrix does not pay; the same bits in every case."""
    rng = np.random.default_rng(100 + seed)
    tree = _tree(rng, int(rng.integers(2, 120)))
    n_ctx = len(tree.parent)
    n_prof = int(rng.integers(1, 40))
    n_counts = int(rng.integers(0, 400))
    prof = np.concatenate([np.arange(n_prof), rng.integers(0, n_prof, n_counts)])
    ctx = rng.integers(0, n_ctx, len(prof))
    metric = np.concatenate([np.ones(n_prof, np.int64), np.zeros(n_counts, np.int64)])
    value = np.concatenate([rng.random(n_prof) * 1e3 - 200.0, rng.integers(1, 10**6, n_counts).astype(np.float64)])
    mixed = seed % 2 == 1
    if mixed:  # a second point in a few series, and a zero, -0.0 or an infinity in others
        extra = rng.integers(0, n_prof, 3)
        prof = np.concatenate([prof, extra])
        ctx = np.concatenate([ctx, rng.integers(0, n_ctx, 3)])
        metric = np.concatenate([metric, np.ones(3, np.int64)])
        value = np.concatenate([value, rng.random(3)])
        special = [0.0, -0.0, np.inf] * 2
        for k, v in zip(rng.choice(n_prof, min(n_prof, 6), replace=False).tolist(), special, strict=False):
            value[k] = v  # (as many as there are profiles, up to 6)
    order = np.argsort(prof, kind="stable")
    prof, ctx, metric, value = prof[order], ctx[order], metric[order], value[order]
    want = propagate(ctx, metric, value, tree, prof)
    general = _count_general(monkeypatch)
    too_many = seed % 4 == 2
    if too_many:  # (a matrix of even one series would not pay)
        monkeypatch.setattr(exact_sums, "DENSE_FREE", n_ctx - 1)
        monkeypatch.setattr(exact_sums, "DENSE_PER_POINT", 0)
    _same(exact_sums.propagate_batch(ctx, metric, value, tree, prof), want)
    if mixed:
        assert general == [n_prof + 3]  # every point of the real metric
    elif too_many:
        assert general == [len(prof)]
    else:
        assert not general  # every series of the real metric has one point: no general propagation


def _deep_tree(n: int) -> TreeArrays:
    """A chain 0 - 1 - ... - n-1 (every context an ancestor of the next): a point at the last context has a
    closure of every context."""
    parent = np.arange(-1, n - 1, dtype=np.int64)
    _, par, depth, end = preorder(parent)
    return TreeArrays.build(par, depth, np.zeros(n, bool), np.zeros(n, bool), end)


@pytest.mark.parametrize("block", [2, 3, 5, 8])
@pytest.mark.parametrize("real", [False, True])
def test_a_profile_whose_series_fill_several_dense_blocks_keeps_its_rows_in_context_order(
        real: bool, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every point takes the prefix sums (whole numbers, or one real-valued point per series) and each profile
    has 4 series; a dense block holds ``block`` series: with 2, a profile's rows of metrics 0 and 6 come from
    one block, those of 38 and 42 from the next, and must still come by (profile, context, metric) (a real
    Nsight Systems export's GPU streams: four one-point series at one context per profile); with 5 and 8,
    the blocks hold whole profiles."""
    tree = _deep_tree(5)
    monkeypatch.setattr(exact_sums, "DENSE_CELLS", block * len(tree.parent))
    n_prof = 3
    prof = np.repeat(np.arange(n_prof), 4)
    metric = np.tile([0, 6, 38, 42], n_prof)
    ctx = np.full(len(prof), 4)
    value = np.arange(1.0, len(prof) + 1) * (1e-4 if real else 1.0)
    got = exact_sums.propagate_batch(ctx, metric, value, tree, prof)
    assert np.all(np.diff((got.prof * 5 + got.ctx) * 43 + got.metric) > 0)  # sorted (hand-checked key)
    assert len(got.ctx) == n_prof * 5 * 4  # every context of the chain, with each metric
    _same(got, propagate(ctx, metric, value, tree, prof))


@pytest.mark.parametrize("per_series", [1, 400])
def test_a_large_tree_with_few_points_takes_the_general_propagation(per_series: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Three whole-number series in a tree of 20,000 contexts: with one point each, the dense matrix (60,000
    cells) would be large for 3 points (DENSE_FREE + 3 * DENSE_PER_POINT cells pay), and the general
    propagation takes them; with 400 points each it pays (and is taken). The same rows and bits either way."""
    rng = np.random.default_rng(7)
    n_ctx = 20_000
    tree = _tree(rng, n_ctx)
    n = 3 * per_series
    prof = np.repeat(np.arange(3), per_series)
    metric = np.zeros(n, np.int64)
    ctx = rng.integers(0, n_ctx, n)
    value = rng.integers(1, 1000, n).astype(np.float64)
    assert 3 * n_ctx > exact_sums.DENSE_FREE + 3 * exact_sums.DENSE_PER_POINT
    assert 3 * n_ctx <= exact_sums.DENSE_FREE + 1200 * exact_sums.DENSE_PER_POINT
    want = propagate(ctx, metric, value, tree, prof)
    general = _count_general(monkeypatch)
    _same(exact_sums.propagate_batch(ctx, metric, value, tree, prof), want)
    assert general == ([3] if per_series == 1 else [])
