"""Line tables of cubins, with NVIDIA's inlining extension to ``.debug_line``.

With ``-lineinfo``, functions inlined by NVVM are recorded in the line table
itself (an NVIDIA extension: DWARF 5 §7.22 leaves extended opcodes
``DW_LNE_lo_user`` 0x80 to ``DW_LNE_hi_user`` 0xff to vendors): extended opcode ``0x90`` carries
two ULEB operands, *context* (the 1-based number, within the same sequence,
of the row that is the call site; 0 = not inlined) and *function* (offset of
the callee's mangled name in ``.debug_str``). Rows after it belong to that
context until the next ``0x90``; a call-site row may itself be in a context,
which gives the whole chain. Generic decoders (pyelftools, and the CPU
decoder of :mod:`hpcsa.structure.debuginfo.lines`) skip the opcode and lose the
inlining, hence this decoder.

The result is the same pair the CPU path uses: a
:class:`~hpcsa.structure.debuginfo.lines.LineMap` (address -> file, line) and an
:class:`~hpcsa.structure.debuginfo.inline.InlineTable` (address -> chain of
inlined calls), so one structure builder serves both. The section must be
relocated first (:meth:`hpcsa.structure.gpu.cubin_elf.Cubin.relocated`): sequences
then start at their function's final address.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.debuginfo.forms import cstring, initial_length, sleb, uleb
from hpcsa.structure.debuginfo.inline import InlineTable
from hpcsa.structure.debuginfo.lines import LineMap, LineProgram, build_line_map

DW_LNE_end_sequence = 1
DW_LNE_set_address = 2
DW_LNE_define_file = 3
DW_LNE_NVIDIA_inlined_call = 0x90
#: The address register wraps as a 64-bit target address does; a row stores the line register held
#: within what the tables keep (a damaged program can advance either past any machine integer).
ADDRESS_MASK = (1 << 64) - 1
LINE_MAX = 2**31 - 1


class LineTableError(Exception):
    """A line program that cannot be decoded (the message says where)."""


@dataclass
class CubinLines:
    lines: LineMap
    inlines: InlineTable
    unit_files: dict[int, list[str]] = field(default_factory=dict)   # unit offset -> file names by index
    notes: list[str] = field(default_factory=list)


def _join(directory: str, name: str) -> str:
    if not directory or name.startswith("/"):
        return name
    return directory.rstrip("/") + "/" + name


def read_cubin_lines(debug_line: bytes, debug_str: bytes | None, demangle: Callable[[str], str],
                     comp_dir: str = "") -> CubinLines:
    """Decode every unit of a (relocated) ``.debug_line``; undecodable units are skipped with a note."""
    file_id: dict[str, int] = {}
    addr: list[int] = []
    file: list[int] = []
    line: list[int] = []
    end_seq: list[bool] = []
    node_of_row: list[int] = []
    nodes = _InlineNodes(debug_str or b"", demangle)
    unit_files: dict[int, list[str]] = {}
    notes: list[str] = []
    pos = 0
    while pos + 4 <= len(debug_line):
        try:
            unit_end, files = _decode_unit(debug_line, pos, comp_dir, addr, file, line, end_seq, node_of_row,
                                           nodes, file_id)
        except (LineTableError, IndexError, struct.error, UnicodeDecodeError) as exc:
            notes.append(f".debug_line unit at {pos:#x} unreadable ({exc}); its lines are ignored")
            break
        unit_files[pos] = files
        pos = unit_end
    prog = LineProgram(list(file_id) or [""], np.array(addr, np.uint64), np.array(file, np.int32),
                       np.array(line, np.int32), np.array(end_seq, np.bool_))
    return CubinLines(build_line_map([prog]), nodes.table(addr, end_seq, node_of_row), unit_files, notes)


class _InlineNodes:
    """Inline contexts, one node per (call-site row, callee), numbered in order of first use."""

    def __init__(self, strings: bytes, demangle: Callable[[str], str]) -> None:
        self.strings = strings
        self.demangle = demangle
        self.key: dict[tuple[int, int], int] = {}
        self.parent: list[int] = []
        self.call_file: list[int] = []
        self.call_line: list[int] = []
        self.name: list[int] = []
        self.names: dict[str, int] = {}
        self.files: dict[str, int] = {}

    def callee(self, offset: int) -> str:
        if 0 <= offset < len(self.strings):
            raw, _ = cstring(self.strings, offset)
            return self.demangle(raw) if raw else "<unknown procedure>"
        return "<unknown procedure>"

    def node(self, call_row: int, site: tuple[int, int, int], fn: int, files: list[str]) -> int:
        """Node of the context whose call site is global row ``call_row`` (``site``: its file index in
        ``files``, line and own node)."""
        k = (call_row, fn)
        got = self.key.get(k)
        if got is not None:
            return got
        fidx, ln, parent = site
        fname = files[fidx] if 0 <= fidx < len(files) else ""
        idx = len(self.parent)
        self.key[k] = idx
        self.parent.append(parent)
        self.call_file.append(self.files.setdefault(fname, len(self.files)) if fname else -1)
        self.call_line.append(ln)
        nm = self.callee(fn)
        self.name.append(self.names.setdefault(nm, len(self.names)))
        return idx

    def table(self, addr: list[int], end_seq: list[bool], node_of_row: list[int]) -> InlineTable:
        if not self.parent:
            return InlineTable.empty()
        parent = np.array(self.parent, np.int32)
        depth = np.zeros(len(parent), np.int32)
        for i, p in enumerate(self.parent):  # parents are always created before their children
            depth[i] = depth[p] + 1 if p >= 0 else 0
        a = np.array(addr, np.uint64)
        n = np.array(node_of_row, np.int32)
        if len(a) < 2:
            return InlineTable.empty()
        lo, hi, nd = a[:-1], a[1:], n[:-1]
        keep = (nd >= 0) & ~np.array(end_seq[:-1], np.bool_) & (hi > lo)
        lo, hi, nd = lo[keep], hi[keep], nd[keep]
        order = np.lexsort((depth[nd] if len(nd) else nd, lo))
        return InlineTable(parent, np.array(self.call_file, np.int32), np.array(self.call_line, np.int32),
                           np.array(self.name, np.int32), depth, lo[order], hi[order], nd[order],
                           list(self.files), list(self.names))


def _decode_unit(data: bytes, pos: int, comp_dir: str, addr: list[int], file: list[int], line: list[int],
                 end_seq: list[bool], node_of_row: list[int], nodes: _InlineNodes, file_id: dict[str, int]
                 ) -> tuple[int, list[str]]:
    """Decode the line program at ``pos`` into the row lists (``node_of_row``: each row's inline context)
    and ``nodes``; returns the position after it and its files.

    A loop per opcode, kept in one function on purpose: the state machine lives in local variables and a
    split would add a call per opcode. (The host's programs are decoded all at once by
    :mod:`hpcsa.structure.debuginfo.line_opcodes`; a cubin's few, with NVIDIA's inline records, are small.)"""
    unit_length, offset_size, head = initial_length(data, pos)
    end = head + unit_length
    if end > len(data):
        raise LineTableError("unit runs past the end of the section")
    version = struct.unpack_from("<H", data, head)[0]
    if not 2 <= version <= 4:
        raise LineTableError(f"DWARF line table version {version} (cubins use 2-4)")
    header_length = int.from_bytes(data[head + 2:head + 2 + offset_size], "little")
    p = head + 2 + offset_size
    program = p + header_length
    min_inst = data[p]
    p += 1
    if version >= 4:
        p += 1  # maximum_operations_per_instruction
    p += 1  # default_is_stmt
    line_base = struct.unpack_from("b", data, p)[0]
    line_range = data[p + 1]
    opcode_base = data[p + 2]
    p += 3
    if line_range == 0:
        raise LineTableError("line_range is 0")
    std_lengths = list(data[p:p + opcode_base - 1])
    p += opcode_base - 1
    dirs = [comp_dir]
    while data[p] != 0:
        d, p = cstring(data, p)
        dirs.append(d)
    p += 1
    files = [""]
    while data[p] != 0:
        name, p = cstring(data, p)
        di, p = uleb(data, p)
        _, p = uleb(data, p)
        _, p = uleb(data, p)
        files.append(_join(dirs[di] if di < len(dirs) else "", name))
    p += 1
    # NVIDIA: 4 bytes between the file table and the program hold this unit's base in .debug_str (the
    # units of a device-linked cubin share one merged .debug_str; 0x90 operands are relative to it).
    str_base = struct.unpack_from("<I", data, p)[0] if program - p == 4 else 0
    remap = [file_id.setdefault(f, len(file_id)) for f in files]

    const_add = ((255 - opcode_base) // line_range) * min_inst
    # Rows of this unit: (local file index, line, inline node) by global row number.
    rows: list[tuple[int, int, int]] = []
    unit_first = len(addr)  # global row number of the unit's first row
    seq_first = len(addr)   # global row number of the current sequence's first row
    a, f, ln, node = 0, 1, 1, -1
    p = program
    while p < end:
        op = data[p]
        p += 1
        emit = False
        if op >= opcode_base:
            adj = op - opcode_base
            a += (adj // line_range) * min_inst
            ln += line_base + adj % line_range
            emit = True
        elif op == 0:
            n, p = uleb(data, p)
            if n == 0:
                continue
            sub = data[p]
            nxt = p + n
            if sub == DW_LNE_end_sequence:
                a, row_line = a & ADDRESS_MASK, min(max(ln, 0), LINE_MAX)
                addr.append(a)
                file.append(remap[f] if 0 <= f < len(remap) else 0)
                line.append(row_line)
                end_seq.append(True)
                node_of_row.append(-1)
                rows.append((f, row_line, -1))
                a, f, ln, node = 0, 1, 1, -1
                seq_first = len(addr)
            elif sub == DW_LNE_set_address:
                a = int.from_bytes(data[p + 1:nxt], "little")
            elif sub == DW_LNE_define_file:
                name, q = cstring(data, p + 1)
                di, _ = uleb(data, q)
                files.append(_join(dirs[di] if di < len(dirs) else "", name))
                remap.append(file_id.setdefault(files[-1], len(file_id)))
            elif sub == DW_LNE_NVIDIA_inlined_call:
                ctx, q = uleb(data, p + 1)
                fn, _ = uleb(data, q)
                call_row = seq_first + ctx - 1
                if ctx == 0 or not seq_first <= call_row < len(addr):
                    node = -1
                else:
                    node = nodes.node(call_row, rows[call_row - unit_first], str_base + fn, files)
            p = nxt
        elif op == 1:
            emit = True
        elif op == 2:
            v, p = uleb(data, p)
            a += v * min_inst
        elif op == 3:
            v, p = sleb(data, p)
            ln += v
        elif op == 4:
            f, p = uleb(data, p)
        elif op == 8:
            a += const_add
        elif op == 9:
            a += data[p] | (data[p + 1] << 8)
            p += 2
        else:  # set_column, negate_stmt, basic_block, ... and unknown standard opcodes: skip operands
            for _ in range(std_lengths[op - 1] if op - 1 < len(std_lengths) else 0):
                _, p = uleb(data, p)
        if emit:
            a, row_line = a & ADDRESS_MASK, min(max(ln, 0), LINE_MAX)
            addr.append(a)
            file.append(remap[f] if 0 <= f < len(remap) else 0)
            line.append(row_line)
            end_seq.append(False)
            node_of_row.append(node)
            rows.append((f, row_line, node))
    return end, files
