"""The page's tests never install a system package on a user's machine: only where CI asks
(``HPCSA_CI_INSTALL=1``, set by ``.ci/run``); elsewhere a missing browser skips them with the command to run."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.views.serve import browser


def test_a_missing_browser_is_installed_only_where_ci_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("selenium")
    ran: list[Any] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(browser, "_first", lambda paths: None)  # no chromium, no chromedriver here
    monkeypatch.delenv(browser.CI_INSTALL, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        browser.browser_paths()
    assert ran == []
    assert "apt-get install chromium chromium-driver" in str(skipped.value)
    assert "HPCSA_CI_INSTALL=1" in str(skipped.value)
    monkeypatch.setenv(browser.CI_INSTALL, "1")
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    with pytest.raises(pytest.skip.Exception):
        browser.browser_paths()  # installed (in this test: pretended), still missing: skipped
    assert ran and ran[0][0][:2] == ["apt-get", "install"]
