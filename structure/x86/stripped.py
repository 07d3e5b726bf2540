"""Where the functions of a stripped x86-64 binary start, beyond what its dynamic symbols name.

A stripped binary keeps only ``.dynsym`` (exported functions; none in most executables), so hpcstruct's
Dyninst finds little more than the entry point and what calls lead to. The binary still says where most
functions are, in sections the loader and the unwinder need:

* the unwind table, ``.eh_frame``: one FDE per function (and per ``.cold`` part) compiled with unwind
  tables, which gcc and clang emit by default on x86-64 (System V AMD64 ABI §6.2; the Linux Standard Base
  Core Specification, "Exception Frames"), with its start and length, so also an extent for the function;
  the FDE that covers the PLT is no function (its stubs are, each named after the symbol it binds);
* the dynamic section's ``DT_INIT`` and ``DT_FINI`` (``.init``/``.fini``) and the arrays ``DT_INIT_ARRAY``,
  ``DT_FINI_ARRAY`` and ``DT_PREINIT_ARRAY`` (the System V ABI, "Dynamic Section"), whose entries are
  function addresses (in a position-independent file, the addends of the ``R_X86_64_RELATIVE`` relocations of
  their slots): the C runtime's ``frame_dummy`` and ``__do_global_dtors_aux``, static constructors;
* the entry point ``e_entry`` (``_start``, named so by hpcstruct as well).

From these the usual parse follows calls and tail calls (``register_tm_clones``, ``deregister_tm_clones``,
``main`` through the FDE of its own). Such functions have no name: hpcstruct names code it finds without a
symbol ``targ<hex>``, and so does hpcsa.

This holds for stripped shared libraries too (a distribution's ``libstdc++``, ``libgomp``): there hpcstruct
sees the exported functions and takes every unexported one for a part of the exported one before it;
hpcsa finds the procedures hpcstruct finds, and the unexported ones beside them.
"""

from __future__ import annotations

import struct

import numpy as np

from hpcsa.structure.elf import ElfImage

DT_NULL, DT_INIT, DT_FINI = 0, 12, 13
DT_INIT_ARRAY, DT_FINI_ARRAY, DT_INIT_ARRAYSZ, DT_FINI_ARRAYSZ = 25, 26, 27, 28
DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ = 32, 33
_ARRAYS = ((DT_INIT_ARRAY, DT_INIT_ARRAYSZ), (DT_FINI_ARRAY, DT_FINI_ARRAYSZ),
           (DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ))


def is_stripped(image: ElfImage) -> bool:
    """No ``.symtab``, here or in a separate debug file: only exported functions have names."""
    return not image.has_symtab and image.debug_symtab is None


def _dynamic(image: ElfImage) -> dict[int, int]:
    """The dynamic section's tags (the first value of each)."""
    sec = next((s for s in image.sections if s.type == "SHT_DYNAMIC"), None)
    raw = image.section_bytes(sec.name) if sec is not None else None
    out: dict[int, int] = {}
    for i in range(0, len(raw or b"") - 15, 16):
        tag, value = struct.unpack_from("<qQ", raw or b"", i)
        if tag == DT_NULL:
            break
        out.setdefault(tag, value)
    return out


def _pointers(image: ElfImage, addr: int, size: int) -> list[int]:
    """The 8-byte code addresses of an array: relocated (RELATIVE addends) where the loader fills them."""
    count = size // 8
    if count <= 0 or count > 1 << 16:
        return []
    raw = image.read(addr, 8 * count)
    values = np.frombuffer(raw[:len(raw) // 8 * 8], "<u8").astype(np.uint64)
    offsets, addends = image.relative_relocs
    if len(offsets):
        slots = np.uint64(addr) + np.arange(len(values), dtype=np.uint64) * np.uint64(8)
        k = np.minimum(np.searchsorted(offsets, slots), len(offsets) - 1)
        hit = offsets[k] == slots
        values = np.where(hit, addends[k].astype(np.uint64), values)
    return [v for v in values.tolist() if v not in (0, 0xFFFFFFFFFFFFFFFF)]


def loader_entries(image: ElfImage) -> set[int]:
    """``DT_INIT``, ``DT_FINI`` and the entries of the init, fini and preinit arrays that lie in code."""
    dyn = _dynamic(image)
    out = {dyn[t] for t in (DT_INIT, DT_FINI) if t in dyn}
    for at, size in _ARRAYS:
        if at in dyn and size in dyn:
            out.update(_pointers(image, dyn[at], dyn[size]))
    return {a for a in out if image.code_region(a) is not None}


def unwind_entries(image: ElfImage) -> dict[int, int]:
    """Start -> end of every FDE in code outside the PLT sections."""
    out = {}
    for start, end in image.fde_ranges.items():
        region = image.code_region(start)
        if region is not None and not region.name.startswith(".plt"):
            out[start] = end
    return out


__all__ = ["is_stripped", "loader_entries", "unwind_entries"]
