"""NVIDIA cubins (and hpcrun's ``gpubins/*.gpubin``) as structure recovery reads them.

Every section of a cubin has ``sh_addr = 0``, so functions of different
kernels overlap. HPCToolkit gives each function the address *symbol value +
file offset of its section* (hpcstruct's RelocateCubin, hpcrun's
cubin-symbols.c); sampled PCs arrive in that convention, so hpcsa uses it
too, and relocates the debug sections the same way: each ``R_CUDA_64`` /
``R_CUDA_32`` relocation of ``.debug_line`` / ``.debug_info`` is patched with
symbol value + section offset, after which line tables and DWARF carry
final addresses and the generic readers work unchanged.

A whole-program cubin clones device functions into every kernel's section
(``$<kernel>$<function>``, LOCAL symbols); the kernel's own symbol covers
the whole section, so each function here ends at the next function symbol
of its section.
"""

from __future__ import annotations

import struct
from functools import cached_property

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.structure.elf import (
    EM_CUDA,
    REL64,
    RELA64,
    SHN_LORESERVE,
    SHN_UNDEF,
    STT_FUNC,
    SYM64,
    ElfImage,
    Section,
)

STT_SECTION = 3
R_CUDA_32 = 1
R_CUDA_64 = 2
EV_CUDA_ABI_V8 = 8  # ELF ABI version of cubins made by CUDA >= 12.8: the SM number moved in e_flags


@dataclass(frozen=True)
class CubinFunction:
    """One function symbol at HPCToolkit's address; ``end`` is clipped at the next function of its section."""

    name: str
    symbol: int     # symbol table index
    section: int    # section header index
    address: int    # symbol value + section file offset
    end: int
    offset: int     # symbol value (offset inside its section)

    @property
    def size(self) -> int:
        return self.end - self.address


def cuda_arch(image: ElfImage) -> int:
    """The SM number (75 for sm_75) from ``e_flags``: bits 0-7 in older cubins, 8-15 from ABI version 8 on."""
    flags = int(image.elf.header["e_flags"])
    abi = image.data[8]
    return (flags >> 8) & 0xFF if abi >= EV_CUDA_ABI_V8 else flags & 0xFF


class Cubin:
    """Symbols, functions and relocated debug sections of one cubin."""

    def __init__(self, image: ElfImage) -> None:
        if image.machine != EM_CUDA:
            raise FormatError(image.path, "not an NVIDIA cubin (ELF machine is not EM_CUDA)")
        self.image = image
        self.path = image.path
        self.arch = cuda_arch(image)

    @property
    def device(self) -> str:
        """The ``d`` attribute of call sites, as hpcstruct writes it."""
        return f"NVIDIA sm_{self.arch}"

    @property
    def instruction_size(self) -> int:
        return 16 if self.arch >= 70 else 8

    def section(self, index: int) -> Section:
        return self.image.sections[index]

    # -- symbols ----------------------------------------------------------------------------------
    @cached_property
    def symbols(self) -> tuple[np.ndarray, list[str]]:
        """The whole ``.symtab`` (SYM64 records) and every symbol's name."""
        sec = self.image.section_named(".symtab")
        if sec is None:
            return np.zeros(0, SYM64), []
        raw = self.image.section_bytes(".symtab") or b""
        syms = np.frombuffer(raw, SYM64, count=len(raw) // SYM64.itemsize)
        link = int(self.image.elf.get_section(sec.index)["sh_link"])
        if link >= len(self.image.sections):
            raise FormatError(self.path, ".symtab links to a missing string table")
        strs = self.image.sections[link]
        strtab = bytes(self.image.data[strs.offset:strs.offset + strs.size])
        names = []
        for off in syms["name"].tolist():
            end = strtab.find(b"\0", off)
            names.append(strtab[off:end if end >= 0 else len(strtab)].decode("utf-8", "surrogateescape"))
        return syms, names

    def symbol_address(self, index: int) -> int | None:
        """HPCToolkit's address of a defined symbol (value + its section's file offset)."""
        syms, _ = self.symbols
        if not 0 <= index < len(syms):
            return None
        shndx = int(syms["shndx"][index])
        if shndx == SHN_UNDEF or shndx >= SHN_LORESERVE or shndx >= len(self.image.sections):
            return None
        return int(syms["value"][index]) + self.image.sections[shndx].offset

    @cached_property
    def functions(self) -> list[CubinFunction]:
        """Defined function symbols in code sections, by address (one per address: the lowest index)."""
        syms, names = self.symbols
        if not len(syms):
            return []
        code = {s.index for s in self.image.code_sections}
        kind = syms["info"] & 0xF
        shndx = syms["shndx"].astype(np.int64)
        rows = np.flatnonzero((kind == STT_FUNC) & np.isin(shndx, list(code) or [-1]))
        by_address: dict[int, CubinFunction] = {}
        for row in rows.tolist():
            sec = self.image.sections[int(shndx[row])]
            value = int(syms["value"][row])
            size = int(syms["size"][row])
            addr = sec.offset + value
            if addr in by_address:
                continue
            end = sec.offset + min(sec.size, value + size if size else sec.size)
            by_address[addr] = CubinFunction(names[row], row, sec.index, addr, end, value)
        funcs = sorted(by_address.values(), key=lambda f: f.address)
        out = []
        for i, f in enumerate(funcs):
            nxt = funcs[i + 1] if i + 1 < len(funcs) else None
            end = f.end
            if nxt is not None and nxt.section == f.section and nxt.address < end:
                end = nxt.address
            out.append(CubinFunction(f.name, f.symbol, f.section, f.address, max(end, f.address), f.offset))
        return out

    @cached_property
    def functions_by_name(self) -> dict[str, list[CubinFunction]]:
        out: dict[str, list[CubinFunction]] = {}
        for f in self.functions:
            out.setdefault(f.name, []).append(f)
        return out

    def resolve_callee(self, name: str, section: int) -> CubinFunction | None:
        """The function a call names: the one in the caller's section if the name is duplicated."""
        cands = self.functions_by_name.get(name)
        if not cands:
            return None
        for f in cands:
            if f.section == section:
                return f
        return cands[0]

    # -- relocation -------------------------------------------------------------------------------
    def relocated(self, name: str) -> bytes | None:
        """A section's bytes with its absolute relocations applied in HPCToolkit's address convention."""
        raw = self.image.section_bytes(name)
        if raw is None:
            return None
        target = self.image.section_named(name)
        assert target is not None
        syms, _ = self.symbols
        out = bytearray(raw)
        for sec in self.image.sections:
            if sec.type not in ("SHT_REL", "SHT_RELA"):
                continue
            info = int(self.image.elf.get_section(sec.index)["sh_info"])
            if info != target.index:
                continue
            rela = sec.type == "SHT_RELA"
            dt = RELA64 if rela else REL64
            body = bytes(self.image.data[sec.offset:sec.offset + sec.size])
            relocs = np.frombuffer(body, dt, count=len(body) // dt.itemsize)
            for rec in relocs.tolist():
                offset, info_word = int(rec[0]), int(rec[1])
                rtype, sym = info_word & 0xFFFFFFFF, info_word >> 32
                width = 8 if rtype == R_CUDA_64 else 4 if rtype == R_CUDA_32 else 0
                if not width or offset + width > len(out) or sym >= len(syms):
                    continue
                base = self.symbol_address(sym)
                if base is None:
                    continue
                fmt = "<Q" if width == 8 else "<I"
                addend = int(rec[2]) if rela else struct.unpack_from(fmt, out, offset)[0]
                struct.pack_into(fmt, out, offset, (base + addend) & ((1 << (8 * width)) - 1))
        return bytes(out)
