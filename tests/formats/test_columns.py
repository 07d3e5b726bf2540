"""Address queries of :class:`hpcsa.formats.hpcstruct.model.Module` that read mapped cache entries in place."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.formats.hpcstruct.columns import bisect_right
from hpcsa.formats.hpcstruct.model import RANGE


@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 1000])
def test_bisect_right_matches_searchsorted_on_a_strided_field(n: int) -> None:
    rng = np.random.default_rng(n)
    table = np.zeros(n, RANGE)
    table["lo"] = np.sort(rng.integers(0, 60, n)).astype(np.uint64)  # duplicates included
    values = rng.integers(0, 70, 400).astype(np.uint64)
    column = table["lo"]
    assert not column.flags.c_contiguous or n < 2  # a field view: what np.searchsorted would copy
    expect = np.searchsorted(np.ascontiguousarray(column), values, side="right")
    assert bisect_right(column, values).tolist() == expect.tolist()


def test_bisect_right_of_no_values_and_extremes() -> None:
    column = np.array([5, 5, 9], np.uint64)
    assert bisect_right(column, np.zeros(0, np.uint64)).tolist() == []
    assert bisect_right(column, np.array([0, 5, 8, 9, 2**64 - 1], np.uint64)).tolist() == [0, 2, 2, 3, 3]


def test_packed_strings_decode_each_string_as_the_list_holds_it() -> None:
    import pickle

    from hpcsa.formats.hpcstruct.columns import PackedStrings

    words = ["", "main", "\u00e9t\u00e9", "", "a\udcffb", "last"]  # empty, non-ASCII, lone surrogate
    encoded = [w.encode("utf-8", "surrogatepass") for w in words]
    ends = np.cumsum([len(b) + 1 for b in encoded]) - 1
    packed = PackedStrings(np.frombuffer(b"\0".join(encoded), np.uint8), ends.astype(np.int64))
    assert len(packed) == len(words)
    assert [packed[i] for i in range(len(words))] == words
    assert packed[-1] == "last" and packed[1:3] == words[1:3]
    assert packed == words and list(packed) == words and "main" in packed and packed.index("last") == 5
    assert pickle.loads(pickle.dumps(packed)) == words
    with pytest.raises(IndexError):
        packed[len(words)]


def test_packed_strings_many_decodes_as_one_at_a_time() -> None:
    from hpcsa.formats.hpcstruct.columns import PackedStrings

    words = ["", "main", "\u00e9t\u00e9", "", "a\udcffb", "last", "x" * 300]
    encoded = [w.encode("utf-8", "surrogatepass") for w in words]
    ends = (np.cumsum([len(b) + 1 for b in encoded]) - 1).astype(np.int64)
    text = np.frombuffer(b"\0".join(encoded), np.uint8)
    rng = np.random.default_rng(3)
    picks = rng.integers(0, len(words), 40).tolist()
    assert PackedStrings(text, ends).many(picks) == [words[i] for i in picks]  # repeats, any order
    both = PackedStrings(text, ends)
    assert both[4] == words[4] and both.many([4, 0, 6, 4]) == [words[4], words[0], words[6], words[4]]
    assert both.many([]) == []


def test_module_texts_leave_out_absent_strings() -> None:
    from hpcsa.formats.hpcstruct.columns import PackedStrings
    from hpcsa.formats.hpcstruct.model import Module

    words = ["f", "g.c", "h"]
    encoded = [w.encode() for w in words]
    ends = (np.cumsum([len(b) + 1 for b in encoded]) - 1).astype(np.int64)
    packed = PackedStrings(np.frombuffer(b"\0".join(encoded), np.uint8), ends)
    for strings in (words, packed):
        m = Module(path="x", scopes=np.zeros(0), ranges=np.zeros(0), strings=strings)
        assert m.texts([2, -1, 0, 2]) == {0: "f", 2: "h"}
        assert all(m.texts([i]).get(i) == m.text(i) for i in (-1, 0, 1, 2))

