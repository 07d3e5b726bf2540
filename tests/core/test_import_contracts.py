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


def _with_module(graph: Path, package: str, name: str, source: str) -> None:
    """Add a module to the graph's copy of ``package`` (a link to the source tree, replaced by a directory of
    links to its entries, so the source tree is never touched)."""
    where = graph / Path(*package.split("."))
    if where.is_symlink():
        target = where.resolve()
        where.unlink()
        where.mkdir()
        for entry in target.iterdir():
            (where / entry.name).symlink_to(entry)
    (where / f"{name}.py").write_text(source)


def test_a_stage_importing_another_breaks_them(graph):
    _with_module(graph, "hpcsa.structure", "reads_records", "from hpcsa.ingest.model import GpuTrace\n")
    proc = lint_imports(graph)
    assert proc.returncode == 1
    assert "the stages meet at the formats" in proc.stdout and "BROKEN" in proc.stdout
    assert "hpcsa.structure.reads_records -> hpcsa.ingest.model" in proc.stdout


def test_a_format_importing_a_stage_breaks_them(graph):
    _with_module(graph, "hpcsa.formats", "reads_binaries", "from hpcsa.structure.elf import open_elf\n")
    proc = lint_imports(graph)
    assert proc.returncode == 1
    assert "one stack: every floor imports only the floors below it BROKEN" in proc.stdout
    assert "hpcsa.formats.reads_binaries -> hpcsa.structure.elf" in proc.stdout


def test_an_import_cycle_breaks_them(graph):
    _with_module(graph, "hpcsa.core", "cycle_a", "from hpcsa.core import cycle_b\n")
    _with_module(graph, "hpcsa.core", "cycle_b", "from hpcsa.core import cycle_a\n")
    proc = lint_imports(graph)
    assert proc.returncode == 1
    assert "No cycles are allowed in hpcsa.core" in proc.stdout
