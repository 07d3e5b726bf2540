"""Committed fixtures are exactly what the scripts in fixtures/ build."""

from __future__ import annotations

import filecmp
import importlib.util
from pathlib import Path

from tests.conftest import FIXTURES


def _load(script: Path):
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_measurement_is_reproducible(tmp_path):
    module = _load(FIXTURES / "measurements" / "make_tiny.py")
    module.build(str(tmp_path / "tiny.m"))
    committed = FIXTURES / "measurements" / "tiny.m"
    names = sorted(p.name for p in committed.iterdir())
    assert names == sorted(p.name for p in (tmp_path / "tiny.m").iterdir())
    match, mismatch, errors = filecmp.cmpfiles(committed, tmp_path / "tiny.m", names, shallow=False)
    assert mismatch == [] and errors == []
