"""Exception landing pads of an x86-64 ELF binary: where control goes when a call in a try region throws.

C++ (and C with cleanups) code compiled by gcc or clang describes its try regions in the language-specific
data area (LSDA) that an ``.eh_frame`` FDE points to (augmentation ``L``; the Linux Standard Base Core
Specification, "Exception Frames"), in ``.gcc_except_table``: a header (landing-pad base, type-table
encoding, call-site encoding and length) and a call-site table of (region start, region length, landing
pad, action) relative to the landing-pad base, the FDE's start by default (the Itanium C++ ABI's
exception handling tables, as GCC's ``unwind-pe.h``/``libgcc/unwind-c.c`` read them).

Dyninst reads the same tables (``symtabAPI/src/Object-elf.C``, ``read_except_table_gcc3``; entries with no
landing pad are dropped) and its parser gives every call instruction inside a try region a ``CATCH`` edge
to the region's landing pad (``parseAPI/src/IA_IAPI.C``, ``findCatchBlockByTryRange``): landing pads are
code of the function whose calls can reach them, and so is what they jump to, gcc's ``.cold`` part of a
function included. The loop search ignores those edges (``parseAPI/src/LoopAnalyzer.C``).
"""

from __future__ import annotations

import struct

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.elf import ElfImage

DW_EH_PE_OMIT = 0xFF
DW_EH_PE_ULEB128 = 0x01
DW_EH_PE_SLEB128 = 0x09
_FIXED = {0x00: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i", 0x0C: "<q"}


@dataclass
class TryRegions:
    """Try regions, sorted and disjoint: ``[lo[i], hi[i])`` lands at ``pad[i]``."""

    lo: np.ndarray
    hi: np.ndarray
    pad: np.ndarray

    @staticmethod
    def empty() -> TryRegions:
        z = np.zeros(0, np.uint64)
        return TryRegions(z, z.copy(), z.copy())

    def landing_pads(self, addrs: np.ndarray) -> np.ndarray:
        """The landing pad of the try region holding each address (as Dyninst looks it up: the region with
        the greatest start at or before it), -1 where none does."""
        out = np.full(len(addrs), -1, np.int64)
        if not len(self.lo) or not len(addrs):
            return out
        k = np.searchsorted(self.lo, addrs, side="right") - 1
        ok = k >= 0
        ok[ok] = addrs[ok] < self.hi[k[ok]]
        out[ok] = self.pad[k[ok]].astype(np.int64)
        return out


def _uleb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
    raise IndexError("truncated LEB128")


def _sleb(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    byte = 0x80
    while byte & 0x80:
        if pos >= len(data):
            raise IndexError("truncated LEB128")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
    if byte & 0x40:
        value -= 1 << shift
    return value, pos


def _encoded(data: bytes, pos: int, enc: int, here: int) -> tuple[int | None, int]:
    """A pointer in DW_EH_PE encoding ``enc`` at ``pos``; ``here`` is its address (for pc-relative ones)."""
    fmt = enc & 0x0F
    if fmt == DW_EH_PE_ULEB128:
        value, end = _uleb(data, pos)
    elif fmt == DW_EH_PE_SLEB128:
        value, end = _sleb(data, pos)
    elif fmt in _FIXED:
        size = struct.calcsize(_FIXED[fmt])
        if pos + size > len(data):
            raise IndexError("truncated pointer")
        value, end = struct.unpack_from(_FIXED[fmt], data, pos)[0], pos + size
    else:
        return None, pos
    if enc & 0x70 == 0x10:  # pc-relative
        value += here
    return value & 0xFFFFFFFFFFFFFFFF, end


def _cie(data: bytes, pos: int, end: int, base: int) -> tuple[int, int] | None:
    """(FDE pointer encoding, LSDA encoding) of the CIE whose content starts at ``pos``, None without an LSDA."""
    pos += 1  # version
    aug_end = data.find(b"\0", pos, end)
    if aug_end < 0:
        return None
    aug = data[pos:aug_end]
    if b"L" not in aug or not aug.startswith(b"z"):
        return None
    pos = aug_end + 1
    _code_align, pos = _uleb(data, pos)
    _data_align, pos = _sleb(data, pos)
    _ra, pos = _uleb(data, pos)
    _length, pos = _uleb(data, pos)
    fde_enc, lsda_enc = 0, DW_EH_PE_OMIT
    for ch in aug[1:]:
        if ch == ord("L"):
            lsda_enc = data[pos]
            pos += 1
        elif ch == ord("R"):
            fde_enc = data[pos]
            pos += 1
        elif ch == ord("P"):
            enc = data[pos]
            _value, pos = _encoded(data, pos + 1, enc, base + pos + 1)
        else:
            break
    return (fde_enc, lsda_enc) if lsda_enc != DW_EH_PE_OMIT else None


def _lsdas(image: ElfImage) -> list[tuple[int, int]]:
    """(function start, LSDA address) of every FDE with a language-specific data area."""
    sec = image.section_named(".eh_frame")
    data = image.section_bytes(".eh_frame") if sec is not None else None
    if sec is None or not data:
        return []
    out = []
    cies: dict[int, tuple[int, int] | None] = {}
    pos = 0
    while pos + 4 <= len(data):
        length = struct.unpack_from("<I", data, pos)[0]
        if length == 0 or length == 0xFFFFFFFF:
            break
        head = pos + 4
        end = head + length
        if end > len(data):
            break
        cie_ptr = struct.unpack_from("<I", data, head)[0]
        if cie_ptr == 0:
            cies[pos] = _cie(data, head + 4, end, sec.addr)
        else:
            cie = cies.get(head - cie_ptr)
            if cie is not None:
                fde_enc, lsda_enc = cie
                p = head + 4
                start, p = _encoded(data, p, fde_enc, sec.addr + p)
                _size, p = _encoded(data, p, fde_enc & 0x0F, 0)
                _aug_len, p = _uleb(data, p)
                lsda, _p = _encoded(data, p, lsda_enc, sec.addr + p)
                if start is not None and lsda:
                    out.append((start, lsda))
        pos = end
    return out


def try_regions(image: ElfImage) -> TryRegions:
    """Every try region with a landing pad, from the LSDAs of ``.gcc_except_table`` (empty when the binary
    has none, or where a table cannot be read)."""
    sec = image.section_named(".gcc_except_table")
    if sec is None or sec.type == "SHT_NOBITS" or not sec.size:
        return TryRegions.empty()
    table = image.section_bytes(".gcc_except_table") or b""
    lo: list[int] = []
    hi: list[int] = []
    pad: list[int] = []
    try:
        lsdas = _lsdas(image)
    except (IndexError, struct.error):
        return TryRegions.empty()
    for start, lsda in lsdas:
        pos = lsda - sec.addr
        if not 0 <= pos < len(table):
            continue
        try:
            _read_call_sites(table, pos, sec.addr, start, lo, hi, pad)
        except (IndexError, struct.error):
            continue
    if not lo:
        return TryRegions.empty()
    order = np.argsort(np.array(lo, np.uint64), kind="stable")
    return TryRegions(np.array(lo, np.uint64)[order], np.array(hi, np.uint64)[order],
                      np.array(pad, np.uint64)[order])


def _read_call_sites(table: bytes, pos: int, base: int, start: int, lo: list[int], hi: list[int],
                     pad: list[int]) -> None:
    lp_enc = table[pos]
    pos += 1
    lp_base = start
    if lp_enc != DW_EH_PE_OMIT:
        got, pos = _encoded(table, pos, lp_enc, base + pos)
        lp_base = got if got is not None else start
    tt_enc = table[pos]
    pos += 1
    if tt_enc != DW_EH_PE_OMIT:
        _tt, pos = _uleb(table, pos)
    cs_enc = table[pos]
    pos += 1
    length, pos = _uleb(table, pos)
    end = min(pos + length, len(table))
    while pos < end:
        region, pos = _encoded(table, pos, cs_enc, base + pos)
        size, pos = _encoded(table, pos, cs_enc, base + pos)
        landing, pos = _encoded(table, pos, cs_enc, base + pos)
        _action, pos = _uleb(table, pos)
        if region is None or size is None or landing is None:
            return
        if landing:
            lo.append(lp_base + region)
            hi.append(lp_base + region + size)
            pad.append(lp_base + landing)


__all__ = ["TryRegions", "try_regions"]
