"""Inputs fail as one line naming the file; offsets written and copied whole (outputs: test_outputs.py)."""

from __future__ import annotations

import errno
import os

import pytest

from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.core.fileio import copy_range, map_input, open_input, read_input


def test_errors_survive_pickling():
    """Worker processes report bad input to the parent through pickle."""
    import pickle

    from hpcsa.core.errors import FormatError

    err = pickle.loads(pickle.dumps(FormatError("/x/y.hpcrun", "truncated")))
    assert type(err) is FormatError and str(err) == "/x/y.hpcrun: truncated"


def test_input_errors_are_one_line_naming_the_file(tmp_path):
    missing = tmp_path / "nope.bin"
    with pytest.raises(HpcsaError) as info:
        read_input(missing)
    assert str(info.value) == f"{missing}: no such file or directory"
    with pytest.raises(HpcsaError) as info:
        open_input(tmp_path, "a structure file")
    assert str(info.value) == f"{tmp_path}: is a directory, expected a structure file"
    with pytest.raises(FormatError) as info:  # the caller's error class is kept
        read_input(missing, error=FormatError)
    assert info.value.problem == "no such file or directory"
    if os.geteuid() != 0:  # root reads any file whatever its mode
        locked = tmp_path / "locked.bin"
        locked.write_bytes(b"x")
        locked.chmod(0)
        with pytest.raises(HpcsaError, match="permission denied$"):
            read_input(locked)


def test_inputs_are_read_or_mapped_whole_or_by_head(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(bytes(range(200)))
    assert read_input(f, 4) == bytes(range(4))
    assert read_input(f) == bytes(range(200))
    mapped = map_input(f)  # at least one byte: mapped
    assert not isinstance(mapped, bytes) and bytes(mapped[:3]) == bytes(range(3))
    assert map_input(f, map_from=1 << 20) == bytes(range(200))  # below the threshold: read
    (tmp_path / "empty.bin").write_bytes(b"")
    assert map_input(tmp_path / "empty.bin") == b""  # an empty file cannot be mapped
    with open_input(f) as fh:
        assert fh.read(2) == b"\x00\x01"


@pytest.mark.parametrize("kernel", [True, False])
def test_copy_range_copies_between_offsets(tmp_path, monkeypatch, kernel):
    """In the kernel where copy_file_range works, by pread/pwrite where it refuses (another file system)."""
    data = os.urandom(70_000)
    (tmp_path / "src").write_bytes(data)
    (tmp_path / "dst").write_bytes(bytes(100))
    if not kernel:
        def refuse(*args):
            raise OSError(errno.EXDEV, "cross-device")
        monkeypatch.setattr(os, "copy_file_range", refuse)
    src = os.open(tmp_path / "src", os.O_RDONLY)
    dst = os.open(tmp_path / "dst", os.O_WRONLY)
    try:
        copy_range(src, dst, 1234, 40, 65_000)
        with pytest.raises(EOFError):
            copy_range(src, dst, 69_990, 0, 20)  # the source ends first
    finally:
        os.close(src)
        os.close(dst)
    got = (tmp_path / "dst").read_bytes()
    assert got[:40] == got[40 - 40:40] and got[40:65_040] == data[1234:66_234]
