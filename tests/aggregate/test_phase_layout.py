"""``hpcsa prof``'s phases are the subpackages ``phase0`` .. ``phase3`` of :mod:`hpcsa.aggregate`; what crosses
between them goes through :mod:`hpcsa.aggregate.handoff` (objects) and :mod:`hpcsa.aggregate.kept` (files).
That no phase imports another is an import contract (pyproject.toml); here: only the driver runs the phases,
so the modules every phase shares import none of them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import hpcsa.aggregate

PACKAGE = Path(next(iter(hpcsa.aggregate.__path__)))
PHASE = re.compile(r"phase\d")


def _imported(path: Path) -> set[str]:
    """The names in hpcsa.aggregate of what ``path`` imports (a module, or the package it is in)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hpcsa.aggregate"):
            rest = node.module.removeprefix("hpcsa.aggregate").lstrip(".")
            names |= {rest.split(".")[0]} if rest else {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[2] for a in node.names if a.name.startswith("hpcsa.aggregate.")}
    return names


def test_the_phases_are_the_subpackages():
    assert sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()) == \
        ["phase0", "phase1", "phase2", "phase3"]


def test_only_the_driver_imports_the_phases():
    shared = [p for p in sorted(PACKAGE.glob("*.py")) if p.stem != "driver"]
    assert [f"{p.stem} -> {name}" for p in shared for name in sorted(_imported(p)) if PHASE.fullmatch(name)] == []
    assert {"phase0", "phase1", "phase2", "phase3"} <= _imported(PACKAGE / "driver.py")
