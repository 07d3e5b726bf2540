"""Shared test fixtures: where the real reference data lives, and how to run the CLI.

Tests that read ``../shared/data`` use the ``shared_data`` fixture. Where that
folder is absent (a user's machine) they are skipped with the reason; under CI
(``HPCSA_REQUIRE_SHARED=1``, set by ``.ci/run``) its absence is a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests are reproducible by default (the same examples on every run and in CI);
# HPCSA_HYPOTHESIS=explore draws new random examples for a longer search.
settings.register_profile("default", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True, max_examples=2000)
settings.load_profile(os.environ.get("HPCSA_HYPOTHESIS", "default"))

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data"))
FIXTURES = ROOT / "fixtures"

# Parsed structure files are cached per user (hpcsa.formats.hpcstruct.parsedcache); tests keep theirs in a
# directory of their own, shared by the CLI processes they start, so a home cache is never touched. The
# process that makes it (pytest itself; xdist's workers inherit the variable) removes it when it ends: a
# run's entries reach 30 MB, and every run used to leave them in the temporary directory.
if "HPCSA_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["HPCSA_CACHE_DIR"] = tempfile.mkdtemp(prefix="hpcsa-test-cache-")

    def _remove_test_cache(path: str = os.environ["HPCSA_CACHE_DIR"], owner: int = os.getpid()) -> None:
        if os.getpid() == owner:  # not a forked child that ends through Python's exit
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(_remove_test_cache)


# A phase with little input runs in one process whatever -j says (hpcsa.core.workers.pool_min_bytes); the tests'
# inputs are small, so they ask for the workers always, to exercise them. Tests of the rule set it themselves.
os.environ.setdefault("HPCSA_POOL_MIN_BYTES", "0")


def _shared() -> Path:
    if not SHARED_DATA.is_dir():
        if os.environ.get("HPCSA_REQUIRE_SHARED"):
            pytest.fail(f"{SHARED_DATA} is missing but HPCSA_REQUIRE_SHARED is set")
        pytest.skip(f"reference data folder {SHARED_DATA} is absent (only CI and developers have it)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return _shared()


@pytest.fixture(scope="session")
def hpctoolkit_data(shared_data: Path) -> Path:
    return shared_data / "hpctoolkit"


def run_cli(*args: str, cwd: str | os.PathLike[str] | None = None, check: bool = False,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m hpcsa ARGS`` and capture its output."""
    full_env = dict(os.environ, HPCSA_NO_PROGRESS="1", **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "hpcsa", *args], capture_output=True, text=True, cwd=cwd,
                          env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"hpcsa {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def assert_one_line_error(proc: subprocess.CompletedProcess[str], path_fragment: str) -> None:
    """The contract for bad input: exit 2, one line on stderr naming the file, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hpcsa: error: "), lines[0]
    assert path_fragment in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
