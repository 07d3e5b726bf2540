"""The one worker-process helper (hpcsa.core.workers): tasks in forked processes, results and errors carried back,
and a killed worker ending as one error instead of a wait for ever."""

from __future__ import annotations

import os
import signal

import pytest

from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.core.workers import POOL_MIN_BYTES, ForkedWorker, LocalPool, Tickets, pool_min_bytes


def _scaled(shared: int, x: int) -> int:
    if x < 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return shared * x


@pytest.mark.parametrize("jobs", [1, 2])
def test_pool_runs_every_task_once_largest_first_inline(jobs):
    with LocalPool(jobs, shared=10) as pool:
        got = dict(pool.run(_scaled, [(1,), (2,), (3,)], cost=[1.0, 3.0, 2.0]))
    assert got == {0: 10, 1: 20, 2: 30}
    if jobs == 1:  # inline: the order of the costs
        with LocalPool(1, shared=1) as pool:
            assert [i for i, _ in pool.run(_scaled, [(1,), (2,), (3,)], cost=[1.0, 3.0, 2.0])] == [1, 2, 0]


def test_pool_killed_worker_is_one_error():
    with LocalPool(2, shared=1) as pool, pytest.raises(HpcsaError, match="worker process ended"):
        list(pool.run(_scaled, [(1,), (-1,), (2,)]))


def _echo(conn, big: list[int], tickets: Tickets) -> None:
    taken = []
    while (i := tickets.take()) < 50:
        taken.append(i)
    conn.send(("sum", (sum(big), taken)))
    extra = conn.recv()
    conn.send(("again", extra + 1))


def test_forked_worker_inherits_arguments_and_talks_both_ways():
    big = list(range(100_000))
    tickets = Tickets()
    with ForkedWorker(_echo, big, tickets) as worker:
        mine = []
        while (i := tickets.take()) < 50:
            mine.append(i)
        total, theirs = worker.receive("sum")
        worker.send(41)
        assert worker.receive("again") == 42
    assert total == sum(big)
    assert sorted(mine + theirs) == list(range(50))  # every ticket taken once


class _SaysWhenFreed:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __del__(self) -> None:
        with open(self.marker, "w") as fh:
            fh.write("freed")


def _builds(conn, marker: str, keep: bool) -> _SaysWhenFreed | None:
    built = _SaysWhenFreed(marker)
    print("from the child", end="")  # no newline: only a flush writes it
    conn.send(("done", os.getpid()))
    return built if keep else None


@pytest.mark.parametrize("keep", [True, False])
def test_forked_worker_returning_what_it_built_ends_without_freeing_it(tmp_path, capfd, keep):
    marker = tmp_path / "freed"
    with ForkedWorker(_builds, str(marker), keep) as worker:
        assert worker.receive("done") != os.getpid()
    worker.proc.join(timeout=10)  # closing it did not wait: it had closed its pipe, and was ending
    assert worker.proc.exitcode == 0
    assert marker.exists() is not keep  # freed object by object only when nothing was returned
    assert "from the child" in capfd.readouterr().out  # its standard output flushed either way


def _fails(conn, kind: str) -> None:
    if kind == "input":
        raise FormatError("/some/file", "damaged in a worker")
    if kind == "bug":
        raise ValueError("a defect")
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize(("kind", "error", "text"), [
    ("input", FormatError, "/some/file: damaged in a worker"),
    ("bug", ValueError, "a defect"),
    ("killed", HpcsaError, "a worker process of the test ended without its result"),
])
def test_forked_worker_failures_reach_the_parent(kind, error, text):
    with ForkedWorker(_fails, kind, what="the test") as worker, pytest.raises(error, match=text):
        worker.receive("never")


def _more(shared: int, x: int) -> int:
    return _scaled(shared, x)


@pytest.mark.parametrize("jobs", [1, 2])
def test_dynamic_run_takes_tasks_submitted_while_iterating(jobs):
    from hpcsa.core.workers import DynamicRun

    with LocalPool(jobs, shared=2) as pool:
        run = DynamicRun(pool)
        run.submit("a", _more, (1,))
        got = {}
        for key, result in run:
            got[key] = result
            if key == "a":
                run.submit("b", _more, (5,), priority=1.0)
    assert got == {"a": 2, "b": 10}


def _slow_square(shared, x):
    import time

    time.sleep(0.05 * shared)
    return x * x


def test_dynamic_run_finished_hands_over_what_has_arrived_without_waiting():
    """A parent that works beside its workers takes their results between its own tasks: finished() gives
    what has arrived (nothing before it has), never waits, and with iterating gives each result once."""
    import time

    from hpcsa.core.workers import DynamicRun

    with LocalPool(1, shared=1, fork=True) as pool:
        assert pool.forked
        run = DynamicRun(pool)
        for x in range(4):
            run.submit(x, _slow_square, (x,))
        run.start()
        t = time.perf_counter()
        assert list(run.finished()) == []  # the first result takes 50 ms
        assert time.perf_counter() - t < 0.04
        time.sleep(0.3)
        early = dict(run.finished())
        assert early and set(early) <= {0, 1, 2, 3}
        late = dict(run)
        assert not set(early) & set(late)
        assert {**early, **late} == {x: x * x for x in range(4)}


def _square_after(shared, x, seconds):
    import time

    time.sleep(seconds)
    return x * x


@pytest.mark.parametrize("fork", [True, False])
def test_dynamic_run_take_gives_a_queued_task_to_the_caller_once(fork):
    """A parent that works beside its worker takes back a task no worker has started (the first by priority),
    runs it itself, and never gets its result from the workers as well: every task runs once, whoever runs
    it, and ``pending`` counts what is still to come."""
    from hpcsa.core.workers import DynamicRun

    with LocalPool(1, shared=1, fork=fork) as pool:
        run = DynamicRun(pool)
        run.submit("slow", _square_after, (3, 1.0), priority=0.0)
        run.start()  # the worker (if forked) holds "slow" from here on, for a second
        for x in range(5):
            run.submit(x, _square_after, (x, 0.0), priority=float(5 - x))
        assert run.pending == 6
        got: dict[object, int] = {}
        taken = []
        while (task := run.take()) is not None:
            key, fn, args = task
            taken.append(key)
            got[key] = fn(pool.shared, *args)
        # by priority; the task the worker started is not taken back
        assert taken == ([4, 3, 2, 1, 0] if fork else ["slow", 4, 3, 2, 1, 0])
        assert run.pending == (1 if fork else 0)
        while run.pending:
            key, result = run.wait() if fork else next(iter(run))
            assert key not in got
            got[key] = result
        assert got == {"slow": 9, **{x: x * x for x in range(5)}}
        if fork:
            with pytest.raises(RuntimeError, match="no task"):
                run.wait()


@pytest.mark.parametrize("fork", [True, False])
def test_dynamic_run_rest_runs_here_what_no_worker_started(fork):
    """rest() gives every pending task's result once: the one a forked worker holds is waited for, the
    queued ones run in this process (all of them, inline)."""
    import os

    from hpcsa.core.workers import DynamicRun

    with LocalPool(1, shared=1, fork=fork) as pool:
        run = DynamicRun(pool)
        run.submit("held", _pid_after, (0.3,), priority=0.0)
        run.start()
        for x in range(3):
            run.submit(x, _pid_after, (0.0,), priority=1.0 + x)
        got = dict(run.rest())
        assert run.pending == 0
    assert set(got) == {"held", 0, 1, 2}
    assert {got[x] for x in range(3)} == {os.getpid()}
    assert (got["held"] != os.getpid()) == fork


def _pid_after(shared, seconds):
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def test_dynamic_run_killed_worker_is_one_error():
    from hpcsa.core.workers import DynamicRun

    with LocalPool(2, shared=1) as pool, pytest.raises(HpcsaError, match="worker process ended"):
        run = DynamicRun(pool)
        run.submit("x", _more, (-1,))
        list(run)


def _waits_for_the_parent(conn) -> None:
    conn.send(("ready", 1))
    conn.recv()  # the parent fails and closes its end: EOFError here


def test_worker_of_a_failed_parent_ends_quietly(capfd):
    with pytest.raises(ValueError, match="the parent fails"), ForkedWorker(_waits_for_the_parent) as worker:
        worker.receive("ready")
        raise ValueError("the parent fails")
    assert "Traceback" not in capfd.readouterr().err  # the worker found nobody to tell, and said nothing


def test_pool_bound_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HPCSA_POOL_MIN_BYTES", raising=False)
    assert pool_min_bytes() == POOL_MIN_BYTES
    for text, want in (("0", 0), ("4M", 4 << 20), ("1.5k", 1536), ("123", 123), (" 2MiB ", 2 << 20)):
        monkeypatch.setenv("HPCSA_POOL_MIN_BYTES", text)
        assert pool_min_bytes() == want, text
    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv("HPCSA_POOL_MIN_BYTES", bad)
        with pytest.raises(HpcsaError, match=f"HPCSA_POOL_MIN_BYTES='{bad}': expected a size in bytes"):
            pool_min_bytes()


# The pool's shutdown. multiprocessing.Pool hung here: a refusal stopped the pool while the other worker
# was sending a large result back, and Pool.terminate() then waited for ever on the lock of the result
# queue that the stopped worker held (CPython issue gh-96995). Run in a child process with a time limit,
# so that a hang fails the test instead of holding the suite.
_SHUTDOWN_WHILE_SENDING = """
import random, sys, time
from hpcsa.core.errors import HpcsaError
from hpcsa.core.workers import DynamicRun, LocalPool

def task(shared, k, delay):
    if k == 3:
        time.sleep(delay)
        raise HpcsaError("input-%d" % k, "refused")
    return b"x" * (8 << 20)

random.seed(1)
for attempt in range(12):
    t = time.perf_counter()
    try:
        with LocalPool(2) as pool:
            run = DynamicRun(pool)
            for k in range(30):
                run.submit(k, task, (k, random.random() * 0.05), priority=1.5 if k == 3 else k)
            for _ in run:
                pass
    except HpcsaError as exc:
        assert str(exc) == "input-3: refused", exc
    else:
        raise AssertionError("not refused")
    assert time.perf_counter() - t < 10, "slow shutdown"
print("ok")
"""


def test_refusal_while_a_worker_sends_a_large_result_ends_the_pool() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _SHUTDOWN_WHILE_SENDING], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def _sleepy(shared: int, seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def test_a_run_left_early_stops_busy_workers_at_once() -> None:
    import time

    t = time.perf_counter()
    with LocalPool(2, shared=0) as pool:
        results = pool.run(_sleepy, [(0.0,), (60.0,), (60.0,), (60.0,)], cost=[9.0, 1.0, 1.0, 1.0])
        assert next(results) == (0, 0.0)
        workers = list(pool._hub._procs)
    assert time.perf_counter() - t < 10
    assert all(p.exitcode is not None for p in workers)  # ended, and reaped


def _misbehaves(shared: int, how: str) -> object:
    if how == "bug":
        raise KeyError("a defect in a worker")
    if how == "unpicklable":
        return lambda: None
    if how == "interrupted":  # Ctrl-C reaches every process of the group: a worker leaves it to the parent
        os.kill(os.getpid(), signal.SIGINT)
        return "went on"
    return how


@pytest.mark.parametrize(("how", "error", "text"), [
    ("bug", KeyError, "a defect in a worker"),
    ("unpicklable", RuntimeError, "PicklingError|AttributeError"),
])
def test_pool_raises_what_a_worker_raised(how, error, text) -> None:
    with LocalPool(2, shared=0) as pool, pytest.raises(error, match=text):
        list(pool.run(_misbehaves, [("fine",), (how,), ("fine",)]))


def test_pool_worker_ignores_ctrl_c() -> None:
    with LocalPool(2, shared=0) as pool:
        assert sorted(r for _, r in pool.run(_misbehaves, [("interrupted",), ("fine",)])) == ["fine", "went on"]


def _sized(shared: int, blob: bytes, answer: int) -> bytes:
    return bytes([blob[0]]) * answer


def test_pool_carries_large_tasks_and_results_both_ways() -> None:
    """Tasks and results larger than a pipe holds, many at once: nothing waits on the other side for ever."""
    tasks = [(bytes([k]) * (3 << 20), (k + 1) << 20) for k in range(12)]
    with LocalPool(2, shared=0) as pool:
        got = dict(pool.run(_sized, tasks))
    assert {k: (len(v), v[:1]) for k, v in got.items()} == {k: ((k + 1) << 20, bytes([k])) for k in range(12)}


def _answers_then_lingers(conn) -> None:
    import time

    conn.send(("answer", 42))
    time.sleep(0.3)  # the parent asks to close meanwhile: it waits for this end to close, not for the exit
    conn.close()
    time.sleep(2.0)  # as a large process's exit, while the system takes its memory back


def test_closing_a_worker_waits_for_its_pipe_to_close_not_for_its_exit() -> None:
    import time

    with ForkedWorker(_answers_then_lingers) as worker:
        assert worker.receive("answer") == 42
        t = time.perf_counter()
    assert time.perf_counter() - t < 1.5
    assert worker.proc.exitcode is None  # still ending: reaped later
    worker.proc.join(timeout=10)
    assert worker.proc.exitcode == 0
