"""GPU code objects (NVIDIA cubins, AMD HSA code objects): function entry offsets, and finding them
inside a user's executable, library, fatbin or offload bundle (compressed or not) for ``--binary`` and
``hpcsa struct``.

Offsets follow HPCToolkit's convention for GPU binaries: a relocatable cubin's
functions live at their section's file offset plus the symbol value (hpcrun and
hpcstruct place every ``.text.<kernel>`` section at its offset), a linked code
object's at the symbol's virtual address.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING, cast

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.elf import ELF_MAGIC
from hpcsa.structure.gpu import fatbin, offload_bundle

if TYPE_CHECKING:
    from elftools.elf.sections import SymbolTableSection

CONTAINER_SECTIONS = (".nv_fatbin", ".hip_fatbin")
CODEC_NAMES = {"zstd": "zstd", "lz4": "LZ4", "zlib": "zlib"}
# What pyelftools raises on damaged ELF bytes (a lookup of a section far past the end overflows a seek).
_ELF_DAMAGE = (ELFError, ValueError, KeyError, IndexError, OSError, AssertionError, OverflowError,
               struct.error)


def entry_offsets(data: bytes) -> dict[str, int]:
    """Function name -> entry offset in the code object (empty when it is not a readable ELF)."""
    try:
        elf = ELFFile(io.BytesIO(data))
        out: dict[str, int] = {}
        for sec in elf.iter_sections():
            if sec.header.sh_type != "SHT_SYMTAB":
                continue
            for sym in cast("SymbolTableSection", sec).iter_symbols():  # pyelftools's for SHT_SYMTAB
                if sym["st_info"]["type"] != "STT_FUNC" or not sym.name:
                    continue
                shndx = sym["st_shndx"]
                if not isinstance(shndx, int):
                    continue
                target = elf.get_section(shndx)
                base = target["sh_offset"] if target["sh_addr"] == 0 else 0
                out.setdefault(sym.name, base + sym["st_value"])
        return out
    except _ELF_DAMAGE:
        return {}


@dataclass(frozen=True)
class DeviceImage:
    """A GPU code object found in a file, decompressed."""

    data: bytes
    origin: str     # how it was stored: "sm_80 cubin in a zstd-compressed fatbin entry", ...


def device_images(data: bytes | memoryview, path: str) -> list[DeviceImage]:
    """The GPU ELF images in a file: the file itself if it is one; the ELF entries of an NVIDIA fatbin
    (compressed or not) and the code objects of a clang offload bundle (plain or ``CCOB``) when the file is
    one or a host ELF holds them in ``.nv_fatbin`` / ``.hip_fatbin``; and any GPU ELF embedded whole.
    A damaged container raises :class:`~hpcsa.core.errors.FormatError` naming ``path``; duplicates are dropped."""
    head = bytes(data[:24])
    if is_gpu_elf(head):
        return [DeviceImage(bytes(data), "file")]
    found: list[DeviceImage] = []
    if head.startswith(fatbin.MAGIC_BYTES):
        found += _fatbin_images(data, path, 0, len(data))
    elif head.startswith((offload_bundle.MAGIC, offload_bundle.CCOB_MAGIC)):
        found += _bundle_images(data, path, 0, len(data))
    else:
        # A host ELF's containers are read by their layout; its other bytes are searched for whole GPU ELFs
        # (the ELF magic inside a container is a plain entry already found, or bytes of a compressed one).
        sections = _container_sections(data) if head.startswith(ELF_MAGIC) else {}
        for name, (start, end) in sections.items():
            found += (_fatbin_images if name == ".nv_fatbin" else _bundle_images)(data, path, start, end)
        raw = bytes(data)
        found += [DeviceImage(e, "embedded whole")
                  for e in embedded_elves(raw, sorted(sections.values())) if is_gpu_elf(e)]
    seen: set[bytes] = set()
    out = []
    for img in found:
        if img.data not in seen:
            seen.add(img.data)
            out.append(img)
    return out


def ptx_entries(data: bytes | memoryview, path: str) -> int:
    """How many PTX entries the fatbins of a fatbin file or host ELF hold (for saying why a file that has
    GPU code has no code object: PTX is compiled by the driver at run time)."""
    head = bytes(data[:4])
    spans = [(0, len(data))] if head == fatbin.MAGIC_BYTES else \
        [v for k, v in _container_sections(data).items() if k == ".nv_fatbin"] if head == ELF_MAGIC else []
    return sum(len(fatbin.read_all(data, path, a, b, kinds=(fatbin.KIND_PTX,))) for a, b in spans)


def _fatbin_images(data: bytes | memoryview, path: str, start: int, end: int) -> list[DeviceImage]:
    return [DeviceImage(e.data, f"sm_{e.arch} cubin from a fatbin entry"
                        + (f" ({CODEC_NAMES[e.codec]}-compressed)" if e.codec else ""))
            for e in fatbin.read_all(data, path, start, end) if is_gpu_elf(e.data)]


def _bundle_images(data: bytes | memoryview, path: str, start: int, end: int) -> list[DeviceImage]:
    return [DeviceImage(e.data, f"{e.triple} code object from {'a ' + e.container if e.codec else 'an offload'} "
                        "bundle")
            for e in offload_bundle.read_all(data, path, start, end) if is_gpu_elf(e.data)]


def _container_sections(data: bytes | memoryview) -> dict[str, tuple[int, int]]:
    """``.nv_fatbin`` and ``.hip_fatbin`` of a host ELF: name -> (file offset, end)."""
    try:
        elf = ELFFile(io.BytesIO(bytes(data)))
        out = {}
        for sec in elf.iter_sections():
            if sec.name in CONTAINER_SECTIONS and sec["sh_type"] != "SHT_NOBITS":
                start, size = int(sec["sh_offset"]), int(sec["sh_size"])
                if start + size <= len(data):
                    out[sec.name] = (start, start + size)
        return out
    except _ELF_DAMAGE:
        return {}


def embedded_elves(data: bytes, skip: list[tuple[int, int]] | None = None) -> list[bytes]:
    """Every ELF image found whole in ``data`` (each cut at its section-header table end), outside the
    sorted ``(start, end)`` ranges of ``skip``."""
    if is_gpu_elf(data):
        return [data]  # a cubin or code object file: the whole file is the image
    out = []
    pos = data.find(ELF_MAGIC)
    while pos >= 0:
        inside = next((end for start, end in skip or [] if start <= pos < end), None)
        if inside is not None:
            pos = data.find(ELF_MAGIC, inside)
            continue
        size = _elf_size(data, pos)
        if size:
            out.append(data[pos:pos + size])
        pos = data.find(ELF_MAGIC, pos + 4)
    return out


def _elf_size(data: bytes, pos: int) -> int:
    """The extent of an ELF image starting at ``pos`` (end of its section or program header data)."""
    try:
        elf = ELFFile(_Window(data, pos))  # type: ignore[arg-type]  # pyelftools only reads, seeks, tells
        end = max(elf["e_shoff"] + elf["e_shnum"] * elf["e_shentsize"],
                  elf["e_phoff"] + elf["e_phnum"] * elf["e_phentsize"])
        for seg in elf.iter_segments():
            end = max(end, seg["p_offset"] + seg["p_filesz"])
        for sec in elf.iter_sections():
            if sec["sh_type"] != "SHT_NOBITS":
                end = max(end, sec["sh_offset"] + sec["sh_size"])
        return end if 0 < end <= len(data) - pos else 0
    except _ELF_DAMAGE:
        return 0


class _Window:
    """A read-only stream over ``data[pos:]`` that copies only what is read (a host binary may hold many
    ELF magics; slicing the rest of it at each would be quadratic)."""

    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.base, self.off = data, pos, 0

    def seek(self, offset: int, whence: int = 0) -> int:
        size = len(self.data) - self.base
        self.off = max(0, offset if whence == 0 else self.off + offset if whence == 1 else size + offset)
        return self.off

    def tell(self) -> int:
        return self.off

    def read(self, n: int | None = -1) -> bytes:
        start = min(self.base + self.off, len(self.data))
        end = len(self.data) if n is None or n < 0 else min(len(self.data), start + n)
        self.off = end - self.base
        return self.data[start:end]


def is_gpu_elf(data: bytes) -> bool:
    """NVIDIA (EM_CUDA = 190) or AMD GPU (EM_AMDGPU = 224) ELF."""
    if not data.startswith(ELF_MAGIC) or len(data) < 20:
        return False
    machine = int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")
    return machine in (190, 224)
