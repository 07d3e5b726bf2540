"""Forked processes, the pipes between them, and integers they share, with nothing but :mod:`os`.

:mod:`multiprocessing` did this before. For a command's few forked workers it cost 10-25 ms at every start
(measured on 2 cores: importing it loads sockets, subprocess, ctypes and their kin, and its shared values
create POSIX semaphores), and its shared values need a writable ``/dev/shm``, which some containers and
batch nodes lack. What the workers need is small: fork, a pipe each way carrying whole messages, a way to
wait for several pipes at once, and a counter that several processes take numbers from.

A message is its length (8 bytes, little-endian) and its bytes; an object travels pickled. A process's end
of file (it ended, or closed its end) is :class:`EOFError` on the other side, never a wait for ever: every
process closes the ends it does not own as soon as it is forked.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import sys
import weakref
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from hpcsa.core.errors import HpcsaError
from hpcsa.core.textout import end_now, flush_std_streams

_LENGTH = struct.Struct("<Q")


def can_fork() -> bool:
    """Whether this platform forks (workers inherit the parent's data instead of receiving it pickled)."""
    return hasattr(os, "fork")


class Channel:
    """One process's end of a two-way connection to another: whole messages, sent and received in order."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._r = read_fd
        self._w = write_fd

    def fileno(self) -> int:
        """The descriptor to wait on (:func:`wait`): readable when a message or the end of file has come."""
        return self._r

    @property
    def closed(self) -> bool:
        return self._r < 0

    def send_bytes(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        header = _LENGTH.pack(len(view))
        sent = os.writev(self._w, [header, view])
        if sent < len(header):
            _write_all(self._w, memoryview(header)[sent:])
            sent = len(header)
        _write_all(self._w, view[sent - len(header):])

    def recv_bytes(self) -> bytearray:
        """The next message; :class:`EOFError` where the other end closed before (or while) sending it."""
        (size,) = _LENGTH.unpack(self._read_exactly(_LENGTH.size))
        return self._read_exactly(size)

    def send(self, obj: Any) -> None:
        self.send_bytes(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def recv(self) -> Any:
        return pickle.loads(self.recv_bytes())

    def ended(self) -> bool:
        """Whether the other process has closed its end (it has nothing more to say); what it sent and
        nobody read is read now and dropped. Never waits."""
        os.set_blocking(self._r, False)
        try:
            while os.read(self._r, 1 << 16):
                pass
            return True
        except BlockingIOError:
            return False
        finally:
            os.set_blocking(self._r, True)

    def poll(self, timeout: float = 0.0) -> bool:
        """Whether a message (or the end of file) is ready, waiting at most ``timeout`` seconds."""
        return bool(wait([self], timeout))

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at the interpreter's end, os may be gone already
            pass

    def close_sending(self) -> None:
        """Close the sending half: the other process's next read is the end of file; receiving goes on."""
        if self._w >= 0:
            os.close(self._w)
            self._w = -1

    def close(self) -> None:
        for fd in (self._r, self._w):
            if fd >= 0:
                os.close(fd)
        self._r = self._w = -1

    def _read_exactly(self, size: int) -> bytearray:
        buf = bytearray(size)
        view, at = memoryview(buf), 0
        while at < size:
            n = os.readv(self._r, [view[at:]])
            if n == 0:
                raise EOFError("the other end of the pipe closed")
            at += n
        return buf


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view):]


def channel_pair() -> tuple[Channel, Channel]:
    """Two connected ends: what one sends, the other receives."""
    a_r, b_w = os.pipe()  # (a 1 MiB pipe buffer, F_SETPIPE_SZ, made no difference to 5-8 MiB messages)
    b_r, a_w = os.pipe()
    return Channel(a_r, a_w), Channel(b_r, b_w)


#: What a process forked from this one must close at once: the parent's ends toward the processes forked
#: before it, and, in a forked process, its own end toward its parent and the write end of its sentinel.
#: Were a process to keep a copy of one, an end of file it has nothing to do with would never come.
_NOT_FOR_CHILDREN: weakref.WeakSet[Channel] = weakref.WeakSet()
_NOT_FOR_CHILDREN_FDS: list[int] = []


class Forked:
    """A forked process running ``target(*args)``, then ending (status 0, or 1 where the target raised).

    ``parent_end`` and ``child_end`` are the two sides of a :func:`channel_pair`: the child closes the
    parent's, the parent the child's, and neither reaches a process forked later."""

    def __init__(self, target: Callable[..., object], args: Iterable[Any] = (), *,
                 parent_end: Channel | None = None, child_end: Channel | None = None) -> None:
        args = tuple(args)
        reap_ended()
        sentinel, child_alive = os.pipe()
        flush_std_streams()  # else what is buffered now is written twice, once by each process
        try:
            pid = os.fork()
        except OSError as exc:  # no process to be had (a limit on processes, or memory): one line, as for inputs
            os.close(sentinel)
            os.close(child_alive)
            raise HpcsaError(None, f"cannot start a worker process ({exc.strerror or exc}); "
                             "run again with fewer jobs (-j 1: one process)") from None
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            os.close(sentinel)
            _child(target, args, parent_end, child_end, child_alive)
        os.close(child_alive)
        if child_end is not None:
            child_end.close()
        if parent_end is not None:
            _NOT_FOR_CHILDREN.add(parent_end)
        self.pid = pid
        #: Readable (end of file) once the process has ended, whatever it left in its pipes.
        self.sentinel = sentinel
        self.exitcode: int | None = None  # the status once reaped; minus the signal's number if one ended it
        self._finalizer = weakref.finalize(self, os.close, sentinel)

    def release(self) -> None:
        """Reap the process later, when it has ended (by :func:`reap_ended`): for a process that has closed its
        pipes and is ending, which the parent need not wait for while the system takes its memory back
        (1-10 ms for a worker of a large run)."""
        if self._reap(block=False) is None:
            _ENDING.append(self)

    def is_alive(self) -> bool:
        return self._reap(block=False) is None

    def join(self, timeout: float | None = None) -> None:
        """Wait for the process to end (at most ``timeout`` seconds) and reap it."""
        if self.exitcode is None and (timeout is None or wait([self.sentinel], timeout)):
            self._reap(block=True)

    def terminate(self) -> None:
        self._signal(15)  # SIGTERM (the signal module's enums cost an import)

    def kill(self) -> None:
        self._signal(9)  # SIGKILL

    def _signal(self, sig: int) -> None:
        if self.exitcode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # pragma: no cover - ended and reaped by someone else
                pass

    def _reap(self, block: bool) -> int | None:
        if self.exitcode is None:
            try:
                pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:  # pragma: no cover - reaped elsewhere: its status is lost
                self.exitcode = 255
                return self.exitcode
            if pid:
                self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode


#: Released processes not yet reaped.
_ENDING: list[Forked] = []


def reap_ended() -> None:
    """Reap the released processes that have ended (each new fork does it first): none is left a zombie
    for long."""
    _ENDING[:] = [p for p in _ENDING if p._reap(block=False) is None]


def _child(target: Callable[..., object], args: tuple[Any, ...], parent_end: Channel | None,
           child_end: Channel | None, alive_fd: int) -> NoReturn:  # pragma: no cover - runs in the child
    code = 1
    try:
        if parent_end is not None:
            parent_end.close()
        for end in list(_NOT_FOR_CHILDREN):
            end.close()
        _NOT_FOR_CHILDREN.clear()
        for fd in _NOT_FOR_CHILDREN_FDS:
            os.close(fd)
        _NOT_FOR_CHILDREN_FDS[:] = [alive_fd]
        _ENDING.clear()  # the parent's processes, not this one's children
        if child_end is not None:
            _NOT_FOR_CHILDREN.add(child_end)
        try:  # as multiprocessing does: the parent keeps the terminal's input
            sys.stdin.close()
            sys.stdin = open(os.devnull)  # noqa: SIM115 - stays open for the process's life
        except (OSError, ValueError, AttributeError):
            pass
        target(*args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - a defect: its traceback, as an unhandled exception would print
        import traceback

        traceback.print_exc()
    finally:
        end_now(code)


def wait(objects: Iterable[Any], timeout: float | None = None) -> list[Any]:
    """The ``objects`` (channels, or descriptors) that are readable, waiting at most ``timeout`` seconds for
    one (for ever without); in the order given."""
    objects = list(objects)
    fds = [o if isinstance(o, int) else o.fileno() for o in objects]
    if hasattr(select, "poll"):
        poller = select.poll()
        for fd in set(fds):
            poller.register(fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll(None if timeout is None else max(0, int(timeout * 1000)))}
    else:  # pragma: no cover - no poll(2)
        ready = set(select.select(fds, [], [], timeout)[0])
    return [o for o, fd in zip(objects, fds, strict=True) if fd in ready]


class SharedInts:
    """``count`` integers (64-bit, signed) that forked processes read and change, one process at a time.

    The integers themselves are the lock's token: they sit in a pipe as one write of ``8 * count`` bytes
    (at most ``PIPE_BUF``, so a read takes all of them or waits). A process takes them out, changes them and
    writes them back; another process wanting them meanwhile waits in its read. Made before the fork."""

    def __init__(self, count: int = 1) -> None:
        if not 0 < count <= 64:
            raise ValueError("1 to 64 integers")
        self._size = 8 * count
        self._format = struct.Struct(f"<{count}q")
        self._r, self._w = os.pipe()
        os.write(self._w, bytes(self._size))
        self._finalizer = weakref.finalize(self, _close_pair, self._r, self._w)

    def add(self, index: int, amount: int, round_to: int = 1) -> int:
        """Integer ``index`` as it was, after which it holds that value plus ``amount``, rounded up to a
        multiple of ``round_to``."""
        data = self._take()
        try:  # the token goes back whatever happens here (an interrupt): the others would wait for ever
            values = list(self._format.unpack(data))
            old = values[index]
            values[index] = (old + amount + round_to - 1) // round_to * round_to
            data = self._format.pack(*values)
        finally:
            self._put(data)
        return old

    def get(self, index: int) -> int:
        data = self._take()
        self._put(data)
        return self._format.unpack(data)[index]

    def _take(self) -> bytes:
        data = os.read(self._r, self._size)
        if len(data) != self._size:  # pragma: no cover - only a foreign write to the pipe could do it
            raise RuntimeError("the shared integers' pipe was written to by someone else")
        return data

    def _put(self, data: bytes) -> None:
        os.write(self._w, data)


def _close_pair(r: int, w: int) -> None:
    os.close(r)
    os.close(w)
