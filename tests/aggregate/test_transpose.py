"""Phase 3's reads of the scratch files: range bounds in the runs' context indexes
(:func:`phase3.transpose.bound_positions`) and the aside entries of a range (:class:`phase3.transpose.AsideBlobs`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate.handoff import ASIDE, Placement
from hpcsa.aggregate.phase3 import summary as phase3_summary
from hpcsa.aggregate.phase3 import transpose as phase3_transpose
from hpcsa.formats.db.profiledb import CTX_INDEX


def _write(path: Path, blobs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The record arrays written one after the other, a few bytes apart (as blobs in a scratch file);
    (offsets, counts)."""
    offsets, parts, at = [], [], 0
    for rec in blobs:
        offsets.append(at)
        parts += [rec.tobytes(), b"\xff" * 8]
        at += rec.nbytes + 8
    path.write_bytes(b"".join(parts))
    return np.array(offsets, np.int64), np.array([len(r) for r in blobs], np.int64)


def _sorted_keys(rng: np.random.Generator, n_ctx: int, regions: int) -> list[np.ndarray]:
    keys = [np.sort(rng.choice(n_ctx, size=int(rng.integers(0, 400)), replace=False)) for _ in range(regions)]
    return keys + [np.arange(n_ctx - 50, n_ctx), np.arange(10), np.array([n_ctx // 2]), np.arange(0, n_ctx, 7)]


@pytest.mark.parametrize("share", [0.0, 0.05, 1.0])
@pytest.mark.parametrize("known_start", [False, True])
def test_bound_positions_are_each_regions_searchsorted(tmp_path: Path, share: float, known_start: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions equal np.searchsorted in every region (more regions than are searched at once), whether the
    first guess of how far to read is far too short, about right or everything, and when reading starts at
    the known position of the first bound."""
    monkeypatch.setattr(phase3_transpose, "MIN_READ", 1)
    monkeypatch.setattr(phase3_transpose, "SEARCH_REGIONS", 16)
    rng = np.random.default_rng(7)
    keys = _sorted_keys(rng, 5000, 60)
    recs = []
    for k in keys:
        rec = np.zeros(len(k), CTX_INDEX)
        rec["ctxId"], rec["startIndex"] = k, np.arange(len(k))
        recs.append(rec)
    offsets, counts = _write(tmp_path / "index.scratch", recs)
    bounds = np.array([2500, 2600, 3100, 4200, 4999, 5000])
    expect = np.array([np.searchsorted(k, bounds) for k in keys])
    start = np.array([np.searchsorted(k, bounds[0]) for k in keys]) if known_start else None
    fd = os.open(tmp_path / "index.scratch", os.O_RDONLY)
    try:
        got = phase3_transpose.bound_positions(fd, offsets, counts, CTX_INDEX, "ctxId", bounds, start, share, np.uint16)
    finally:
        os.close(fd)
    assert got.dtype == np.uint16 and (got == expect).all()


def test_aside_entries_of_a_range_are_those_of_its_contexts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A range's aside entries are every aside run's entries for its contexts, in profile order (each
    profile's by context and key); a window reads only the runs with entries in it, once, and cuts its ranges
    from that."""
    rng = np.random.default_rng(11)
    keys = _sorted_keys(rng, 3000, 30)
    runs = []
    prof = 1
    for k in keys:  # a run: a batch of 1-3 consecutive profiles, sorted by (context, key, profile)
        n_prof = int(rng.integers(1, 4))
        rec = np.zeros(len(k) * n_prof, ASIDE)
        rec["ctx"] = np.repeat(k, n_prof)
        rec["key"] = np.repeat(rng.integers(0, 8, len(k)), n_prof)
        rec["prof"] = np.tile(np.arange(prof, prof + n_prof), len(k))
        rec["value"] = rng.random(len(rec))
        runs.append(rec[np.lexsort((rec["prof"], rec["key"], rec["ctx"]))])
        prof += n_prof
    runs.insert(5, np.zeros(0, ASIDE))  # a batch without aside entries
    path = tmp_path / "aside.scratch"
    offsets, counts = _write(path, runs)
    zeros = np.zeros(len(runs), np.int64)
    place = Placement(zeros, zeros, np.arange(len(runs) + 1), zeros, zeros, zeros, zeros, offsets, counts)
    aside = phase3_transpose.AsideBlobs(str(path), place)
    real = phase3_transpose.read_slices
    slices: list[int] = []

    def counted(fd: int, at: np.ndarray, nbytes: np.ndarray) -> bytes:
        slices.append(len(at))
        assert (nbytes > 0).all()
        return real(fd, at, nbytes)

    windows = np.array([0, 1000, 3000])  # the bounds the passes search
    ranges = [np.array([0, 7, 1000]), np.array([1000, 1001, 2990, 3000])]  # the ranges of each window
    everything = np.concatenate(runs)
    everything = everything[np.lexsort((everything["key"], everything["ctx"], everything["prof"]))]
    try:
        pos = aside.positions(windows)
        monkeypatch.setattr(phase3_transpose, "read_slices", counted)
        for w, inner in enumerate(ranges):
            win = aside.window(pos[:, w], pos[:, w + 1], inner)
            assert slices[-1] == sum(1 for b in runs if ((b["ctx"] >= windows[w]) & (b["ctx"] < windows[w + 1])).any())
            for k in range(len(inner) - 1):
                ctx, key, prof, value = win.range(k)
                want = everything[(everything["ctx"] >= inner[k]) & (everything["ctx"] < inner[k + 1])]
                assert prof.tolist() == want["prof"].tolist()
                assert ctx.tolist() == want["ctx"].tolist()
                assert key.tolist() == want["key"].tolist()
                assert value.tolist() == want["value"].tolist()
    finally:
        aside.close()


@pytest.mark.parametrize("seed", range(20))
def test_positions_in_groups_are_each_groups_searchsorted(seed: int) -> None:
    """positions_in counts, for every group of sorted keys at once, the keys below each edge."""
    rng = np.random.default_rng(seed)
    groups = [np.sort(rng.choice(1 << 31, size=int(rng.integers(0, 30)), replace=False)) for _ in range(12)]
    edges = np.sort(rng.choice(1 << 31, size=5, replace=False))
    counts = np.array([len(g) for g in groups], np.int64)
    keys = np.concatenate(groups).astype(np.uint32)
    got = phase3_transpose.positions_in(keys, counts, edges)
    assert got.tolist() == [np.searchsorted(g, edges).tolist() for g in groups]


@pytest.mark.parametrize("seed", range(40))
def test_aside_only_pairs_count_their_profiles(seed: int) -> None:
    """(context, metric) pairs that only aside entries carry (no stored value block), each with the number of
    distinct profiles naming it: against sets worked out one entry at a time."""
    rng = np.random.default_rng(seed)
    nb, na = int(rng.integers(0, 30)), int(rng.integers(1, 80))
    stored = sorted({(int(c), int(m)) for c, m in zip(rng.integers(0, 20, nb), rng.integers(0, 4, nb), strict=True)})
    b_ctx = np.array([c for c, _ in stored], np.int64)
    b_metric = np.array([m for _, m in stored], np.int64)
    a_ctx, a_metric = rng.integers(0, 20, na).astype(np.int64), rng.integers(0, 4, na).astype(np.int64)
    a_prof = rng.integers(0, 6, na).astype(np.int32)
    profiles: dict[tuple[int, int], set[int]] = {}
    for c, m, p in zip(a_ctx.tolist(), a_metric.tolist(), a_prof.tolist(), strict=True):
        if (c, m) not in set(stored):
            profiles.setdefault((c, m), set()).add(p)
    ctx, metric, count = phase3_summary._aside_only(b_ctx, b_metric, a_ctx, a_metric, a_prof)
    got = list(zip(ctx.tolist(), metric.tolist(), count.tolist(), strict=True))
    assert got == [(c, m, float(len(ps))) for (c, m), ps in sorted(profiles.items())]


@pytest.mark.parametrize(("group", "most"), [(1, 1 << 20), (3, 1 << 20), (256, 1 << 20), (256, 1), (256, 1000)])
def test_read_slices_are_the_slices_one_after_the_other(tmp_path: Path, group: int, most: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The slices come back joined in their order, whatever the number and bytes of slices read at once; a
    slice that runs past the end of the file is an error, not a short buffer."""
    monkeypatch.setattr(phase3_transpose, "READ_GROUP", group)
    monkeypatch.setattr(phase3_transpose, "READ_BYTES", most)
    data = np.random.default_rng(5).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    path = tmp_path / "scratch"
    path.write_bytes(data)
    at = np.array([4000, 0, 17, 17, 2500, 4990, 100])
    nbytes = np.array([10, 5, 0, 300, 1000, 10, 1])
    fd = os.open(path, os.O_RDONLY)
    try:
        got = phase3_transpose.read_slices(fd, at, nbytes)
        assert bytes(got) == b"".join(data[a:a + n] for a, n in zip(at.tolist(), nbytes.tolist(), strict=True))
        assert bytes(phase3_transpose.read_slices(fd, at[:0], nbytes[:0])) == b""
        with pytest.raises(EOFError):
            phase3_transpose.read_slices(fd, np.array([0, 4995, 10]), np.array([5, 10, 5]))
    finally:
        os.close(fd)


@pytest.mark.parametrize(("n_ctx", "first_ctx", "n_mid"), [(5, 0, 4), (40, 2_863_311_511, 3), (70_000, 100, 65_000)])
def test_gather_merges_the_runs_into_context_metric_profile_order(n_ctx: int, first_ctx: int, n_mid: int) -> None:
    """A range's values from several runs (each sorted by context, metric, profile; the runs in profile order)
    come out sorted by (context, metric, profile), each value with its own profile and value: checked against
    a lexsort, for keys that fit 32 bits and for keys that do not (many contexts times many metric ids). The
    second case's context ids times 3 cross 2 * 2**32: a key not taken relative to the range's first context
    would wrap there."""
    from hpcsa.aggregate.handoff import RUN_VALUE

    rng = np.random.default_rng(n_ctx)
    runs = []
    for r in range(3):  # run r holds profiles 100 r .. 100 r + 99
        n = 2000
        rec = np.zeros(n, RUN_VALUE)
        ctx = first_ctx + rng.integers(0, n_ctx, n)
        rec["mid"] = rng.integers(0, n_mid, n)
        rec["prof"] = 100 * r + rng.integers(0, 100, n)
        rec["value"] = rng.random(n)
        order = np.lexsort((rec["prof"], rec["mid"], ctx))
        ctx, rec = ctx[order], rec[order]
        keep = np.ones(n, bool)  # one value per (context, metric, profile)
        keep[1:] = (np.diff(ctx) != 0) | (np.diff(rec["mid"].astype(np.int64)) != 0) | (np.diff(rec["prof"]) != 0)
        runs.append((ctx[keep], rec[keep]))
    cids, starts, counts, n_vals = [], [], [], []
    for ctx, rec in runs:
        first = np.flatnonzero(np.r_[True, np.diff(ctx) != 0])
        cids.append(ctx[first].astype(np.uint32))
        starts.append(first.astype(np.int64))
        counts.append(len(first))
        n_vals.append(len(rec))
    count = np.array(counts, np.int64)
    values = np.array(n_vals, np.int64)
    win = phase3_transpose.Window(np.arange(3), np.zeros(3, np.int64), count, np.cumsum(count) - count,
                                  np.concatenate(cids), np.concatenate(starts), np.zeros(3, np.int64), values,
                                  np.cumsum(values) - values, np.concatenate([rec for _, rec in runs]))
    got = phase3_transpose.gather(win, np.zeros(3, np.int64), count)
    ctx = np.concatenate([c for c, _ in runs]).astype(np.int64)
    rec = np.concatenate([r for _, r in runs])
    want = np.lexsort((rec["prof"], rec["mid"], ctx))
    assert got.ctx_ids.tolist() == ctx[want].tolist()
    assert got.metric_ids.tolist() == rec["mid"][want].tolist()
    assert got.prof_indices.tolist() == rec["prof"][want].tolist()
    assert got.values.tolist() == rec["value"][want].tolist()
