"""The packages' import contracts (``[tool.importlinter]`` in pyproject.toml, run by ``make test``) hold, and
they do catch a module that breaks one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(graph: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
                          cwd=graph, capture_output=True, text=True, timeout=300)


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    if not LINT_IMPORTS.exists():
        pytest.skip("lint-imports is not installed (the test extra's import-linter)")
    subprocess.run([sys.executable, str(ROOT / ".ci" / "import_graph.py"), str(tmp_path / "graph")], check=True,
                   capture_output=True)
    return tmp_path / "graph"


def test_the_contracts_hold(graph):
    proc = lint_imports(graph)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout and " kept" in proc.stdout


def test_a_structure_module_that_reads_measurements_breaks_them(graph):
    structure = graph / "hpcsa" / "structure"
    structure.unlink()  # the link to structure/: replaced by links to its files plus one offending module
    structure.mkdir()
    for f in (ROOT / "structure").glob("*.py"):
        (structure / f.name).symlink_to(f)
    (structure / "reads_measurements.py").write_text("from hpcsa.ingest.hpcrun import read_hpcrun\n")
    proc = lint_imports(graph)
    assert proc.returncode == 1
    assert "structure needs no measurements: it never imports ingest BROKEN" in proc.stdout
    assert "hpcsa.structure.reads_measurements -> hpcsa.ingest.hpcrun" in proc.stdout
