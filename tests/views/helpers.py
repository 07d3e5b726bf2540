"""Where the views' fixture databases and the real v4 databases are."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.formats.dbcheck import PRE_RELEASE, database_dirs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "views"
SEED003 = FIXTURES / "seed003.d"
SCALING_P, SCALING_Q = FIXTURES / "scaling-p2.d", FIXTURES / "scaling-q4.d"
THREADS = FIXTURES / "threads.d"


def v4_databases(shared: Path) -> dict[str, Path]:
    """Every released-format v4 database in the shared data (the pre-release snapshots are refused)."""
    return {k: v for k, v in database_dirs(shared).items() if k not in PRE_RELEASE}


def fixture_builder() -> ModuleType:
    """fixtures/views/make_fixtures.py as a module (to rebuild the fixtures in a test)."""
    spec = importlib.util.spec_from_file_location("views_make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
