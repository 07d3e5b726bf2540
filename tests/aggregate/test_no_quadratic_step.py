"""No step of ``hpcsa prof`` is quadratic: work on 1x and 8x inputs, counted (operations), never timed.

Three sizes grow by 8: the profiles of a measurement (with a step between, so that fixed costs cancel out),
the ranges of a structure module whose statements overlap (the first-claim pass of its address map), and the
size of a structure module with the same few sampled statements (lazy expansion: the work follows the
samples, not the file).
"""

from __future__ import annotations

import cProfile
import pstats
import sys

import numpy as np

from hpcsa.aggregate import driver
from hpcsa.aggregate.inputs import find_inputs
from hpcsa.aggregate.lexical import StructExpander
from hpcsa.formats.hpcstruct.claims import first_claims
from hpcsa.formats.hpcstruct.model import RANGE, A, F, L, ModuleBuilder, P, S
from hpcsa.ingest.synth.replicate import replicate


def calls_of(fn, *args) -> int:
    """Function calls (Python and C) made by ``fn(*args)``: cProfile's count, the same on every machine."""
    prof = cProfile.Profile()
    prof.enable()
    fn(*args)
    prof.disable()
    return sum(stat[1] for stat in pstats.Stats(prof).stats.values())  # type: ignore[attr-defined]


def test_prof_work_grows_linearly_with_profiles(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "meas" / "loops-cputime-t.m"  # 4 thread profiles, with structure files
    work = {}
    for copies in (12, 32, 88):
        meas = tmp_path / f"x{copies}.m"
        replicate(src, meas, copies, seed=copies)
        opts = driver.Options(output=str(tmp_path / f"x{copies}.d"), jobs=1, progress=False)
        driver.aggregate(find_inputs([str(meas)]), opts)  # warm: parsed-structure cache, imports, lru caches
        opts = driver.Options(output=str(tmp_path / f"y{copies}.d"), jobs=1, progress=False)
        work[copies] = calls_of(driver.aggregate, find_inputs([str(meas)]), opts)
    # What one more copy of the profiles costs, from 12 to 32 copies and from 32 to 88 (the fixed costs cancel
    # out): the same for linear steps (per-batch costs not quite following the profiles; the runs read groups
    # of profiles with a few dozen calls per profile, so from 12 copies on, where the numbers of phase-1 and
    # phase-2 batches no longer change, not below); for a step quadratic in the profiles (a pass over all
    # profiles per profile) about (88 + 32) / (32 + 12) = 2.7 times. One Python call per pair of profiles
    # goes past 1.6.
    low, high = (work[32] - work[12]) / 20, (work[88] - work[32]) / 56
    assert high <= 1.6 * low, work
    assert low >= 50, work  # and the count does see the profiles (each is opened, read and checked)


def lines_of(fn, *args) -> int:
    """Python lines executed by ``fn(*args)`` (a loop over a module's rows counts each row) plus function
    calls made from Python code."""
    count = [0]

    def local(frame, event, arg):
        count[0] += 1
        return local

    def tracer(frame, event, arg):
        count[0] += 1
        return local

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return count[0]


def reversed_overlapping(n: int) -> np.ndarray:
    """``n`` statement ranges, each overlapping the next, given from the highest address down: every claim
    lands in front of all kept ranges (the worst case of one sorted list with insertions)."""
    r = np.empty(n, RANGE)
    r["lo"] = np.arange(n, dtype=np.uint64)[::-1] * 4
    r["hi"] = r["lo"] + np.uint64(6)
    r["scope"] = np.arange(n)
    return r


def random_overlapping(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = np.empty(n, RANGE)
    r["lo"] = rng.integers(0, 4 * n, n)
    r["hi"] = r["lo"] + rng.integers(1, 12, n).astype(np.uint64)
    r["scope"] = np.arange(n)
    return r


def test_first_claim_pass_work_grows_linearly():
    for make in (reversed_overlapping, lambda n: random_overlapping(n, 3)):
        work = {}
        for n in (4096, 8 * 4096):
            moved = [0]
            kept = first_claims(make(n), moved)
            assert np.all(kept["lo"][1:] >= kept["hi"][:-1])
            work[n] = moved[0]
        # One list with insertions moves ~n^2/2 elements here (64x for 8x the ranges); chunks bound the
        # elements moved per claim, so 8x the ranges may cost 8x (n log n: ~10x), never 64x.
        assert work[8 * 4096] <= 16 * max(work[4096], 4096), work


def module_of(procedures: int) -> tuple:
    """A module of ``procedures`` procedures, each with an inlined call holding a loop of statements."""
    b = ModuleBuilder("/lib/x.so")
    f = b.add(F, -1, file="/src/x.c")
    firsts = []
    for i in range(procedures):
        base = 0x1000 + i * 0x100
        p = b.add(P, f, name=f"f{i}", line=10 * i + 1, ranges=[(base, base + 0x100)])
        outer = b.add(A, p, line=10 * i + 2, file="/src/x.c", ranges=[])
        inner = b.add(A, outer, line=3, file="/src/x.h", name="inl", ranges=[])
        loop = b.add(L, inner, line=4, file="/src/x.h", ranges=[(base + 0x10, base + 0x11)])
        firsts.append(base + 0x10)
        for k in range(8):
            b.add(S, loop, line=5 + k, ranges=[(base + 0x10 + 8 * k, base + 0x18 + 8 * k)])
    return b.finish(), np.array(firsts, dtype=np.uint64)


def test_expansion_follows_the_samples_not_the_module_size():
    work = {}
    for n in (2000, 8 * 2000):
        module, firsts = module_of(n)
        sampled = firsts[:: max(1, n // 50)][:50]  # 50 sampled procedures, whatever the size

        def expand(module=module, sampled=sampled) -> None:
            ex = StructExpander(module, "/lib/x.so")
            for leaf in ex.lookup(sampled).tolist():
                ex.chain(leaf)

        module.leaf_map  # noqa: B018  (the address map is built once per module, vectorized)
        work[n] = lines_of(expand) + calls_of(expand)
    # 8x the module, the same samples: the same work (a pass over the module's rows would be 8x).
    assert work[8 * 2000] <= 1.1 * work[2000], work


def _chain_tree(n_unsampled: int):
    """A root with a 40-deep chain of contexts (sampled), then ``n_unsampled`` leaves under the root that no
    profile samples (a large unified tree)."""
    from hpcsa.formats.db.propagate import TreeArrays

    parent = np.concatenate([[-1], np.arange(40), np.zeros(n_unsampled, np.int64)]).astype(np.int64)
    n = len(parent)
    end = np.arange(n) + 1
    end[:41] = 41
    end[0] = n
    depth = np.concatenate([np.arange(41), np.ones(n_unsampled, np.int64)])
    return TreeArrays.build(parent, depth, np.zeros(n, bool), np.zeros(n, bool), end)


def test_propagation_work_follows_the_samples_and_batches_share_it():
    """Propagating a batch of profiles costs about the calls of one profile (numpy's per-call costs are paid
    once per batch), and a unified tree 8x larger with the same sampled contexts costs no more calls."""
    from hpcsa.formats.db.propagate import propagate

    small, large = _chain_tree(100), _chain_tree(800)
    ctx = np.array([40, 39, 20, 5])
    met = np.array([0, 1, 0, 1])
    val = np.array([1.0, 2.0, 3.0, 4.0])
    propagate(ctx, met, val, small)  # warm: numpy's first-use work
    one = calls_of(propagate, ctx, met, val, small)
    assert calls_of(propagate, ctx, met, val, large) == one
    k = 8
    batch = calls_of(propagate, np.tile(ctx, k), np.tile(met, k), np.tile(val, k), small,
                     np.repeat(np.arange(k), len(ctx)))
    assert batch <= 1.2 * one, (batch, one)
