"""hpcsa.core.packed_strings: fixed-width byte strings held as the bytes where they differ."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.packed_strings import PackedStrings


def _hpcrun_names(rng: np.random.Generator, n: int, pids: tuple[int, int] = (10000, 40000)) -> np.ndarray:
    """Names as hpcrun makes them (program-rank-thread-host-pid-generation.hpcrun); of one length where the
    threads and the pids have as many digits each."""
    names = [b"cxx-gcc-O2-%06d-%03d-%08x-%d-%d.hpcrun" % (rng.integers(0, 300), rng.integers(0, 1000), 0x7F0100,
                                                          rng.integers(*pids), rng.integers(0, 2)) for _ in range(n)]
    return np.array(names, dtype=bytes)


def test_packed_names_read_back_as_the_names_keeping_only_what_varies() -> None:
    rng = np.random.default_rng(5)
    names = _hpcrun_names(rng, 500)
    packed = PackedStrings.pack(names)
    assert len(packed) == 500 and packed.width == names.dtype.itemsize
    assert np.array_equal(packed.unpacked(), names)
    assert [packed[i] for i in range(0, 500, 37)] == [bytes(names[i]) for i in range(0, 500, 37)]
    # the program, the dashes, the host id and the suffix are shared: 12 digits vary of 45 bytes (the rank's
    # first three are zeros)
    width = names.dtype.itemsize
    assert width == 45
    matrix = names.view(np.uint8).reshape(500, width)
    want = [j for j in range(width) if len(set(matrix[:, j].tolist())) > 1]
    assert packed.varying.tolist() == want and len(want) == 12 and packed.rest.shape == (500, 12)
    assert packed.nbytes < names.nbytes / 3
    # pids of 3 to 5 digits: the names' lengths differ and what follows the pid varies too; read back all the same
    uneven = _hpcrun_names(rng, 500, pids=(900, 40000))
    packed = PackedStrings.pack(uneven)
    assert np.array_equal(packed.unpacked(), uneven) and packed.varying[0] == len(b"cxx-gcc-O2-000")


def test_selection_and_joins_are_those_of_the_names() -> None:
    rng = np.random.default_rng(6)
    names = _hpcrun_names(rng, 300)
    packed = PackedStrings.pack(names)
    index = rng.permutation(300)[:120]
    assert np.array_equal(packed.take(index).unpacked(), names[index])
    # slices of one packing join as they are; packings of other names (another width, other shared bytes)
    # are packed again
    a, b = packed.take(np.arange(0, 100)), packed.take(np.arange(100, 300))
    joined = PackedStrings.concat([a, b])
    assert joined.template == packed.template and np.array_equal(joined.unpacked(), names)
    other = np.array([b"gpu-000001-000-00000000-7-0.hpcrun", b"x.hpcrun"], dtype=bytes)
    mixed = PackedStrings.concat([a, PackedStrings.pack(other), PackedStrings.pack(np.zeros(0, "S3"))])
    assert [mixed[i] for i in range(len(mixed))] == [bytes(n) for n in names[:100]] + list(other.tolist())
    assert PackedStrings.concat([a]) is a and len(PackedStrings.concat([])) == 0


def test_order_is_the_order_of_the_whole_names() -> None:
    rng = np.random.default_rng(7)
    names = np.concatenate([_hpcrun_names(rng, 400), _hpcrun_names(rng, 50)[:10].repeat(3)])  # with ties
    names = names[rng.permutation(len(names))]
    packed = PackedStrings.pack(names)
    assert packed.argsort().tolist() == np.argsort(names, kind="stable").tolist()
    assert sorted(bytes(n) for n in names) == [bytes(names[i]) for i in packed.argsort()]


@pytest.mark.parametrize("names", [[], [b"one.hpcrun"], [b"same"] * 4, [b"", b""], [b"a", b"", b"ab"],
                                   ["n\u00e9e.hpcrun".encode(), b"nee.hpcrun"]])
def test_edge_cases(names: list[bytes]) -> None:
    array = np.array(names, dtype=bytes) if names else np.zeros(0, "S1")
    packed = PackedStrings.pack(array)
    assert [packed[i] for i in range(len(packed))] == names
    assert [bytes(s) for s in packed.unpacked()] == names
    assert packed.argsort().tolist() == np.argsort(array, kind="stable").tolist()
    assert packed.is_ascii() == all(n.isascii() for n in names)
    assert packed.equals(PackedStrings.pack(array)) and packed.equals(packed.take(np.arange(len(names))))


def test_equal_names_packed_differently_are_equal() -> None:
    names = np.array([b"p-1.hpcrun", b"p-2.hpcrun", b"q-3.hpcrun"], dtype=bytes)
    whole = PackedStrings.pack(names).take(np.array([0, 1]))
    alone = PackedStrings.pack(names[:2])  # (shares the "p", which the whole did not)
    assert whole.varying.tolist() != alone.varying.tolist() and whole.equals(alone)
    assert not whole.equals(PackedStrings.pack(names[1:])) and not whole.equals(alone.take(np.array([0])))
