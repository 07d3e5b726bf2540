"""``hpcsa prof`` on a real measurement with one profile mutated (cut, flipped, overwritten...), as a user runs
it: a database, or one line naming the file and exit status 2 with nothing left beside the output; a database
is the same with workers (profiles are read in batches, and a batch holding a bad file is read again file by
file)."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    pack_values,
    write_hpcrun,
)
from hpcsa.formats.measurement.placeholders import PRIMARY
from tests.conftest import assert_one_line_error, run_cli
from tests.fuzzing import EXAMPLES, mutate

CASES = max(4, EXAMPLES // 6)  # two runs of the command each: a sixth of the readers' cases


def _outcome(meas: Path, out: Path, jobs: int) -> str:
    proc = run_cli("prof", str(meas), "-o", str(out), "-j", str(jobs), "--no-source")
    if proc.returncode == 0:
        assert out.is_dir() and (out / "profile.db").is_file(), proc.stderr
        return "database"
    assert_one_line_error(proc, str(meas))
    assert not out.exists(), "a refused run left an output"
    return proc.stderr.strip()


@pytest.mark.parametrize("seed", range(CASES))
@pytest.mark.parametrize(("source", "suffix"), [("loops-cputime-t.m", "hpcrun"), ("loops-cputime-t.m", "hpctrace"),
                                                ("loops-cuda-nvidiapc-t.m", "hpcrun")])
def test_prof_with_a_mutated_profile(hpctoolkit_data: Path, tmp_path: Path, source: str, suffix: str,
                                     seed: int) -> None:
    """A CPU run with traces (its profile or its trace mutated), and a CUDA run whose PC samples are
    reconstructed into GPU calling contexts."""
    meas = tmp_path / "m"
    shutil.copytree(hpctoolkit_data / "meas" / source, meas)
    profiles = sorted(meas.glob(f"*.{suffix}"))
    victim = profiles[seed % len(profiles)]
    victim.write_bytes(mutate(victim.read_bytes(), 1000 + seed))
    outs = {jobs: tmp_path / "out" / f"j{jobs}.d" for jobs in (1, 2)}
    outs[1].parent.mkdir()
    result = _outcome(meas, outs[1], 1)
    assert _outcome(meas, outs[2], 2) == result  # the same with workers: a database, or the same line
    if result == "database":
        for name in ("meta.db", "profile.db", "cct.db", "trace.db"):
            assert filecmp.cmp(outs[1] / name, outs[2] / name, shallow=False), name
    else:
        assert str(victim) in result
    assert sorted(p.name for p in outs[1].parent.iterdir()) == sorted(p.name for p in outs.values()
                                                                       if p.exists())


# -- what this fuzzing found --------------------------------------------------------------------------------

def _profile_with(path: Path, loadmap: list[LoadModule], metrics: list[MetricDesc]) -> None:
    cct = np.zeros(2, CCT_NODE)
    cct["id"], cct["parent"], cct["lm_id"], cct["flags"] = [1, 2], [0, 1], [0, 1], 1
    cct["lm_ip"] = [PRIMARY, 0x1000]
    vals, index = pack_values(np.array([2]), np.array([0]), np.ones(1), metrics, cct["id"])
    write_hpcrun(path, HpcrunProfile(header={"program-name": "x"}, loadmap=loadmap, cct=cct, metrics=metrics,
                                     id_names=[(1, "NODE")], id_tuple=np.zeros(0, ID_ELEMENT), values=vals,
                                     index=index))


@pytest.mark.parametrize("ids", [[0, 1], [1, 1]])
def test_a_load_map_id_of_zero_or_twice_is_refused(tmp_path: Path, ids: list[int]) -> None:
    """Module 0 marks a placeholder in the CCT (hpcrun's null id): a load-map entry with id 0 made the
    placeholders a module's, and class 2 failed with "internal error: a top node of the union is not
    <primary root>"; an id given twice made one of the two modules unreachable."""
    meas = tmp_path / "m"
    meas.mkdir()
    metrics = [MetricDesc("CPUTIME (sec)", period=1000)]
    _profile_with(meas / "good-000000-000-a0-1-0.hpcrun", [LoadModule(1, "/bin/x", 1)], metrics)
    bad = meas / "bad-000000-001-a0-1-0.hpcrun"
    _profile_with(bad, [LoadModule(i, f"/lib/m{k}.so", 1) for k, i in enumerate(ids)], metrics)
    proc = run_cli("prof", str(meas), "-o", str(tmp_path / "db.d"))
    assert_one_line_error(proc, str(bad))
    assert ("reserved for placeholders" if ids[0] == 0 else "appears twice") in proc.stderr
    assert not (tmp_path / "db.d").exists()


def test_a_bad_formula_names_a_profile_that_has_it(tmp_path: Path) -> None:
    """A derived metric's formula that does not parse was refused without naming any file (the metric
    tables are merged before they are read as metrics): now it names the first profile with that table."""
    meas = tmp_path / "m"
    meas.mkdir()
    good = [MetricDesc("CPUTIME (sec)", period=1000)]
    _profile_with(meas / "a-000000-000-a0-1-0.hpcrun", [LoadModule(1, "/bin/x", 1)], good)
    bad = meas / "b-000000-001-a0-1-0.hpcrun"
    _profile_with(bad, [LoadModule(1, "/bin/x", 1)], [*good, MetricDesc("RATIO", type=3, formula="(#0 / ")])
    proc = run_cli("prof", str(meas), "-o", str(tmp_path / "db.d"))
    assert_one_line_error(proc, str(bad))
    assert "'RATIO'" in proc.stderr and "formula" in proc.stderr
