"""GPU code objects (NVIDIA cubins, AMD HSA code objects): function entry offsets, and finding them
inside a user's executable or fatbin for ``--binary``.

Offsets follow HPCToolkit's convention for GPU binaries: a relocatable cubin's
functions live at their section's file offset plus the symbol value (hpcrun and
hpcstruct place every ``.text.<kernel>`` section at its offset), a linked code
object's at the symbol's virtual address.
"""

from __future__ import annotations

import io

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

ELF_MAGIC = b"\x7fELF"


def entry_offsets(data: bytes) -> dict[str, int]:
    """Function name -> entry offset in the code object (empty when it is not a readable ELF)."""
    try:
        elf = ELFFile(io.BytesIO(data))
        out: dict[str, int] = {}
        for sec in elf.iter_sections():
            if sec.header.sh_type != "SHT_SYMTAB":
                continue
            for sym in sec.iter_symbols():
                if sym["st_info"]["type"] != "STT_FUNC" or not sym.name:
                    continue
                shndx = sym["st_shndx"]
                if not isinstance(shndx, int):
                    continue
                target = elf.get_section(shndx)
                base = target["sh_offset"] if target["sh_addr"] == 0 else 0
                out.setdefault(sym.name, base + sym["st_value"])
        return out
    except (ELFError, ValueError, KeyError, IndexError, OSError):
        return {}


def embedded_elves(data: bytes) -> list[bytes]:
    """The ELF images inside a file: itself if it is one GPU ELF, else every ELF found in it (fatbins and
    host executables embed cubins/code objects whole; each is cut at its section-header table end)."""
    if is_gpu_elf(data):
        return [data]  # a cubin or code object file: the whole file is the image
    out = []
    pos = data.find(ELF_MAGIC)
    while pos >= 0:
        size = _elf_size(data, pos)
        if size:
            out.append(data[pos:pos + size])
        pos = data.find(ELF_MAGIC, pos + 4)
    return out


def _elf_size(data: bytes, pos: int) -> int:
    """The extent of an ELF image starting at ``pos`` (end of its section or program header data)."""
    try:
        elf = ELFFile(io.BytesIO(data[pos:]))
        end = max(elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"],
                  elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"])
        for seg in elf.iter_segments():
            end = max(end, seg["p_offset"] + seg["p_filesz"])
        for sec in elf.iter_sections():
            if sec["sh_type"] != "SHT_NOBITS":
                end = max(end, sec["sh_offset"] + sec["sh_size"])
        return end if 0 < end <= len(data) - pos else 0
    except (ELFError, ValueError, KeyError, IndexError, OSError, AssertionError):
        return 0


def is_gpu_elf(data: bytes) -> bool:
    """NVIDIA (EM_CUDA = 190) or AMD GPU (EM_AMDGPU = 224) ELF."""
    if not data.startswith(ELF_MAGIC) or len(data) < 20:
        return False
    machine = int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")
    return machine in (190, 224)
