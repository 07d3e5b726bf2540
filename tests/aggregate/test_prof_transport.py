"""How phases hand out their tasks on one machine (aggregate/transport.py) and cut phase 3's work."""

from __future__ import annotations

import pytest

from hpcsa.aggregate.phase3.share import range_groups
from hpcsa.aggregate.transport import run_shared
from hpcsa.core.workers import LocalPool


def _run(ran: list[int], k: int) -> int:
    ran.append(k)  # seen by the caller only when the task runs inline
    return 10 + k


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("n_tasks", [0, 1, 5])
def test_run_shared_does_other_work_once_while_tasks_run(jobs: int, n_tasks: int) -> None:
    """``meanwhile`` runs exactly once, before any result is handed on: with a forked pool while the workers
    are busy, inline once the first task has run, and at the end when there is no task."""
    events: list[str] = []
    ran: list[int] = []
    tasks_run_before: list[int] = []

    def meanwhile() -> None:
        events.append("meanwhile")
        tasks_run_before.append(len(ran))

    with LocalPool(jobs, shared=ran) as pool:
        for k, result in run_shared(pool, _run, iter(range(n_tasks)), lambda k: (k,), jobs + 1,
                                    meanwhile=meanwhile):
            assert result == 10 + k
            events.append(f"task {k}")
    assert events.count("meanwhile") == 1 and len(events) == n_tasks + 1
    assert events[0] == "meanwhile" if n_tasks else events == ["meanwhile"]
    assert tasks_run_before == [0 if jobs > 1 else min(1, n_tasks)]


def _pid_after(shared: None, k: object, seconds: float) -> tuple[object, int]:
    import os
    import time

    time.sleep(seconds)
    return k, os.getpid()


def test_run_shared_parent_takes_back_what_no_worker_started_and_runs_the_callers_tasks() -> None:
    """The caller may submit tasks of its own while iterating (they are handed on like the share's); once the
    share is exhausted this process runs the queued tasks no worker has started instead of waiting for the
    one busy worker. Every task runs once."""
    import os

    from hpcsa.core.workers import DynamicRun

    with LocalPool(1, shared=None, fork=True) as pool:
        tasks = DynamicRun(pool)
        seen: dict[object, int] = {}
        # task 0 keeps the worker busy for a second; task 1 waits queued behind it
        for key, (k, pid) in run_shared(pool, _pid_after, iter(range(4)), lambda k: (k, 1.0 if k == 0 else 0.0),
                                        2, parent_works=True, tasks=tasks):
            assert key == k and key not in seen
            seen[key] = pid
            if key == 2:
                tasks.submit(("mine", 1), _pid_after, (("mine", 1), 0.0), priority=-1.0)
    assert set(seen) == {0, 1, 2, 3, ("mine", 1)}
    assert seen[0] != os.getpid()  # the worker's
    assert {seen[k] for k in (1, 2, 3, ("mine", 1))} == {os.getpid()}  # taken back or never handed out


def test_range_groups_one_per_worker_covering_every_range_once() -> None:
    ranges = [(0, 3), (3, 10), (10, 11), (11, 20), (20, 26)]
    for workers in (1, 2, 3, 8):
        groups = range_groups(ranges, workers)
        assert len(groups) == min(workers, len(ranges))
        bounds = [b for g in groups for b in g[:-1]] + [groups[-1][-1]]
        assert bounds == [0, 3, 10, 11, 20, 26]  # consecutive, in order, nothing twice
        assert all(g[-1] == nxt[0] for g, nxt in zip(groups[:-1], groups[1:], strict=True))
    assert range_groups([], 4) == []
