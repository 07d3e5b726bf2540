"""``hpcsa prof`` copies the source files contexts name into ``DB/src/`` (as hpcprof does), ``-R`` and ``--no-source``.

The measurement is the real ``small.m``; its source (named ``/builds/.../small.c`` by the measured run) is not
on this machine, so without ``-R`` nothing may change; with ``-R`` pointing at a directory holding a file of
that name, the copy must hold the same bytes, meta.db must name it ``src/<path>`` with the ``copied`` flag, and
every other file of the database must be byte-identical to the build without copying.
"""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from hpcsa.aggregate.copy_sources import remap
from hpcsa.formats.db.database import open_database
from tests.conftest import assert_one_line_error, run_cli

ORIGINAL_DIR = "/builds/hpctoolkit/hpctoolkit/tests/data/meas"
SOURCE = "int main() {\n  for (int i = 0; i < 10; i++) work(i);\n}\n"


@pytest.fixture(scope="module")
def small(hpctoolkit_data: Path) -> Path:
    return hpctoolkit_data / "meas" / "small.m"


def prof(meas: Path, out: Path, *extra: str) -> Path:
    run_cli("prof", str(meas), "-o", str(out), "-j", "1", *extra, check=True)
    return out


def test_copied_with_replace_path(small: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "small.c").write_text(SOURCE)
    plain = prof(small, tmp_path / "plain.d", "--no-source")
    db = prof(small, tmp_path / "copied.d", "-R", f"{ORIGINAL_DIR}={moved}")
    copy = db / "src" / ORIGINAL_DIR.lstrip("/") / "small.c"
    assert copy.read_text() == SOURCE
    meta, ref = open_database(db).meta, open_database(plain).meta
    i = ref.files.index(f"{ORIGINAL_DIR}/small.c")
    assert meta.files[i] == f"src{ORIGINAL_DIR}/small.c" and int(meta.file_flags[i]) & 1
    assert [f for j, f in enumerate(meta.files) if j != i] == [f for j, f in enumerate(ref.files) if j != i]
    for name in ("profile.db", "cct.db", "trace.db", "metrics/default.yaml"):
        assert filecmp.cmp(db / name, plain / name, shallow=False), name


def test_nothing_changes_when_sources_are_absent(small: Path, tmp_path: Path) -> None:
    a = prof(small, tmp_path / "a.d")
    b = prof(small, tmp_path / "b.d", "--no-source")
    assert not (a / "src").exists()
    assert filecmp.cmp(a / "meta.db", b / "meta.db", shallow=False)


def test_no_source_wins_over_replace_path(small: Path, tmp_path: Path) -> None:
    (tmp_path / "small.c").write_text(SOURCE)
    db = prof(small, tmp_path / "n.d", "--no-source", "-R", f"{ORIGINAL_DIR}={tmp_path}")
    assert not (db / "src").exists()
    assert all(not int(f) & 1 for f in open_database(db).meta.file_flags)


def test_bad_replace_path(small: Path, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("prof", str(small), "-o", str(tmp_path / "x.d"), "-R", "nothing"), "nothing")


def test_remap_on_component_boundaries() -> None:
    pairs = (("/a/b", "/x"),)
    assert remap("/a/b/c.c", pairs) == "/x/c.c"
    assert remap("/a/bc/c.c", pairs) == "/a/bc/c.c"
    assert remap("/a/b", pairs) == "/x"


def test_sources_not_found_are_named_once_with_the_hint(small: Path, tmp_path: Path) -> None:
    """Without the sources here, prof says so in one line (how many, the folder, ``-R``); once ``-R`` finds
    them, nothing is said."""
    missing = run_cli("prof", str(small), "-o", str(tmp_path / "a.d"), "-j", "1")
    notes = [ln for ln in missing.stderr.splitlines() if "source files" in ln]
    assert notes == [f"hpcsa: warning: 1 of 1 source files the database names were not found here (1 in "
                     f"{ORIGINAL_DIR}), so viewers cannot show them: -R OLD=NEW says where a folder of them is now"]
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "small.c").write_text(SOURCE)
    found = run_cli("prof", str(small), "-o", str(tmp_path / "b.d"), "-j", "1", "-R", f"{ORIGINAL_DIR}={moved}")
    assert "source files" not in found.stderr
