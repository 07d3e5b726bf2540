"""Committed fixtures are exactly what the scripts in fixtures/ build."""

from __future__ import annotations

import filecmp
import importlib.util
import sys
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


def test_demo_inputs_are_package_data_built_by_the_fixture_scripts():
    """The demo's inputs live in hpcsa/cli/demo_data (a wheel installs them, pyproject.toml's package-data
    names them); fixtures/demo's scripts write there; its CPU binary is fixtures/structure's sample.so.
    (That the records are what make_records.py builds is tests/cli/test_demo.py's, with nvdisasm.)"""
    import fnmatch
    import tomllib

    from hpcsa.cli import demo

    data = Path(demo.DATA)
    assert data == FIXTURES.parent / "hpcsa" / "cli" / "demo_data"
    inputs = {Path(p).name for p in (demo.RECORDS, demo.CUBIN, demo.SOURCE, demo.CPU_BINARY)}
    assert sorted(p.name for p in data.iterdir() if p.name != "__pycache__") == sorted(inputs)
    with open(FIXTURES.parent / "pyproject.toml", "rb") as fh:
        globs = tomllib.load(fh)["tool"]["setuptools"]["package-data"]["hpcsa.cli"]
    for name in inputs:
        assert any(fnmatch.fnmatch(f"demo_data/{name}", g) for g in globs), f"{name} is not package data"
    assert filecmp.cmp(data / "sample.so", FIXTURES / "structure" / "sample.so", shallow=False)
    for script in ("make_records.py", "make_cubin.py"):
        spec = importlib.util.spec_from_file_location(f"demo_{script[:-3]}", FIXTURES / "demo" / script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        try:
            spec.loader.exec_module(module)
        finally:
            del sys.modules[spec.name]
        assert Path(module.DATA) == data, f"{script} writes elsewhere"
    for name in ("particles.nvprof", "particles-sm75.cubin"):  # kept for the paths other tests name
        assert (FIXTURES / "demo" / name).resolve() == data / name
