"""Outputs appear under their final name only when complete."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpcsa.errors import HpcsaError
from hpcsa.fileio import atomic_dir, atomic_file, write_file


def test_atomic_file_success_and_failure(tmp_path):
    target = tmp_path / "out.bin"
    write_file(target, b"complete")
    assert target.read_bytes() == b"complete"
    with pytest.raises(RuntimeError), atomic_file(target) as fh:
        fh.write(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"complete"  # the old complete file is untouched
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]  # no temporary left behind


def test_atomic_dir_replaces_only_when_complete(tmp_path):
    db = tmp_path / "db"
    with atomic_dir(db) as tmp:
        (open(os.path.join(tmp, "meta.db"), "wb")).close()
        assert not db.exists()
    assert sorted(os.listdir(db)) == ["meta.db"]
    with pytest.raises(RuntimeError), atomic_dir(db) as tmp:
        open(os.path.join(tmp, "other"), "wb").close()
        raise RuntimeError("interrupted")
    assert sorted(os.listdir(db)) == ["meta.db"]
    assert sorted(os.listdir(tmp_path)) == ["db"]
    with atomic_dir(db) as tmp:
        open(os.path.join(tmp, "new"), "wb").close()
    assert sorted(os.listdir(db)) == ["new"]


def test_missing_parent_is_a_clear_error(tmp_path):
    with pytest.raises(HpcsaError, match="does not exist"), atomic_file(tmp_path / "no" / "x"):
        pass


def test_errors_survive_pickling():
    """Worker processes report bad input to the parent through pickle."""
    import pickle

    from hpcsa.errors import FormatError

    err = pickle.loads(pickle.dumps(FormatError("/x/y.hpcrun", "truncated")))
    assert type(err) is FormatError and str(err) == "/x/y.hpcrun: truncated"


def test_stale_partials_of_dead_writers_are_removed(tmp_path):
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    stale_dir = tmp_path / f".db.partial-{proc.pid}-abc"
    stale_dir.mkdir()
    (stale_dir / "meta.db").write_bytes(b"half")
    live = tmp_path / f".db.partial-{os.getpid()}-def"  # a run still in progress (this process)
    live.mkdir()
    with atomic_dir(tmp_path / "db") as tmp:
        open(os.path.join(tmp, "meta.db"), "wb").close()
    names = sorted(os.listdir(tmp_path))
    assert f".db.partial-{proc.pid}-abc" not in names
    assert live.name in names and "db" in names


def test_atomic_dir_gets_the_umask_mode_not_mkdtemp_private_mode(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_dir(tmp_path / "out.d") as tmp:
            (Path(tmp) / "f").write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "out.d").stat().st_mode & 0o777 == 0o750
