"""The MPI transport: ``mpiexec -n R hpcsa prof ...`` with mpi4py (MPICH from PyPI: ``pip install hpcsa[mpi]``).

hpcprof-mpi's two-phase scheme ("Preparing for Performance Analysis at
Exascale", ICS 2022, §3.2) over :class:`.transport.Transport`'s operations:

- reductions go up a t-ary tree of ranks (t = max(workers per rank, 2), as
  hpcprof-mpi's ``RankTree``): a rank merges its own value with its
  children's, in rank order, and sends the result to its parent;
- broadcasts are one pickle sent with ``MPI_Bcast`` (rank 0 keeps its object);
- counters live in a window on rank 0, advanced with one-sided atomic
  ``MPI_Fetch_and_op``: byte offsets in the scratch files (the ranks' class-1
  blobs), and the next task of a phase (profiles, batches and context ranges
  are handed out dynamically, largest first).

Only a rank's main process calls MPI; its forked workers do not (their blobs
are placed by the rank, :func:`.phase2.values.store`). Every rank needs the output
directory on a file system they share.

A run is an MPI run when an MPI launcher started the process (its
environment says so); then mpi4py must be importable and its MPI must be the
launcher's, otherwise the run stops with one line from rank 0.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import stat
import struct
import sys
import termios
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import numpy as np

from hpcsa.aggregate.transport import (
    COLLECTIVE_ERRORS,
    Counter,
    Failure,
    first_failure,
    tree_children,
    tree_parent,
)
from hpcsa.core import libdefaults
from hpcsa.core.binfmt import align
from hpcsa.core.errors import HpcsaError
from hpcsa.core.textout import end_now, end_through_exit

T = TypeVar("T")

#: (rank, size) variables of the launchers: MPICH/Hydra and Intel MPI (PMI), Open MPI, MVAPICH, PMIx (Slurm).
LAUNCHER_VARIABLES = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                      ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"), ("PMIX_RANK", None))
#: Ranks on this node, where the launcher says.
LOCAL_SIZE_VARIABLES = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE",
                        "SLURM_NTASKS_PER_NODE")
COUNTER_SLOTS = 64
POLL_MAX_SLEEP = 2.5e-4  # seconds between polls of a rank waiting for a message, at most (see MpiTransport._idle)
INSTALL_HINT = "pip install 'hpcsa[mpi]' (mpi4py and MPICH)"


def launched(environ: dict[str, str] | None = None) -> tuple[int, int | None] | None:
    """(rank, size) announced by an MPI launcher in the environment; None when no launcher started us."""
    env = os.environ if environ is None else environ
    for rank_var, size_var in LAUNCHER_VARIABLES:
        if rank_var in env:
            try:
                rank = int(env[rank_var])
                size = int(env[size_var]) if size_var and size_var in env else None
            except ValueError:
                continue
            return rank, size
    return None


def ranks_on_this_node(environ: dict[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    for var in LOCAL_SIZE_VARIABLES:
        try:
            return max(1, int(env[var]))
        except (KeyError, ValueError):
            continue
    return 1


def _import_mpi() -> Any:
    libdefaults.set_defaults(libdefaults.MPI_MEMORY_HOOKS)  # before MPICH's library (and UCX) loads
    try:
        import mpi4py

        mpi4py.rc.thread_level = "funneled"  # only a rank's main thread calls MPI
        from mpi4py import MPI
    except ImportError as exc:
        raise HpcsaError("mpiexec", f"this is an MPI run but mpi4py cannot be imported ({exc}); {INSTALL_HINT}"
                         ) from None
    except Exception as exc:  # mpi4py present, its MPI library missing or broken
        raise HpcsaError("mpiexec", f"this is an MPI run but MPI cannot be initialized ({type(exc).__name__}: "
                         f"{exc}); {INSTALL_HINT}") from None
    return MPI


class MpiTransport:
    """The ranks of ``MPI_COMM_WORLD``; ``arity`` is the branching of the reduction tree.

    Create it on every rank (collective), use it the same way on every rank, then :meth:`close` it.
    """

    def __init__(self, mpi: Any, comm: Any, arity: int) -> None:
        self.MPI = mpi
        self.comm = comm
        self.rank = int(comm.Get_rank())
        self.size = int(comm.Get_size())
        self.arity = max(2, int(arity))
        self._tag = 0
        self._slots: dict[str, int] = {}
        self._win = mpi.Win.Allocate(8 * COUNTER_SLOTS if self.rank == 0 else 0, 8, comm=comm)
        if self.rank == 0:
            self._win.Lock(0, mpi.LOCK_EXCLUSIVE)
            self._win.Put(np.zeros(COUNTER_SLOTS, np.int64), 0)
            self._win.Unlock(0)
        comm.Barrier()
        # One passive-target epoch for the transport's life: a fetch-and-add is then the atomic and a flush,
        # with no lock request that rank 0 would have to answer (it would wait until rank 0 calls MPI,
        # i.e. until it finishes the task it is busy with).
        self._win.Lock_all()

    @classmethod
    def from_environment(cls, arity: int) -> MpiTransport:
        """The transport of an MPI run (every rank calls this). One-line errors when MPI is unusable."""
        mpi = _import_mpi()
        comm = mpi.COMM_WORLD
        announced = launched()
        expected = announced[1] if announced else None
        if expected is not None and expected > 1 and comm.Get_size() != expected:
            raise HpcsaError("mpiexec", f"the launcher started {expected} ranks but mpi4py's MPI sees "
                             f"{comm.Get_size()} ({mpi.Get_library_version().splitlines()[0].strip()}): "
                             "use the mpiexec of the MPI that mpi4py was built with (e.g. .venv/bin/mpiexec)")
        return cls(mpi, comm, arity)

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    # -- counters on rank 0 ---------------------------------------------------------------------------

    def _slot(self, name: str) -> int:
        """Counter slots are given in order of first use, the same on every rank (they run the same code)."""
        slot = self._slots.get(name)
        if slot is None:
            if len(self._slots) >= COUNTER_SLOTS:
                raise RuntimeError("out of MPI counter slots")
            slot = self._slots[name] = len(self._slots)
        return slot

    def fetch_add(self, name: str, amount: int) -> int:
        """Atomically add ``amount`` to counter ``name`` and return its previous value (one-sided)."""
        got = np.empty(1, np.int64)
        self._win.Fetch_and_op(np.array([amount], np.int64), got, 0, self._slot(name), self.MPI.SUM)
        self._win.Flush(0)
        return int(got[0])

    def tasks(self, name: str, n: int) -> Iterator[int]:
        self._slot(name)
        while True:
            k = self.fetch_add(name, 1)
            if k >= n:
                return
            yield k

    def counter(self, kinds: tuple[str, ...]) -> tuple[Counter, bool]:
        """Byte offsets shared by all ranks; usable only in a rank's main process (not in its workers)."""
        for kind in kinds:
            self._slot(f"bytes {kind}")

        def allocate(kind: str, nbytes: int) -> int:
            return self.fetch_add(f"bytes {kind}", align(nbytes, 8))

        return allocate, False

    # -- collectives ----------------------------------------------------------------------------------

    def reduce(self, local: Callable[[], T], merge: Callable[[list[T]], T]) -> T | Failure | None:
        """``local()`` on every rank, merged up the tree; the result (or the first failure) at rank 0."""
        self._tag += 1
        try:
            mine: Any = local()
        except COLLECTIVE_ERRORS as exc:
            mine = Failure(exc)
        parts = [mine] + [self._recv(c, self._tag) for c in tree_children(self.rank, self.size, self.arity)]
        value: Any = first_failure(parts)
        if value is None:
            try:
                value = merge(parts) if len(parts) > 1 else mine
            except COLLECTIVE_ERRORS as exc:
                value = Failure(exc)
        parent = tree_parent(self.rank, self.arity)
        if parent is not None:
            req = self.comm.isend(value, dest=parent, tag=self._tag)
            self._idle(lambda: req.test()[0])
            return None
        return value

    def bcast(self, make: Callable[[], T]) -> T:
        """``make()`` on rank 0, its value on every rank; a failure there is raised on every rank."""
        payload: Any = None
        data = b""
        if self.rank == 0:
            try:
                payload = (True, make())
            except COLLECTIVE_ERRORS as exc:
                payload = (False, Failure(exc))
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        n = np.array([len(data)], np.int64)
        first = self.comm.Ibcast(n, root=0)
        self._idle(first.Test)
        buf = np.frombuffer(data, np.uint8) if self.rank == 0 else np.empty(int(n[0]), np.uint8)
        second = self.comm.Ibcast(buf, root=0)
        self._idle(second.Test)
        if self.rank != 0:
            payload = pickle.loads(buf.data)
        del buf, data
        ok, value = payload
        if not ok:
            value.raise_it()
        return value

    def _recv(self, source: int, tag: int) -> Any:
        self._idle(lambda: self.comm.Iprobe(source=source, tag=tag))
        return self.comm.recv(source=source, tag=tag)

    @staticmethod
    def _idle(done: Callable[[], bool]) -> None:
        """Wait for ``done()`` sleeping between polls (MPICH's blocking calls spin: a rank waiting for rank 0's
        class-2 work would take a core from it, or from its own workers). A message of a few hundred KiB
        moves only when both ranks poll (a handshake of several steps), so the sleeps stay short: at most
        0.25 ms (a few per cent of a core while waiting; 2 ms cost each step of a handover milliseconds)."""
        delay = 1e-5
        while not done():
            time.sleep(delay)
            delay = min(2 * delay, POLL_MAX_SLEEP)

    def abort(self, code: int) -> None:
        """End every rank now (a rank failed outside the protocol: nobody may wait for it)."""
        sys.stderr.flush()
        _wait_until_read(2)
        self.comm.Abort(code)

    def fail_together(self, line: str, code: int) -> None:
        """End a run every rank agreed has failed: ``line`` on rank 0's standard error, ``code`` from mpiexec.

        Every rank leaving with ``code`` at once (``os._exit``) is not enough: MPICH's launcher (Hydra) kills
        the other processes as soon as one leaves without having told it (its process-manager client's exit
        handler), and where its SIGKILL lands before a rank has left, mpiexec reports the signal (status 9)
        instead (3 ranks: 9 in 3 of 8 runs here); ``MPI_Abort`` carries the code but leaves the node's
        shared-memory segment in ``/dev/shm``. So: every rank has cleaned up when it reaches the barrier; rank 0
        writes the line; every rank finalizes MPI and leaves through the C library's ``exit``
        (:func:`end_rank`: status 2 in 10 of 10 runs of 3 ranks, nothing left behind). One rank: nothing to
        coordinate, the caller leaves with ``code``."""
        if self.size == 1:
            return
        request = self.comm.Ibarrier()
        self._idle(request.Test)
        if self.rank == 0:
            sys.stderr.write(line + "\n")
        end_rank(code)

    def close(self) -> None:
        """Free the counters (collective: every rank, after the last operation)."""
        if self._win is not None:
            self._win.Unlock_all()
            self._win.Free()
            self._win = None


def end_rank(code: int) -> NoReturn:
    """End this process, where it initialized MPI: ``MPI_Finalize``, then the C library's ``exit``, whose
    handlers MPICH needs (they tell its launcher the process ended, and remove the node's shared-memory
    segment); else at once (:func:`~hpcsa.core.textout.end_now`). The end of every ``hpcsa`` command
    (:func:`hpcsa.cli.main.leave`) and of a failed MPI run (:meth:`MpiTransport.fail_together`)."""
    mpi = sys.modules.get("mpi4py.MPI")  # (not imported here: a command that never used MPI ends as it was)
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()
        end_through_exit(code)
    end_now(code)


def _wait_until_read(fd: int, limit: float = 2.0) -> None:
    """Wait (at most ``limit`` seconds) until what this process wrote to the pipe ``fd`` has been read: an MPI
    launcher relays its ranks' output from pipes, and stops relaying when the job is aborted."""
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        pending = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, bytes(4)))[0]  # Linux: either end
        if pending == 0:
            return
        time.sleep(0.001)


def report_and_abort(transport: MpiTransport | None, exc: BaseException) -> None:
    """A rank failed outside the protocol: say where, then abort the job so no rank waits forever."""
    rank = transport.rank if transport is not None else "?"
    if not isinstance(exc, KeyboardInterrupt):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        sys.stderr.write(f"hpcsa: rank {rank}: internal error, aborting all ranks\n{text}")
    if transport is not None:
        transport.abort(130 if isinstance(exc, KeyboardInterrupt) else 1)
    raise SystemExit(1)


def available() -> bool:
    """Whether mpi4py can be imported (importing it does not initialize MPI; importing ``mpi4py.MPI`` does)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True
