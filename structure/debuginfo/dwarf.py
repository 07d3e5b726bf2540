"""A selective DWARF (versions 2-5) reader: units, abbreviations, attributes, strings, address ranges.

pyelftools builds a Python object for every DIE and caches whole units, which
for a binary with 10 MB of ``.debug_info`` means ~40 s and ~1 GB (measured on Debian's
``python3.11d``). Structure recovery needs a few attributes of a few
tags, so this reader walks the raw bytes itself: attributes of uninteresting
DIEs are skipped by form (a fixed stride when the abbreviation allows it) and
whole uninteresting subtrees are skipped through ``DW_AT_sibling``. Only the
DIEs the caller asks for are decoded, into plain tuples.

Corrupt DWARF raises :class:`~hpcsa.structure.debuginfo.forms.DwarfError`; callers degrade (no lines, no
inlining) instead of failing.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Iterator

from hpcsa.structure.debuginfo.forms import (
    CONSTANT_FORMS,
    F_ADDRX,
    F_ADDRX1,
    F_ADDRX2,
    F_ADDRX3,
    F_ADDRX4,
    F_GNU_ADDR_INDEX,
    F_GNU_STR_INDEX,
    F_IMPLICIT_CONST,
    F_LINE_STRP,
    F_REF4,
    F_REF_UDATA,
    F_RNGLISTX,
    F_STRP,
    F_STRX,
    F_STRX1,
    F_STRX2,
    F_STRX3,
    F_STRX4,
    Abbrev,
    DwarfError,
    Unit,
    abbrev_entries_bytes,
    cstring,
    form_sizes,
    initial_length,
    leb_numbers,
    read_attrs,
    skip_attrs,
    sleb,
    uleb,
)

# Tags
TAG_COMPILE_UNIT = 0x11
TAG_PARTIAL_UNIT = 0x3C
TAG_SKELETON_UNIT = 0x4A
TAG_SUBPROGRAM = 0x2E
TAG_INLINED_SUBROUTINE = 0x1D
TAG_LEXICAL_BLOCK = 0x0B
TAG_NAMESPACE = 0x39
TAG_TRY_BLOCK = 0x32
TAG_CATCH_BLOCK = 0x25
TAG_MODULE = 0x1E

# Attributes
AT_SIBLING = 0x01
AT_NAME = 0x03
AT_LANGUAGE = 0x13
AT_STMT_LIST = 0x10
AT_LOW_PC = 0x11
AT_HIGH_PC = 0x12
AT_COMP_DIR = 0x1B
AT_INLINE = 0x20
AT_ABSTRACT_ORIGIN = 0x31
AT_DECLARATION = 0x3C
AT_DECL_FILE = 0x3A
AT_DECL_LINE = 0x3B
AT_SPECIFICATION = 0x47
AT_RANGES = 0x55
AT_CALL_FILE = 0x58
AT_CALL_LINE = 0x59
AT_LINKAGE_NAME = 0x6E
AT_STR_OFFSETS_BASE = 0x72
AT_ADDR_BASE = 0x73
AT_RNGLISTS_BASE = 0x74
AT_MIPS_LINKAGE_NAME = 0x2007
AT_GNU_RANGES_BASE = 0x2132
AT_GNU_ADDR_BASE = 0x2133

class DebugInfo:
    """The DWARF sections of one binary and the units in ``.debug_info``."""

    def __init__(self, sections: dict[str, bytes]) -> None:
        self.info = sections.get(".debug_info", b"")
        self.abbrev = sections.get(".debug_abbrev", b"")
        self.str = sections.get(".debug_str", b"")
        self.line_str = sections.get(".debug_line_str", b"")
        self.str_offsets = sections.get(".debug_str_offsets", b"")
        self.addr = sections.get(".debug_addr", b"")
        self.ranges_sec = sections.get(".debug_ranges", b"")
        self.rnglists = sections.get(".debug_rnglists", b"")
        self.line = sections.get(".debug_line", b"")
        self._abbrev_cache: dict[int, dict[int, Abbrev]] = {}
        # Abbreviations by content, shared by the tables of all units (with one address size, offset size
        # and version): a binary of thousands of units repeats the same few hundred.
        self._abbrev_shared: dict[tuple[int, int, int], dict[tuple[object, ...], Abbrev]] = {}
        self._abbrev_numbers: tuple[list[int], list[int]] | None = None
        self.units: list[Unit] = []
        if self.info:
            self._read_units()

    # -- units and abbreviations ------------------------------------------------------------------
    def _read_units(self) -> None:
        data = self.info
        pos = 0
        n = len(data)
        while pos + 11 <= n:
            start = pos
            length, offset_size, pos = initial_length(data, pos)
            if offset_size == 4 and length >= 0xFFFFFFF0:
                raise DwarfError(f"unit at {start:#x}: reserved length {length:#x}")
            end = pos + length
            if end > n or length < 2:
                raise DwarfError(f"unit at {start:#x} runs past the end of .debug_info")
            version = struct.unpack_from("<H", data, pos)[0]
            pos += 2
            unit_type = 1
            if version >= 5:
                unit_type = data[pos]
                address_size = data[pos + 1]
                abbrev_off = int.from_bytes(data[pos + 2:pos + 2 + offset_size], "little")
                pos += 2 + offset_size
                if unit_type in (4, 5):  # skeleton / split_compile: dwo id
                    pos += 8
                elif unit_type in (2, 6):  # type units: signature + type offset
                    pos += 8 + offset_size
            elif 2 <= version <= 4:
                abbrev_off = int.from_bytes(data[pos:pos + offset_size], "little")
                address_size = data[pos + offset_size]
                pos += offset_size + 1
            else:
                raise DwarfError(f"unit at {start:#x}: unsupported DWARF version {version}")
            if address_size not in (4, 8):
                raise DwarfError(f"unit at {start:#x}: address size {address_size}")
            unit = Unit(start, version, address_size, offset_size, self.abbrevs_at(abbrev_off, address_size,
                                                                                  offset_size, version),
                        pos, end, unit_type)
            self._read_unit_die(unit)
            self.units.append(unit)
            pos = end

    def abbrevs_at(self, offset: int, address_size: int, offset_size: int, version: int) -> dict[int, Abbrev]:
        """The abbreviation table at ``offset``, read once per unit shape (units often share one)."""
        key = offset * 64 + address_size * 8 + offset_size + version * 1000000007
        cached = self._abbrev_cache.get(key)
        if cached is not None:
            return cached
        try:
            entries = self._abbrev_entries(offset)
        except (IndexError, ValueError) as exc:
            raise DwarfError(f"corrupt .debug_abbrev at {offset:#x}") from exc
        table: dict[int, Abbrev] = {}
        sizes = form_sizes(address_size, offset_size, version)
        shared = self._abbrev_shared.setdefault((address_size, offset_size, version), {})
        for code, tag, children, attrs in entries:
            content = (tag, children, *attrs)
            ab = shared.get(content)
            if ab is not None:  # the same entry in another unit's table (most are): decoded once
                table[code] = ab
                continue
            ab = shared[content] = Abbrev(code, tag, children, attrs)
            ab.plan = [(at, form, implicit, sizes(form)) for at, form, implicit in attrs]
            size = 0
            for at, form, _, fs in ab.plan:
                if at == AT_SIBLING and ab.sibling_at < 0 and size >= 0 and form in (F_REF4, F_REF_UDATA):
                    ab.sibling_at = size if form == F_REF4 else -1
                if fs < 0:
                    size = -1
                    break
                size += fs
            ab.fixed_size = size
            table[code] = ab
        self._abbrev_cache[key] = table
        return table

    def _abbrev_entries(self, offset: int) -> list[tuple[int, int, bool, list[tuple[int, int, int]]]]:
        """(code, tag, has children, [(attribute, form, implicit constant)]) of the table at ``offset``.

        The section is nothing but LEB128 numbers (the children flag is a byte < 0x80 in any valid table),
        so it is split into numbers once, vectorized, and each table is read from that list; a table that
        does not start on a number, or whose children byte is not a 1-byte number, is read byte by byte."""
        if self._abbrev_numbers is None:
            self._abbrev_numbers = leb_numbers(self.abbrev)
        starts, values = self._abbrev_numbers
        i = bisect.bisect_left(starts, offset)
        if i >= len(starts) or starts[i] != offset:
            return abbrev_entries_bytes(self.abbrev, offset)
        data = self.abbrev
        out = []
        while True:
            code = values[i]
            if code == 0:
                break
            tag = values[i + 1]
            if values[i + 2] >= 0x80 or starts[i + 3] != starts[i + 2] + 1:
                return abbrev_entries_bytes(self.abbrev, offset)
            children = values[i + 2] != 0
            i += 3
            attrs = []
            while True:
                at = values[i]
                form = values[i + 1]
                i += 2
                if at == 0 and form == 0:
                    break
                implicit = 0
                if form == F_IMPLICIT_CONST:
                    implicit = sleb(data, starts[i])[0]
                    i += 1
                attrs.append((at, form, implicit))
            out.append((code, tag, children, attrs))
        return out

    def _read_unit_die(self, unit: Unit) -> None:
        if unit.die_start >= unit.end:
            return
        code, pos = uleb(self.info, unit.die_start)
        ab = unit.abbrevs.get(code)
        if ab is None:
            raise DwarfError(f"unit at {unit.offset:#x}: unknown abbreviation {code}")
        # The bases first: other attributes of this DIE may be indexed through them.
        raw = read_attrs(self.info, unit, ab, pos)[0]
        for at, (_form, value) in raw.items():
            if at == AT_STR_OFFSETS_BASE:
                unit.str_offsets_base = value
            elif at in (AT_ADDR_BASE, AT_GNU_ADDR_BASE):
                unit.addr_base = value
            elif at in (AT_RNGLISTS_BASE, AT_GNU_RANGES_BASE):
                unit.rnglists_base = value
        for at, (form, value) in raw.items():
            if at == AT_NAME:
                unit.name = self.string(unit, form, value)
            elif at == AT_COMP_DIR:
                unit.comp_dir = self.string(unit, form, value)
            elif at == AT_LOW_PC:
                unit.low_pc = self.address(unit, form, value)
            elif at == AT_STMT_LIST:
                unit.stmt_list = value
            elif at == AT_LANGUAGE and isinstance(value, int):
                unit.language = value
        unit.ranges = self.die_ranges(unit, raw, unit_die=True)

    # -- attribute values -------------------------------------------------------------------------
    def string(self, unit: Unit, form: int, value: int | str) -> str | None:
        if isinstance(value, str):
            return value
        try:
            if form == F_STRP:
                return cstring(self.str, value)[0]
            if form == F_LINE_STRP:
                return cstring(self.line_str, value)[0]
            if form in (F_STRX, F_STRX1, F_STRX2, F_STRX3, F_STRX4, F_GNU_STR_INDEX):
                pos = unit.str_offsets_base + value * unit.offset_size
                off = int.from_bytes(self.str_offsets[pos:pos + unit.offset_size], "little")
                return cstring(self.str, off)[0]
        except (ValueError, IndexError):
            return None
        return None  # strp_sup / GNU_strp_alt: the string lives in another file

    def address(self, unit: Unit, form: int, value: int) -> int:
        if form in (F_ADDRX, F_ADDRX1, F_ADDRX2, F_ADDRX3, F_ADDRX4, F_GNU_ADDR_INDEX):
            pos = unit.addr_base + value * unit.address_size
            if pos + unit.address_size > len(self.addr):
                raise DwarfError(f"address index {value} outside .debug_addr")
            return int.from_bytes(self.addr[pos:pos + unit.address_size], "little")
        return value

    def die_ranges(self, unit: Unit, attrs: dict[int, tuple[int, int]], unit_die: bool = False
                   ) -> list[tuple[int, int]]:
        """[lo, hi) ranges of a DIE from low_pc/high_pc or DW_AT_ranges (empty if it has none)."""
        low = attrs.get(AT_LOW_PC)
        high = attrs.get(AT_HIGH_PC)
        if low is not None and high is not None:
            lo = self.address(unit, *low)
            hform, hval = high
            hi = lo + hval if hform in CONSTANT_FORMS else self.address(unit, hform, hval)
            return [(lo, hi)] if hi > lo else []
        rng = attrs.get(AT_RANGES)
        if rng is None:
            return []
        form, value = rng
        base = unit.low_pc if not unit_die else (self.address(unit, *low) if low is not None else 0)
        if unit.version >= 5 or form == F_RNGLISTX:
            return self._rnglist(unit, form, value, base)
        return self._ranges_v4(unit, value, base)

    def _ranges_v4(self, unit: Unit, offset: int, base: int) -> list[tuple[int, int]]:
        data = self.ranges_sec
        size = unit.address_size
        fmt = "<QQ" if size == 8 else "<II"
        top = (1 << (8 * size)) - 1
        out = []
        pos = offset
        while pos + 2 * size <= len(data):
            a, b = struct.unpack_from(fmt, data, pos)
            pos += 2 * size
            if a == 0 and b == 0:
                break
            if a == top:
                base = b
                continue
            if b > a:
                out.append((base + a, base + b))
        return out

    def _rnglist(self, unit: Unit, form: int, value: int, base: int) -> list[tuple[int, int]]:
        data = self.rnglists
        if form == F_RNGLISTX:
            if unit.rnglists_base is None:
                return []
            p = unit.rnglists_base + value * unit.offset_size
            offset = unit.rnglists_base + int.from_bytes(data[p:p + unit.offset_size], "little")
        else:
            offset = value
        size = unit.address_size
        out = []
        pos = offset

        def read_addr(p: int) -> tuple[int, int]:
            return int.from_bytes(data[p:p + size], "little"), p + size

        try:
            while pos < len(data):
                kind = data[pos]
                pos += 1
                if kind == 0:  # end_of_list
                    break
                if kind == 1:  # base_addressx
                    i, pos = uleb(data, pos)
                    base = self.address(unit, F_ADDRX, i)
                elif kind == 2:  # startx_endx
                    i, pos = uleb(data, pos)
                    j, pos = uleb(data, pos)
                    out.append((self.address(unit, F_ADDRX, i), self.address(unit, F_ADDRX, j)))
                elif kind == 3:  # startx_length
                    i, pos = uleb(data, pos)
                    n, pos = uleb(data, pos)
                    lo = self.address(unit, F_ADDRX, i)
                    out.append((lo, lo + n))
                elif kind == 4:  # offset_pair
                    a, pos = uleb(data, pos)
                    b, pos = uleb(data, pos)
                    out.append((base + a, base + b))
                elif kind == 5:  # base_address
                    base, pos = read_addr(pos)
                elif kind == 6:  # start_end
                    a, pos = read_addr(pos)
                    b, pos = read_addr(pos)
                    out.append((a, b))
                elif kind == 7:  # start_length
                    a, pos = read_addr(pos)
                    n, pos = uleb(data, pos)
                    out.append((a, a + n))
                else:
                    raise DwarfError(f"unknown range list entry {kind}")
        except IndexError as exc:
            raise DwarfError("range list runs past the end of .debug_rnglists") from exc
        return [(a, b) for a, b in out if b > a]

    # -- random access ----------------------------------------------------------------------------
    def unit_of(self, offset: int) -> Unit | None:
        lo, hi = 0, len(self.units)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.units[mid].end <= offset:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.units) and self.units[lo].offset <= offset < self.units[lo].end:
            return self.units[lo]
        return None

    def die_at(self, offset: int) -> tuple[Unit, Abbrev, dict[int, tuple[int, int]]] | None:
        """The tag and raw attributes of the DIE at a .debug_info offset."""
        unit = self.unit_of(offset)
        if unit is None:
            return None
        code, pos = uleb(self.info, offset)
        ab = unit.abbrevs.get(code)
        if ab is None:
            return None
        return unit, ab, read_attrs(self.info, unit, ab, pos)[0]


CONTAINER_TAGS = frozenset({TAG_COMPILE_UNIT, TAG_PARTIAL_UNIT, TAG_SUBPROGRAM, TAG_INLINED_SUBROUTINE,
                            TAG_LEXICAL_BLOCK, TAG_NAMESPACE, TAG_TRY_BLOCK, TAG_CATCH_BLOCK, TAG_MODULE})


def walk_unit(dw: DebugInfo, unit: Unit, wanted: frozenset[int],
              visit: Callable[[int, int, int, Abbrev, dict[int, tuple[int, int]]], None],
              decoded: frozenset[int] | None = None, containers: frozenset[int] = CONTAINER_TAGS) -> None:
    """Call ``visit(offset, depth, parent_offset, abbrev, attrs)`` for each DIE whose tag is in ``decoded``
    (default: ``wanted``).

    Subtrees of tags outside CONTAINER_TAGS are skipped (through DW_AT_sibling
    when present). ``parent_offset`` is the nearest enclosing DIE whose tag is
    wanted (-1 at the top); wanted DIEs outside ``decoded`` only serve as such
    parents and their attributes are not decoded.
    """
    if decoded is None:
        decoded = wanted
    data = dw.info
    abbrevs = unit.abbrevs
    end = unit.end
    pos = unit.die_start
    depth = 0
    # Per open level: offset of the nearest wanted ancestor, and whether this level is being skipped.
    wanted_stack = [-1]
    skip_until_depth = -1  # while >= 0, ignore DIEs deeper than this depth
    try:
        while pos < end:
            offset = pos
            code = data[pos]
            if code < 0x80:
                pos += 1
            else:
                code, pos = uleb(data, pos)
            if code == 0:
                depth -= 1
                wanted_stack.pop()
                if depth <= 0:
                    break  # the unit DIE's children end here (what follows is padding)
                if skip_until_depth >= 0 and depth <= skip_until_depth:
                    skip_until_depth = -1
                continue
            ab = abbrevs.get(code)
            if ab is None:
                raise DwarfError(f"DIE at {offset:#x}: unknown abbreviation {code}")
            if skip_until_depth >= 0:
                pos = skip_attrs(data, unit, ab, pos)
                if ab.has_children:
                    depth += 1
                    wanted_stack.append(wanted_stack[-1])
                continue
            tag = ab.tag
            parent = wanted_stack[-1]
            if tag in wanted:
                if tag in decoded:
                    attrs, pos = read_attrs(data, unit, ab, pos)
                    visit(offset, depth, parent, ab, attrs)
                else:
                    pos = skip_attrs(data, unit, ab, pos)
                parent = offset
            elif tag not in containers and ab.has_children:
                # Jump over the whole subtree when the sibling pointer is at a known place.
                if ab.sibling_at >= 0:
                    sib = int.from_bytes(data[pos + ab.sibling_at:pos + ab.sibling_at + 4], "little")
                    if unit.offset < unit.offset + sib <= end and unit.offset + sib > pos:
                        pos = unit.offset + sib
                        continue
                pos = skip_attrs(data, unit, ab, pos)
                skip_until_depth = depth
                depth += 1
                wanted_stack.append(parent)
                continue
            else:
                pos = skip_attrs(data, unit, ab, pos)
            if ab.has_children:
                depth += 1
                wanted_stack.append(parent)
            if depth == 0:
                break  # the unit DIE had no children
    except (IndexError, ValueError) as exc:
        raise DwarfError(f"unit at {unit.offset:#x}: DIE data runs past its end") from exc


def iter_units(dw: DebugInfo) -> Iterator[Unit]:
    yield from dw.units
