"""The single-machine transport: worker processes for the phase functions.

The phases (:mod:`hpcsa.aggregate`) are written as functions of explicit inputs;
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

The processes, their pipes and the shared counters come from :mod:`hpcsa.core.forking` (``os.fork`` and pipes,
not :mod:`multiprocessing`).

An MPI transport provides the same three things: a way to run per-item
functions where the data is, the shared data broadcast, and a shared counter.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hpcsa.core.errors import HpcsaError
from hpcsa.core.forking import Channel, Forked, SharedInts, can_fork, channel_pair, wait
from hpcsa.core.sizes import parse_size
from hpcsa.core.textout import end_now, flush_std_streams

_SHARED: Any = None

#: Default of :func:`pool_min_bytes`. Measured on 2 cores, ``hpcsa prof -j 2`` with and without workers on
#: generated CPU runs: starting a pool (then with multiprocessing: importing it, forking, sending the workers' results back)
#: costs 0.02-0.06 s. With 1.1 MB of profiles the command took 0.38-0.39 s without workers and 0.40-0.47 s
#: with them, with 4.5 MB 1.04-1.42 s without and 1.00-1.21 s with; at 2.3 MB neither won. Phase 3 breaks
#: even at about 4 MB of cct.db. Below the lower of the two, so that no run gets slower. Measured again
#: with the pools of :mod:`hpcsa.core.forking` (cheaper to start; 8 interleaved runs each, loaded machine):
#: workers forced on (``HPCSA_POOL_MIN_BYTES=0``) against this bound, medians 0.51 against 0.48 s at
#: 0.8 MB of profiles and 0.59 against 0.52 s at 1.6 MB; at 2.4 MB, against ``-j 1``, 0.46 and 0.47 s.
#: The bound still stands.
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

#: glibc's ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Blocks from this size on are mappings of their own, given back when freed; smaller ones come from the heap
#: and are reused (see :func:`tune_allocator`).
MMAP_THRESHOLD = 4 << 20
#: Free memory at the heap's top kept for reuse up to this size before it is given back.
TRIM_THRESHOLD = 32 << 20


def tune_allocator(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> None:
    """Fix the C allocator's mmap and trim thresholds (glibc's ``mallopt``, mallopt(3); nothing where the C
    library has none, or where ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` in the environment
    chose). Two costs of glibc's defaults meet here:

    - Time: a batch of profiles makes numpy arrays of a few hundred KiB, over glibc's starting mmap threshold
      (128 KiB), so each was mapped, its pages zeroed by the kernel on first touch and unmapped when freed,
      and the same again for the next batch; below the trim threshold the heap's free top is kept for the
      next batch, above it it is given back and faulted in again.
    - Memory: glibc raises the mmap threshold to the size of each mapped block freed, up to 32 MiB, so once
      the first arrays as long as the profiles were freed, arrays of that size came from the heap, whose freed
      middle is not given back, and resident memory grew with the profiles.

    Measured with ``hpcsa prof`` (page faults of ``-j 1`` on 8,192 GPU-stream profiles; the process tree's
    peak PSS of ``-j 2`` on 262,144 CPU-thread profiles): glibc's defaults 125,000 faults; mmap 4 MiB with
    trim 8 MiB 340,000 faults, 173 MiB; mmap 8 MiB with trim 16 MiB 12,600 faults, 174 MiB; mmap 4 MiB with
    trim 32 MiB 12,000 faults, 164 MiB. :func:`trim_heap` still returns what is free before each fork."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, mmap_threshold)
    mallopt(_M_TRIM_THRESHOLD, trim_threshold)


class SharedCounter:
    """Byte offsets handed out from counters shared by forked processes (one per scratch file), each
    offset aligned to 8 bytes."""

    def __init__(self, kinds: Iterable[str]) -> None:
        self._index = {k: i for i, k in enumerate(kinds)}
        self._values = SharedInts(max(1, len(self._index)))

    def __call__(self, kind: str, nbytes: int) -> int:
        return self._values.add(self._index[kind], nbytes, round_to=8)

    def total(self, kind: str) -> int:
        return self._values.get(self._index[kind])


class LocalPool:
    """Run ``fn(shared, *args)`` for many argument tuples, in ``jobs`` processes (or inline for one)."""

    def __init__(self, jobs: int, shared: Any = None, *, fork: bool = False) -> None:
        """``jobs`` processes, or inline for one; ``fork``: one forked worker too (for a caller that works
        beside its workers, :func:`run_shared`'s ``parent_works``)."""
        self.jobs = max(1, int(jobs))
        self.shared = shared
        self._hub: _Hub | None = None
        if self.jobs > 1 or fork:
            if not can_fork():  # pragma: no cover - not on Linux
                self.jobs = 1
            else:
                trim_heap()
                self._hub = _Hub(self.jobs, shared)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def forked(self) -> bool:
        """Whether tasks run in worker processes (otherwise inline, in this one)."""
        return self._hub is not None

    def close(self) -> None:
        """End the workers: at once if any still holds a task (a run that failed or was left early)."""
        if self._hub is not None:
            self._hub.close()
            self._hub = None

    def run(self, fn: Callable[..., Any], tasks: list[tuple[Any, ...]], cost: list[float] | None = None
            ) -> Iterator[tuple[int, Any]]:
        """(task index, result) as tasks finish; tasks start largest ``cost`` first."""
        order = sorted(range(len(tasks)), key=lambda i: (-(cost[i] if cost else 0.0), i))
        hub = self._hub
        if hub is None:
            for i in order:
                yield i, fn(self.shared, *tasks[i])
            return
        for rank, i in enumerate(order):
            hub.queue(i, fn, tasks[i], float(rank))
        hub.dispatch()
        for _ in order:
            yield hub.get()


class _Hub:
    """Forked workers, each with a pipe of its own, fed from a priority queue kept in this process.

    A worker shares nothing with the others or with this process but its pipe, so no lock can be left held
    by a worker that is stopped: ``multiprocessing.Pool`` sends every result through one queue guarded by a
    lock, and ``Pool.terminate()`` waits for ever on it when a worker is stopped half-way through sending
    (CPython issue gh-96995; here, a refused input while the other worker sent its report back). A thread of
    this process receives the results and hands each worker its next task as soon as it has room, whatever
    the main thread is doing."""

    #: Results received and not yet taken by the consumer, plus tasks running, at most this many per worker:
    #: workers do not run far ahead of a consumer that keeps what they send.
    AHEAD = 2

    def __init__(self, jobs: int, shared: Any) -> None:
        import queue

        global _SHARED
        self._results: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._heap: list[tuple[float, int, bytes]] = []
        self._seq = 0
        self._held = [False] * jobs  # whether a worker holds a task it has not answered
        self._unread = 0  # tasks sent and not yet taken by get()
        self._closing = False
        self._conns: list[Channel] = []
        self._procs: list[Forked] = []
        _SHARED = shared  # inherited by the forked workers
        try:
            for _ in range(jobs):
                ours, theirs = channel_pair()
                proc = Forked(_serve, (theirs,), parent_end=ours, child_end=theirs)
                self._conns.append(ours)
                self._procs.append(proc)
        except BaseException:
            self._stop_workers(at_once=True)
            raise
        finally:
            _SHARED = None
        self._receiver = threading.Thread(target=self._receive, name="hpcsa-results", daemon=True)
        self._receiver.start()

    def queue(self, key: Any, fn: Callable[..., Any], args: tuple[Any, ...], priority: float) -> None:
        """A task, sent when a worker has room (lower ``priority`` first, then the order queued)."""
        payload = pickle.dumps((key, fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            heapq.heappush(self._heap, (priority, self._seq, payload))
            self._seq += 1

    def dispatch(self) -> None:
        with self._lock:
            self._dispatch_locked()

    def take(self) -> tuple[Any, Callable[..., Any], tuple[Any, ...]] | None:
        """The first queued task, taken back before any worker is sent it (for the caller to run itself); None
        when every queued task is with a worker."""
        with self._lock:
            if not self._heap:
                return None
            payload = heapq.heappop(self._heap)[2]
        key, fn, args = pickle.loads(payload)
        return key, fn, args

    def _dispatch_locked(self) -> None:
        """The next tasks to the idle workers. One task per worker: one queued behind a long task (a large
        structure file's parse) would wait while another worker went idle. The receiving thread sends the
        next task as soon as a result arrives, so a worker waits only for that hand-over."""
        while self._heap and not self._closing and self._unread < self.AHEAD * len(self._conns):
            w = next((w for w, held in enumerate(self._held) if not held), None)
            if w is None:
                return
            _, _, payload = heapq.heappop(self._heap)
            try:
                self._conns[w].send_bytes(payload)
            except OSError:  # the worker has gone: the receiving thread reports it
                pass
            self._held[w] = True
            self._unread += 1

    def get(self) -> tuple[Any, Any]:
        """The next (key, result) to arrive; an error raised in a worker is raised here."""
        import queue

        while True:
            try:
                return self._taken(*self._results.get(timeout=1.0))
            except queue.Empty:
                if not self._receiver.is_alive():  # pragma: no cover - a defect in _receive
                    raise RuntimeError("the thread receiving the workers' results has stopped") from None

    def poll(self) -> tuple[Any, Any] | None:
        """Like :meth:`get`, but None at once when no result has arrived."""
        import queue

        try:
            return self._taken(*self._results.get(block=False))
        except queue.Empty:
            return None

    def _taken(self, key: Any, result: Any) -> tuple[Any, Any]:
        if key is _WORKER_LOST:
            raise HpcsaError(None, "a worker process ended without its result")
        with self._lock:
            self._unread -= 1
            self._dispatch_locked()
        _raise_carried(result)
        return key, result

    def _receive(self) -> None:
        """The receiving thread: results into the queue, and each worker's next task sent at once."""
        worker_of: dict[Channel | int, int] = {**{c: w for w, c in enumerate(self._conns)},
                                               **{p.sentinel: w for w, p in enumerate(self._procs)}}
        while not self._closing:
            for ready in wait(list(worker_of)):
                w = worker_of[ready]
                conn = self._conns[w]
                if ready is conn:
                    try:
                        key, result = conn.recv()
                    except (EOFError, OSError):
                        break  # the worker ended mid-message or without one
                    with self._lock:
                        self._held[w] = False
                        self._dispatch_locked()
                    self._results.put((key, result))
                elif not conn.poll(0):  # the process ended with nothing left in its pipe
                    break
                # else: it ended after sending; the pipe is read first (its end of file is the loss)
            else:
                continue
            if not self._closing:
                self._results.put((_WORKER_LOST, None))
            return

    def close(self) -> None:
        with self._lock:
            self._closing = True
            busy = any(self._held)
            self._heap.clear()
        self._stop_workers(at_once=busy)
        self._receiver.join()
        for conn in self._conns:
            conn.close()

    def _stop_workers(self, at_once: bool) -> None:
        """Idle workers are told to end; busy ones are stopped (they hold no lock anyone waits on)."""
        if not at_once:  # each closes its pipe and ends: nobody waits while the system takes its memory back
            for conn, proc in zip(self._conns, self._procs, strict=True):
                with contextlib.suppress(OSError):
                    conn.send_bytes(_END)
                proc.release()
            return
        for proc in self._procs:
            proc.terminate()
            proc.join()


_WORKER_LOST = object()
_END = b""  # an empty message: no more tasks


class _Raised:
    """An exception other than an input error, raised in a worker, carried back to be raised again."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _carried(exc: BaseException) -> Any:
    """An exception of a worker as sent to the parent (an input error as plain data: it does not unpickle)."""
    return _Failure(exc) if isinstance(exc, HpcsaError) else _Raised(exc)


def _raise_carried(payload: Any) -> None:
    """Raise again what :func:`_carried` wrapped; anything else is a result, left alone."""
    if isinstance(payload, _Failure):
        payload.raise_it()
    if isinstance(payload, _Raised):
        raise payload.exc


def _serve(conn: Channel) -> None:
    """A pool worker: tasks from its pipe until told to end, each answered on the same pipe."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops the workers
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if message == _END:  # its output out, then its pipe closed: the parent goes on without waiting
            flush_std_streams()
            conn.close()
            return
        key, fn, args = pickle.loads(message)
        try:
            result: Any = fn(_SHARED, *args)
        except BaseException as exc:  # noqa: BLE001 - raised again in the parent
            result = _carried(exc)
        try:
            conn.send((key, result))
        except (OSError, EOFError):  # the parent has gone
            return
        except Exception as exc:  # a result that does not pickle: say what it was, in one line
            with contextlib.suppress(OSError, EOFError):
                conn.send((key, _Raised(RuntimeError(f"{type(exc).__name__}: {exc}"))))


class _Failure:
    """An input error raised in a worker, carried back as plain data (HpcsaError does not unpickle)."""

    def __init__(self, exc: HpcsaError) -> None:
        self.kind = type(exc)
        self.path = exc.path
        self.problem = exc.problem

    def raise_it(self) -> None:
        raise self.kind(self.path, self.problem)


class DynamicRun:
    """Tasks that may schedule more tasks, by priority (lower first), at most ``2 * jobs`` in flight.

    ``submit(key, fn, args, priority)`` queues a task; iterating yields (key, result) as tasks finish,
    and the consumer may submit more while iterating.
    """

    def __init__(self, pool: LocalPool) -> None:
        self.pool = pool
        self._heap: list[tuple[float, int, Any, Callable[..., Any], tuple[Any, ...]]] = []  # inline only
        self._seq = 0
        self._pending = 0  # forked: submitted and not yet yielded

    def submit(self, key: Any, fn: Callable[..., Any], args: tuple[Any, ...], priority: float = 0.0) -> None:
        hub = self.pool._hub
        if hub is not None:
            hub.queue(key, fn, args, priority)
            self._pending += 1
        else:
            heapq.heappush(self._heap, (priority, self._seq, key, fn, args))
            self._seq += 1

    def take(self) -> tuple[Any, Callable[..., Any], tuple[Any, ...]] | None:
        """The first queued task that no worker has started, for the caller to run itself (it is not yielded
        by iterating); None when there is none."""
        hub = self.pool._hub
        if hub is None:
            if not self._heap:
                return None
            _, _, key, fn, args = heapq.heappop(self._heap)
            return key, fn, args
        got = hub.take()
        if got is not None:
            self._pending -= 1
        return got

    @property
    def pending(self) -> int:
        """Tasks submitted and not yet yielded or taken."""
        return self._pending if self.pool._hub is not None else len(self._heap)

    def start(self) -> None:
        """Hand the queued tasks to the workers now (iterating does it too); nothing for an inline pool."""
        if self.pool._hub is not None:
            self.pool._hub.dispatch()

    def wait(self) -> tuple[Any, Any]:
        """The next result from the workers, waiting for it (a forked pool, with tasks pending and none left to
        :meth:`take`)."""
        hub = self.pool._hub
        if hub is None or not self._pending:
            raise RuntimeError("no task is with a worker")
        hub.dispatch()  # what the consumer submitted since
        got = hub.get()
        self._pending -= 1
        return got

    def rest(self) -> Iterator[tuple[Any, Any]]:
        """Every task still pending, as it finishes: those no worker has started run here (the caller has
        nothing else left to do), the others waited for."""
        while self.pending:
            got = self.take()
            if got is None:
                yield self.wait()
            else:
                key, fn, args = got
                yield key, fn(self.pool.shared, *args)

    def finished(self) -> Iterator[tuple[Any, Any]]:
        """The results the workers have sent back already, without waiting for more (a forked pool)."""
        hub = self.pool._hub
        while hub is not None and self._pending:
            got = hub.poll()
            if got is None:
                return
            self._pending -= 1
            yield got

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        hub = self.pool._hub
        if hub is None:
            while self._heap:
                _, _, key, fn, args = heapq.heappop(self._heap)
                yield key, fn(self.pool.shared, *args)
            return
        while self._pending:
            yield self.wait()


class Tickets:
    """Numbers 0, 1, 2, ... taken by forked processes, each number once: the next piece of work for whichever
    process is free (a process slowed by other work on the machine takes fewer)."""

    def __init__(self) -> None:
        self._value = SharedInts(1)

    def take(self) -> int:
        return self._value.add(0, 1)

    def taken(self) -> int:
        """How many numbers have been taken (those past the end included)."""
        return self._value.get(0)


class ForkedWorker:
    """One forked process running ``target(conn, *args)`` with its end of a pipe.

    ``args`` are inherited by the fork, never pickled (objects of any size cost nothing to hand over).
    The target sends ``(tag, payload)`` pairs; ``receive()`` returns the payload of the expected tag. A
    target that returns something other than None (what it built) ends its process at once after it
    returns, with what it returned and its arguments never freed (:func:`hpcsa.core.textout.end_now`). An
    exception in the target reaches the parent, raised again by ``receive()`` (an input error as the
    same :class:`.HpcsaError`); a process that ended without sending (killed, out of memory) is one
    :class:`.HpcsaError` naming ``what``."""

    def __init__(self, target: Callable[..., object], *args: Any, what: str = "hpcsa") -> None:
        if not can_fork():  # pragma: no cover - not on Linux
            raise RuntimeError("ForkedWorker needs fork")
        self.what = what
        self.conn, theirs = channel_pair()
        self.proc = Forked(_forked_main, (theirs, target, args), parent_end=self.conn, child_end=theirs)

    def send(self, obj: Any) -> None:
        self.conn.send(obj)

    def receive(self, tag: str) -> Any:
        try:
            got, payload = self.conn.recv()
        except EOFError:  # killed (out of memory, a signal): say so in one line
            raise HpcsaError(None, f"a worker process of {self.what} ended without its result") from None
        if got == "error":
            _raise_carried(payload)
        assert got == tag, (got, tag)
        return payload

    def close(self) -> None:
        """The worker is told that nothing more comes (its next read is the end of file) and given 5 seconds
        to close its end; once it has, it is ending and is reaped later, not waited for while the system
        takes its memory back. A worker that has not closed its end by then is stopped."""
        self.conn.close_sending()
        deadline = time.monotonic() + 5
        ended = self.conn.ended()
        while not ended and (left := deadline - time.monotonic()) > 0 and wait([self.conn], left):
            ended = self.conn.ended()
        self.conn.close()
        if ended:
            self.proc.release()
        else:
            self.proc.terminate()
            self.proc.join()

    def __enter__(self) -> ForkedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _forked_main(conn: Channel, target: Callable[..., Any],
                 args: tuple[Any, ...]) -> None:
    try:
        held = target(conn, *args)
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        _send_error(conn, exc)
        held = None
    flush_std_streams()  # before the pipe closes: the parent, seeing it closed, does not wait for the exit
    conn.close()
    if held is not None:
        # What the target built is never freed one by one: a worker that built a binary's structure spent
        # 20-45 ms freeing it after its last message, and its parent, joining it, waited as long; freeing
        # also writes the reference counts of the pages it shares with its parent, copying them.
        end_now(0)


def _send_error(conn: Channel, exc: BaseException) -> None:
    try:
        conn.send(("error", _carried(exc)))
    except (OSError, EOFError):  # the parent has gone (it failed first and closed its end): nothing to tell
        pass
    except Exception:  # an exception that does not pickle (nothing was sent): its text, in one line
        with contextlib.suppress(OSError, EOFError):
            conn.send(("error", _Raised(RuntimeError(f"{type(exc).__name__}: {exc}"))))


def default_jobs() -> int:
    """hpcprof's default: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)
