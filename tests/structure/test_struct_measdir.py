"""hpcsa struct MEASDIR: the binaries a measurement used, into MEASDIR/structs, cached by content."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hpcsa.formats.hpcstruct.compare import loop_addresses
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.measurement.loadmodules import measurement_load_modules
from hpcsa.structure.measdir import find_targets, struct_measdir
from tests.conftest import assert_one_line_error, run_cli
from tests.structure.measured import procedures_of

VDSO = "7efc21c89566f551ba9bac284645e9d6.vdso"


@pytest.fixture
def measdir(hpctoolkit_data, tmp_path) -> Path:
    """A writable copy of loops-cputime-t.m without its structure files (its vdso is the one binary of it
    that exists here; hpcstruct's output for it is the reference)."""
    src = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    dst = tmp_path / "loops.m"
    dst.mkdir()
    for f in src.iterdir():
        if f.suffix in (".hpcrun", ".hpctrace") or f.name == "original-path":
            shutil.copy(f, dst / f.name)
    shutil.copytree(src / "vdso", dst / "vdso")
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    os.chmod(dst, 0o755)
    return dst


def fde_starts(path: Path) -> set[int]:
    """Where the FDEs of ``.eh_frame`` begin, read with pyelftools."""
    from elftools.dwarf.callframe import FDE
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as fh:
        cfi = ELFFile(fh).get_dwarf_info().EH_CFI_entries()
        return {e.header["initial_location"] for e in cfi if isinstance(e, FDE)}


def test_used_modules_are_found_and_the_vdso_matches_hpcstruct(measdir, hpctoolkit_data):
    targets, missing = find_targets(str(measdir), measurement_load_modules(str(measdir)))
    recorded = {t.recorded for t in targets} | set(missing)
    # the load modules with samples (flag 1 in the load maps): what hpcstruct made structure files for
    assert f"vdso/{VDSO}" in recorded and "/usr/lib/x86_64-linux-gnu/libc-2.31.so" in recorded
    assert "/usr/lib/x86_64-linux-gnu/libm-2.31.so" not in recorded  # no samples
    vdso = next(t for t in targets if t.recorded == f"vdso/{VDSO}")
    assert vdso.path == str(measdir / "vdso" / VDSO) and vdso.expected_md5 == VDSO.split(".")[0]

    proc = run_cli("struct", str(measdir), "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"hpcsa struct: {measdir}:")
    out = measdir / "structs" / f"{VDSO}.hpcstruct"
    ref = hpctoolkit_data / "meas" / "loops-cputime-t.m" / "structs" / f"{VDSO}.hpcstruct"
    # The vdso is stripped: hpcstruct's procedures, named as it names them, and its loops; beside them the
    # functions the unwind table shows that no call reaches (hpcsa.structure.x86.stripped), each an FDE.
    theirs, ours = read_hpcstruct(ref).modules[0], read_hpcstruct(out).modules[0]
    mine = procedures_of(ours)
    assert procedures_of(theirs).items() <= mine.items()
    assert set(loop_addresses(theirs)) <= set(loop_addresses(ours))
    # and 0x9f0, where the call at 0x9e0 of the retpoline thunk there goes (hand-checked with objdump)
    assert set(mine) - set(procedures_of(theirs)) <= fde_starts(measdir / "vdso" / VDSO) | {0x9f0}
    # the program is not here: what it costs (hpcstruct's reference structure file names it) and the fix
    assert "99.8 % of CPUTIME (sec) falls in /builds/hpctoolkit/hpctoolkit/builddir/tests/data/meas/testmeas-loops, " \
        "not found here" in proc.stderr and "--binaries DIR" in proc.stderr


def test_results_are_cached_by_content(measdir):
    first = struct_measdir(str(measdir), measurement_load_modules(str(measdir)))
    assert any(p.endswith(f"{VDSO}.hpcstruct") for p in first.written)
    second = struct_measdir(str(measdir), measurement_load_modules(str(measdir)))
    assert not second.written and any(p.endswith(f"{VDSO}.hpcstruct") for p in second.cached)
    index = json.loads((measdir / "structs" / ".hpcsa-cache.json").read_text())
    assert index[f"{VDSO}.hpcstruct"]["md5"] == VDSO.split(".")[0]
    # A changed binary is analysed again, and its identity problem reported.
    vdso = measdir / "vdso" / VDSO
    data = bytearray(vdso.read_bytes())
    data[-1] ^= 0xFF
    vdso.write_bytes(bytes(data))
    third = struct_measdir(str(measdir), measurement_load_modules(str(measdir)))
    assert any(p.endswith(f"{VDSO}.hpcstruct") for p in third.written)
    assert any("is not the binary the measurement recorded" in w for w in third.warnings)


def test_shared_cache_serves_another_measurement(measdir, tmp_path):
    cache = tmp_path / "cache"
    first = struct_measdir(str(measdir), measurement_load_modules(str(measdir)), cache_dir=str(cache))
    assert len(list(cache.glob("*.hpcstruct"))) == len(first.written) > 0
    other = tmp_path / "other.m"
    shutil.copytree(measdir, other, ignore=shutil.ignore_patterns("structs"))
    report = struct_measdir(str(other), measurement_load_modules(str(other)), cache_dir=str(cache))
    got = [p for p in report.cached if p.endswith(f"{VDSO}.hpcstruct")]
    assert got and read_hpcstruct(got[0]).modules[0].path == f"vdso/{VDSO}"


def test_caches_are_not_reused_by_other_analysis_code(measdir, tmp_path, monkeypatch):
    """A structure file made by other code (an upgrade that changes names or loops) is made again, from the
    measurement's index and from the shared cache alike."""
    from hpcsa.structure import measdir as md

    cache = tmp_path / "cache"
    n = len(struct_measdir(str(measdir), measurement_load_modules(str(measdir)), cache_dir=str(cache)).written)
    assert n and not struct_measdir(str(measdir), measurement_load_modules(str(measdir)), cache_dir=str(cache)).written
    monkeypatch.setattr(md, "_CODE_FINGERPRINT", "other analysis code")
    again = struct_measdir(str(measdir), measurement_load_modules(str(measdir)), cache_dir=str(cache))
    assert any(p.endswith(f"{VDSO}.hpcstruct") for p in again.written) and not again.cached
    assert len(list(cache.glob("*.hpcstruct"))) == 2 * n


def test_analysis_key_follows_the_separate_debug_file(monkeypatch):
    from hpcsa.structure import measdir as md
    from hpcsa.structure.elf import open_elf

    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    if not os.path.isfile(libc) or not open_elf(libc).debug_link:
        pytest.skip("needs libc with its separate debug file (Debian's libc6-dbg)")
    debug = open_elf(libc).debug_link
    before = md.analysis_key(libc, "0" * 32)
    real = md.file_md5
    monkeypatch.setattr(md, "file_md5", lambda p: "f" * 32 if p == debug else real(p))
    assert md.analysis_key(libc, "0" * 32) != before


def test_not_a_measurement_directory(tmp_path):
    (tmp_path / "empty.m").mkdir()
    proc = run_cli("struct", str(tmp_path / "empty.m"))
    assert_one_line_error(proc, "empty.m")
    assert "no .hpcrun" in proc.stderr
    proc = run_cli("struct", str(tmp_path / "empty.m"), "-o", "x.hpcstruct")
    assert_one_line_error(proc, "empty.m")


def test_prof_with_our_structure_files_equals_prof_with_hpcstructs(measdir, hpctoolkit_data, tmp_path):
    """Issue 4: hpcsa struct MEASDIR then hpcsa prof gives the database real hpcstruct's files give, where
    both exist (here the vdso, the one measured binary present; the others keep hpcstruct's files)."""
    src = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    ref = tmp_path / "ref.m"
    shutil.copytree(src, ref, ignore=shutil.ignore_patterns("*.license"))
    proc = run_cli("struct", str(measdir))
    assert proc.returncode == 0, proc.stderr
    ours = measdir / "structs"
    for f in (src / "structs").glob("*.hpcstruct"):
        if f.name != f"{VDSO}.hpcstruct":  # binaries that are not on this machine (or differ from the measured)
            shutil.copy(f, ours / f.name)
    for m in (ref, measdir):
        for root, dirs, files in os.walk(m):
            for n in dirs + files:
                os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    for m in (ref, measdir):
        proc = run_cli("prof", str(m), "-o", str(tmp_path / (m.name + ".d")))
        assert proc.returncode == 0, proc.stderr
    for db in ("meta.db", "profile.db", "cct.db", "trace.db"):
        assert (tmp_path / "ref.m.d" / db).read_bytes() == (tmp_path / "loops.m.d" / db).read_bytes(), db


def test_a_killed_analysis_fails_its_binary_alone(monkeypatch, tmp_path):
    """With -j N each binary is analysed in a process of its own: one killed (out of memory, a signal) is
    reported as failed with that reason, the others' outcomes arrive, each binary exactly once, at most N
    processes at a time."""
    import time

    from hpcsa.structure import measdir as md

    running = tmp_path / "running"
    running.mkdir()

    def fake(t, key, cache_dir, keep=None):  # type: ignore[no-untyped-def]
        mark = running / str(os.getpid())
        mark.touch()
        try:
            time.sleep(0.15)  # long enough for the others to start, were more allowed
            assert len(list(running.iterdir())) <= 2  # never more than -j processes
            if t.recorded == "killed":
                mark.unlink()
                os._exit(9)
            return [f"note of {t.recorded} with {key}"]
        finally:
            mark.unlink()

    monkeypatch.setattr(md, "_run_one", fake)
    names = ["a", "killed", "b", "c", "d"]
    work = [(md.Target(n, n, str(tmp_path / f"{n}.hpcstruct")), f"k{n}") for n in names]
    got = dict(md._analyses(work, 2, None))
    assert sorted(got) == list(range(len(names)))
    for i, n in enumerate(names):
        assert got[i] == (md.KILLED if n == "killed" else [f"note of {n} with k{n}"])
    inline = dict(md._analyses([w for w in work if w[0].recorded != "killed"], 1, None))
    assert inline == {0: ["note of a with ka"], 1: ["note of b with kb"], 2: ["note of c with kc"],
                      3: ["note of d with kd"]}


def test_a_cache_that_cannot_be_a_directory_is_one_line(measdir, tmp_path):
    """--cache (or $HPCSA_STRUCT_CACHE) naming a file, or under a missing directory: refused before the work."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for cache, why in ((afile, "not a directory"), (afile / "cache", "Not a directory")):
        proc = run_cli("struct", str(measdir), "--cache", str(cache))
        assert_one_line_error(proc, f"{cache}: cannot use as the cache of structure files")
        assert why in proc.stderr
    assert afile.read_text() == "mine\n"
