"""The whole pipeline (ingest -> struct -> prof) gives identical bytes run after run, whatever -j."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpcsa.cli.demo import DATA
from tests.conftest import run_cli

DEMO = Path(DATA)  # the demo's inputs (package data)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".hpcsa-cache")}


def _pipeline(out: Path, jobs: str) -> dict[str, bytes]:
    out.mkdir()
    records = sorted(DEMO.glob("*.nvprof"))
    cubins = sorted(DEMO.glob("*.cubin"))
    run_cli("ingest", *map(str, records), "--binary", str(cubins[0]), "-o", str(out / "app.m"), check=True)
    run_cli("struct", str(out / "app.m"), "-j", jobs, check=True)
    run_cli("prof", str(out / "app.m"), "-j", jobs, "-o", str(out / "app.d"), check=True)
    return _files(out)


def test_pipeline_is_deterministic(tmp_path):
    if not shutil.which("nvdisasm") and run_cli("struct", str(sorted(DEMO.glob("*.cubin"))[0]), "-o",
                                                 str(tmp_path / "probe.hpcstruct")).returncode != 0:
        pytest.skip("the GPU disassembler is not available")
    first = _pipeline(tmp_path / "a", "1")
    second = _pipeline(tmp_path / "b", "1")
    parallel = _pipeline(tmp_path / "c", "2")
    assert any(name.startswith("app.d/") for name in first)
    assert any(name.startswith("app.m/structs/") for name in first)
    assert first.keys() == second.keys() == parallel.keys()
    for name in first:
        assert first[name] == second[name], f"{name} differs between two identical runs"
        assert first[name] == parallel[name], f"{name} differs between -j 1 and -j 2"
