"""Each ``.hpcrun`` file is read once by ``hpcsa prof``: phase 2 takes what phase 1 kept.

Phase 1 keeps each profile's arrays in a scratch directory beside the output; phase 2 reads them from there
instead of parsing the profile again. Checked on real measurements (a CPU run with traces, a CUDA run whose
PC samples are reconstructed into GPU calling contexts): every .hpcrun is opened exactly once, the database
is byte-identical to the one written when no scratch directory can be made (profiles then read twice), and
nothing is left beside the output.
"""

from __future__ import annotations

import filecmp
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hpcsa.aggregate import driver
from hpcsa.aggregate.inputs import find_inputs

MEASUREMENTS = ("loops-cputime-t.m", "loops-cuda-nvidiapc-t.m")


def _run(measdirs: list[Path], out: Path, jobs: int = 1) -> driver.Result:
    inputs = find_inputs([str(m) for m in measdirs], [])
    return driver.aggregate(inputs, driver.Options(output=str(out), jobs=jobs, progress=False))


def _opened_profiles(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every .hpcrun file opened from now on (by any reader), with how many times."""
    opened: Counter[str] = Counter()
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, *args, **kwargs)
        if os.fspath(path).endswith(".hpcrun"):
            opened[os.fspath(path)] += 1
        return fd

    monkeypatch.setattr(os, "open", counting_open)
    return opened


def _same_files(x: Path, y: Path) -> None:
    names = sorted(p.relative_to(x).as_posix() for p in x.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(y).as_posix() for p in y.rglob("*") if p.is_file())
    assert "profile.db" in names and "trace.db" in names
    for n in names:
        assert filecmp.cmp(x / n, y / n, shallow=False), n


def test_each_profile_is_read_once(hpctoolkit_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    measdirs = [hpctoolkit_data / "meas" / m for m in MEASUREMENTS]
    profiles = sorted(str(p) for m in measdirs for p in m.glob("*.hpcrun"))
    assert len(profiles) >= 4
    opened = _opened_profiles(monkeypatch)
    once = tmp_path / "once" / "db.d"
    once.parent.mkdir()
    result = _run(measdirs, once)
    assert result.profiles == len(profiles)
    assert sorted(opened) == profiles
    assert set(opened.values()) == {1}, opened
    # The scratch directory is gone: only the database is left beside it.
    assert [p.name for p in once.parent.iterdir()] == ["db.d"]

    # Without a scratch directory every profile is read twice, and the database is the same.
    monkeypatch.setattr(driver, "make_scratch", lambda output: None)
    opened.clear()
    twice = tmp_path / "twice.d"
    _run(measdirs, twice)
    assert set(opened.values()) == {2}, opened
    _same_files(once, twice)


def test_read_once_with_workers_gives_the_same_database(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """Workers keep their profiles in scratch files of their own; the database does not depend on it."""
    measdirs = [hpctoolkit_data / "meas" / m for m in MEASUREMENTS]
    one, two = tmp_path / "j1" / "db.d", tmp_path / "j2" / "db.d"
    one.parent.mkdir()
    two.parent.mkdir()
    _run(measdirs, one, jobs=1)
    _run(measdirs, two, jobs=2)
    _same_files(one, two)
    assert [p.name for p in two.parent.iterdir()] == ["db.d"]
