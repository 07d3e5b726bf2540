"""hpcsa struct degrades, never crashes: stripped symbols, missing or corrupt DWARF, bad and foreign files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
from elftools.elf.elffile import ELFFile

from hpcsa.formats.hpcstruct.model import A, F, L, P, S
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.structure.binary import analyze_binary
from tests.conftest import assert_one_line_error, run_cli

BIN = "inlines+loops-x86_64-gcc10-dr"


def variant(src: Path, dst: Path, rename: dict[bytes, bytes] | None = None,
            fill: dict[str, int] | None = None) -> Path:
    """A copy of ``src`` with section names changed in .shstrtab (hides them) or section bytes overwritten."""
    data = bytearray(src.read_bytes())
    with open(src, "rb") as fh:
        elf = ELFFile(fh)
        shstr = elf.get_section(elf["e_shstrndx"])
        lo, hi = shstr["sh_offset"], shstr["sh_offset"] + shstr["sh_size"]
        for old, new in (rename or {}).items():
            assert len(old) == len(new)
            pos = data.find(old + b"\0", lo, hi)
            assert pos >= 0, old
            data[pos:pos + len(old)] = new
        for name, byte in (fill or {}).items():
            sec = elf.get_section_by_name(name)
            data[sec["sh_offset"]:sec["sh_offset"] + sec["sh_size"]] = bytes([byte]) * sec["sh_size"]
    dst.write_bytes(bytes(data))
    return dst


def test_no_dwarf_gives_procedures_and_loops_without_lines(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "bin" / BIN
    names = {b".debug_info": b".xebug_info", b".debug_line": b".xebug_line"}
    m = analyze_binary(variant(src, tmp_path / "nodwarf", rename=names)).module
    full = analyze_binary(src).module
    assert m.count(P) == full.count(P) == 15
    assert m.count(L) == full.count(L) == 11  # loops come from the code, not the debug information
    assert m.count(A) == 0  # no inlining information
    assert set(m.scopes["line"][m.scopes["kind"] == S].tolist()) == {0}
    files = [m.text(int(r["file"])) for r in m.scopes[m.scopes["kind"] == F]]
    assert files == ["[nodwarf]"]
    # hpcstruct's -r build of the same source agrees loop for loop: same header addresses
    assert sorted(m.ranges_of(int(r))[0][0] for r in np.flatnonzero(m.scopes["kind"] == L)) == \
        sorted(full.ranges_of(int(r))[0][0] for r in np.flatnonzero(full.scopes["kind"] == L))


def test_stripped_symbols_fall_back_to_the_dynamic_table(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "bin" / BIN
    m = analyze_binary(variant(src, tmp_path / "stripped", rename={b".symtab": b".xymtab"})).module
    procs = {m.text(int(m.scopes["name"][r])).split(" [")[0] for r in np.flatnonzero(m.scopes["kind"] == P)}
    # exported functions keep their names; local helpers (frame_dummy...) are found as call targets or not at all
    assert {"f1", "f2", "f3_1", "f3_2", "f3_3", "f4_1", "f4_2"} <= procs
    assert m.count(L) == 11


def test_corrupt_dwarf_is_a_note_not_a_crash(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "bin" / BIN
    bad = variant(src, tmp_path / "corrupt", fill={".debug_info": 0xFF, ".debug_abbrev": 0xFF})
    result = analyze_binary(bad)
    assert result.notes and "debug_info" in " ".join(result.notes)
    assert result.module.count(P) == 15 and result.module.count(L) == 11
    proc = run_cli("struct", str(bad), "-o", str(tmp_path / "corrupt.hpcstruct"))
    assert proc.returncode == 0, proc.stderr
    assert "note:" in proc.stderr and read_hpcstruct(tmp_path / "corrupt.hpcstruct").modules[0].count(P) == 15


def test_corrupt_line_table_keeps_the_rest(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "bin" / BIN
    bad = variant(src, tmp_path / "badlines", fill={".debug_line": 0xFF})
    result = analyze_binary(bad)
    assert result.module.count(P) == 15 and result.module.count(L) == 11
    assert any("line" in n for n in result.notes)


def test_bad_inputs_are_one_line_errors(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "bin" / BIN
    (tmp_path / "text").write_text("not a binary\n")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "truncated").write_bytes(src.read_bytes()[:3000])
    (tmp_path / "header").write_bytes(src.read_bytes()[:40])
    arm = bytearray(src.read_bytes())
    arm[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    (tmp_path / "arm64").write_bytes(bytes(arm))
    x32 = bytearray(src.read_bytes())
    x32[4] = 1  # ELFCLASS32 with x86-64 machine: unreadable as ELF32 headers
    (tmp_path / "class32").write_bytes(bytes(x32))
    expect = {"text": "not an ELF", "empty": "not an ELF", "truncated": "the file is truncated",
              "header": "header is truncated", "arm64": "AArch64 is not supported", "class32": "corrupt ELF"}
    for name, words in expect.items():
        proc = run_cli("struct", str(tmp_path / name), "-o", str(tmp_path / f"{name}.hpcstruct"))
        assert_one_line_error(proc, name)
        assert words in proc.stderr, proc.stderr
        assert not (tmp_path / f"{name}.hpcstruct").exists()
    proc = run_cli("struct", str(tmp_path / "missing"))
    assert_one_line_error(proc, "missing")
    proc = run_cli("struct", str(src), "-j", "0")
    assert proc.returncode == 2 and "-j" in proc.stderr


def test_cli_writes_the_file_and_a_summary(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "bin" / BIN
    proc = run_cli("struct", str(src), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / f"{BIN}.hpcstruct"
    m = read_hpcstruct(out).modules[0]
    assert m.path == os.path.realpath(src) and m.count(P) == 15
    assert "15 procedures, 11 loops" in proc.stderr
    proc = run_cli("struct", str(src), "-o", str(tmp_path / "named.hpcstruct"), "--name", "/opt/app/lib.so")
    assert proc.returncode == 0 and read_hpcstruct(tmp_path / "named.hpcstruct").modules[0].path == "/opt/app/lib.so"


def test_unreadable_output_directory(hpctoolkit_data, tmp_path):
    proc = run_cli("struct", str(hpctoolkit_data / "bin" / BIN), "-o", str(tmp_path / "no" / "such" / "x"))
    assert_one_line_error(proc, "no/such")


def test_gpu_binaries_go_to_the_gpu_hook(hpctoolkit_data, tmp_path, monkeypatch):
    """EM_CUDA files are dispatched by machine type; without a GPU builder they are a clear error."""
    from hpcsa.structure import binary

    cubin = hpctoolkit_data / "bin" / "recursion-sm_75-nvcc112-dr"
    seen = {}

    def fake_builder(image, name, jobs):
        seen["machine"] = image.machine
        from hpcsa.formats.hpcstruct.model import ModuleBuilder
        return ModuleBuilder(name, has_calls=True).finish(), ["warning: no disassembler", "no DWARF"]

    monkeypatch.setattr(binary, "gpu_builder", lambda machine, path: fake_builder)
    result = binary.analyze_binary(cubin, lm_name="gpubins/x.gpubin")
    assert seen["machine"] == 190 and result.module.has_calls is True
    # The builder's notes reach the caller, degraded results as warnings.
    assert binary.split_notes(result.notes) == (["no disassembler"], ["no DWARF"])
    shutil.copy(cubin, tmp_path / "k.cubin")


def test_compressed_and_separate_debug_information(hpctoolkit_data, tmp_path):
    """zlib-compressed DWARF sections are inflated; DWARF in a separate file (.gnu_debuglink) is found."""
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        import pytest
        pytest.skip("objcopy (binutils) is not installed")
    import subprocess

    src = hpctoolkit_data / "bin" / BIN
    full = analyze_binary(src).module
    compressed = tmp_path / "compressed.so"
    subprocess.run([objcopy, "--compress-debug-sections=zlib", str(src), str(compressed)], check=True)
    m = analyze_binary(compressed).module
    assert m.count(S) == full.count(S) and m.count(A) == full.count(A) and m.count(L) == full.count(L)

    debug = tmp_path / "lib.so.debug"
    stripped = tmp_path / "lib.so"
    subprocess.run([objcopy, "--only-keep-debug", str(src), str(debug)], check=True)
    subprocess.run([objcopy, "--strip-debug", f"--add-gnu-debuglink={debug}", str(src), str(stripped)], check=True)
    result = analyze_binary(stripped)
    assert any("debug information read from" in n for n in result.notes)
    assert result.module.count(A) == full.count(A) and result.module.count(S) == full.count(S)


def test_no_symbols_at_all_uses_the_unwind_table(tmp_path):
    """Without any symbol table the functions still appear, found where .eh_frame says code starts."""
    from tests.conftest import FIXTURES

    src = FIXTURES / "structure" / "sample.so"
    bare = variant(src, tmp_path / "bare.so", rename={b".symtab": b".xymtab", b".dynsym": b".xynsym"})
    m = analyze_binary(bare).module
    entries = {m.ranges_of(int(r))[0][0] for r in np.flatnonzero(m.scopes["kind"] == P)}
    with open(src, "rb") as fh:
        symtab = ELFFile(fh).get_section_by_name(".symtab")
        named = {s.name: s["st_value"] for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"}
    assert {named[n] for n in ("nest", "dispatch", "fact", "checked")} <= entries
    assert m.count(L) >= 5  # the loops are found all the same


def test_relocatable_objects_are_refused(tmp_path):
    from tests.conftest import FIXTURES

    data = bytearray((FIXTURES / "structure" / "sample.so").read_bytes())
    data[16:18] = (1).to_bytes(2, "little")  # e_type = ET_REL
    (tmp_path / "obj.o").write_bytes(bytes(data))
    proc = run_cli("struct", str(tmp_path / "obj.o"), "-o", str(tmp_path / "o.hpcstruct"))
    assert_one_line_error(proc, "obj.o")
    assert "relocatable object" in proc.stderr


def test_damaged_binaries_end_in_one_line_or_a_result(tmp_path):
    """Random byte damage in code, unwind and debug sections: a structure file or an HpcsaError, never
    another exception (seeded, so a failure can be replayed)."""
    from hpcsa.core.errors import HpcsaError
    from tests.conftest import FIXTURES

    src = FIXTURES / "structure" / "sample.so"
    data = src.read_bytes()
    with open(src, "rb") as fh:
        elf = ELFFile(fh)
        spans = [(s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()
                 if s.name in (".text", ".eh_frame", ".debug_info", ".debug_line", ".debug_abbrev", ".rodata",
                               ".debug_rnglists", ".symtab", ".dynsym", ".rela.plt")]
    rng = np.random.default_rng(1234)
    for i in range(40):
        damaged = bytearray(data)
        off, size = spans[int(rng.integers(len(spans)))]
        for pos in rng.integers(off, off + size, int(rng.integers(1, 64))):
            damaged[int(pos)] = int(rng.integers(256))
        path = tmp_path / f"damaged{i}.so"
        path.write_bytes(bytes(damaged))
        try:
            analyze_binary(path)
        except HpcsaError:
            pass


def test_code_moved_out_of_reach_is_not_walked_byte_by_byte(tmp_path):
    """A section header whose address was damaged (``.init`` moved 32 GiB up, found by the long fuzz run)
    leaves the `_init` entry in no code section. Its procedure used to stretch to the next entry, and the
    gap filling made a statement every 4 bytes of 32 GiB; now the file is analysed like any other, within
    the fuzz suite's time and memory bounds, and the rest of the structure is intact."""
    from tests.conftest import FIXTURES
    from tests.fuzzing import check_input

    src = FIXTURES / "structure" / "sample.so"
    data = bytearray(src.read_bytes())
    with open(src, "rb") as fh:
        elf = ELFFile(fh)
        index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == ".init")
        at = elf["e_shoff"] + index * elf["e_shentsize"] + 16  # sh_addr of Elf64_Shdr
        addr = int.from_bytes(data[at:at + 8], "little")
    data[at:at + 8] = (addr + (32 << 30)).to_bytes(8, "little")
    bad = tmp_path / "moved-init.so"
    bad.write_bytes(bytes(data))
    assert check_input(analyze_binary, bad, 64 << 20) == "ok"
    moved, good = analyze_binary(bad).module, analyze_binary(src).module

    def procs(m):  # noqa: ANN001, ANN202
        return {m.text(int(m.scopes["name"][r])).split(" [")[0] for r in np.flatnonzero(m.scopes["kind"] == P)}

    named = {n for n in procs(good) if not n.startswith("<") and not n.endswith("@plt")}  # .text functions
    assert named - {"_init"} <= procs(moved) and moved.count(L) == good.count(L) == 6
    text = {m: sorted(m.scopes["line"][m.scopes["kind"] == S].tolist()) for m in (moved, good)}
    assert len(text[moved]) <= len(text[good]) + 8  # a few statements for the lost _init, not millions
