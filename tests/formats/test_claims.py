"""The first-claim pass of the statement map (:func:`hpcsa.formats.hpcstruct.claims.first_claims`): of ranges in
document order, keep those overlapping nothing kept before them, as hpcprof does."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.formats.hpcstruct import claims
from hpcsa.formats.hpcstruct.model import RANGE


def _ranges(rng: np.random.Generator, n: int, span: int, longest: int) -> np.ndarray:
    r = np.empty(n, RANGE)
    lo = rng.integers(0, span, n).astype(np.uint64)
    r["lo"] = lo
    r["hi"] = lo + rng.integers(1, longest, n).astype(np.uint64)
    r["scope"] = np.arange(n)
    return r


def _one_at_a_time(r: np.ndarray) -> list[tuple[int, int, int]]:
    kept: list[tuple[int, int, int]] = []
    for a, b, s in zip(r["lo"].tolist(), r["hi"].tolist(), r["scope"].tolist(), strict=True):
        if all(b <= x or y <= a for x, y, _ in kept):
            kept.append((a, b, s))
    return sorted(kept)


@pytest.mark.parametrize("small_cluster", [1, 4, claims.SMALL_CLUSTER])
@pytest.mark.parametrize("seed", range(12))
def test_first_claims_as_one_claim_at_a_time(seed: int, small_cluster: int, monkeypatch) -> None:
    """Small clusters settled in rounds, large ones claim by claim (the bound decides which): both give
    what claiming each range in document order gives, sorted by start."""
    monkeypatch.setattr(claims, "SMALL_CLUSTER", small_cluster)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    r = _ranges(rng, n, span=4 * n, longest=int(rng.integers(2, 60)))
    got = claims.first_claims(r)
    assert list(zip(got["lo"].tolist(), got["hi"].tolist(), got["scope"].tolist(), strict=True)) \
        == _one_at_a_time(r)


def test_rounds_are_bounded_by_the_cluster_size() -> None:
    """A chain of ranges each overlapping the next (in falling order) is one cluster: beyond the bound it goes
    through the claim set, whose moved elements are counted; within it, no claim set is used."""
    def chain(n: int) -> np.ndarray:
        r = np.empty(n, RANGE)
        r["lo"] = (n - 1 - np.arange(n, dtype=np.uint64)) * 2
        r["hi"] = r["lo"] + 3
        r["scope"] = np.arange(n)
        return r

    for n, uses_claim_set in ((3 * claims.SMALL_CLUSTER, True), (claims.SMALL_CLUSTER, False)):
        r = chain(n)
        moved = [0]
        got = claims.first_claims(r, moved)
        assert list(zip(got["lo"].tolist(), got["hi"].tolist(), got["scope"].tolist(), strict=True)) \
            == _one_at_a_time(r)
        assert (moved[0] > 0) == uses_claim_set


@pytest.mark.parametrize("block", [1, 3, 16, 1 << 13])
@pytest.mark.parametrize("seed", range(8))
def test_claims_by_address_as_first_claims(seed: int, block: int, monkeypatch) -> None:
    """Settled a block of address-sorted rows at a time (runs of whole clusters, a cluster going on past its
    block's end carried to the next, ranges alone in their cluster kept as they are): what first_claims of all
    of them gives, for any block size; candidates given as rows of a larger table."""
    monkeypatch.setattr(claims, "BLOCK", block)
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 500))
    table = _ranges(rng, n, span=int(rng.integers(n, 8 * n)), longest=int(rng.integers(2, 80)))
    rows = np.flatnonzero(rng.random(n) < 0.8)
    rows = rows[np.argsort(table["lo"][rows], kind="stable")]
    got = claims.claims_by_address(table, rows)
    assert got.tolist() == claims.first_claims(table[np.sort(rows)]).tolist()
    assert claims.claims_by_address(table, rows[:0]).tolist() == []


def test_claims_by_address_one_long_cluster(monkeypatch) -> None:
    """A cluster longer than many blocks (one range covering all the others) is settled whole."""
    monkeypatch.setattr(claims, "BLOCK", 4)
    r = np.empty(50, RANGE)
    r["lo"] = np.arange(50, dtype=np.uint64) * 2
    r["hi"] = r["lo"] + 1
    r["hi"][0] = 1000  # the first claims everything
    r["scope"] = np.arange(50)
    rows = np.argsort(r["lo"], kind="stable")
    assert claims.claims_by_address(r, rows).tolist() == [(0, 1000, 0)]
