"""hpcsa/formats/sniff.py recognises files by content, with the magics of the modules that own each format."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.sniff import identify

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "fixtures" / "measurements" / "tiny.m"
THREADS = ROOT / "fixtures" / "views" / "threads.d"


def test_measurements_and_databases_by_content() -> None:
    assert identify(TINY) == "measurement-dir"
    assert identify(next(TINY.glob("*.hpcrun"))) == "hpcrun"
    assert identify(next(TINY.glob("*.hpctrace"))) == "hpctrace"
    assert identify(THREADS) == "database-dir"
    for name in ("meta.db", "profile.db", "cct.db"):
        assert identify(THREADS / name) == name
    assert identify(THREADS / "metrics" / "default.yaml") == "metrics-yaml"


def test_renamed_file_is_still_recognised(tmp_path: Path) -> None:
    copy = tmp_path / "whatever.bin"
    copy.write_bytes((THREADS / "cct.db").read_bytes())
    assert identify(copy) == "cct.db"


@pytest.mark.parametrize(("head", "problem"), [
    (b"HPCTOOLKITzzzz\x04\x00", "unknown format b'zzzz'"),
    (b"HPCPROF-cctdb___", "legacy HPCToolkit file (HPCPROF-cctdb)"),
    (b"HPCRUN-profile", None),
])
def test_unknown_and_legacy_heads(tmp_path: Path, head: bytes, problem: str | None) -> None:
    f = tmp_path / "f"
    f.write_bytes(head)
    if problem is None:
        assert identify(f) == "hpcrun"
        return
    with pytest.raises(HpcsaError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        identify(f)


def test_directories_by_what_they_hold(tmp_path: Path) -> None:
    """One rule (hpcsa.formats.db.database.directory_kind) for identify and for open_database's messages."""
    from hpcsa.formats.db.database import directory_kind

    assert directory_kind(TINY) == "measurement" and directory_kind(THREADS) == "database"
    legacy = tmp_path / "old.d"
    legacy.mkdir()
    (legacy / "experiment.xml").write_text('<?xml version="1.0"?>\n<HPCToolkitExperiment version="2.2">\n')
    assert directory_kind(legacy) == "legacy-database"
    with pytest.raises(HpcsaError, match=r"old format \(experiment.xml, hpcprof before 2022\).*hpcprof 2022.10"):
        identify(legacy)
    (legacy / "profile.db").write_bytes(b"")  # 2020's hpcprof-mpi wrote profile.db beside experiment.xml
    assert directory_kind(legacy) == "legacy-database"
    half = tmp_path / "half.d"
    half.mkdir()
    (half / "profile.db").write_bytes((THREADS / "profile.db").read_bytes())
    assert directory_kind(half) == "incomplete-database" and identify(half) == "database-dir"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert directory_kind(empty) == "other"
    with pytest.raises(HpcsaError, match="neither a measurement directory"):
        identify(empty)


@pytest.mark.parametrize(("make", "says"), [
    ("measurement", "is a measurement directory (hpcrun's *.hpcrun files), not a database: run `hpcsa prof "),
    ("legacy", "is a database of HPCToolkit's old format (experiment.xml, hpcprof before 2022), which hpcsa does "
               "not read: re-run hpcprof 2022.10 or newer on its measurements, or `hpcsa prof MEASDIR`"),
    ("other", "not an HPCToolkit database (no meta.db): a database is the directory that hpcprof 2022.10 or "
              "newer, or `hpcsa prof`, writes: meta.db and profile.db"),
    ("half", "not a complete HPCToolkit database: meta.db is missing"),
    ("file", "a file of a database, not the database: give its directory, "),
    ("absent", "no such database directory"),
])
def test_open_database_names_the_next_step(tmp_path: Path, make: str, says: str) -> None:
    from hpcsa.formats.db.database import open_database

    path = {"measurement": TINY, "file": THREADS / "meta.db", "absent": tmp_path / "nowhere"}.get(make, tmp_path)
    if make == "legacy":
        (tmp_path / "experiment.xml").write_text("<HPCToolkitExperiment/>\n")
    elif make == "half":
        (tmp_path / "profile.db").write_bytes(b"")
    with pytest.raises(HpcsaError) as err:
        open_database(path)
    assert says in str(err.value) and "\n" not in str(err.value)
