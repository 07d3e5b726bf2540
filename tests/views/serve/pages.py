"""Driving the page in the browser tests: waiting for it to settle, reading its rows, clicking."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import run_cli

ROWS_JS = """return [...document.querySelectorAll('#tree-body tr[data-node]')].map(tr => ({
  node: +tr.dataset.node, depth: +tr.dataset.depth, label: tr.querySelector('.label').textContent,
  full: tr.querySelector('.label').dataset.full || null, title: tr.querySelector('.label').title,
  sel: tr.classList.contains('sel'), hot: tr.classList.contains('hot'),
  values: [...tr.querySelectorAll('td.v')].map(td => td.dataset.v === '' ? null : +td.dataset.v),
  texts: [...tr.querySelectorAll('td.v')].map(td => td.textContent)}));"""


def wait(drv: Any, cond: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; browser log: {drv.get_log('browser')}")


def idle(drv: Any) -> None:
    """Wait until the page has no request in flight and has drawn."""
    wait(drv, lambda: drv.execute_script("return document.body.dataset.ready === '1' && window.__busy === 0"),
         "the page to settle")


def rows(drv: Any) -> list[dict[str, Any]]:
    return drv.execute_script(ROWS_JS)


def load(drv: Any, url: str) -> None:
    drv.get(url)
    idle(drv)


def click(drv: Any, css: str) -> None:
    drv.find_element("css selector", css).click()
    idle(drv)


def view_json(db: Path, *args: str) -> dict:
    return json.loads(run_cli("view", str(db), "--format", "json", "--top", "0", *args, check=True).stdout)


def no_errors(drv: Any) -> None:
    """The page logged no error (a failed request, an exception)."""
    errors = [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, errors
