"""A measured program that is not at its recorded path (measured on a compute node, analysed elsewhere): the
commands say what it costs and take the fix, and the fix gives the database the program in place would give.

The real 1,024-thread run records its program as /opt/extra-out/bin/cxx-gcc-O2; the binary is in the shared
data's bin/ folder. The share of the samples a warning names is computed here from the profiles themselves,
one file at a time.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.measurement.hpcrun import read_hpcrun
from tests.conftest import run_cli

RECORDED = "/opt/extra-out/bin/cxx-gcc-O2"


@pytest.fixture(scope="module")
def moved(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(a copy of the measurement without the program's structure file, the folder the binary is in now,
    a scratch folder)."""
    extra = shared_data / "hpctoolkit-extra"
    if not (extra / "meas-cxx1024").is_dir():
        pytest.skip("the real 1,024-thread measurement is absent")
    work = tmp_path_factory.mktemp("moved")
    meas = work / "m"
    shutil.copytree(extra / "meas-cxx1024", meas)
    (meas / "structs" / "cxx-gcc-O2.hpcstruct").unlink()
    return meas, extra / "bin", work


def program_share(meas: Path) -> float:
    """The share of CPUTIME (sec) whose samples sit at nodes of the program, from every profile."""
    inside = total = 0.0
    for path in sorted(meas.glob("*.hpcrun")):
        prof = read_hpcrun(path)
        metric = [m.name for m in prof.metrics].index("CPUTIME (sec)")
        program = {lm.id for lm in prof.loadmap if lm.path == RECORDED}
        lm_of_node = dict(zip(prof.cct["id"].tolist(), prof.cct["lm_id"].tolist(), strict=True))
        values = prof.value_floats()
        for node, m, v in zip(prof.value_nodes().tolist(), prof.values["metric"].tolist(), values.tolist(),
                              strict=True):
            if m == metric:
                total += v
                inside += v if lm_of_node[node] in program else 0.0
    return inside / total


def digest(db: Path) -> str:
    h = hashlib.sha256()
    for name in ("meta.db", "profile.db", "cct.db", "trace.db"):
        h.update((db / name).read_bytes())
    return h.hexdigest()


def test_prof_names_the_share_and_the_fix(moved):
    meas, _, work = moved
    proc = run_cli("prof", str(meas), "-o", str(work / "plain.d"))
    assert proc.returncode == 0, proc.stderr
    share = 100 * program_share(meas)
    assert share > 90
    line = next(ln for ln in proc.stderr.splitlines() if RECORDED in ln)
    assert f"{share:.1f} % of CPUTIME (sec) falls in {RECORDED}" in line
    assert "-S" in line and "--binaries DIR" in line


def test_struct_names_the_share_and_binaries_finds_it(moved):
    meas, bindir, work = moved
    before = run_cli("struct", str(meas))
    assert before.returncode == 0, before.stderr
    share = 100 * program_share(meas)
    assert re.search(rf"warning: {share:.1f} % of CPUTIME \(sec\) falls in {re.escape(RECORDED)}, not found here",
                     before.stderr)
    # struct replaced the measurement's own structure files (from hpcstruct) and says which
    assert "libc.so.6.hpcstruct: replaced (not made by hpcsa struct from this binary)" in before.stderr
    after = run_cli("struct", str(meas), "--binaries", str(bindir))
    assert after.returncode == 0, after.stderr
    assert f"{bindir / 'cxx-gcc-O2'} stands for {RECORDED} (found by its file name in --binaries)" in after.stderr
    assert "falls in" not in after.stderr
    # the file is the one the binary at its recorded path gives
    in_place = work / "in-place.hpcstruct"
    assert run_cli("struct", str(bindir / "cxx-gcc-O2"), "--name", RECORDED, "-o", str(in_place)).returncode == 0
    assert (meas / "structs" / "cxx-gcc-O2.hpcstruct").read_bytes() == in_place.read_bytes()


def test_a_structure_file_of_the_moved_binary_applies_by_file_name(moved):
    """``struct BIN`` names the binary's current path; ``prof -S`` matches it to the measured module by file
    name (its statements cover the sampled addresses) and gives the database of the structure file made
    for the recorded path."""
    meas, bindir, work = moved
    by_name = work / "cxx-gcc-O2.hpcstruct"
    assert run_cli("struct", str(bindir / "cxx-gcc-O2"), "-o", str(by_name)).returncode == 0
    structs = meas / "structs" / "cxx-gcc-O2.hpcstruct"
    if structs.exists():
        structs.unlink()
    proc = run_cli("prof", str(meas), "-S", str(by_name), "-o", str(work / "s.d"))
    assert proc.returncode == 0, proc.stderr
    assert f"is used for {RECORDED} by their file name: 100.0 % of the addresses sampled" in proc.stderr
    assert "falls in" not in proc.stderr
    in_place = work / "in-place" / "cxx-gcc-O2.hpcstruct"
    in_place.parent.mkdir()
    assert run_cli("struct", str(bindir / "cxx-gcc-O2"), "--name", RECORDED, "-o", str(in_place)).returncode == 0
    assert run_cli("prof", str(meas), "-S", str(in_place), "-o", str(work / "r.d")).returncode == 0
    assert digest(work / "s.d") == digest(work / "r.d")


def test_a_structure_file_of_another_program_with_the_name_is_refused(moved, tmp_path):
    """A structure file with the program's file name whose statements miss the sampled addresses is not used.
    (Only such a check is possible: the measurement records no identity of the binary, so a structure file of
    another build of the same program whose statements cover the sampled addresses cannot be told apart.)"""
    meas, bindir, _ = moved
    other = tmp_path / "cxx-gcc-O2"
    shutil.copy(bindir / "vm-gcc-O2", other)  # another program, under the measured program's name
    struct = tmp_path / "other.hpcstruct"
    assert run_cli("struct", str(other), "-o", str(struct)).returncode == 0
    structs = meas / "structs" / "cxx-gcc-O2.hpcstruct"
    if structs.exists():
        structs.unlink()
    proc = run_cli("prof", str(meas), "-S", str(struct), "-o", str(tmp_path / "o.d"))
    assert proc.returncode == 0, proc.stderr
    assert f"is not used for {RECORDED}: only 0.0 % of the addresses sampled in it fall in its statements" \
        in proc.stderr
    assert f"falls in {RECORDED}" in proc.stderr


def test_prof_reads_the_moved_binary_with_binaries(moved):
    meas, bindir, work = moved
    structs = meas / "structs" / "cxx-gcc-O2.hpcstruct"
    if structs.exists():
        structs.unlink()
    proc = run_cli("prof", str(meas), "--binaries", str(bindir), "-o", str(work / "b.d"))
    assert proc.returncode == 0, proc.stderr
    assert f"{bindir / 'cxx-gcc-O2'} stands for {RECORDED} (found by its file name in --binaries)" in proc.stderr
    assert "falls in" not in proc.stderr
    assert np.isfinite(program_share(meas))
