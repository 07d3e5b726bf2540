"""Forked processes without multiprocessing (hpcsa.core.forking): whole messages both ways, an end of file where a
process ends or closes its end (never a wait for ever), exit statuses, and integers shared under one lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.core.forking import Channel, Forked, SharedInts, channel_pair, wait

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def _started(target, *args) -> tuple[Channel, Forked]:
    ours, theirs = channel_pair()
    return ours, Forked(target, (theirs, *args), parent_end=ours, child_end=theirs)


def _echo_twice(conn: Channel) -> None:
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        conn.send(message)
        conn.send_bytes(b"")


def test_messages_keep_their_bounds_and_size_both_ways() -> None:
    ours, proc = _started(_echo_twice)
    big = os.urandom(5 << 20)  # several times what a pipe holds: both sides wait in turn
    for message in ([1, "two", None], big, b"", {"k": (3.5, big[:10])}):
        ours.send(message)
        assert ours.recv() == message
        assert ours.recv_bytes() == b""
    ours.close()  # the child's next read is the end of file: it returns, and ends with status 0
    proc.join(timeout=10)
    assert proc.exitcode == 0


def _ends_at_once(conn: Channel, how: str) -> None:
    if how == "raise":
        raise KeyError("a defect in the child")
    if how == "exit 3":
        sys.exit(3)
    if how == "killed":
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize(("how", "status"), [("return", 0), ("raise", 1), ("exit 3", 3), ("killed", -9)])
def test_statuses_and_the_end_of_file_of_an_ended_process(how: str, status: int, capfd) -> None:
    ours, proc = _started(_ends_at_once, how)
    with pytest.raises(EOFError):
        ours.recv()  # the child ended without sending: an end of file, not a wait
    proc.join()
    assert proc.exitcode == status
    assert not proc.is_alive()
    err = capfd.readouterr().err
    assert ("KeyError: 'a defect in the child'" in err) == (how == "raise")


def _waits(conn: Channel, seconds: float) -> None:
    try:
        conn.recv()
    except EOFError:
        return
    time.sleep(seconds)


def test_join_with_a_time_limit_leaves_a_running_process_then_terminate_ends_it() -> None:
    ours, proc = _started(_waits, 60.0)
    ours.send("go")
    proc.join(timeout=0.05)
    assert proc.exitcode is None and proc.is_alive()
    proc.terminate()
    proc.join(timeout=10)
    assert proc.exitcode == -signal.SIGTERM


def test_a_process_forked_later_holds_no_end_of_an_earlier_one() -> None:
    """Closing the parent's end toward the first child ends it at once, although the second child (forked
    while that end was open) still runs: multiprocessing's children kept such copies."""
    first_end, first = _started(_waits, 0.0)
    second_end, second = _started(_waits, 60.0)
    second_end.send("go")  # the second sleeps, holding whatever it inherited
    t = time.perf_counter()
    first_end.close()
    first.join(timeout=10)
    assert first.exitcode == 0 and time.perf_counter() - t < 5
    second.kill()
    second.join()
    assert second.exitcode == -signal.SIGKILL
    second_end.close()


def test_wait_gives_the_ready_ones_in_the_order_given() -> None:
    a, proc_a = _started(_echo_twice)
    b, proc_b = _started(_echo_twice)
    assert wait([a, b], timeout=0) == []
    b.send("x")
    assert wait([a, b], timeout=10) == [b]
    assert b.poll(10) and not a.poll(0)
    a.send("y")
    time.sleep(0.2)
    assert wait([b, a], timeout=10) == [b, a]
    for end, proc in ((a, proc_a), (b, proc_b)):
        end.close()
        proc.join(timeout=10)
        assert proc.exitcode == 0
    assert wait([proc_a.sentinel, proc_b.sentinel], timeout=0) == [proc_a.sentinel, proc_b.sentinel]


def _adds(conn: Channel, shared: SharedInts, times: int) -> None:
    got = [shared.add(0, 1) for _ in range(times)]
    for _ in range(times):
        shared.add(1, 5, round_to=8)
    conn.send(got)


def test_shared_integers_change_one_process_at_a_time() -> None:
    shared = SharedInts(2)
    started = [_started(_adds, shared, 500) for _ in range(3)]
    mine = [shared.add(0, 1) for _ in range(500)]
    taken = mine + [n for end, _ in started for n in end.recv()]
    for end, proc in started:
        proc.join(timeout=10)
        end.close()
    assert sorted(taken) == list(range(2000))  # each number once: no two processes read the same value
    assert shared.get(0) == 2000
    assert shared.get(1) == 3 * 500 * 8  # every addition of 5 rounded up to the next multiple of 8
    with pytest.raises(IndexError):
        shared.add(2, 1)  # a failed change puts the integers back: the next one does not wait for ever
    assert shared.add(0, 1) == 2000
    with pytest.raises(ValueError):
        SharedInts(0)


def test_commands_with_workers_never_load_multiprocessing(tmp_path: Path) -> None:
    """Its import alone (sockets, subprocess, ctypes) cost a -j 2 command 10-25 ms of start-up."""
    code = ("import sys; from hpcsa.structure.x86 import textbuild; textbuild.SMALL_CODE = 0; "  # struct forks too
            "from hpcsa.cli.main import main; rc = main(sys.argv[1:]); "
            "print('multiprocessing' in sys.modules); sys.exit(rc)")
    env = dict(os.environ, HPCSA_NO_PROGRESS="1", HPCSA_POOL_MIN_BYTES="0")
    meas = FIXTURES / "measurements" / "tiny.m"
    binary = FIXTURES / "structure" / "sample.so"
    for args in (["prof", str(meas), "-o", str(tmp_path / "db.d"), "-j", "2"],
                 ["struct", str(binary), "-o", str(tmp_path / "s.hpcstruct"), "-j", "2"]):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().splitlines()[-1] == "False", (args, out.stdout)


def _closes_then_lingers(conn: Channel, seconds: float) -> None:
    conn.send("unread")
    conn.close()
    time.sleep(seconds)  # as a large process's exit, while the system takes its memory back


def test_ended_and_release_let_the_parent_go_on_while_a_process_ends() -> None:
    from hpcsa.core import forking

    ours, proc = _started(_waits, 60.0)
    ours.send("go")
    assert not ours.ended()  # open, sleeping
    proc.kill()
    proc.join()
    assert ours.ended()
    ours.close()

    ours, proc = _started(_closes_then_lingers, 1.0)
    assert wait([ours], timeout=10) == [ours]
    time.sleep(0.1)
    assert ours.ended()  # what it sent, unread, is dropped: only its end of file counts
    ours.close()
    t = time.perf_counter()
    proc.release()
    assert time.perf_counter() - t < 0.5 and proc.exitcode is None  # not waited for
    assert proc in forking._ENDING
    proc.join(timeout=10)  # here to be sure it has ended; a later fork would reap it as well
    forking.reap_ended()
    assert proc.exitcode == 0 and proc not in forking._ENDING
    with pytest.raises(ChildProcessError):
        os.waitpid(proc.pid, os.WNOHANG)  # reaped: no zombie left


def test_a_refused_fork_leaves_no_descriptor_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", refused)
    with pytest.raises(HpcsaError, match=r"cannot start a worker process \(Resource temporarily unavailable\); "
                       r"run again with fewer jobs \(-j 1: one process\)"):
        Forked(_echo_twice, ())
    assert len(os.listdir("/proc/self/fd")) == before


_REFUSED_FORK = """
import os, sys
def refused():
    raise BlockingIOError(11, "Resource temporarily unavailable")
os.fork = refused
from hpcsa.cli.main import entry
sys.argv = ["hpcsa", *sys.argv[1:]]
entry()
"""


def test_a_command_refused_a_process_says_so_in_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, HPCSA_NO_PROGRESS="1", HPCSA_POOL_MIN_BYTES="0")
    out = subprocess.run([sys.executable, "-c", _REFUSED_FORK, "prof", str(FIXTURES / "measurements" / "tiny.m"),
                          "-o", str(tmp_path / "db.d"), "-j", "2"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "hpcsa: error: cannot start a worker process (Resource temporarily unavailable); "
        "run again with fewer jobs (-j 1: one process)"]
    assert not (tmp_path / "db.d").exists() and os.listdir(tmp_path) == []  # nothing half-written
