"""Fuzzing the v4 database readers: each file of a real database mutated in place (issue 8)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpcsa.formats.db.database import open_database
from hpcsa.formats.db.metricsyaml import read_metrics_yaml
from tests.fuzzing import fuzz_reader

SEEDS = ["small.d", "loops-cputime-t.d", "recursion-cuda-nvidiapc-t.d", "loops-hip-amd-t.nostruct.d"]


def _read_everything(path: str) -> None:
    """Open the database and touch every lazily read part: all profiles, all contexts, all traces."""
    db = open_database(path)
    for i in range(len(db.profiles.flags)):
        db.profiles.profile(i)
    if db.cct is not None:
        db.cct.range_values(0, db.n_ctx_ids())
    if db.trace is not None:
        for i in range(len(db.trace.prof_index)):
            db.trace.trace(i)


@pytest.mark.parametrize("member", ["meta.db", "profile.db", "cct.db", "trace.db"])
def test_fuzz_database_file(hpctoolkit_data, tmp_path, member):
    sources = [hpctoolkit_data / "dbase" / name / member for name in SEEDS]
    sources = [s for s in sources if s.exists()]

    def materialize(case: Path, data: bytes) -> Path:
        src_db = sources[int(case.name[4:]) % len(sources)].parent
        shutil.copytree(src_db, case)
        (case / member).write_bytes(data)
        return case

    counts = fuzz_reader(_read_everything, sources, tmp_path, "", materialize=materialize)
    assert counts["error"] > 0


def test_fuzz_metrics_yaml(hpctoolkit_data, tmp_path):
    sources = sorted((hpctoolkit_data / "dbase").glob("*/metrics/default.yaml"))
    fuzz_reader(read_metrics_yaml, sources, tmp_path, ".yaml")
