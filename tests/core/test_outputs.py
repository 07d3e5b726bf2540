"""Outputs: ``-`` as standard output for the commands that write one file, and outputs that cannot be
written: a full disk, a read-only one, a file over ``ulimit -f``, standard output on a full device or
closed. Every command says so in one line and ends with status 2; nothing is left under the output's name
or a temporary one, and a command that succeeds with its stdout closed writes nothing into its own files
through descriptor 1."""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpcsa.core.errors import HpcsaError, OutputError
from hpcsa.core.outputs import atomic_dir, atomic_file, write_file
from tests.conftest import FIXTURES, run_cli

TINY = FIXTURES / "measurements" / "tiny.m"
SAMPLE_SO = FIXTURES / "structure" / "sample.so"
NSYS = FIXTURES / "ingest" / "tiny-nsys.sqlite"
SCALING = FIXTURES / "views" / "scaling-p2.d", FIXTURES / "views" / "scaling-q4.d"


def run(args: list[str], preexec: Callable[[], None] | None = None, **kw: Any) -> tuple[int, str]:
    """``python -m hpcsa ARGS`` (stdout discarded unless ``stdout=`` says where); (status, stderr)."""
    env = dict(os.environ, HPCSA_NO_PROGRESS="1")
    kw = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, **kw}
    proc = subprocess.run([sys.executable, "-m", "hpcsa", *args], env=env, preexec_fn=preexec, **kw)  # noqa: PLW1509
    return proc.returncode, (proc.stderr or b"").decode()


def one_line(status: int, err: str, *fragments: str) -> str:
    assert status == 2, (status, err)
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("hpcsa: note:")]
    assert len(lines) == 1 and lines[0].startswith("hpcsa: error: "), err
    assert all(f in lines[0] for f in fragments), (fragments, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("db") / "tiny.d"
    run_cli("prof", str(TINY), "-o", str(out), check=True)
    return out


def file_limit(size: int) -> Callable[[], None]:
    """A child whose files may not grow past ``size`` bytes (Python ignores SIGXFSZ: the write fails with
    EFBIG, as a full disk fails with ENOSPC)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


# command (with OUT for the output), what the one line names
FILE_OUTPUTS = [
    (["struct", str(SAMPLE_SO), "-o", "OUT/s.hpcstruct"], "OUT/s.hpcstruct"),
    (["ingest", str(NSYS), "-o", "OUT/i.m"], "OUT/i.m"),
    (["synth", "OUT/s.m", "-n", "4"], "OUT/s.m"),
    (["prof", str(TINY), "-o", "OUT/p.d"], "OUT/p.d"),  # its scratch files or the database itself
    (["prof", str(TINY), "-o", "OUT/p.d", "-j", "2"], "OUT/p.d"),  # with workers (tests: HPCSA_POOL_MIN_BYTES=0)
    (["aggregate-threads", "DB", "-o", "OUT/a.d"], "OUT/a.d"),
    (["blame", "DB", "-o", "OUT/b.d"], "OUT/b.d"),
    (["export-trace", "DB", "-o", "OUT/t.json"], "OUT/t.json"),
]


@pytest.mark.parametrize(("args", "named"), FILE_OUTPUTS,
                         ids=[a[0] + (" -j 2" if "-j" in a else "") for a, _ in FILE_OUTPUTS])
def test_an_output_over_the_file_size_limit_is_one_line_and_nothing_is_left(database, tmp_path, args, named):
    out = tmp_path / "out"
    out.mkdir()
    args = [a.replace("OUT", str(out)).replace("DB", str(database)) for a in args]
    status, err = run(args, preexec=file_limit(1024))
    one_line(status, err, named.replace("OUT", str(out)), "cannot write", os.strerror(errno.EFBIG))
    assert sorted(os.listdir(out)) == [], "a partial output was left behind"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_prof_names_its_output_when_its_scratch_files_cannot_be_written(tmp_path, jobs):
    """Phase 1 keeps what phase 2 needs in a hidden directory beside the output: the line names the output."""
    meas = tmp_path / "m"
    run_cli("synth", str(meas), "-n", "4", check=True)  # its scratch files are past 1 KiB
    out = tmp_path / "out"
    out.mkdir()
    status, err = run(["prof", str(meas), "-o", str(out / "p.d"), "-j", jobs], preexec=file_limit(1024))
    one_line(status, err, f"{out / 'p.d'}: cannot write a scratch file: {os.strerror(errno.EFBIG)} (the run's "
             "scratch files go beside the output)")
    assert os.listdir(out) == []


def test_the_same_commands_succeed_without_the_limit(database, tmp_path):
    """The limit above is what fails them: unlimited, each writes its output."""
    out = tmp_path / "out"
    out.mkdir()
    for args, _ in FILE_OUTPUTS:
        args = [a.replace("OUT", str(out)).replace("DB", str(database)) for a in args]
        status, err = run(args)
        assert status == 0, (args, err)
    assert sorted(os.listdir(out)) == ["a.d", "b.d", "i.m", "p.d", "s.hpcstruct", "s.m", "t.json"]


STDOUT_COMMANDS = [
    ["dump", "DB/meta.db"],
    ["view", "DB"],
    ["stats", "DB"],
    ["diff", "DB", "DB"],
    ["imbalance", "DB"],
    ["scaling", str(SCALING[0]), str(SCALING[1])],
    ["--help"],
    ["view", "--help"],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", STDOUT_COMMANDS, ids=lambda a: " ".join(Path(x).name for x in a))
def test_stdout_on_a_full_device_is_one_line(database, args):
    with open("/dev/full", "wb") as full:
        status, err = run([a.replace("DB", str(database)) for a in args], stdout=full)
    one_line(status, err, "standard output: cannot write", os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("args", STDOUT_COMMANDS[:2] + STDOUT_COMMANDS[-1:], ids=lambda a: " ".join(Path(x).name for x in a))
def test_closed_stdout_is_one_line(database, args):
    status, err = run([a.replace("DB", str(database)) for a in args], preexec=lambda: os.close(1))
    one_line(status, err, "standard output: cannot write", os.strerror(errno.EBADF))


def test_with_stdout_closed_a_command_that_prints_nothing_to_it_writes_its_files_whole(database, tmp_path):
    """Descriptor 1 is held, so no file the command opens takes it: the database is the one made with
    stdout open, byte for byte."""
    out = tmp_path / "closed.d"
    status, err = run(["prof", str(TINY), "-o", str(out), "-j", "2"], preexec=lambda: os.close(1))
    assert status == 0, err
    for name in ("meta.db", "profile.db", "cct.db", "trace.db"):
        assert (out / name).read_bytes() == (database / name).read_bytes(), name


def test_with_stderr_closed_the_status_still_tells(tmp_path):
    status, err = run(["dump", str(tmp_path / "missing.hpcrun")], preexec=lambda: os.close(2))
    assert status == 2 and err == ""
    status, _ = run(["struct", str(SAMPLE_SO), "-o", str(tmp_path / "s.hpcstruct")], preexec=lambda: os.close(2))
    assert status == 0 and (tmp_path / "s.hpcstruct").stat().st_size > 0


def _fail_writes(err: int) -> Callable[[bytes], int]:
    def write(_data: bytes) -> int:
        raise OSError(err, os.strerror(err))
    return write


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS], ids=errno.errorcode.get)
def test_atomic_file_names_the_output_of_a_failed_write(tmp_path, err):
    target = tmp_path / "out.bin"
    with pytest.raises(OutputError) as caught, atomic_file(target) as fh:
        fh.write = _fail_writes(err)  # type: ignore[method-assign]
        fh.write(b"data")
    assert str(caught.value) == f"{target}: cannot write: {os.strerror(err)}"
    assert os.listdir(tmp_path) == []


def test_atomic_dir_names_itself_for_a_file_inside_it_and_leaves_other_errors_alone(tmp_path):
    db = tmp_path / "db"
    with pytest.raises(OutputError) as caught, atomic_dir(db) as tmp, atomic_file(Path(tmp) / "meta.db") as fh:
        fh.write = _fail_writes(errno.ENOSPC)  # type: ignore[method-assign]
        fh.write(b"data")
    assert str(caught.value) == f"{db}: cannot write: {os.strerror(errno.ENOSPC)}"
    assert os.listdir(tmp_path) == []
    # An error that says nothing about the output (reading an input, a bug) goes on as it was.
    with pytest.raises(OSError) as other, atomic_dir(db):
        raise OSError(errno.EIO, "input/output error", "/some/input")
    assert type(other.value) is OSError and other.value.filename == "/some/input"
    with pytest.raises(OutputError, match="^elsewhere: cannot write: x$"), atomic_dir(db):
        raise OutputError("elsewhere", "cannot write: x")  # not inside the directory: kept as it is


def test_dash_is_standard_output_for_a_structure_file_and_a_trace(database, tmp_path):
    """As hpcstruct's ``--output=-``: the same bytes as the file, and the summary names the stream."""
    for args, name in ((["struct", str(SAMPLE_SO), "-j", "2"], "s.hpcstruct"),
                       (["export-trace", str(database)], "t.json")):
        run_cli(*args, "-o", str(tmp_path / name), check=True)
        proc = subprocess.run([sys.executable, "-m", "hpcsa", *args, "-o", "-"], capture_output=True,
                              env=dict(os.environ, HPCSA_NO_PROGRESS="1"))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (tmp_path / name).read_bytes()
        assert "standard output: " in proc.stderr.decode()
    assert sorted(os.listdir(tmp_path)) == ["s.hpcstruct", "t.json"]  # no file called -


@pytest.mark.parametrize("args", [["prof", str(TINY), "-o", "-"], ["synth", "-", "-n", "2"],
                                  ["ingest", str(NSYS), "-o", "-"], ["demo", "-o", "-"],
                                  ["aggregate-threads", "DB", "-o", "-"], ["blame", "DB", "-o", "-"]],
                         ids=lambda a: a[0])
def test_dash_for_a_directory_output_is_refused(database, tmp_path, args):
    status, err = run([a.replace("DB", str(database)) for a in args], cwd=tmp_path)
    one_line(status, err, "hpcsa: error: -: ", "a directory, which standard output cannot hold")
    assert os.listdir(tmp_path) == []


def test_a_plot_cannot_share_standard_output_with_the_report(database, tmp_path):
    status, err = run(["imbalance", str(database), "--plot", "-"], cwd=tmp_path)
    one_line(status, err, "--plot -")
    status, err = run(["struct", str(SAMPLE_SO), "-o", "-", "--device-code"], cwd=tmp_path)
    one_line(status, err, "--device-code", "-o - (standard output) holds only one")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_structure_file_to_a_full_standard_output_is_one_line():
    with open("/dev/full", "wb") as full:
        status, err = run(["struct", str(SAMPLE_SO), "-o", "-"], stdout=full)
    one_line(status, err, "standard output: cannot write", os.strerror(errno.ENOSPC))


# What is already under the output's name.

def test_a_directory_that_is_not_a_database_is_never_replaced(tmp_path):
    """``-o .`` once renamed the working directory away and deleted it with the user's files."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n")
    for out in (".", str(work), f"{work}/", "../work"):
        status, err = run(["prof", str(TINY), "-o", out], cwd=work)
        one_line(status, err, "exists and is not a database, so it is not replaced")
    with pytest.raises(HpcsaError, match="is not a database"), atomic_dir(work):
        raise AssertionError("the block must not run")
    assert sorted(os.listdir(tmp_path)) == ["work"] and os.listdir(work) == ["notes.txt"]


def test_a_database_that_holds_the_working_directory_is_not_replaced(database, tmp_path):
    """Replacing it would leave the command (and the user's shell) in a removed directory."""
    db = tmp_path / "db.d"
    shutil.copytree(database, db)
    (db / "src").mkdir(exist_ok=True)
    for cwd, out in ((db, "."), (db / "src", ".."), (db / "src", str(db))):
        status, err = run(["prof", str(TINY), "-o", out], cwd=cwd)
        one_line(status, err, "is a database that holds the working directory")
    assert sorted(os.listdir(db)) == sorted({*os.listdir(database), "src"})
    assert (db / "meta.db").read_bytes() == (database / "meta.db").read_bytes()


def test_a_file_is_not_replaced_by_a_directory(tmp_path):
    precious = tmp_path / "results.txt"
    precious.write_text("mine\n")
    for args in (["prof", str(TINY), "-o", str(precious)], ["synth", str(precious), "-n", "2"],
                 ["ingest", str(NSYS), "-o", str(precious)]):
        status, err = run(args)
        one_line(status, err, "exists and is not a directory, so it is not replaced")
    assert precious.read_text() == "mine\n" and os.listdir(tmp_path) == ["results.txt"]


def test_an_empty_directory_or_an_output_of_the_same_kind_is_replaced(database, tmp_path):
    empty = tmp_path / "empty.d"
    empty.mkdir()
    run_cli("prof", str(TINY), "-o", str(empty), check=True)
    again = run_cli("prof", str(TINY), "-o", str(empty), check=True)  # a database: replaced
    assert "meta.db" in os.listdir(empty) and again.returncode == 0
    meas = tmp_path / "m"
    run_cli("synth", str(meas), "-n", "2", check=True)
    run_cli("ingest", str(NSYS), "-o", str(meas), check=True)  # a measurement replaced by a measurement
    status, err = run(["synth", str(empty), "-n", "2"])  # a database is not a measurement
    one_line(status, err, "exists and is not a measurement directory")
    assert (empty / "meta.db").read_bytes() == (database / "meta.db").read_bytes()


def test_an_existing_directory_is_not_replaced_by_a_file(database, tmp_path):
    status, err = run(["struct", str(SAMPLE_SO), "-o", str(tmp_path)])
    one_line(status, err, f"{tmp_path}: is a directory")
    for args in (["struct", str(SAMPLE_SO), "-o", "new/"], ["export-trace", str(database), "-o", "t.json/"]):
        status, err = run(args, cwd=tmp_path)
        one_line(status, err, "ends with /, which names a directory")
    assert os.listdir(tmp_path) == []


def test_a_device_or_a_named_pipe_is_written_into_not_replaced(tmp_path):
    """``-o /dev/null`` once renamed a file over the device itself. Here through a link to it (the same
    path in the code: what the name leads to is looked at), so that a fault would replace the link, not
    the machine's /dev/null."""
    null = tmp_path / "null"
    null.symlink_to(os.devnull)
    status, err = run(["struct", str(SAMPLE_SO), "-o", str(null)])
    assert status == 0, err
    assert null.is_symlink() and stat.S_ISCHR(os.stat(null).st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "hpcsa", "struct", str(SAMPLE_SO), "-o", str(fifo)],
                            env=dict(os.environ, HPCSA_NO_PROGRESS="1"), stderr=subprocess.PIPE)
    with open(fifo, "rb") as reader:
        data = reader.read()
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    run_cli("struct", str(SAMPLE_SO), "-o", str(tmp_path / "s.hpcstruct"), check=True)
    assert data == (tmp_path / "s.hpcstruct").read_bytes()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_link_to_a_file_stays_a_link_and_its_target_is_written(tmp_path):
    target = tmp_path / "real.hpcstruct"
    target.write_text("old\n")
    link = tmp_path / "link.hpcstruct"
    link.symlink_to(target)
    run_cli("struct", str(SAMPLE_SO), "-o", str(link), check=True)
    assert link.is_symlink() and target.read_bytes().startswith(b"<?xml")


HELD = """\
import fcntl, json, os, sys
from hpcsa.core.textout import guard_std_streams
guard_std_streams()
seen = [(os.get_inheritable(fd), os.readlink(f"/proc/self/fd/{fd}"), fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE)
        for fd in (0, 1, 2)]
print("vanishes", file=sys.stderr)
with open(sys.argv[1], "w") as fh:
    json.dump(seen, fh)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_closed_descriptors_are_held_and_passed_on_to_the_programs_hpcsa_runs(tmp_path):
    """0, 1 and 2 closed: each is held by /dev/null, inheritable (nvdisasm and the like get them too), stdout
    read-only so that writing to it fails, stderr writable so that what is written there vanishes."""
    def close_all() -> None:
        for fd in (0, 1, 2):
            os.close(fd)

    seen = tmp_path / "seen.json"
    subprocess.run([sys.executable, "-c", HELD, str(seen)], preexec_fn=close_all, check=True)  # noqa: PLW1509
    assert json.loads(seen.read_text()) == [[True, os.devnull, os.O_RDONLY], [True, os.devnull, os.O_RDONLY],
                                            [True, os.devnull, os.O_WRONLY]]


# Whole or nothing under the final name.

def test_atomic_file_success_and_failure(tmp_path):
    target = tmp_path / "out.bin"
    write_file(target, b"complete")
    assert target.read_bytes() == b"complete"
    with pytest.raises(RuntimeError), atomic_file(target) as fh:
        fh.write(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"complete"  # the old complete file is untouched
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]  # no temporary left behind


def test_atomic_dir_replaces_only_when_complete(tmp_path):
    db = tmp_path / "db"
    with atomic_dir(db) as tmp:
        (open(os.path.join(tmp, "meta.db"), "wb")).close()
        assert not db.exists()
    assert sorted(os.listdir(db)) == ["meta.db"]
    with pytest.raises(RuntimeError), atomic_dir(db) as tmp:
        open(os.path.join(tmp, "other"), "wb").close()
        raise RuntimeError("interrupted")
    assert sorted(os.listdir(db)) == ["meta.db"]
    assert sorted(os.listdir(tmp_path)) == ["db"]
    with atomic_dir(db) as tmp:
        open(os.path.join(tmp, "new"), "wb").close()
    assert sorted(os.listdir(db)) == ["new"]


def test_missing_parent_is_a_clear_error(tmp_path):
    with pytest.raises(HpcsaError, match="does not exist"), atomic_file(tmp_path / "no" / "x"):
        pass


def test_stale_partials_of_dead_writers_are_removed(tmp_path):
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    stale_dir = tmp_path / f".db.partial-{proc.pid}-abc"
    stale_dir.mkdir()
    (stale_dir / "meta.db").write_bytes(b"half")
    live = tmp_path / f".db.partial-{os.getpid()}-def"  # a run still in progress (this process)
    live.mkdir()
    with atomic_dir(tmp_path / "db") as tmp:
        open(os.path.join(tmp, "meta.db"), "wb").close()
    names = sorted(os.listdir(tmp_path))
    assert f".db.partial-{proc.pid}-abc" not in names
    assert live.name in names and "db" in names


def test_atomic_dir_gets_the_umask_mode_not_mkdtemp_private_mode(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_dir(tmp_path / "out.d") as tmp:
            (Path(tmp) / "f").write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "out.d").stat().st_mode & 0o777 == 0o750
