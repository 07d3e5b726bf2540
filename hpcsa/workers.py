"""The single-machine transport: worker processes for the phase functions.

The phases (:mod:`pipeline`) are written as functions of explicit inputs;
this module only runs them somewhere. With ``jobs = 1`` everything runs in the
calling process. Otherwise a pool of forked processes runs tasks largest
first, handing the next task to whichever worker is free (balance by size,
not round-robin). Data every task needs (the class-2 results) is given once
per pool as ``shared`` and inherited by the forked workers, not sent with
each task. Offsets in the scratch files come from a counter shared by the
processes (:class:`SharedCounter`).

For work that does not fit "many independent tasks" (``hpcsa struct`` reads the debug information in one
process while another decodes the code, and its chunk workers exchange sizes and ids with the parent
half-way through), :class:`ForkedWorker` is one forked process running a function with its end of a pipe,
and :class:`Tickets` a counter from which forked processes take the next piece of work.

An MPI transport provides the same three things: a way to run per-item
functions where the data is, the shared data broadcast, and a shared counter.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from hpcsa.binfmt import align
from hpcsa.errors import HpcsaError
from hpcsa.sizes import parse_size

if TYPE_CHECKING:
    import multiprocessing.connection
    import multiprocessing.context

_SHARED: Any = None

#: Default of :func:`pool_min_bytes`. Measured on 2 cores, ``hpcsa prof -j 2`` with and without workers on
#: generated CPU runs: starting a pool (importing multiprocessing, forking, sending the workers' results back)
#: costs 0.02-0.06 s. With 1.1 MB of profiles the command took 0.38-0.39 s without workers and 0.40-0.47 s
#: with them, with 4.5 MB 1.04-1.42 s without and 1.00-1.21 s with; at 2.3 MB neither won. Phase 3 breaks
#: even at about 4 MB of cct.db. Below the lower of the two, so that no run gets slower.
POOL_MIN_BYTES = 2 << 20


def pool_min_bytes() -> int:
    """Input bytes below which a phase runs in one process whatever ``-j`` asks (``$HPCSA_POOL_MIN_BYTES``,
    e.g. ``2M``; ``0``: always start the workers). The output is the same either way."""
    text = os.environ.get("HPCSA_POOL_MIN_BYTES", "").strip()
    if not text:
        return POOL_MIN_BYTES
    try:
        return parse_size(text)
    except ValueError:
        raise HpcsaError(None, f"HPCSA_POOL_MIN_BYTES={text!r}: expected a size in bytes, e.g. 2M "
                         "(0: always use the workers)") from None


def map_in_threads(fn: Callable[[Any], Any], items: list[Any], threads: int) -> list[Any]:
    """``[fn(x) for x in items]`` on up to ``threads`` threads (this one included), items taken in order as
    threads come free: for work that releases the GIL (hashing, CRC-32 of large buffers), where threads use
    several cores without a process to start or results to send back. The first exception is raised here."""
    results: list[Any] = [None] * len(items)
    failures: list[BaseException] = []
    left = iter(range(len(items)))
    take = threading.Lock()

    def work() -> None:
        while not failures:
            with take:
                i = next(left, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # re-raised in the calling thread
                failures.append(exc)

    helpers = [threading.Thread(target=work, daemon=True) for _ in range(min(threads, len(items)) - 1)]
    for t in helpers:
        t.start()
    work()
    for t in helpers:
        t.join()
    if failures:
        raise failures[0]
    return results


def trim_heap() -> None:
    """Give the C allocator's free memory back to the system (glibc's ``malloc_trim``; nothing where the C
    library has none). Called before forking workers: what the parent freed (phase 1's reports, class 2's
    temporaries) would otherwise stay resident in it for the rest of the run, counted against the run's
    peak however many workers share it."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        import ctypes

        try:
            _MALLOC_TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):  # pragma: no cover - not glibc
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


_MALLOC_TRIM: Any = None


def fork_context() -> multiprocessing.context.BaseContext | None:
    """The fork start method's context (forked workers inherit the parent's data without pickling it), or
    None where the platform has no fork: callers then work in one process. (multiprocessing is imported
    here, when a run first needs workers: a one-process run or MPI rank does not load it.)"""
    import multiprocessing as mp

    try:
        return mp.get_context("fork")
    except ValueError:  # pragma: no cover - not on Linux
        return None


def _any_context() -> multiprocessing.context.BaseContext:
    import multiprocessing as mp

    return fork_context() or mp.get_context()


class SharedCounter:
    """Byte offsets handed out from counters shared by forked processes (one per scratch file)."""

    def __init__(self, kinds: Iterable[str]) -> None:
        ctx = _any_context()
        self._values = {k: ctx.Value("Q", 0) for k in kinds}

    def __call__(self, kind: str, nbytes: int) -> int:
        v = self._values[kind]
        with v.get_lock():
            at = v.value
            v.value = align(at + nbytes, 8)
        return int(at)

    def total(self, kind: str) -> int:
        return int(self._values[kind].value)


class LocalPool:
    """Run ``fn(shared, *args)`` for many argument tuples, in ``jobs`` processes (or inline for one)."""

    def __init__(self, jobs: int, shared: Any = None, *, fork: bool = False) -> None:
        """``jobs`` processes, or inline for one; ``fork``: one forked worker too (for a caller that works
        beside its workers, :func:`run_shared`'s ``parent_works``)."""
        self.jobs = max(1, int(jobs))
        self.shared = shared
        self._pool: Any = None
        self._workers: list[Any] = []
        if self.jobs > 1 or fork:
            global _SHARED
            _SHARED = shared  # inherited by the forked workers
            ctx = fork_context()
            if ctx is None:  # pragma: no cover - not on Linux
                self.jobs = 1
            else:
                trim_heap()
                self._pool = ctx.Pool(self.jobs)
                self._workers = list(self._pool._pool)  # the processes it started (to notice a killed one)
            _SHARED = None

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def forked(self) -> bool:
        """Whether tasks run in worker processes (otherwise inline, in this one)."""
        return self._pool is not None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def run(self, fn: Callable[..., Any], tasks: list[tuple[Any, ...]], cost: list[float] | None = None
            ) -> Iterator[tuple[int, Any]]:
        """(task index, result) as tasks finish; tasks start largest ``cost`` first."""
        order = sorted(range(len(tasks)), key=lambda i: (-(cost[i] if cost else 0.0), i))
        if self._pool is None:
            for i in order:
                yield i, fn(self.shared, *tasks[i])
            return
        from multiprocessing import TimeoutError as PoolTimeout

        results = self._pool.imap_unordered(_indexed, [(i, fn, tasks[i]) for i in order], chunksize=1)
        for _ in order:
            while True:
                try:
                    i, result = results.next(timeout=1.0)
                    break
                except PoolTimeout:
                    self._check_workers()
            if isinstance(result, _Failure):
                result.raise_it()
            yield i, result

    def _check_workers(self) -> None:
        """A worker killed (out of memory, a signal) takes its task with it and the pool would wait for
        ever: one line instead."""
        if any(p.exitcode not in (None, 0) for p in self._workers):
            raise HpcsaError(None, "a worker process ended without its result")


class _Failure:
    """An input error raised in a worker, carried back as plain data (HpcsaError does not unpickle)."""

    def __init__(self, exc: HpcsaError) -> None:
        self.kind = type(exc)
        self.path = exc.path
        self.problem = exc.problem

    def raise_it(self) -> None:
        raise self.kind(self.path, self.problem)


def _run_indexed(fn: Callable[..., Any], args: tuple[Any, ...], shared: Any) -> Any:
    try:
        return fn(shared, *args)
    except HpcsaError as exc:
        return _Failure(exc)


def _indexed(packed: tuple[int, Callable[..., Any], tuple[Any, ...]]) -> tuple[int, Any]:
    i, fn, args = packed
    try:
        return i, fn(_SHARED, *args)
    except HpcsaError as exc:
        return i, _Failure(exc)


class DynamicRun:
    """Tasks that may schedule more tasks, by priority (lower first), at most ``2 * jobs`` in flight.

    ``submit(key, fn, args, priority)`` queues a task; iterating yields (key, result) as tasks finish,
    and the consumer may submit more while iterating.
    """

    def __init__(self, pool: LocalPool) -> None:
        import heapq
        import queue

        self.pool = pool
        self._heapq = heapq
        self._heap: list[tuple[float, int, Any, Callable[..., Any], tuple[Any, ...]]] = []
        self._seq = 0
        self._done: queue.Queue[tuple[Any, Any]] = queue.Queue()
        self._empty = queue.Empty
        self._in_flight = 0

    def submit(self, key: Any, fn: Callable[..., Any], args: tuple[Any, ...], priority: float = 0.0) -> None:
        self._heapq.heappush(self._heap, (priority, self._seq, key, fn, args))
        self._seq += 1

    def start(self) -> None:
        """Hand the queued tasks to the workers now (iterating does it too); nothing for an inline pool."""
        if self.pool.forked:
            self._launch()

    def _launch(self) -> None:
        pool = self.pool._pool
        limit = 2 * self.pool.jobs
        while self._heap and self._in_flight < limit:
            _, _, key, fn, args = self._heapq.heappop(self._heap)
            self._in_flight += 1
            pool.apply_async(_indexed, ((key, fn, args),), callback=self._done.put,
                             error_callback=lambda exc, key=key: self._done.put((key, exc)))

    def finished(self) -> Iterator[tuple[Any, Any]]:
        """The results the workers have sent back already, without waiting for more (a forked pool)."""
        while self._in_flight:
            try:
                key, result = self._done.get_nowait()
            except self._empty:
                return
            self._in_flight -= 1
            yield key, self._checked(result)

    @staticmethod
    def _checked(result: Any) -> Any:
        if isinstance(result, _Failure):
            result.raise_it()
        if isinstance(result, BaseException):
            raise result
        return result

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        if self.pool._pool is None:
            while self._heap:
                _, _, key, fn, args = self._heapq.heappop(self._heap)
                result = _run_indexed(fn, args, self.pool.shared)
                if isinstance(result, _Failure):
                    result.raise_it()
                yield key, result
            return
        while True:
            self._launch()
            if not self._in_flight:
                return
            while True:
                try:
                    key, result = self._done.get(timeout=1.0)
                    break
                except self._empty:
                    self.pool._check_workers()
            self._in_flight -= 1
            yield key, self._checked(result)


class Tickets:
    """Numbers 0, 1, 2, ... taken by forked processes, each number once: the next piece of work for whichever
    process is free (a process slowed by other work on the machine takes fewer)."""

    def __init__(self, ctx: multiprocessing.context.BaseContext | None = None) -> None:
        self._value = (ctx or _any_context()).Value("q", 0)

    def take(self) -> int:
        with self._value.get_lock():
            i = int(self._value.value)
            self._value.value = i + 1
        return i

    def taken(self) -> int:
        """How many numbers have been taken (those past the end included)."""
        return int(self._value.value)


class ForkedWorker:
    """One forked process running ``target(conn, *args)`` with its end of a pipe.

    ``args`` are inherited by the fork, never pickled (objects of any size cost nothing to hand over).
    The target sends ``(tag, payload)`` pairs; :meth:`receive` returns the payload of the expected tag. An
    exception in the target reaches the parent, raised again by :meth:`receive` (an input error as the
    same :class:`HpcsaError`); a process that ended without sending (killed, out of memory) is one
    :class:`HpcsaError` naming ``what``."""

    def __init__(self, target: Callable[..., None], *args: Any, what: str = "hpcsa",
                 ctx: multiprocessing.context.BaseContext | None = None) -> None:
        ctx = ctx or fork_context()
        if ctx is None:  # pragma: no cover - not on Linux
            raise RuntimeError("ForkedWorker needs the fork start method")
        self.what = what
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=_forked_main, args=(theirs, target, args), daemon=True)
        self.proc.start()
        theirs.close()

    def send(self, obj: Any) -> None:
        self.conn.send(obj)

    def receive(self, tag: str) -> Any:
        try:
            got, payload = self.conn.recv()
        except EOFError:  # killed (out of memory, a signal): say so in one line
            raise HpcsaError(None, f"a worker process of {self.what} ended without its result") from None
        if got == "error":
            if isinstance(payload, _Failure):
                payload.raise_it()
            raise payload
        assert got == tag, (got, tag)
        return payload

    def close(self) -> None:
        self.conn.close()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join()

    def __enter__(self) -> ForkedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _forked_main(conn: multiprocessing.connection.Connection, target: Callable[..., None],
                 args: tuple[Any, ...]) -> None:
    try:
        target(conn, *args)
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        _send_error(conn, exc)
    finally:
        conn.close()


def _send_error(conn: multiprocessing.connection.Connection, exc: BaseException) -> None:
    payload: Any = _Failure(exc) if isinstance(exc, HpcsaError) else exc
    try:
        conn.send(("error", payload))
    except (OSError, EOFError):  # the parent has gone (it failed first and closed its end): nothing to tell
        pass
    except Exception:  # an exception that does not pickle (nothing was sent): its text, in one line
        with contextlib.suppress(OSError, EOFError):
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def default_jobs() -> int:
    """hpcprof's default: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)
