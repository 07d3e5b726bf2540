"""Where the phases of ``hpcsa prof`` run: one process (with its workers), or the ranks of an MPI job.

The driver (:func:`.driver.aggregate`) is written once, against the few
operations hpcprof-mpi's two-phase scheme needs ("Preparing for Performance
Analysis at Exascale", ICS 2022, §3.2):

- :meth:`Transport.tasks`: which of ``n`` tasks (in canonical priority order,
  largest first) this rank runs. One process runs them all; MPI ranks take
  the next one from a counter shared by every rank, so a rank that is busy
  elsewhere (rank 0 parsing structure files) simply takes fewer.
- :meth:`Transport.reduce`: each rank computes a value and the values are
  merged (associatively) up a t-ary tree to rank 0.
- :meth:`Transport.bcast`: rank 0 computes a value every rank gets.
- :meth:`Transport.counter`: byte offsets in a scratch file, from a counter
  shared by everything that writes into it.

Errors are collective. Bad input found by any rank (:class:`.HpcsaError`) or
a hash collision travels up the next reduction as a :class:`Failure`; rank 0
broadcasts it and every rank raises the same exception at the same point, so
nothing waits for a rank that gave up. Anything else (a bug, a killed rank)
aborts the whole job (:meth:`Transport.abort`).

:class:`Single` is the transport of one process: every operation is the
identity and exceptions simply propagate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from hpcsa.aggregate.rawtree import HashCollision
from hpcsa.core.errors import HpcsaError
from hpcsa.core.workers import DynamicRun, LocalPool

T = TypeVar("T")

#: Exceptions that are part of the protocol (agreed on by all ranks) rather than a reason to abort.
COLLECTIVE_ERRORS = (HpcsaError, HashCollision)


class Failure:
    """An exception carried as plain data through a reduction or a broadcast, raised again by every rank."""

    def __init__(self, exc: BaseException) -> None:
        self.kind = type(exc)
        if isinstance(exc, HpcsaError):
            self.args: tuple[Any, ...] = (exc.path, exc.problem)
        else:
            self.args = tuple(str(a) for a in exc.args)

    def exception(self) -> BaseException:
        return self.kind(*self.args)

    def raise_it(self) -> None:
        raise self.exception()


def first_failure(values: Iterable[Any]) -> Failure | None:
    return next((v for v in values if isinstance(v, Failure)), None)


def tree_parent(rank: int, arity: int) -> int | None:
    """The rank a rank sends its part to in a t-ary tree rooted at rank 0 (None for the root)."""
    return None if rank == 0 else (rank - 1) // arity


def tree_children(rank: int, size: int, arity: int) -> list[int]:
    """The ranks whose parts a rank merges, in ascending order (the merge order is fixed)."""
    first = rank * arity + 1
    return list(range(first, min(first + arity, size)))


class Counter(Protocol):
    def __call__(self, kind: str, nbytes: int) -> int: ...


class Transport(Protocol):
    """What the driver asks of where it runs: :class:`Single`, or :class:`.mpi.MpiTransport` (see above)."""

    rank: int
    size: int

    @property
    def is_root(self) -> bool:
        """Whether this is rank 0."""
        ...

    def tasks(self, name: str, n: int) -> Iterator[int]:
        """Which of ``n`` tasks (in canonical priority order, largest first) this rank runs."""
        ...

    def reduce(self, local: Callable[[], T], merge: Callable[[list[T]], T]) -> T | Failure | None:
        """``local()`` on every rank, merged up a t-ary tree to rank 0."""
        ...

    def bcast(self, make: Callable[[], T]) -> T:
        """``make()`` on rank 0, its result on every rank."""
        ...

    def counter(self, kinds: tuple[str, ...]) -> tuple[Counter, bool]:
        """A counter shared by every writer of a scratch file, per kind."""
        ...

    def abort(self, code: int) -> None:
        """End the whole job (a bug or a killed rank: not a collective error)."""
        ...


class Single:
    """One process: the identity transport (the single-machine path of :func:`.driver.aggregate`)."""

    rank = 0
    size = 1

    @property
    def is_root(self) -> bool:
        return True

    def tasks(self, name: str, n: int) -> Iterator[int]:
        return iter(range(n))

    def reduce(self, local: Callable[[], T], merge: Callable[[list[T]], T]) -> T:
        return local()

    def bcast(self, make: Callable[[], T]) -> T:
        return make()

    def counter(self, kinds: tuple[str, ...]) -> tuple[Counter, bool]:
        """A counter shared with forked workers: (allocate, usable inside the workers)."""
        from hpcsa.core.workers import SharedCounter

        return SharedCounter(kinds), True

    def abort(self, code: int) -> None:  # pragma: no cover - nothing to abort
        raise SystemExit(code)


def unwrap(value: T | Failure | None) -> T:
    """The value of a reduction at rank 0, or the failure it carried, raised."""
    if isinstance(value, Failure):
        value.raise_it()
    return value  # type: ignore[return-value]  # None only off rank 0, which never unwraps


def tasks_ahead(jobs: int) -> int:
    """Tasks a rank takes from its share before one finishes: one inline, one more than its workers in a pool
    (so no worker waits for the next task, and an MPI rank does not hoard tasks another rank could run)."""
    return 1 if jobs <= 1 else jobs + 1


def run_shared(pool: LocalPool, fn: Callable[..., Any], share: Iterator[int], args_of: Callable[[int], tuple[Any, ...]],
               ahead: int, meanwhile: Callable[[], None] | None = None, parent_works: bool = False,
               tasks: DynamicRun | None = None) -> Iterator[tuple[Any, Any]]:
    """``fn(shared, *args_of(k))`` for each task ``k`` handed to this rank, as the tasks finish. A task is
    taken from ``share`` only when there is room for it (at most ``ahead`` waiting or running).
    ``meanwhile()``, other work of this process, runs once the first tasks are with the workers (a forked
    pool), or after the first task (inline), or at the end when the rank got no task. ``parent_works``:
    with a forked pool, this process runs tasks too, taking the next one whenever it has handed its last
    result on, and after each gives every worker that has sent a result back its next task (``ahead``:
    the tasks the workers hold, running or waiting; two each keep them busy while this process runs one);
    once ``share`` is exhausted it takes back the queued tasks no worker has started instead of waiting.
    ``tasks``: the caller's :class:`.DynamicRun` on ``pool``, to which it may submit tasks of its own while
    iterating (keys other than the share's numbers); they are handed on like the others."""
    tasks = tasks or DynamicRun(pool)

    def more() -> None:
        k = next(share, None)
        if k is not None:
            tasks.submit(k, fn, args_of(k), priority=float(k))

    for _ in range(ahead):
        more()
    if meanwhile is not None and pool.forked:
        tasks.start()
        meanwhile()
        meanwhile = None
    if parent_works and pool.forked:
        tasks.start()
        for k in share:
            yield k, fn(pool.shared, *args_of(k))
            tasks.start()  # what the caller submitted meanwhile
            for key, result in tasks.finished():
                more()
                tasks.start()
                yield key, result
        yield from tasks.rest()  # the share is exhausted: this process runs what no worker has started yet
        return
    for k, result in tasks:
        if meanwhile is not None:
            meanwhile()
            meanwhile = None
        more()
        yield k, result
    if meanwhile is not None:
        meanwhile()
