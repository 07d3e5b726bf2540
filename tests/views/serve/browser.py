"""Headless Chromium for the page's tests: Debian's chromium and chromium-driver, driven by selenium.

The browser is the system's (never downloaded). When it is absent the tests are skipped with the reason and
the command that installs it; only where CI asks (``HPCSA_CI_INSTALL=1``, set by ``.ci/run``) does the set-up
run ``apt-get install`` itself (as root, with apt available). A test never installs system packages on a
user's machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER = ("/usr/bin/chromedriver",)
#: The environment variable with which CI (``.ci/run``) lets the tests install the system packages they need.
CI_INSTALL = "HPCSA_CI_INSTALL"
INSTALL_COMMAND = "apt-get install chromium chromium-driver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,900")


def _first(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if os.path.exists(p)), None)


def _install() -> str | None:
    """Install Debian's chromium and chromium-driver where CI asks; the reason it is not done, or None."""
    if os.environ.get(CI_INSTALL) != "1":
        return (f"chromium/chromedriver are not installed (run `{INSTALL_COMMAND}` as root; the tests install "
                f"them only where {CI_INSTALL}=1, as CI sets)")
    if shutil.which("apt-get") is None:
        return "chromium/chromedriver are not installed and there is no apt-get to install them"
    if os.geteuid() != 0:
        return "chromium/chromedriver are not installed (apt-get install chromium chromium-driver needs root)"
    try:
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"],
                       check=True, capture_output=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        return f"apt-get install chromium chromium-driver failed: {exc}"
    return None


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver), installed where CI asks (:data:`CI_INSTALL`); skips the test otherwise."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not installed (pip install 'hpcsa[test]')")
    chrome, driver = _first(CHROMIUM), _first(DRIVER)
    if chrome is None or driver is None:
        reason = _install()
        chrome, driver = _first(CHROMIUM), _first(DRIVER)
        if chrome is None or driver is None:
            pytest.skip(reason or "chromium/chromedriver still missing after apt-get install")
    return chrome, driver


@contextmanager
def chromium() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chrome, driver = browser_paths()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    with tempfile.TemporaryDirectory(prefix="hpcsa-chromium-") as profile:
        for f in FLAGS:
            opts.add_argument(f)
        opts.add_argument(f"--user-data-dir={profile}")
        drv = webdriver.Chrome(service=Service(driver), options=opts)
        drv.set_page_load_timeout(30)
        try:
            yield drv
        finally:
            drv.quit()
