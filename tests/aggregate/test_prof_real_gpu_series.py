"""``hpcsa prof`` on a real NVIDIA Nsight Systems export of two processes (NCCL on two H100s): GPU operations
whose metrics are seconds, not counts, many a series (profile, metric) of one point. A faster path for such
series once wrote profile.db with a profile's contexts out of order; the reader refuses that, so reading
every profile back is the check, and the database must be the same with one and with two workers."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from hpcsa.formats.db.profiledb import read_profiledb
from tests.conftest import run_cli

EXPORT = "gpu-records/nvidia/nsys-2026.2-2proc-nccl-h100"


@pytest.fixture(scope="module")
def measurement(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = shared_data / EXPORT
    if not source.is_dir():
        pytest.skip(f"{source} is absent")
    out = tmp_path_factory.mktemp("nccl") / "nccl.m"
    proc = run_cli("ingest", str(source), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_profile_reads_back_and_workers_agree(measurement: Path, tmp_path: Path) -> None:
    dbs = []
    for jobs in ("1", "2"):
        db = tmp_path / f"j{jobs}.d"
        proc = run_cli("prof", str(measurement), "-o", str(db), "-j", jobs)
        assert proc.returncode == 0, proc.stderr
        dbs.append(db)
    profiles = read_profiledb(dbs[0] / "profile.db")
    assert len(profiles) > 2
    values = sum(len(p.values) for _, p in profiles.profiles())  # each profile's context index is checked
    assert values > 0
    for name in ("profile.db", "cct.db", "meta.db", "trace.db"):
        assert filecmp.cmp(dbs[0] / name, dbs[1] / name, shallow=False), name
