"""Fixtures shared by the server tests of ``hpcsa serve`` (the browser and its screenshots: tests/views/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def cxx(shared_data: Path) -> Path:
    """HPCToolkit's database of the real 1,024-thread C++ run (skipped where ../shared is absent)."""
    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (db / "meta.db").is_file():
        pytest.skip(f"{db} is absent")
    return db
