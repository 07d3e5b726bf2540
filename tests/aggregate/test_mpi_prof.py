"""``mpiexec -n R hpcsa prof``: the same database as one process, byte for byte; failures never hang.

Runs the MPICH that the project installs from PyPI (``.venv/bin/mpiexec``, beside the interpreter) on a
generated measurement directory of 72 profiles (CPU threads with GPU operations, GPU streams, traces,
structure files), small enough to take a second, big enough that every rank gets work.
"""

from __future__ import annotations

import filecmp
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hpcsa.ingest.synth.directory import generate
from hpcsa.ingest.synth.program import SynthSpec
from tests.aggregate.profcheck import read_sums, root_execution
from tests.conftest import ROOT, assert_one_line_error, run_cli

pytest.importorskip("mpi4py")
MPIEXEC = Path(sys.executable).parent / "mpiexec"
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason=f"no mpiexec beside {sys.executable} (pip install "
                                "'hpcsa[mpi]')")
PROFILES = 72
FILES = ("meta.db", "profile.db", "cct.db", "trace.db", "metrics/default.yaml")
RANKS = re.compile(r"\((\d+) ranks: ([\d+]+) profiles\)")


def run_mpi(ranks: int, *args: str, script: list[str] | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [str(MPIEXEC), "-n", str(ranks), sys.executable, *(script or ["-m", "hpcsa"]), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=dict(os.environ, HPCSA_NO_PROGRESS="1", **(env or {})))


@pytest.fixture(scope="module")
def meas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mpi") / "app.m"
    generate(out, SynthSpec.preset("gpu", PROFILES, threads_per_rank=2, streams_per_rank=1, contexts=2000,
                                   samples=60, seed=3), jobs=2)
    return out


def _identical(x: Path, y: Path) -> None:
    names = sorted(p.relative_to(y).as_posix() for p in y.rglob("*") if p.is_file())
    assert names == sorted(FILES)
    for n in FILES:
        assert filecmp.cmp(x / n, y / n, shallow=False), n


def test_identical_database_for_any_jobs_and_ranks(meas: Path, tmp_path: Path) -> None:
    ref = tmp_path / "j1.d"
    proc = run_cli("prof", str(meas), "-o", str(ref), "-j", "1")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("prof", str(meas), "-o", str(tmp_path / "j2.d"), "-j", "2")
    assert proc.returncode == 0, proc.stderr
    _identical(ref, tmp_path / "j2.d")
    for ranks, jobs in ((1, 1), (2, 1), (3, 1), (2, 2)):
        seen = []
        for attempt in range(3):  # ranks take batches from a shared counter: one delayed long enough by the
            out = tmp_path / f"n{ranks}j{jobs}-{attempt}.d"  # machine may find none left (then run again)
            proc = run_mpi(ranks, "prof", str(meas), "-o", str(out), "-j", str(jobs))
            assert proc.returncode == 0, proc.stderr
            lines = proc.stderr.strip().splitlines()  # rank 0 alone reports: warnings once, then the summary
            assert [ln for ln in lines if ln.startswith("hpcsa prof:")] == lines[-1:], proc.stderr
            assert all(ln.startswith("hpcsa: warning:") for ln in lines[:-1]) and len(set(lines)) == len(lines)
            _identical(ref, out)
            if ranks == 1:
                break
            m = RANKS.search(proc.stderr)
            assert m and int(m.group(1)) == ranks, proc.stderr
            shares = [int(x) for x in m.group(2).split("+")]
            assert len(shares) == ranks and sum(shares) == PROFILES, shares
            seen.append(shares)
            if min(shares) > 0:
                break
        else:
            pytest.fail(f"{ranks} ranks: some rank read no profile in 3 runs: {seen}")
    # Nothing lost: every profile's values (CPU time, kernel times and counts, bytes copied) reach its root.
    read, written = read_sums(meas), root_execution(ref)
    assert set(read) == set(written) and len(read) == PROFILES
    checked = 0
    for key, sums in read.items():
        for metric, total in sums.items():
            assert written[key].get(metric, 0.0) == pytest.approx(total, rel=1e-12), (key, metric)
            checked += 1
    assert checked > PROFILES


def _copy_with(meas: Path, dst: Path, damaged: str) -> Path:
    """The measurement directory with one profile truncated (other files linked)."""
    dst.mkdir()
    for f in meas.iterdir():
        if f.name == damaged:
            (dst / f.name).write_bytes(f.read_bytes()[:3000])
        else:
            os.symlink(f, dst / f.name)
    return dst


def test_bad_profile_one_line_from_rank_0(meas: Path, tmp_path: Path) -> None:
    name = sorted(p.name for p in meas.glob("*-001-*.hpcrun"))[5]
    bad = _copy_with(meas, tmp_path / "bad.m", name)
    out = tmp_path / "bad.d"
    proc = run_mpi(3, "prof", str(bad), "-o", str(out))
    assert_one_line_error(proc, name)
    assert not out.exists() and not list(tmp_path.glob(".bad.d*"))  # nothing left behind


def test_input_error_in_phase_2_on_another_rank(meas: Path, tmp_path: Path) -> None:
    """Rank 1 finds bad input while the others carry on: the error reaches rank 0 with the reduction, every
    rank stops at the same point, one line."""
    out = tmp_path / "late.d"
    proc = run_mpi(3, "prof", str(meas), "-o", str(out), "-j", "1",
                   script=[str(ROOT / "tests" / "aggregate" / "mpi_fault.py"), "1", "input"])
    assert_one_line_error(proc, ".hpcrun")
    assert "injected: unreadable on the second reading" in proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".late.d*"))


@pytest.mark.parametrize("kind", ["crash", "kill"])
def test_a_failing_rank_ends_the_job(meas: Path, tmp_path: Path, kind: str) -> None:
    """A bug (exception) or a dead rank: the others are aborted, not left waiting; no database appears."""
    out = tmp_path / f"{kind}.d"
    proc = run_mpi(3, "prof", str(meas), "-o", str(out), "-j", "1", timeout=60,
                   script=[str(ROOT / "tests" / "aggregate" / "mpi_fault.py"), "2", kind])
    assert proc.returncode != 0
    assert not out.exists()
    if kind == "crash":
        assert "hpcsa: rank 2: internal error, aborting all ranks" in proc.stderr
        assert "RuntimeError: injected bug" in proc.stderr


def test_without_mpi4py(meas: Path, tmp_path: Path) -> None:
    """Launched by mpiexec but mpi4py cannot be imported: one line from rank 0, exit 2. A launcher that
    announces a single rank just gets the one-process run."""
    stub = tmp_path / "stub" / "mpi4py"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('No module named mpi4py (test stub)')\n")
    env = {"PYTHONPATH": str(stub.parent)}
    out = tmp_path / "none.d"
    proc = run_mpi(2, "prof", str(meas), "-o", str(out), env=env)
    assert_one_line_error(proc, "mpiexec")
    assert "mpi4py cannot be imported" in proc.stderr and "hpcsa[mpi]" in proc.stderr
    assert not out.exists()
    proc = run_cli("prof", str(meas), "-o", str(out), env={**env, "PMI_RANK": "0", "PMI_SIZE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert out.is_dir()


AGREED_FAILURE = """
import sys, time
from hpcsa.aggregate import mpi
from hpcsa.cli.main import leave
transport = mpi.MpiTransport.from_environment(arity=1)
time.sleep(0.01 * ((transport.rank + int(sys.argv[1])) % 3))  # the ranks reach the end at different times
transport.close()
transport.fail_together("hpcsa: error: x.hpcrun: agreed by every rank", 2)
leave(2)
"""


def test_agreed_failure_ends_with_its_status_every_time() -> None:
    """Ranks leaving with status 2 one by one at once (``os._exit``) made MPICH's launcher kill the rest, and
    mpiexec then reported the kill (status 9) now and then; ranks that finalize MPI and leave through the C
    library's exit carry the status every time, with rank 0's one line."""
    for attempt in range(8):
        proc = run_mpi(3, str(attempt), script=["-c", AGREED_FAILURE])
        assert (proc.returncode, proc.stderr) == (2, "hpcsa: error: x.hpcrun: agreed by every rank\n"), attempt


SEGMENTS = """
import sys
from hpcsa.aggregate import mpi
from hpcsa.cli.main import leave
transport = mpi.MpiTransport.from_environment(arity=1)
with open("/proc/self/maps") as maps:
    print(*sorted({word for word in maps.read().split() if word.startswith("/dev/shm/")}), flush=True)
transport.close()
if sys.argv[1] == "fail":
    transport.fail_together("hpcsa: error: x.hpcrun: agreed by every rank", 2)
leave(0)
"""


@pytest.mark.parametrize("end", ["done", "fail"])
def test_ranks_leave_no_shared_memory_behind(end: str) -> None:
    """A rank ends as a finished or an agreed-failed run does (``leave``, ``fail_together``): MPICH's
    shared-memory segments of the node, which each rank printed while mapped, are gone afterwards (ended
    without MPI_Finalize and MPICH's exit handlers, every run left 1-3 MB in /dev/shm for good)."""
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("needs /proc (Linux) to see the segments a process maps")
    proc = run_mpi(2, end, script=["-c", SEGMENTS])
    assert proc.returncode == (0 if end == "done" else 2), proc.stderr
    segments = set(proc.stdout.split())
    if not segments:
        pytest.skip("this MPI maps no segment from /dev/shm")
    assert [s for s in sorted(segments) if os.path.exists(s)] == []


@pytest.mark.parametrize("where", ["in a profile", "between profiles"])
def test_hash_collision_retried_on_every_rank(meas: Path, tmp_path: Path, where: str) -> None:
    """A path-hash collision found by some rank's phase 1 (or as the ranks' reports merge) starts phase 1
    again on every rank with the next seed (forced by tests/aggregate/hash_collide.py): the same database as
    one process that never collided; with every seed, one line from rank 0, exit 2, nothing written."""
    from hpcsa.aggregate.driver import SEED_RETRIES
    from tests.aggregate.hash_collide import apart

    script = [str(ROOT / "tests" / "aggregate" / "hash_collide.py")]
    pair = "" if where == "in a profile" else f":{apart(str(meas))}"
    ref = tmp_path / "ref.d"
    proc = run_cli("prof", str(meas), "-o", str(ref), "-j", "1")
    assert proc.returncode == 0, proc.stderr
    log = tmp_path / "seeds"
    out = tmp_path / "retried.d"
    proc = run_mpi(2, f"0{pair}", "prof", str(meas), "-o", str(out), "-j", "1", script=script,
                   env={"HPCSA_TEST_SEEDS": str(log)})
    assert proc.returncode == 0, proc.stderr
    assert sorted(log.read_text().split()) == ["0", "0", "1", "1"]  # each rank, each seed
    _identical(ref, out)
    log.unlink()
    every = ",".join(str(s) for s in range(SEED_RETRIES))
    out = tmp_path / "never.d"
    proc = run_mpi(2, f"{every}{pair}", "prof", str(meas), "-o", str(out), "-j", "1", script=script,
                   env={"HPCSA_TEST_SEEDS": str(log)})
    assert_one_line_error(proc, "could not name the calling contexts without hash collisions")
    assert sorted(log.read_text().split()) == sorted(2 * [str(s) for s in range(SEED_RETRIES)])
    assert not out.exists() and not list(tmp_path.glob(".never.d*"))
