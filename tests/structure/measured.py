"""Real hpcstruct's structure files of the system libraries a real run (meas-cxx1024) measured, and what
the libraries' PLT stubs bind, read independently of hpcsa."""

from __future__ import annotations

from pathlib import Path

import capstone
import pytest

from hpcsa.formats.hpcstruct.model import Module
from hpcsa.formats.hpcstruct.reader import read_hpcstruct


def measured_library(shared_data: Path, library: str) -> Module:
    """hpcstruct's module of ``library`` from the real run; skips where the file, or the library it
    describes, is absent on this machine."""
    structs = shared_data / "hpctoolkit-extra" / "meas-cxx1024" / "structs"
    if not (structs / f"{library}.hpcstruct").is_file():
        pytest.skip(f"{structs} lacks real hpcstruct's {library}.hpcstruct")
    ref = read_hpcstruct(structs / f"{library}.hpcstruct").modules[0]
    if not Path(ref.path).is_file():
        pytest.skip(f"{ref.path} (the measured {library}) is not installed here")
    return ref


def plt_truth(path: str) -> dict[int, str]:
    """Stub address -> the name of what it binds, worked out independently of hpcsa's ELF reader: each stub's
    ``jmp *disp(%rip)`` decoded with capstone, its GOT slot looked up in ``.rela.plt`` with pyelftools (an
    IRELATIVE slot names nothing)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    with open(path, "rb") as f:
        elf = ELFFile(f)
        rela = elf.get_section_by_name(".rela.plt")
        assert isinstance(rela, RelocationSection)
        dynsym = elf.get_section(rela["sh_link"])
        slots = {r["r_offset"]: (dynsym.get_symbol(r["r_info_sym"]).name.split("@", 1)[0]
                                 if r["r_info_type"] == 7 else "")  # R_X86_64_JUMP_SLOT, else IRELATIVE
                 for r in rela.iter_relocations()}
        sec = elf.get_section_by_name(".plt.sec") or elf.get_section_by_name(".plt")
        return _stubs_to(slots, sec.data(), sec["sh_addr"], 16)


def plt_got_truth(path: str) -> dict[int, str]:
    """Stub of ``.plt.got`` -> the function of the GLOB_DAT relocation of the slot its jump goes through,
    read as :func:`plt_truth` reads ``.plt``."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    with open(path, "rb") as f:
        elf = ELFFile(f)
        slots = {}
        for sec in elf.iter_sections():
            if isinstance(sec, RelocationSection) and sec["sh_link"]:
                symbols = elf.get_section(sec["sh_link"])
                for r in sec.iter_relocations():
                    if r["r_info_type"] == 6:  # R_X86_64_GLOB_DAT
                        slots[r["r_offset"]] = symbols.get_symbol(r["r_info_sym"]).name.split("@", 1)[0]
        sec = elf.get_section_by_name(".plt.got")
        if sec is None:
            return {}
        code = sec.data()
        return _stubs_to(slots, code, sec["sh_addr"], 16 if code[:4] == b"\xf3\x0f\x1e\xfa" else 8)


def _stubs_to(slots: dict[int, str], code: bytes, base: int, stub_size: int) -> dict[int, str]:
    """Stub address -> ``slots[s]`` for each stub of ``code`` (at ``base``, ``stub_size`` bytes each) whose
    ``jmp *disp(%rip)`` (decoded by capstone) goes through slot ``s``."""
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    out = {}
    for insn in md.disasm(code, base):
        if insn.mnemonic == "jmp" and insn.operands and insn.operands[0].type == capstone.x86.X86_OP_MEM \
                and insn.operands[0].mem.base == capstone.x86.X86_REG_RIP:
            slot = insn.address + insn.size + insn.operands[0].mem.disp
            if slot in slots:
                out[insn.address - (insn.address - base) % stub_size] = slots[slot]
    return out


def procedures_of(m: Module) -> dict[int, str]:
    """Entry address -> name of every procedure."""
    rows = m.procedures
    return {int(e): m.text(int(m.scopes["name"][r])) for e, r in zip(rows["entry"], rows["scope"], strict=True)}


def claimed_by_another(m: Module) -> list[int]:
    """Entries of procedures whose first instruction hpcprof would attribute to another procedure (the first
    claim of the statement holding it is another procedure's)."""
    procs = m.procedures
    rows = m.lookup(procs["entry"])
    parent = m.procedure_of
    out = []
    for entry, proc, row in zip(procs["entry"].tolist(), procs["scope"].tolist(), rows.tolist(), strict=True):
        if row < 0:
            continue
        owner = int(parent[row])
        while owner >= 0 and int(parent[owner]) >= 0:
            owner = int(parent[owner])
        if owner != proc:
            out.append(entry)
    return out
