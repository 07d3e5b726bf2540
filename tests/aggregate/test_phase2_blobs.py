"""A phase 2 batch's blobs (:mod:`hpcsa.aggregate.phase2.values`): the PMS blobs (profile.db's thread blobs,
HPCToolkit's FORMATS.md: values ``{Val}`` of 10 bytes, padded to 4, then the context index ``{Idx}`` of 12)
and the run in cct.db's order, decoded byte by byte with ``struct`` and compared with what a plain Python
walk over the stored values gives."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from hpcsa.aggregate.phase2.values import pms_region, run_blob


def _stored(rng: np.random.Generator, n: int, n_ctx: int, n_ids: int) -> tuple[np.ndarray, ...]:
    """Distinct (profile, context, propMetricId) triples of ``n`` profiles (some with none), sorted, and values."""
    prof = rng.integers(0, n, 400)
    ctx = rng.integers(0, n_ctx, 400)
    mid = rng.integers(0, n_ids, 400)
    keys = sorted(set(zip(prof.tolist(), ctx.tolist(), mid.tolist(), strict=True)))
    p, c, m = (np.array([k[i] for k in keys], np.int64) for i in range(3))
    return p, c, m, rng.normal(size=len(keys)) * 1e3


@pytest.mark.parametrize("seed", range(8))
def test_pms_blobs_hold_each_profiles_values_then_its_context_index(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    prof, ctx, mid, val = _stored(rng, n, int(rng.integers(1, 30)), int(rng.integers(1, 90)))
    blob, n_values, n_ctxs = pms_region(prof, ctx, mid, val, n)
    at = 0
    for p in range(n):
        rows = [i for i in range(len(prof)) if prof[i] == p]
        assert n_values[p] == len(rows)
        for i in rows:
            assert struct.unpack_from("<Hd", blob, at) == (mid[i], val[i])
            at += 10
        assert blob[at:at + -at % 4] == bytes(-at % 4)  # zeros to a multiple of 4
        at += -at % 4
        firsts = [i for i in rows if i == rows[0] or ctx[i] != ctx[i - 1]]
        assert n_ctxs[p] == len(firsts)
        for i in firsts:
            assert struct.unpack_from("<IQ", blob, at) == (ctx[i], i - rows[0])
            at += 12
    assert at == len(blob) and isinstance(blob, bytes)


@pytest.mark.parametrize("n_ids", [1, 3, 64, 65, 200, 300, 5000])  # (5000: keys past 16 bits)
def test_the_run_is_the_values_by_context_metric_profile_with_its_index_and_bits(n_ids: int) -> None:
    rng = np.random.default_rng(n_ids)
    prof, ctx, mid, val = _stored(rng, 9, 40, n_ids)
    blob, n_run_ctxs, (uctx, per_ctx, (bctx, word, bits)) = run_blob(prof + 1, ctx, mid, val, n_ids)
    want = sorted(range(len(prof)), key=lambda i: (ctx[i], mid[i], prof[i]))
    at = 0
    for i in want:
        assert struct.unpack_from("<HId", blob, at) == (mid[i], prof[i] + 1, val[i])
        at += 14
    assert blob[at:at + -at % 8] == bytes(-at % 8)  # zeros to a multiple of 8
    at += -at % 8
    ctxs = sorted(set(ctx.tolist()))
    assert n_run_ctxs == len(ctxs) and uctx.tolist() == ctxs
    for c in ctxs:
        start = next(k for k, i in enumerate(want) if ctx[i] == c)
        assert struct.unpack_from("<IQ", blob, at) == (c, start)
        at += 12
    assert at == len(blob)
    assert per_ctx.tolist() == [int((ctx == c).sum()) for c in ctxs]
    words = sorted({(c, m // 64) for c, m in zip(ctx.tolist(), mid.tolist(), strict=True)})
    assert list(zip(bctx.tolist(), word.tolist(), strict=True)) == words
    for (c, w), b in zip(words, bits.tolist(), strict=True):
        assert b == sum(1 << (m % 64) for m in set(mid[ctx == c].tolist()) if m // 64 == w)


def test_an_empty_batch_gives_empty_blobs() -> None:
    z = np.zeros(0, np.int64)
    blob, n_values, n_ctxs = pms_region(z, z, z, np.zeros(0), 2)
    assert blob == b"" and n_values.tolist() == [0, 0] and n_ctxs.tolist() == [0, 0]
    run, n_ctx, (uctx, per_ctx, (bctx, word, bits)) = run_blob(z, z, z, np.zeros(0), 5)
    assert run == b"" and n_ctx == 0 and not len(uctx) and not len(bits)
