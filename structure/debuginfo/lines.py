"""DWARF line tables (versions 2-5) read into numpy arrays.

pyelftools builds objects per opcode and per row and is 20-60x slower than
``readelf --debug-dump=decodedline`` (measured on Debian's ``python3.11d``; the line-number program is
DWARF 5 §6.2). Here the headers are read one by one and the opcodes of all the programs at once, by
:mod:`hpcsa.structure.debuginfo.line_opcodes`; no object is created per row. The result
is a :class:`LineMap`: sorted, disjoint address ranges -> (file, line), built
the way Dyninst's line information reads a table (each row covers the
addresses up to the next row of its sequence, and of several rows at one
address the last one wins).
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Sequence
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.debuginfo.dwarf import DebugInfo
from hpcsa.structure.debuginfo.forms import (
    F_BLOCK,
    F_DATA1,
    F_DATA2,
    F_DATA4,
    F_DATA8,
    F_DATA16,
    F_LINE_STRP,
    F_STRING,
    F_STRP,
    F_STRX,
    F_STRX1,
    F_STRX2,
    F_STRX3,
    F_STRX4,
    F_UDATA,
    DwarfError,
    Unit,
    cstring,
    initial_length,
    uleb,
)
from hpcsa.structure.debuginfo.line_opcodes import LineRows, OpcodeLayout, decode_programs

DW_LNCT_PATH = 1
DW_LNCT_DIRECTORY_INDEX = 2


@dataclass
class LineProgram:
    files: list[str]       # full path per file index as used by the program (index 0 unused before v5)
    addr: np.ndarray       # u8 per row
    file: np.ndarray       # i4 per row: index into files
    line: np.ndarray       # i4 per row
    end_seq: np.ndarray    # bool per row: the row ends a sequence
    #: Per file index, the name as libdw's ``dwarf_filesrc`` gives it: directory entry + "/" + name, the
    #: directory as the table records it (DWARF < 5: entry 0 is the unit's DW_AT_comp_dir), not joined to
    #: the compilation directory. hpcprof reads a binary without a structure file by these names.
    plain_files: list[str] = field(default_factory=list)
    #: Per file index, the name hpcstruct gives an inlined call site in this file (DW_AT_call_file): the
    #: line-table name, but where the unit's DW_AT_comp_dir is relative Dyninst still prefixes it to a
    #: relative name ("./argp" + "/" + "./argp/argp-fmtstream.c"). Empty: the same as ``files``.
    call_site_files: list[str] = field(default_factory=list)


@dataclass
class LineMap:
    """Disjoint [lo, hi) ranges sorted by lo, each with a file id (into ``files``) and a line."""

    lo: np.ndarray
    hi: np.ndarray
    file: np.ndarray
    line: np.ndarray
    files: list[str] = field(default_factory=list)

    def find(self, addrs: np.ndarray) -> np.ndarray:
        """Index of the range holding each address, -1 where none does."""
        pos = np.searchsorted(self.lo, addrs, side="right") - 1
        ok = pos >= 0
        idx = np.where(ok, pos, 0)
        if len(self.lo):
            ok &= addrs < self.hi[idx]
        else:
            ok[:] = False
        return np.where(ok, idx, -1)

    @staticmethod
    def empty() -> LineMap:
        z = np.zeros(0, np.uint64)
        return LineMap(z, z.copy(), np.zeros(0, np.int32), np.zeros(0, np.int32), [])


@functools.lru_cache(maxsize=1 << 16)  # the same headers recur in the tables of thousands of units
def _join(directory: str | None, name: str) -> str:
    if not directory or name.startswith("/"):
        return name
    return os.path.join(directory, name)


def _plain(directory: str | None, name: str) -> str:
    """libdw's file name: ``directory/name`` for a relative name, the directory used as recorded."""
    if not directory or name.startswith("/"):
        return name
    return f"{directory}/{name}"


def _read_entry_format(data: bytes, pos: int) -> tuple[list[tuple[int, int]], int]:
    count = data[pos]
    pos += 1
    fmt = []
    for _ in range(count):
        ct, pos = uleb(data, pos)
        form, pos = uleb(data, pos)
        fmt.append((ct, form))
    return fmt, pos


def _read_entries(dw: DebugInfo, unit: Unit | None, data: bytes, pos: int, fmt: list[tuple[int, int]],
                  offset_size: int) -> tuple[list[tuple[str, int]], int]:
    count, pos = uleb(data, pos)
    out: list[tuple[str, int]] = []
    for _ in range(count):
        path = ""
        dir_index = 0
        for ct, form in fmt:
            value: str | int
            if form == F_STRING:
                value, pos = cstring(data, pos)
            elif form in (F_LINE_STRP, F_STRP):
                off = int.from_bytes(data[pos:pos + offset_size], "little")
                pos += offset_size
                sec = dw.line_str if form == F_LINE_STRP else dw.str
                value = cstring(sec, off)[0]
            elif form in (F_STRX, F_STRX1, F_STRX2, F_STRX3, F_STRX4):
                if form == F_STRX:
                    idx, pos = uleb(data, pos)
                else:
                    n = {F_STRX1: 1, F_STRX2: 2, F_STRX3: 3, F_STRX4: 4}[form]
                    idx = int.from_bytes(data[pos:pos + n], "little")
                    pos += n
                value = (dw.string(unit, F_STRX, idx) if unit is not None else None) or ""
            elif form == F_UDATA:
                value, pos = uleb(data, pos)
            elif form in (F_DATA1, F_DATA2, F_DATA4, F_DATA8, F_DATA16):
                n = {F_DATA1: 1, F_DATA2: 2, F_DATA4: 4, F_DATA8: 8, F_DATA16: 16}[form]
                value = int.from_bytes(data[pos:pos + n], "little")
                pos += n
            elif form == F_BLOCK:
                n, pos = uleb(data, pos)
                value = 0
                pos += n
            else:
                raise DwarfError(f"line table entry form {form:#x} is not supported")
            if ct == DW_LNCT_PATH:
                path = str(value)
            elif ct == DW_LNCT_DIRECTORY_INDEX:
                dir_index = int(value)
        out.append((path, dir_index))
    return out, pos


def read_program(dw: DebugInfo, offset: int, unit: Unit | None) -> LineProgram:
    """Decode the line program at ``offset`` of .debug_line."""
    got = read_programs(dw, [(offset, unit)])[0]
    if isinstance(got, DwarfError):
        raise got
    return got


def read_programs(dw: DebugInfo, requests: Sequence[tuple[int, Unit | None]], until_error: bool = False
                  ) -> list[LineProgram | DwarfError]:
    """The line programs at these offsets of .debug_line (each with the unit that names it, or None), their
    opcodes decoded together (:mod:`hpcsa.structure.debuginfo.line_opcodes`); a corrupt one is its DwarfError.
    ``until_error``: the list ends at the first program whose header is corrupt (programs found one after
    another, by their lengths: past a bad one, the offsets mean nothing)."""
    data = dw.line
    headers: list[_Header | DwarfError] = []
    for offset, unit in requests:
        try:
            headers.append(_read_header(dw, data, offset, unit))
        except (IndexError, ValueError, struct.error) as exc:
            error = DwarfError(f"line program at {offset:#x} is corrupt")
            error.__cause__ = exc
            headers.append(error)
        except DwarfError as exc:
            headers.append(exc)
        if until_error and isinstance(headers[-1], DwarfError):
            requests = requests[:len(headers)]
            break
    decoded = iter(decode_programs(data, [h.layout for h in headers if isinstance(h, _Header)]))
    out: list[LineProgram | DwarfError] = []
    for (offset, _), h in zip(requests, headers, strict=True):
        if isinstance(h, DwarfError):
            out.append(h)
            continue
        rows = next(decoded)
        if isinstance(rows, DwarfError):
            error = DwarfError(f"line program at {offset:#x} is corrupt")
            error.__cause__ = rows
            out.append(error)
            continue
        out.append(_program(h, rows))
    return out


@dataclass
class _Header:
    """A line-number program's header: where its opcodes are and their parameters, and its file table in
    the three namings."""

    layout: OpcodeLayout
    comp_dir: str | None
    files: list[str]            # the three namings of LineProgram
    plain: list[str]
    call_site_files: list[str]
    dirs: list[str]             # directories joined to comp_dir, and as recorded
    raw_dirs: list[str]
    relative: bool              # comp_dir is relative (files are then the plain names)


def _program(h: _Header, rows: LineRows) -> LineProgram:
    files, plain, call_site_files, comp_dir = h.files, h.plain, h.call_site_files, h.comp_dir
    if rows.defined_files:
        dirs = h.raw_dirs if h.relative else h.dirs
        name_of = _plain if h.relative else _join
        extra_files = [name_of(dirs[di] if di < len(dirs) else None, name) for name, di in rows.defined_files]
        files = files + extra_files
        plain = plain + extra_files
        if call_site_files:
            call_site_files = call_site_files + [f if f.startswith("/") or not f else f"{comp_dir}/{f}"
                                                 for f in extra_files]
    return LineProgram(files, rows.addr, rows.file, rows.line.clip(0, 2**31 - 1).astype(np.int32),
                       rows.end_seq, plain, call_site_files)


def _read_header(dw: DebugInfo, data: bytes, offset: int, unit: Unit | None) -> _Header:
    """The header of the line program at ``offset`` (DWARF 5 §6.2.4, the same section in earlier
    versions): where its opcodes are, their parameters, and its file table in the three namings."""
    length, offset_size, pos = initial_length(data, offset)
    end = pos + length
    if end > len(data):
        raise DwarfError(f"line program at {offset:#x} runs past the end of .debug_line")
    version = struct.unpack_from("<H", data, pos)[0]
    pos += 2
    if not 2 <= version <= 5:
        raise DwarfError(f"line program at {offset:#x}: unsupported version {version}")
    if version >= 5:
        pos += 2  # address size, segment selector size
    header_length = int.from_bytes(data[pos:pos + offset_size], "little")
    pos += offset_size
    program_start = pos + header_length
    min_inst = data[pos]
    pos += 1
    if version >= 4:
        pos += 1  # maximum operations per instruction (VLIW only)
    line_base = struct.unpack_from("b", data, pos + 1)[0]
    line_range = data[pos + 2]
    opcode_base = data[pos + 3]
    pos += 4
    if line_range == 0:
        raise DwarfError(f"line program at {offset:#x}: line_range is 0")
    std_lengths = tuple(data[pos:pos + opcode_base - 1])
    pos += opcode_base - 1
    comp_dir = unit.comp_dir if unit is not None else None
    files: list[str]
    if version >= 5:
        dfmt, pos = _read_entry_format(data, pos)
        dirs_raw, pos = _read_entries(dw, unit, data, pos, dfmt, offset_size)
        ffmt, pos = _read_entry_format(data, pos)
        files_raw, pos = _read_entries(dw, unit, data, pos, ffmt, offset_size)
        dirs = [d for d, _ in dirs_raw]
        if dirs and comp_dir and not dirs[0].startswith("/"):
            dirs[0] = _join(comp_dir, dirs[0])
        dirs = [d if d.startswith("/") or not comp_dir else _join(comp_dir, d) for d in dirs]
        files = [_join(dirs[di] if di < len(dirs) else None, name) for name, di in files_raw]
        raw_dirs = [d for d, _ in dirs_raw]
        plain = [_plain(raw_dirs[di] if di < len(raw_dirs) else None, name) for name, di in files_raw]
    else:
        dirs = [comp_dir or ""]
        raw_dirs = [comp_dir or ""]
        while data[pos] != 0:
            d, pos = cstring(data, pos)
            dirs.append(d if d.startswith("/") or not comp_dir else _join(comp_dir, d))
            raw_dirs.append(d)
        pos += 1
        files = [""]  # file numbers start at 1
        plain = [""]
        while data[pos] != 0:
            name, pos = cstring(data, pos)
            di, pos = uleb(data, pos)
            _, pos = uleb(data, pos)
            _, pos = uleb(data, pos)
            files.append(_join(dirs[di] if di < len(dirs) else None, name))
            plain.append(_plain(raw_dirs[di] if di < len(raw_dirs) else None, name))
        pos += 1
    relative = bool(comp_dir and not comp_dir.startswith("/"))
    if relative:
        # A relative DW_AT_comp_dir (a build made reproducible with -fdebug-prefix-map, as Debian's glibc
        # with "./csu") anchors nothing: hpcstruct's names are then libdw's dwarf_filesrc names, the
        # directory entry as recorded + "/" + name ("./csu/version.c", "../sysdeps/x86/libc-start.c").
        files = list(plain)
        call_site_files = [f if f.startswith("/") or not f else f"{comp_dir}/{f}" for f in plain]
    else:
        call_site_files = []
    layout = OpcodeLayout(program_start, end, min_inst, line_base, line_range, opcode_base, std_lengths)
    return _Header(layout, comp_dir, files, plain, call_site_files, dirs, raw_dirs, relative)


def build_line_map(programs: list[LineProgram]) -> LineMap:
    """One address -> (file, line) map over all programs (file ids into a merged file list)."""
    files: list[str] = []
    file_ids: dict[str, int] = {}
    los, his, fs, ls = [], [], [], []
    for prog in programs:
        n = len(prog.addr)
        if n < 2:
            continue
        remap = np.array([file_ids.setdefault(f, len(file_ids)) for f in prog.files] or [0], np.int32)
        lo = prog.addr[:-1]
        hi = prog.addr[1:]
        keep = ~prog.end_seq[:-1] & (hi > lo)
        fidx = prog.file[:-1][keep]
        fidx = np.where((fidx >= 0) & (fidx < len(remap)), fidx, 0)
        los.append(lo[keep])
        his.append(hi[keep])
        fs.append(remap[fidx] if len(prog.files) else np.full(int(keep.sum()), -1, np.int32))
        ls.append(prog.line[:-1][keep])
    files = list(file_ids)
    if not los:
        lm = LineMap.empty()
        lm.files = files
        return lm
    lo = np.concatenate(los)
    hi = np.concatenate(his)
    f = np.concatenate(fs)
    ln = np.concatenate(ls)
    order = np.argsort(lo, kind="stable")
    lo, hi, f, ln = lo[order], hi[order], f[order], ln[order]
    # Overlapping sequences (rare: duplicated code, bad tables): the earlier range keeps its addresses.
    if len(lo) > 1 and bool(np.any(lo[1:] < hi[:-1])):
        reach = np.maximum.accumulate(hi)
        prev_reach = np.concatenate([[0], reach[:-1]]).astype(np.uint64)
        lo = np.maximum(lo, prev_reach)
        keep = hi > lo
        lo, hi, f, ln = lo[keep], hi[keep], f[keep], ln[keep]
    return LineMap(lo, hi, f, ln, files)
