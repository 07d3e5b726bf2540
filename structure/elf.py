"""An ELF binary as structure recovery needs it: code regions, function symbols, PLT names, FDEs.

Headers come from pyelftools; symbol and relocation tables are read as whole
numpy arrays (one structured view per table) so large binaries cost no
per-symbol objects. Bad input becomes an :class:`~hpcsa.core.errors.HpcsaError`
naming the file: not ELF, truncated, or an architecture we do not analyse
(named in the message).
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import zlib
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, cast

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from hpcsa.core.binfmt import layout
from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import md5
from hpcsa.core.errors import FormatError, HpcsaError, UnsupportedError
from hpcsa.core.fileio import map_input

if TYPE_CHECKING:
    from elftools.elf.sections import NoteSection

ELF_MAGIC = b"\x7fELF"
EM_X86_64 = 62
EM_CUDA = 190
EM_AMDGPU = 224

MACHINE_NAMES = {
    0: "no machine", 2: "SPARC", 3: "Intel 80386 (32-bit x86)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64",
    22: "IBM S/390", 40: "ARM (32-bit)", 43: "SPARC v9", 50: "IA-64", EM_X86_64: "x86-64", 183: "AArch64",
    EM_CUDA: "NVIDIA CUDA", EM_AMDGPU: "AMD GPU", 243: "RISC-V", 258: "LoongArch",
}

SHF_ALLOC = 0x2
SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB = 1
DEBUG_ROOT = "/usr/lib/debug"
SHF_EXECINSTR = 0x4
SHT_NOBITS = 8
STT_FUNC = 2
STT_GNU_IFUNC = 10
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
R_X86_64_GLOB_DAT = 6
R_X86_64_JUMP_SLOT = 7
R_X86_64_RELATIVE = 8
R_X86_64_IRELATIVE = 37
DT_SONAME = 14
DT_FLAGS_1 = 0x6FFFFFFB
DF_1_PIE = 0x08000000
PT_INTERP = 3

SYM64 = layout("<", 24, [("name", 0, "u4"), ("info", 4, "u1"), ("other", 5, "u1"), ("shndx", 6, "u2"),
                         ("value", 8, "u8"), ("size", 16, "u8")])
RELA64 = layout("<", 24, [("offset", 0, "u8"), ("info", 8, "u8"), ("addend", 16, "i8")])
REL64 = layout("<", 16, [("offset", 0, "u8"), ("info", 8, "u8")])


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    addr: int
    size: int
    offset: int
    flags: int
    type: str

    @property
    def end(self) -> int:
        return self.addr + self.size

    @property
    def is_code(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR) and bool(self.flags & SHF_ALLOC) and self.type != "SHT_NOBITS"


@dataclass
class FunctionSymbol:
    """One Symtab-like function: an address with all its symbol names and an extent."""

    addr: int
    size: int
    names: list[str]
    index: int  # the symbol table index of its first symbol
    section: int

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass
class ElfImage:
    path: str
    data: bytes | mmap.mmap
    elf: ELFFile
    sections: list[Section] = field(default_factory=list)

    @cached_property
    def machine(self) -> int:
        """e_machine as a number (read from the header bytes: pyelftools names only the machines it knows)."""
        return struct.unpack_from("<H" if self.data[5] == 1 else ">H", self.data, 18)[0]

    @cached_property
    def basename(self) -> str:
        return os.path.basename(self.path)

    @cached_property
    def code_sections(self) -> list[Section]:
        return sorted((s for s in self.sections if s.is_code and s.size > 0), key=lambda s: s.addr)

    def section_named(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    @cached_property
    def _code_starts(self) -> list[int]:
        return [s.addr for s in self.code_sections]

    def code_region(self, addr: int) -> Section | None:
        """The code section holding ``addr`` (highest start wins if they overlap)."""
        secs = self.code_sections
        i = bisect.bisect_right(self._code_starts, addr) - 1
        while i >= 0:
            s = secs[i]
            if s.addr <= addr < s.end:
                return s
            i -= 1
            if i >= 0 and secs[i].end <= addr:
                break
        return None

    def read(self, addr: int, size: int) -> bytes:
        """Bytes of an allocated section at a virtual address (clipped to the section)."""
        s = self.code_region(addr) or next((x for x in self.sections if x.addr <= addr < x.end
                                            and x.flags & SHF_ALLOC and x.type != "SHT_NOBITS"), None)
        if s is None:
            return b""
        start = s.offset + (addr - s.addr)
        end = s.offset + min(s.size, addr - s.addr + size)
        return bytes(self.data[start:end])

    def section_bytes(self, name: str) -> bytes | None:
        """A section's contents (zlib-compressed sections, SHF_COMPRESSED, are inflated)."""
        s = self.section_named(name)
        if s is None or s.type == "SHT_NOBITS":
            return None
        if s.offset + s.size > len(self.data):
            raise FormatError(self.path, f"section {name} runs past the end of the file; the file is truncated")
        raw = bytes(self.data[s.offset:s.offset + s.size])
        if not s.flags & SHF_COMPRESSED:
            return raw
        if len(raw) < 24:
            raise FormatError(self.path, f"compressed section {name} is truncated")
        ch_type, _reserved, ch_size = struct.unpack_from("<IIQ", raw, 0)
        if ch_type != ELFCOMPRESS_ZLIB:
            raise UnsupportedError(self.path, f"section {name} is compressed with method {ch_type} "
                                   "(only zlib is supported)")
        try:
            out = zlib.decompress(raw[24:])
        except zlib.error as exc:
            raise FormatError(self.path, f"compressed section {name} is corrupt ({exc})") from None
        if len(out) != ch_size:
            raise FormatError(self.path, f"compressed section {name} inflates to {len(out)} bytes, "
                              f"not the {ch_size} its header says")
        return out

    @cached_property
    def debug_link(self) -> str | None:
        """A separate file holding this binary's DWARF: /usr/lib/debug/.build-id/xx/yyyy.debug (by build
        id) or the .gnu_debuglink name next to the binary or in /usr/lib/debug, if it exists."""
        candidates = []
        bid = self.build_id
        if bid and len(bid) > 2:
            candidates.append(os.path.join(DEBUG_ROOT, ".build-id", bid[:2], bid[2:] + ".debug"))
        link = self.section_named(".gnu_debuglink")
        if link is not None and link.type != "SHT_NOBITS":
            raw = bytes(self.data[link.offset:link.offset + link.size])
            name = raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
            here = os.path.dirname(os.path.realpath(self.path))
            if name:
                candidates += [os.path.join(here, name), os.path.join(here, ".debug", name),
                               os.path.join(DEBUG_ROOT, here.lstrip("/"), name)]
        return next((c for c in candidates if os.path.isfile(c) and os.path.realpath(c) !=
                     os.path.realpath(self.path)), None)

    @cached_property
    def is_executable(self) -> bool:
        """Executable rather than shared library, as Dyninst decides (PIE executables count as executables)."""
        etype = self.elf.header["e_type"]
        if etype == "ET_EXEC":
            return True
        if etype != "ET_DYN":
            return False
        flags1, soname = 0, False
        dyn = self.elf.get_section_by_name(".dynamic")
        try:
            if dyn is not None and hasattr(dyn, "iter_tags"):
                for tag in dyn.iter_tags():
                    if tag.entry.d_tag == "DT_FLAGS_1":
                        flags1 = int(tag.entry.d_val)
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = True
        except (ELFError, struct.error, ValueError):
            pass
        if flags1 & DF_1_PIE:
            return True
        return self.has_interpreter and not soname

    @cached_property
    def has_interpreter(self) -> bool:
        """A PT_INTERP segment: the file can be run as a program (its entry point is code)."""
        try:
            return any(seg["p_type"] == "PT_INTERP" for seg in self.elf.iter_segments())
        except (ELFError, struct.error, ValueError):
            return False

    @cached_property
    def build_id(self) -> str | None:
        for sec in self.elf.iter_sections():
            if sec["sh_type"] == "SHT_NOTE":
                try:
                    for note in cast("NoteSection", sec).iter_notes():  # pyelftools's for SHT_NOTE
                        if note["n_type"] == "NT_GNU_BUILD_ID":
                            return str(note["n_desc"])
                except (ELFError, struct.error, ValueError):
                    return None
        return None

    # -- symbols ----------------------------------------------------------------------------------
    def _symbol_table(self, name: str) -> tuple[np.ndarray, bytes] | None:
        sec = self.elf.get_section_by_name(name)
        if sec is None or sec["sh_entsize"] != SYM64.itemsize:
            return None
        raw = self.section_bytes(name)
        strtab_index = sec["sh_link"]
        if raw is None or strtab_index >= len(self.sections):
            return None
        strs = self.sections[strtab_index]
        strtab = bytes(self.data[strs.offset:strs.offset + strs.size])
        return np.frombuffer(raw, SYM64, count=len(raw) // SYM64.itemsize), strtab

    @cached_property
    def has_symtab(self) -> bool:
        return self.section_named(".symtab") is not None

    @cached_property
    def debug_symtab(self) -> tuple[np.ndarray, bytes] | None:
        """The ``.symtab`` of the separate debug file (:attr:`debug_link`) of a binary that has none, as
        Debian's ``-dbg`` packages keep it (local functions included): None when there is no such file or
        its section headers do not mirror this binary's code sections (the symbols' section indexes)."""
        if self.has_symtab or self.debug_link is None:
            return None
        try:
            debug = open_elf(self.debug_link)
        except HpcsaError:
            return None
        theirs = {s.index: (s.name, s.addr, s.size) for s in debug.sections}
        if any(theirs.get(s.index) != (s.name, s.addr, s.size) for s in self.code_sections):
            return None
        return debug._symbol_table(".symtab")

    @cached_property
    def structure_functions(self) -> list[FunctionSymbol]:
        """The functions Dyninst's Symtab sees: :attr:`functions`, but from the separate debug file's
        ``.symtab`` (:attr:`debug_symtab`) when this binary has only ``.dynsym``, and with the versions
        that ``.symtab`` names carry (``matherr@GLIBC_2.2.5``, ``feupdateenv@@GLIBC_2.2.5``) kept."""
        table = self.debug_symtab or self._symbol_table(".symtab")
        return self.functions if table is None else self._functions_of(table, keep_versions=True)

    @cached_property
    def functions(self) -> list[FunctionSymbol]:
        """Function symbols (``.symtab``, else ``.dynsym``) grouped by address, with zero sizes fixed:
        a symbol without a size extends to the next function symbol or the end of its section."""
        table = self._symbol_table(".symtab") or self._symbol_table(".dynsym")
        return [] if table is None else self._functions_of(table)

    def _functions_of(self, table: tuple[np.ndarray, bytes], keep_versions: bool = False) -> list[FunctionSymbol]:
        syms, strtab = table
        kind = syms["info"] & 0xF
        keep = ((kind == STT_FUNC) | (kind == STT_GNU_IFUNC)) & (syms["shndx"] != SHN_UNDEF) \
            & (syms["shndx"] < SHN_LORESERVE) & (syms["value"] != 0)
        rows = np.flatnonzero(keep)
        by_addr: dict[int, FunctionSymbol] = {}
        code = {s.index for s in self.code_sections}
        for row in rows.tolist():
            rec = syms[row]
            shndx = int(rec["shndx"])
            if shndx not in code:
                continue
            off = int(rec["name"])
            end = strtab.find(b"\0", off)
            name = strtab[off:end if end >= 0 else len(strtab)].decode("utf-8", "surrogateescape")
            if "@" in name and not keep_versions:
                name = name.split("@", 1)[0]
            addr = int(rec["value"])
            f = by_addr.get(addr)
            if f is None:
                by_addr[addr] = FunctionSymbol(addr, int(rec["size"]), [name], row, shndx)
            else:
                if name not in f.names:
                    f.names.append(name)
                f.size = max(f.size, int(rec["size"]))
        funcs = sorted(by_addr.values(), key=lambda f: f.addr)
        sections = {s.index: s for s in self.sections}
        for i, f in enumerate(funcs):
            sec = sections[f.section]
            if f.size == 0:
                nxt = next((g.addr for g in funcs[i + 1:] if g.section == f.section and g.addr > f.addr), sec.end)
                f.size = max(0, min(nxt, sec.end) - f.addr)
        return funcs

    def symbol_addresses(self) -> dict[str, set[int]]:
        """Name (symbol version dropped) -> addresses of every defined function symbol of ``.symtab`` and
        ``.dynsym``, also in files whose code is absent (separate debug files): for identity checks."""
        out: dict[str, set[int]] = {}
        for table_name in (".symtab", ".dynsym"):
            table = self._symbol_table(table_name)
            if table is None:
                continue
            syms, strtab = table
            kind = syms["info"] & 0xF
            keep = ((kind == STT_FUNC) | (kind == STT_GNU_IFUNC)) & (syms["shndx"] != SHN_UNDEF)
            for off, addr in zip(syms["name"][keep].tolist(), syms["value"][keep].tolist(), strict=True):
                end = strtab.find(b"\0", off)
                name = strtab[off:end if end >= 0 else len(strtab)].decode("utf-8", "surrogateescape")
                out.setdefault(name.split("@", 1)[0], set()).add(int(addr))
        return out

    @cached_property
    def plt_names(self) -> dict[int, str]:
        """PLT stub address -> name of the function it binds: that of the relocation of the GOT slot its
        indirect jump goes through (as objdump and gdb name stubs), a JUMP_SLOT naming its symbol and an
        IRELATIVE (an IFUNC resolved at load) naming nothing (printed ``@plt``, as hpcstruct does). The stubs
        are those of ``.plt.sec`` where the binary has one, else of ``.plt`` after its PLT0 header.

        hpcstruct (Dyninst) instead gives the i-th stub the i-th relocation of ``.rela.plt``. Where IRELATIVE
        slots interleave with the others (glibc's own libraries) that names stubs after other functions:
        libm's ``__stack_chk_fail@plt`` becomes ``fputs@plt``, so its callers are not seen to end there and
        run on into the functions after them. hpcsa follows the jump; a stub whose jump it does not recognize
        keeps the name by position."""
        relocs = self._plt_relocations()
        if not relocs:
            return {}
        plt_sec = self.section_named(".plt.sec")
        plt = self.section_named(".plt")
        if plt_sec is not None and plt_sec.size:
            base, limit = plt_sec.addr, plt_sec.end
        elif plt is not None and plt.size:
            base, limit = plt.addr + 16, plt.end
        else:
            return {}
        by_slot = dict(relocs)
        names: dict[int, str] = {}
        for i, (_slot, by_position) in enumerate(relocs):
            addr = base + 16 * i
            if addr + 16 > limit:
                break
            slot = _plt_jump_slot(addr, self.read(addr, 16))
            names[addr] = by_slot.get(slot, by_position) if slot is not None else by_position
        return names

    @cached_property
    def plt_got_targets(self) -> dict[int, str]:
        """Stub of ``.plt.got`` -> the function it jumps to, by the GLOB_DAT relocation of its GOT slot (a
        function whose address is also taken, e.g. ``std::terminate`` in libstdc++). hpcstruct names these
        stubs ``targ<hex>@plt``, and so does hpcsa; the target says whether a call to the stub returns."""
        sec = self.section_named(".plt.got")
        if sec is None or not sec.size:
            return {}
        slots = dict(self._relocations((R_X86_64_GLOB_DAT,), plt_only=False))
        size = 16 if sec.size % 16 == 0 and self.read(sec.addr, 4) == b"\xf3\x0f\x1e\xfa" else 8
        out = {}
        for addr in range(sec.addr, sec.end - size + 1, size):
            slot = _plt_jump_slot(addr, self.read(addr, size))
            if slot in slots:
                out[addr] = slots[slot]
        return out

    def _plt_relocations(self) -> list[tuple[int, str]]:
        """(GOT slot, symbol name or "") of each JUMP_SLOT and IRELATIVE relocation of ``.rela.plt``."""
        return self._relocations((R_X86_64_JUMP_SLOT, R_X86_64_IRELATIVE), plt_only=True)

    def _relocations(self, kinds: tuple[int, ...], plt_only: bool) -> list[tuple[int, str]]:
        """(GOT slot, symbol name, or "" for IRELATIVE) of the relocations of these kinds, in file order: of
        ``.rela.plt``/``.rel.plt`` only, or of every relocation section."""
        dynsym = self._symbol_table(".dynsym")
        out: list[tuple[int, str]] = []
        for sec in self.elf.iter_sections():
            if sec["sh_type"] not in ("SHT_RELA", "SHT_REL") or dynsym is None:
                continue
            if plt_only and not sec.name.startswith(".rela.plt") and not sec.name.startswith(".rel.plt"):
                continue
            raw = self.section_bytes(sec.name) or b""
            dt = RELA64 if sec["sh_type"] == "SHT_RELA" else REL64
            relocs = np.frombuffer(raw, dt, count=len(raw) // dt.itemsize)
            syms, strtab = dynsym
            for r in relocs.tolist():
                offset, info = int(r[0]), int(r[1])
                kind, idx = info & 0xFFFFFFFF, info >> 32
                if kind not in kinds:
                    continue
                if kind == R_X86_64_IRELATIVE:
                    out.append((offset, ""))
                    continue
                if idx >= len(syms):
                    continue
                off = int(syms[idx]["name"])
                end = strtab.find(b"\0", off)
                out.append((offset, strtab[off:end].decode("utf-8", "surrogateescape").split("@", 1)[0]))
        return out

    @cached_property
    def fde_ranges(self) -> dict[int, int]:
        """Function start -> end from the ``.eh_frame`` FDEs (what Dyninst knows of unnamed code)."""
        out: dict[int, int] = {}
        sec = self.section_named(".eh_frame")
        if sec is None or sec.type == "SHT_NOBITS":
            return out
        data = self.section_bytes(".eh_frame") or b""
        pos = 0
        cie_encoding: dict[int, int] = {}
        while pos + 4 <= len(data):
            length = struct.unpack_from("<I", data, pos)[0]
            if length == 0:
                break
            head = pos + 4
            if length == 0xFFFFFFFF:
                break  # 64-bit DWARF CFI: not produced for x86-64 code
            end = head + length
            if end > len(data):
                break
            cie_ptr = struct.unpack_from("<I", data, head)[0]
            if cie_ptr == 0:
                cie_encoding[pos] = _cie_fde_encoding(data, head + 4, end)
            else:
                cie_pos = head - cie_ptr
                enc = cie_encoding.get(cie_pos, 0x1B)
                start = _read_encoded(data, head + 4, enc, sec.addr + head + 4)
                size = _read_encoded(data, head + 4 + _enc_size(enc), enc & 0x0F, 0)
                if start is not None and size is not None and size > 0:
                    out.setdefault(start, start + size)
            pos = end
        return out

    @cached_property
    def relative_relocs(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted addresses, addends) of the ``R_X86_64_RELATIVE`` relocations of a PIE or shared object:
        the words that the dynamic loader sets to load base + addend (the file holds no useful value there
        under RELA). Tables of code addresses in ``.data.rel.ro`` are filled this way."""
        parts = []
        for sec in self.sections:
            if sec.type != "SHT_RELA" or not sec.size:
                continue
            raw = self.section_bytes(sec.name) or b""
            relocs = np.frombuffer(raw, RELA64, count=len(raw) // RELA64.itemsize)
            parts.append(relocs[(relocs["info"] & 0xFFFFFFFF) == R_X86_64_RELATIVE])
        if not parts:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64)
        rel = np.concatenate(parts)
        order = np.argsort(rel["offset"], kind="stable")
        return rel["offset"][order].astype(np.uint64), rel["addend"][order].astype(np.int64)

    @cached_property
    def content_hash(self) -> str:
        return md5(self.data).hexdigest()


def _enc_size(enc: int) -> int:
    return {0x00: 8, 0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}.get(enc & 0x0F, 4)


def _read_encoded(data: bytes, pos: int, enc: int, pcrel_base: int) -> int | None:
    fmt = {0x00: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i", 0x0C: "<q"}.get(enc & 0x0F)
    if fmt is None or pos + struct.calcsize(fmt) > len(data):
        return None
    value = struct.unpack_from(fmt, data, pos)[0]
    if enc & 0x70 == 0x10:  # pc-relative
        value += pcrel_base
    return value & 0xFFFFFFFFFFFFFFFF


def _cie_fde_encoding(data: bytes, pos: int, end: int) -> int:
    """The FDE pointer encoding of a CIE ('R' in its augmentation string); DW_EH_PE_absptr otherwise."""
    if pos >= end:
        return 0
    pos += 1  # version
    aug_end = data.find(b"\0", pos, end)
    if aug_end < 0:
        return 0
    aug = data[pos:aug_end]
    pos = aug_end + 1
    if not aug.startswith(b"z"):
        return 0
    for _ in range(2):  # code and data alignment factors
        while pos < end and data[pos] & 0x80:
            pos += 1
        pos += 1
    pos += 1  # return address register (version 1: one byte; later ULEB, usually one byte)
    while pos < end and data[pos] & 0x80:  # augmentation data length
        pos += 1
    pos += 1
    for ch in aug[1:]:
        if ch == ord("R"):
            return data[pos] if pos < end else 0
        if ch == ord("L"):
            pos += 1
        elif ch == ord("P"):
            enc = data[pos]
            pos += 1 + _enc_size(enc)
        else:
            break
    return 0


def open_elf(path: str | os.PathLike[str]) -> ElfImage:
    """Open and sanity-check an ELF file (any machine; callers decide what they analyse)."""
    path = os.fspath(path)
    data = map_input(path, "a binary")
    if bytes(data[:4]) != ELF_MAGIC:
        raise FormatError(path, "not an ELF binary (no \\x7fELF magic)")
    if len(data) < 64:
        raise FormatError(path, "ELF header is truncated")
    if data[4] == 2:  # ELF64: check where the section headers are before pyelftools reads them
        order = "<" if data[5] == 1 else ">"
        shoff = struct.unpack_from(order + "Q", data, 40)[0]
        shentsize, shnum = struct.unpack_from(order + "HH", data, 58)
        if shnum and shoff + shentsize * shnum > len(data):
            raise FormatError(path, f"the section headers lie beyond the end of the file ({len(data)} bytes); "
                              "the file is truncated")
    try:
        import io
        stream = io.BytesIO(bytes(data)) if len(data) < (1 << 20) else _MmapStream(data)
        elf = ELFFile(stream)  # type: ignore[arg-type]  # pyelftools only reads, seeks, tells
        sections = []
        for i, sec in enumerate(elf.iter_sections()):
            sections.append(Section(i, sec.name, int(sec["sh_addr"]), int(sec["sh_size"]),
                                    int(sec["sh_offset"]), int(sec["sh_flags"]), str(sec["sh_type"])))
    except (ELFError, struct.error, ValueError, UnicodeDecodeError, OverflowError) as exc:
        raise FormatError(path, f"corrupt ELF headers ({exc})") from None
    for s in sections:
        if s.type != "SHT_NOBITS" and s.size and s.offset + s.size > len(data):
            raise FormatError(path, f"section {s.name or s.index} runs past the end of the file "
                              f"({len(data)} bytes); the file is truncated")
    return ElfImage(path=path, data=data, elf=elf, sections=sections)


class _MmapStream:
    """A seekable read-only stream over a mmap (pyelftools wants a file object)."""

    def __init__(self, data: bytes | mmap.mmap) -> None:
        self.data = data
        self.pos = 0

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else self.pos + pos if whence == 1 else len(self.data) + pos
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else min(len(self.data), self.pos + n)
        out = bytes(self.data[self.pos:end])
        self.pos = end
        return out


def _plt_jump_slot(addr: int, stub: bytes) -> int | None:
    """The GOT slot a PLT stub at ``addr`` jumps through: its ``jmp *disp32(%rip)`` (``ff 25``, after an
    ``endbr64`` and a ``bnd`` prefix in the stubs of ``.plt.sec``), or None when it has none."""
    at = stub.find(b"\xff\x25")
    if at < 0 or at + 6 > len(stub):
        return None
    return addr + at + 6 + struct.unpack_from("<i", stub, at + 2)[0]


def machine_name(code: int) -> str:
    return MACHINE_NAMES.get(code, f"ELF machine {code}")


def require_x86_64(image: ElfImage) -> None:
    m = image.machine
    if m != EM_X86_64:
        raise UnsupportedError(image.path, f"architecture {machine_name(m)} is not supported for structure "
                               "recovery (hpcsa analyses x86-64 binaries, and GPU binaries where available)")
    if image.elf.elfclass != 64 or not image.elf.little_endian:
        raise UnsupportedError(image.path, f"{image.elf.elfclass}-bit x86-64 ELF (x32 ABI) is not supported "
                               "for structure recovery (hpcsa analyses 64-bit x86-64 binaries)")
