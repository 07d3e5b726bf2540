"""Bad database files give one line ``hpcsa: error: <path>: <problem>`` and exit 2, never a traceback."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import FormatError, HpcsaError, UnsupportedError
from hpcsa.formats.db import cctdb, database, metadb, metricsyaml, profiledb, tracedb
from tests.conftest import assert_one_line_error, run_cli

DB_FILES = ["meta.db", "profile.db", "cct.db", "trace.db"]
READERS = {"meta.db": metadb.read_metadb, "profile.db": profiledb.ProfileDB, "cct.db": cctdb.CctDB,
           "trace.db": tracedb.TraceDB}


@pytest.fixture
def small(shared_data: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "small.d"
    shutil.copytree(shared_data / "hpctoolkit" / "dbase" / "small.d", dst)
    for p in dst.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return dst


def _mutate(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "flipped-magic":
        data[0] ^= 0x20  # 'H' -> 'h'
    elif how == "wrong-version":
        data[14] = 5
    elif how == "garbage":
        data = bytearray(random.Random(len(data)).randbytes(len(data)))
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "flipped-magic", "wrong-version", "garbage"])
@pytest.mark.parametrize("name", DB_FILES)
def test_dump_of_a_bad_db_file(small: Path, name: str, how: str) -> None:
    target = small / name
    _mutate(target, how)
    proc = run_cli("dump", str(target))
    assert_one_line_error(proc, str(target))
    if how == "wrong-version":
        assert "version 5.0 is not supported" in proc.stderr
    if how == "truncated":
        assert "truncated" in proc.stderr


@pytest.mark.parametrize("how", ["truncated", "wrong-version", "garbage", "not-a-taxonomy"])
def test_dump_of_a_bad_metrics_yaml(small: Path, how: str) -> None:
    target = small / "metrics" / "default.yaml"
    text = target.read_text()
    if how == "truncated":
        target.write_text(text[: len(text) // 2])
    elif how == "wrong-version":
        target.write_text(text.replace("version: 0", "version: 7", 1))
    elif how == "garbage":
        target.write_bytes(random.Random(1).randbytes(len(text)))
    else:
        target.write_text("version: 0\ninputs: 12\nroots: []\n")
    proc = run_cli("dump", str(target))
    assert_one_line_error(proc, str(target))


def test_dump_of_a_database_with_a_bad_member(small: Path) -> None:
    _mutate(small / "cct.db", "truncated")
    proc = run_cli("dump", str(small))
    assert_one_line_error(proc, str(small / "cct.db"))


def test_database_without_profile_db(small: Path) -> None:
    (small / "profile.db").unlink()
    with pytest.raises(HpcsaError, match="profile.db is missing"):
        database.open_database(small)


@pytest.mark.parametrize("name", DB_FILES)
def test_newer_minor_version_is_read_with_a_note(small: Path, name: str) -> None:
    target = small / name
    data = bytearray(target.read_bytes())
    data[15] = 3
    target.write_bytes(bytes(data))
    part = READERS[name](target)
    assert part.version == "4.3"
    assert any("newer format version 4.3" in n for n in part.notes)
    proc = run_cli("dump", str(target))
    assert proc.returncode == 0, proc.stderr
    assert "newer format version 4.3" in proc.stdout


@pytest.mark.parametrize("name", DB_FILES)
def test_section_pointer_past_the_end(small: Path, name: str) -> None:
    target = small / name
    data = bytearray(target.read_bytes())
    data[0x18:0x20] = (len(data) + 64).to_bytes(8, "little")  # first section's pointer
    target.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="lies outside the file"):
        READERS[name](target)


def test_footer_missing_although_long_enough(small: Path) -> None:
    target = small / "profile.db"
    target.write_bytes(target.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(FormatError, match="footer '_prof.db' is missing"):
        profiledb.ProfileDB(target)


def test_format_tag_of_another_file(small: Path) -> None:
    target = small / "meta.db"
    shutil.copy(small / "cct.db", target)
    with pytest.raises(FormatError, match="is an HPCToolkit cct.db, not a meta.db"):
        metadb.read_metadb(target)


def test_corrupt_context_records(small: Path) -> None:
    """A child array size that does not end on a record boundary is named, not misparsed."""
    target = small / "meta.db"
    data = bytearray(target.read_bytes())
    ctx_ptr = int.from_bytes(data[0x48:0x50], "little")
    p_entries = int.from_bytes(data[ctx_ptr:ctx_ptr + 8], "little")
    size = int.from_bytes(data[p_entries:p_entries + 8], "little")
    data[p_entries:p_entries + 8] = (size + 8).to_bytes(8, "little")
    target.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="does not end on a context record boundary"):
        metadb.read_metadb(target)


def test_context_flag_without_its_pointer(small: Path) -> None:
    """hasFunction set but pFunction null: a corrupt context, named by its id."""
    target = small / "meta.db"
    meta = metadb.read_metadb(target)
    data = bytearray(target.read_bytes())
    fn_ptr = int.from_bytes(data[0x88:0x90], "little")  # Functions section
    p_funcs = int.from_bytes(data[fn_ptr:fn_ptr + 8], "little")
    word = p_funcs.to_bytes(8, "little")  # the flex word of the first context that calls function 0
    at = data.index(word, int.from_bytes(data[0x48:0x50], "little"))
    data[at:at + 8] = bytes(8)
    target.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="says it has a function but its pointer is null"):
        metadb.read_metadb(target)
    assert meta.functions.names[0] is not None


def test_metrics_yaml_unknown_version_is_unsupported(tmp_path: Path) -> None:
    p = tmp_path / "default.yaml"
    p.write_text("version: 2\ninputs: []\nroots: []\n")
    with pytest.raises(UnsupportedError, match="version 2 is not supported"):
        metricsyaml.read_metrics_yaml(p)


def test_metrics_yaml_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["version: 0", "inputs: []", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("roots: [{name: r, variants: {Sum: {render: [number], formula: *a8}}}]")
    p = tmp_path / "default.yaml"
    p.write_text("\n".join(lines))
    with pytest.raises(FormatError, match="alias bomb"):
        metricsyaml.read_metrics_yaml(p)


def test_profile_values_out_of_bounds(small: Path) -> None:
    target = small / "profile.db"
    pdb = profiledb.ProfileDB(target)
    at = profiledb.PROFILES_AT + profiledb.SZ_PROFILE_INFO * 1  # profile 1's info
    data = bytearray(target.read_bytes())
    data[at:at + 8] = np.uint64(10**6).tobytes()  # nValues
    target.write_bytes(bytes(data))
    del pdb
    bad = profiledb.ProfileDB(target)
    with pytest.raises(FormatError, match="profile 1's 1000000 values"):
        bad.profile(1)
