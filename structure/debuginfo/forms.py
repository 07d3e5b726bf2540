"""DWARF's encodings (DWARF 5 §7): attribute forms, LEB128 numbers, abbreviations and units, and how the
attributes of one debugging information entry are read or skipped. The hot loops of
:mod:`hpcsa.structure.debuginfo.dwarf` (walking every DIE of a unit) are built from these."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass

# Forms
F_ADDR, F_BLOCK2, F_BLOCK4, F_DATA2, F_DATA4, F_DATA8, F_STRING, F_BLOCK, F_BLOCK1, F_DATA1 = (
    0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B)
F_FLAG, F_SDATA, F_STRP, F_UDATA, F_REF_ADDR, F_REF1, F_REF2, F_REF4, F_REF8, F_REF_UDATA = (
    0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15)
F_INDIRECT, F_SEC_OFFSET, F_EXPRLOC, F_FLAG_PRESENT, F_STRX, F_ADDRX, F_REF_SUP4, F_STRP_SUP = (
    0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D)
F_DATA16, F_LINE_STRP, F_REF_SIG8, F_IMPLICIT_CONST, F_LOCLISTX, F_RNGLISTX, F_REF_SUP8 = (
    0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24)
F_STRX1, F_STRX2, F_STRX3, F_STRX4, F_ADDRX1, F_ADDRX2, F_ADDRX3, F_ADDRX4 = range(0x25, 0x2D)
F_GNU_ADDR_INDEX, F_GNU_STR_INDEX, F_GNU_REF_ALT, F_GNU_STRP_ALT = 0x1F01, 0x1F02, 0x1F20, 0x1F21

_REF_FIXED = frozenset({0x11, 0x12, 0x13, 0x14})  # ref1/2/4/8: unit-relative
CONSTANT_FORMS = frozenset({F_DATA1, F_DATA2, F_DATA4, F_DATA8, F_SDATA, F_UDATA, F_IMPLICIT_CONST})
REF_FORMS = frozenset({F_REF1, F_REF2, F_REF4, F_REF8, F_REF_UDATA})


class DwarfError(Exception):
    """Corrupt or unsupported DWARF; structure recovery continues without it."""


def initial_length(data: bytes, pos: int) -> tuple[int, int, int]:
    """A unit's initial length (DWARF 5 §7.4, 32- or 64-bit DWARF): (length, offset size, position after it)."""
    length = struct.unpack_from("<I", data, pos)[0]
    if length == 0xFFFFFFFF:
        return struct.unpack_from("<Q", data, pos + 4)[0], 8, pos + 12
    return length, 4, pos + 4


def uleb(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = data[pos]
        result |= (b & 0x7F) << shift
        pos += 1
        if b < 0x80:
            return result, pos
        shift += 7


def sleb(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = data[pos]
        result |= (b & 0x7F) << shift
        shift += 7
        pos += 1
        if b < 0x80:
            if b & 0x40:
                result -= 1 << shift
            return result, pos


def cstring(data: bytes, pos: int) -> tuple[str, int]:
    end = data.index(b"\0", pos)
    return data[pos:end].decode("utf-8", "surrogateescape"), end + 1


@dataclass
class Abbrev:
    """One abbreviation; tables share equal ones (:meth:`~hpcsa.structure.debuginfo.dwarf.DebugInfo.abbrevs_at`), so ``code`` is its code in
    the first table that had it (a table maps each of its codes to it)."""

    code: int
    tag: int
    has_children: bool
    attrs: list[tuple[int, int, int]]  # (attribute, form, implicit constant)
    fixed_size: int = -1               # byte size of all attributes when every form is fixed, else -1
    sibling_at: int = -1               # offset of DW_AT_sibling (ref4) when the forms before it are fixed
    plan: list[tuple[int, int, int, int]] = field(default_factory=list)  # attrs with each form's fixed size


@dataclass
class Unit:
    offset: int          # of the unit header in .debug_info
    version: int
    address_size: int
    offset_size: int     # 4 (32-bit DWARF) or 8
    abbrevs: dict[int, Abbrev]
    die_start: int       # first DIE
    end: int             # one past the unit
    unit_type: int = 1
    # From the unit DIE:
    name: str | None = None
    comp_dir: str | None = None
    low_pc: int = 0
    stmt_list: int | None = None
    language: int = 0    # DW_AT_language (0: not given)
    str_offsets_base: int = 8
    addr_base: int = 8
    rnglists_base: int | None = None
    ranges: list[tuple[int, int]] = field(default_factory=list)


def fixed_form_size(form: int, address_size: int, offset_size: int, version: int) -> int:
    """Byte size of a form whose size does not depend on its value (-1 otherwise)."""
    if form in (F_DATA1, F_REF1, F_FLAG, F_STRX1, F_ADDRX1):
        return 1
    if form in (F_DATA2, F_REF2, F_STRX2, F_ADDRX2):
        return 2
    if form in (F_STRX3, F_ADDRX3):
        return 3
    if form in (F_DATA4, F_REF4, F_REF_SUP4, F_STRX4, F_ADDRX4):
        return 4
    if form in (F_DATA8, F_REF8, F_REF_SIG8, F_REF_SUP8):
        return 8
    if form == F_DATA16:
        return 16
    if form == F_ADDR:
        return address_size
    if form in (F_STRP, F_SEC_OFFSET, F_LINE_STRP, F_STRP_SUP, F_GNU_REF_ALT, F_GNU_STRP_ALT):
        return offset_size
    if form == F_REF_ADDR:
        return address_size if version <= 2 else offset_size
    if form in (F_FLAG_PRESENT, F_IMPLICIT_CONST):
        return 0
    return -1


_FORM_SIZES: dict[tuple[int, int, int], Callable[[int], int]] = {}


def form_sizes(address_size: int, offset_size: int, version: int) -> Callable[[int], int]:
    """fixed_form_size for one (address size, offset size, version), memoized per form."""
    key = (address_size, offset_size, version)
    got = _FORM_SIZES.get(key)
    if got is None:
        memo: dict[int, int] = {}

        def size(form: int) -> int:
            s = memo.get(form)
            if s is None:
                s = memo[form] = fixed_form_size(form, address_size, offset_size, version)
            return s

        got = _FORM_SIZES[key] = size
    return got


def leb_numbers(data: bytes) -> tuple[list[int], list[int]]:
    """Start offsets and unsigned values of the LEB128 numbers that make up ``data`` (an incomplete number
    at the end is left out)."""
    raw = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(raw < 0x80)
    starts = np.zeros(len(ends), np.int64)
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    values = raw[ends].astype(np.uint64)
    long = np.flatnonzero(lengths > 1)
    if len(long):
        first = starts[long]
        acc = np.zeros(len(long), np.uint64)
        for k in range(8):
            use = lengths[long] > k
            byte = raw[np.minimum(first + k, len(raw) - 1)].astype(np.uint64) & np.uint64(0x7F)
            acc |= np.where(use, byte << np.uint64(7 * k), np.uint64(0))
        values[long] = acc
    out = values.tolist()
    for i in np.flatnonzero(lengths > 8).tolist():  # wider than 56 bits: Python integers
        out[i] = uleb(data, int(starts[i]))[0]
    return starts.tolist(), out


def abbrev_entries_bytes(data: bytes, offset: int) -> list[tuple[int, int, bool, list[tuple[int, int, int]]]]:
    """The abbreviation table at ``offset`` read byte by byte (see DebugInfo._abbrev_entries)."""
    out = []
    pos = offset
    while True:
        code, pos = uleb(data, pos)
        if code == 0:
            break
        tag, pos = uleb(data, pos)
        children = data[pos] != 0
        pos += 1
        attrs = []
        while True:
            at, pos = uleb(data, pos)
            form, pos = uleb(data, pos)
            if at == 0 and form == 0:
                break
            implicit = 0
            if form == F_IMPLICIT_CONST:
                implicit, pos = sleb(data, pos)
            attrs.append((at, form, implicit))
        out.append((code, tag, children, attrs))
    return out


def read_attrs(data: bytes, unit: Unit, ab: Abbrev, pos: int) -> tuple[dict[int, tuple[int, int]], int]:
    """All attributes of one DIE (in ``data``, the ``.debug_info`` section) as {attribute: (form, value)};
    strings stay as offsets/indices except inline DW_FORM_string (decoded). References are made absolute
    (.debug_info offsets)."""
    out: dict[int, tuple[int, int]] = {}
    asz = unit.address_size
    osz = unit.offset_size
    refs = _REF_FIXED
    for at, form, implicit, size in ab.plan:
        value: int | str
        if size > 0:
            value = int.from_bytes(data[pos:pos + size], "little")
            pos += size
            if form in refs:
                value += unit.offset
            out[at] = (form, value)
            continue
        while form == F_INDIRECT:
            form, pos = uleb(data, pos)
        if form == F_STRING:
            value, pos = cstring(data, pos)
        elif form in (F_UDATA, F_STRX, F_ADDRX, F_RNGLISTX, F_LOCLISTX, F_GNU_ADDR_INDEX, F_GNU_STR_INDEX):
            value, pos = uleb(data, pos)
        elif form == F_REF_UDATA:
            value, pos = uleb(data, pos)
            value += unit.offset
        elif form == F_SDATA:
            value, pos = sleb(data, pos)
        elif form in (F_BLOCK, F_EXPRLOC):
            n, pos = uleb(data, pos)
            value = pos
            pos += n
        elif form == F_BLOCK1:
            value = pos + 1
            pos += 1 + data[pos]
        elif form == F_BLOCK2:
            value = pos + 2
            pos += 2 + int.from_bytes(data[pos:pos + 2], "little")
        elif form == F_BLOCK4:
            value = pos + 4
            pos += 4 + int.from_bytes(data[pos:pos + 4], "little")
        elif form == F_IMPLICIT_CONST:
            value = implicit
        elif form == F_FLAG_PRESENT:
            value = 1
        else:
            size = fixed_form_size(form, asz, osz, unit.version)
            if size < 0:
                raise DwarfError(f"unknown attribute form {form:#x}")
            value = int.from_bytes(data[pos:pos + size], "little")
            pos += size
            if form in (F_REF1, F_REF2, F_REF4, F_REF8):
                value += unit.offset
        out[at] = (form, value)  # type: ignore[assignment]  # a DW_FORM_string's text (see the docstring)
    return out, pos


def skip_attrs(data: bytes, unit: Unit, ab: Abbrev, pos: int) -> int:
    """Position after the attributes of one DIE, decoding nothing."""
    if ab.fixed_size >= 0:
        return pos + ab.fixed_size
    asz = unit.address_size
    osz = unit.offset_size
    for _, form, _, size in ab.plan:
        if size >= 0:
            pos += size
            continue
        while form == F_INDIRECT:
            form, pos = uleb(data, pos)
        if form == F_STRING:
            pos = data.index(b"\0", pos) + 1
        elif form in (F_UDATA, F_SDATA, F_STRX, F_ADDRX, F_RNGLISTX, F_LOCLISTX, F_REF_UDATA, F_GNU_ADDR_INDEX,
                      F_GNU_STR_INDEX):
            while data[pos] & 0x80:
                pos += 1
            pos += 1
        elif form in (F_BLOCK, F_EXPRLOC):
            n, pos = uleb(data, pos)
            pos += n
        elif form == F_BLOCK1:
            pos += 1 + data[pos]
        elif form == F_BLOCK2:
            pos += 2 + int.from_bytes(data[pos:pos + 2], "little")
        elif form == F_BLOCK4:
            pos += 4 + int.from_bytes(data[pos:pos + 4], "little")
        else:
            size = fixed_form_size(form, asz, osz, unit.version)
            if size < 0:
                raise DwarfError(f"unknown attribute form {form:#x}")
            pos += size
    return pos


# Tags whose subtrees may hold subprograms or inlined subroutines (everything else is skipped whole).
