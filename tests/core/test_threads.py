"""Threads for work that releases the GIL (hpcsa.core.threads): results in order, work at once, the first failure
raised in the caller."""

from __future__ import annotations

import threading

import pytest

from hpcsa.core.errors import FormatError
from hpcsa.core.threads import map_in_threads


def test_map_in_threads_keeps_order_and_runs_at_once() -> None:
    assert map_in_threads(lambda x: x * x, list(range(50)), 3) == [x * x for x in range(50)]
    assert map_in_threads(str, [], 4) == [] and map_in_threads(str, [7], 4) == ["7"]
    meet = threading.Barrier(2, timeout=10)  # passes only if two items run at the same time, on two threads
    names = map_in_threads(lambda _: (meet.wait(), threading.current_thread().name)[1], [0, 1], 2)
    assert len(set(names)) == 2


def test_map_in_threads_raises_the_first_failure_in_the_caller() -> None:
    def fail_on_three(x: int) -> int:
        if x == 3:
            raise FormatError("item.bin", "bad item")
        return x

    with pytest.raises(FormatError, match="bad item"):
        map_in_threads(fail_on_three, list(range(8)), 2)
