"""Fixtures of the browser tests of the views' pages (``hpcsa serve``, its compare page)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


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
    out = Path(os.environ.get("HPCSA_SCREENSHOTS", Path(__file__).resolve().parents[2] / "build" / "screenshots"
                              / "serve"))
    out.mkdir(parents=True, exist_ok=True)
    return out
