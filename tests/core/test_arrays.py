"""hpcsa.core.arrays: numpy idioms shared by the pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.arrays import (
    gapless,
    narrow_counts,
    ramps,
    rank_in_runs,
    run_starts,
    sorted_unique,
    sorted_unique_rows,
    take_records,
)
from hpcsa.formats.db.dbformat import gather_records, scatter_records


@pytest.mark.parametrize("kind", ["quicksort", "stable"])
def test_sorted_unique_is_np_unique(kind: str) -> None:
    rng = np.random.default_rng(7)
    runs = np.concatenate([np.sort(rng.integers(-50, 5_000, 3_000)) for _ in range(4)])  # sorted runs
    for values in (runs, rng.integers(0, 1 << 40, 10_000), np.zeros(0, np.int64), np.array([3]),
                   np.array([2, 2, 2]), rng.random(500).round(1)):
        got = sorted_unique(values, kind)
        assert got.dtype == values.dtype and np.array_equal(got, np.unique(values))


def test_runs_of_equal_rows_and_positions_in_them() -> None:
    a = np.array([1, 1, 1, 2, 2, 5])
    b = np.array([0, 0, 3, 3, 4, 4])
    assert run_starts(a).tolist() == [True, False, False, True, False, True]
    assert run_starts(a, b).tolist() == [True, False, True, True, True, True]
    assert rank_in_runs(run_starts(a)).tolist() == [0, 1, 2, 0, 1, 0]
    assert rank_in_runs(run_starts(a, b)).tolist() == [0, 1, 0, 0, 0, 0]
    empty = np.zeros(0, np.int64)
    assert len(run_starts(empty)) == 0 and len(rank_in_runs(run_starts(empty))) == 0


def test_sorted_unique_rows_is_np_unique_of_the_records() -> None:
    rng = np.random.default_rng(3)
    rec = np.zeros(500, [("module", "<u8"), ("ip", "<u8")])
    rec["module"] = rng.integers(0, 4, 500).astype(np.uint64) << np.uint64(62)  # the high bit set too
    rec["ip"] = rng.integers(0, 60, 500)
    mods, ips = sorted_unique_rows(rec["module"], rec["ip"])
    want = np.unique(rec)
    assert mods.tolist() == want["module"].tolist() and ips.tolist() == want["ip"].tolist()
    none = sorted_unique_rows(rec["module"][:0], rec["ip"][:0])
    assert [len(c) for c in none] == [0, 0]


@pytest.mark.parametrize("seed", range(10))
def test_ramps_are_the_slices_one_after_the_other(seed: int) -> None:
    """ramps(starts, counts) lists range(start, start + count) for each slice, in order (empty ones too)."""
    rng = np.random.default_rng(seed)
    starts, counts = rng.integers(0, 100, 15), rng.integers(0, 6, 15)
    want = [s + i for s, c in zip(starts.tolist(), counts.tolist(), strict=True) for i in range(c)]
    assert ramps(starts, counts).tolist() == want
    assert ramps(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []


PACKED = np.dtype([("a", "<u2"), ("b", "<f8"), ("c", "u1")])  # 11 bytes, unaligned fields
GAPPED = np.dtype({"names": ["a", "b"], "formats": ["<u2", "<f8"], "offsets": [0, 4], "itemsize": 16})


def test_gapless_says_whether_the_fields_cover_every_byte() -> None:
    assert gapless(PACKED) and gapless(np.dtype("<u8"))
    assert not gapless(GAPPED)  # bytes 2-3 and 12-15 belong to no field
    assert not gapless(np.dtype({"names": ["a"], "formats": ["<u4"], "offsets": [4], "itemsize": 8}))


def test_take_records_is_fancy_indexing() -> None:
    rng = np.random.default_rng(3)
    recs = np.zeros(500, PACKED)
    recs["a"], recs["b"], recs["c"] = rng.integers(0, 1 << 16, 500), rng.random(500), rng.integers(0, 256, 500)
    for index in (rng.integers(0, 500, 2_000), np.argsort(recs["b"]), np.zeros(0, np.int64)):
        got = take_records(recs, index)
        assert got.dtype == PACKED and got.tobytes() == recs[index].tobytes()


@pytest.mark.parametrize("dtype", [PACKED, GAPPED])
def test_scatter_then_gather_records_at_unaligned_bytes(dtype: np.dtype) -> None:
    """Records written at odd byte offsets land field by field where a hand-written struct.pack puts them;
    the bytes of a gap are left as they were (0xAB here), and reading them back gives the records."""
    import struct

    recs = np.zeros(3, dtype)
    recs["a"], recs["b"] = [1, 2, 3], [0.5, -1.25, 1e300]
    at = np.array([1, 40, 1 + dtype.itemsize])  # unaligned, the first and last adjacent
    image = np.full(80, 0xAB, np.uint8)
    scatter_records(image, at, recs)
    want = bytearray(b"\xab" * 80)
    for pos, a, b in zip(at.tolist(), [1, 2, 3], [0.5, -1.25, 1e300], strict=True):
        want[pos:pos + 2] = struct.pack("<H", a)
        boff = dtype.fields["b"][1]
        want[pos + boff:pos + boff + 8] = struct.pack("<d", b)
    if dtype is PACKED:
        for pos in at.tolist():
            want[pos + 10] = 0  # field c, zero
    assert image.tobytes() == bytes(want)
    back = gather_records(image, at, dtype)
    assert np.array_equal(back["a"], recs["a"]) and np.array_equal(back["b"], recs["b"])


def test_narrow_counts_halve_what_fits_and_keep_the_rest() -> None:
    fits = narrow_counts(np.array([0, 7, 0xFFFFFFFF], np.int64))
    assert fits.dtype == np.uint32 and fits.tolist() == [0, 7, 0xFFFFFFFF]
    for wide in ([1, 0x100000000], [-1, 5]):  # past 32 bits, or negative: as int64
        kept = narrow_counts(np.array(wide, np.int64))
        assert kept.dtype == np.int64 and kept.tolist() == wide
    assert narrow_counts(np.zeros(0, np.int64)).dtype == np.uint32
    # what the docstring warns of: sums of two narrow columns are taken in int64
    big = narrow_counts(np.array([0xF0000000], np.int64))
    assert (big.astype(np.int64) + big).tolist() == [2 * 0xF0000000]

