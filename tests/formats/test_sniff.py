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
