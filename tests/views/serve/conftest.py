"""Fixtures shared by the server and browser tests of ``hpcsa serve``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def cxx(shared_data: Path) -> Path:
    """HPCToolkit's database of the real 1,024-thread C++ run (skipped where ../shared is absent)."""
    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (db / "meta.db").is_file():
        pytest.skip(f"{db} is absent")
    return db


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for a test module (skipped, with the reason, where it is not installed)."""
    from tests.views.serve.browser import chromium

    with chromium() as drv:
        yield drv


@pytest.fixture(scope="session")
def shots() -> Path:
    """Where the browser tests write their screenshots for a person to look at: ``$HPCSA_SCREENSHOTS``, else
    ``build/screenshots/serve`` in the checkout (ignored by git, never committed)."""
    out = Path(os.environ.get("HPCSA_SCREENSHOTS", Path(__file__).resolve().parents[3] / "build" / "screenshots"
                              / "serve"))
    out.mkdir(parents=True, exist_ok=True)
    return out
