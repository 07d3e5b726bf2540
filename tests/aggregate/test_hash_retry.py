"""A path-hash collision found in phase 1 starts phase 1 again with the next seed, in one process, with or
without workers (over MPI: tests/aggregate/test_mpi_prof.py); the seed never changes the database, and a
collision with every seed is one line, exit 2, nothing written.

The collisions are forced by tests/aggregate/hash_collide.py (two different paths hashed alike with the
seeds it is given), in a subprocess so that the forked workers inherit them.
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpcsa.aggregate.driver import SEED_RETRIES
from hpcsa.ingest.synth.directory import generate
from hpcsa.ingest.synth.program import SynthSpec
from tests.aggregate.hash_collide import apart, colliding_hashes
from tests.conftest import ROOT, assert_one_line_error, run_cli

SCRIPT = ROOT / "tests" / "aggregate" / "hash_collide.py"
FILES = ("meta.db", "profile.db", "cct.db", "trace.db", "metrics/default.yaml")


def collide(how: str, *args: str, seeds_log: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), how, *args], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, HPCSA_NO_PROGRESS="1", HPCSA_TEST_SEEDS=str(seeds_log)))


def tried(seeds_log: Path) -> list[int]:
    return [int(s) for s in seeds_log.read_text().split()]


def identical(x: Path, y: Path) -> None:
    assert sorted(p.relative_to(y).as_posix() for p in y.rglob("*") if p.is_file()) == sorted(FILES)
    for name in FILES:
        assert filecmp.cmp(x / name, y / name, shallow=False), name


@pytest.fixture(scope="module")
def meas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("collide") / "app.m"
    generate(out, SynthSpec.preset("gpu", 24, threads_per_rank=2, streams_per_rank=1, contexts=500, samples=40,
                                   seed=3), jobs=2)
    return out


@pytest.fixture(scope="module")
def reference(meas: Path) -> Path:
    """The database of a run that never collided (seed 0)."""
    out = meas.parent / "ref.d"
    run_cli("prof", str(meas), "-o", str(out), "-j", "1", check=True)
    return out


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("where", ["in a profile", "between profiles"])
def test_collision_retried_with_the_next_seed(meas: Path, reference: Path, tmp_path: Path, jobs: str,
                                              where: str) -> None:
    """Seed 0 names two paths alike (siblings of one profile, or of two profiles: found as their reports
    merge); the run goes on with seed 1 and writes the database of a run that never collided."""
    how = "0" if where == "in a profile" else f"0:{apart(str(meas))}"
    out, log = tmp_path / "c.d", tmp_path / "seeds"
    proc = collide(how, "prof", str(meas), "-o", str(out), "-j", jobs, seeds_log=log)
    assert proc.returncode == 0, proc.stderr
    assert tried(log) == [0, 1]
    identical(reference, out)


def test_the_forced_collision_is_real(meas: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two profiles' reports, each sound alone, hold two different paths with the same hashes with seed 0
    (their union refuses them), and not with seed 1 (both paths in the union)."""
    from hpcsa.aggregate import rawtree
    from hpcsa.aggregate.handoff import Phase1Env
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase1 import survey

    module, a, b = (int(x) for x in apart(str(meas)).split(":"))
    monkeypatch.setattr(rawtree, "local_hashes", colliding_hashes({0}, (module, a, b)))
    profiles = find_inputs([str(meas)]).profiles
    reports = {seed: [survey.survey_profile(p, Phase1Env({}, {}, seed, None)) for p in profiles]
               for seed in (0, 1)}
    with pytest.raises(rawtree.HashCollision, match="field ip"):
        survey.merge(reports[0])
    union = survey.merge(reports[1]).raw.nodes
    held = set(zip(union["module"].tolist(), union["ip"].tolist(), strict=True))
    assert (module, a) in held and (module, b) in held


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_collision_with_every_seed_is_one_line(meas: Path, tmp_path: Path, jobs: str) -> None:
    out, log = tmp_path / "never.d", tmp_path / "seeds"
    every = ",".join(str(s) for s in range(SEED_RETRIES))
    proc = collide(every, "prof", str(meas), "-o", str(out), "-j", jobs, seeds_log=log)
    assert_one_line_error(proc, "could not name the calling contexts without hash collisions")
    assert tried(log) == list(range(SEED_RETRIES))
    assert not out.exists() and not list(tmp_path.glob(".never.d*"))  # no partial output, no scratch
