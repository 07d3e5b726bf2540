"""The opcodes of DWARF line-number programs (DWARF 5 §6.2.5), decoded for many programs at once with numpy.

A line-number program is a string of variable-length opcodes driving a small state machine (address,
file, line). An opcode-by-opcode loop in Python costs about 0.2 us per opcode, and a large binary has
millions of them (Debian's ``python3.11d``: 1.5 million in 180 programs; its libc: 2,063 programs).
Here every program of a batch is decoded together, in four vectorized steps:

1. *Lengths.* The length of the opcode that would start at each byte, were one to start there: one
   byte for a special opcode, the end of its ULEB128 operands (the next byte below 0x80) for the others,
   the declared length for an extended one.
2. *Which bytes start opcodes.* The chain from each program's first opcode, each opcode's start plus
   its length. The bytes are cut into chunks of :data:`CHUNK` and every chunk is walked at once, in
   lockstep, from its first byte as if an opcode started there. Where that guess is wrong (the byte is
   an operand), the walk falls onto the true chain within a few opcodes, as the encoding resynchronises;
   only the true opcodes before that meeting point are walked one at a time (and a whole chunk, should
   the two never meet), so the result is exact whatever the bytes.
3. *Operands* of the opcodes found: ULEB128/SLEB128 values, fixed-size fields.
4. *The state machine as prefix sums.* Within a sequence (from a program's start or an
   ``end_sequence`` to the next), the address is the last ``set_address`` plus the advances since, the
   line 1 plus the advances, the file the last ``set_file``; rows are the special opcodes, ``copy`` and
   ``end_sequence``.

Addresses wrap at 64 bits, as the ``Dwarf_Addr`` of libdw and readelf's do. A program whose true opcodes
run past its bytes (an unterminated ULEB128, a truncated field) is corrupt: its entry in the result is a
:class:`~hpcsa.structure.debuginfo.forms.DwarfError`, and the other programs of the batch are unaffected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.debuginfo.forms import DwarfError, cstring, uleb

#: Bytes walked in lockstep per chunk: the walk takes at most this many numpy steps, and the exact walk
#: that repairs a wrong guess visits about one chunk in this many bytes.
CHUNK = 256
#: Bytes after a program's end that its last opcode's operands may be read from (a valid program needs
#: none; a longer overrun marks the program corrupt).
OVERRUN = 16

# Standard opcodes (DWARF 5 §6.2.5.2) and extended ones (§6.2.5.3).
COPY, ADVANCE_PC, ADVANCE_LINE, SET_FILE, SET_COLUMN, CONST_ADD_PC, FIXED_ADVANCE_PC = 1, 2, 3, 4, 5, 8, 9
NO_OPERANDS = (6, 7, 10, 11)  # negate_stmt, set_basic_block, set_prologue_end, set_epilogue_begin
END_SEQUENCE, SET_ADDRESS, DEFINE_FILE = 1, 2, 3


@dataclass(frozen=True)
class OpcodeLayout:
    """What decoding a program's opcodes needs from its header (DWARF 5 §6.2.4)."""

    start: int              # offset of its first opcode in the section
    end: int                # one past its last byte
    min_inst: int
    line_base: int
    line_range: int         # not 0 (the header reader refuses 0)
    opcode_base: int
    std_lengths: tuple[int, ...]  # ULEB128 operands of each standard opcode, from opcode 1


@dataclass
class LineRows:
    """The rows of one program, and the files its ``DW_LNE_define_file`` opcodes add (name, directory)."""

    addr: np.ndarray        # u8
    file: np.ndarray        # i4 (values past the int32 range saturate: no such file)
    line: np.ndarray        # i8, as the state machine computed it
    end_seq: np.ndarray     # bool
    defined_files: list[tuple[str, int]] = field(default_factory=list)

    @staticmethod
    def empty() -> LineRows:
        return LineRows(np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.bool_))


def decode_programs(data: bytes, layouts: Sequence[OpcodeLayout]) -> list[LineRows | DwarfError]:
    """The rows of each program of ``data`` (a ``.debug_line`` section), in the order given."""
    results: list[LineRows | DwarfError] = [LineRows.empty() for _ in layouts]
    batches: dict[tuple[int, ...], list[OpcodeLayout]] = {}
    for lay in dict.fromkeys(lay for lay in layouts if lay.start < lay.end):  # units may share a program
        key = (lay.opcode_base, lay.min_inst, lay.line_base, lay.line_range, *lay.std_lengths)
        batches.setdefault(key, []).append(lay)
    decoded: dict[OpcodeLayout, LineRows | DwarfError] = {}
    for members in batches.values():  # one batch in practice: compilers write the same parameters
        decoded.update(zip(members, _Batch(data, members).decode(), strict=True))
    for k, lay in enumerate(layouts):
        if lay in decoded:
            results[k] = decoded[lay]
    return results


# What an opcode does, by kind (the kinds of one batch's 256 opcodes are a table).
K_SPECIAL, K_COPY, K_ADVANCE_PC, K_ADVANCE_LINE, K_SET_FILE, K_SET_COLUMN = 0, 1, 2, 3, 4, 5
K_NONE, K_CONST_ADD_PC, K_FIXED_ADVANCE_PC, K_EXTENDED, K_OTHER = 6, 7, 8, 9, 10
_STANDARD_KIND = {COPY: K_COPY, ADVANCE_PC: K_ADVANCE_PC, ADVANCE_LINE: K_ADVANCE_LINE, SET_FILE: K_SET_FILE,
                  SET_COLUMN: K_SET_COLUMN, CONST_ADD_PC: K_CONST_ADD_PC, FIXED_ADVANCE_PC: K_FIXED_ADVANCE_PC,
                  0: K_EXTENDED, **dict.fromkeys(NO_OPERANDS, K_NONE)}
_MOVES = np.zeros(11, bool)  # kinds that change the state or make a row (extended ones: by sub-opcode)
_MOVES[[K_SPECIAL, K_COPY, K_ADVANCE_PC, K_ADVANCE_LINE, K_SET_FILE, K_CONST_ADD_PC, K_FIXED_ADVANCE_PC]] = True


class _Batch:
    """Programs with the same header parameters, their bytes copied one after another (each followed by
    up to :data:`OVERRUN` bytes of what follows it in the section, and the whole by one byte that ends no
    ULEB128) so that no step depends on where, or whether twice, a program lies in the section."""

    def __init__(self, data: bytes, layouts: list[OpcodeLayout]) -> None:
        self.data = data
        self.layouts = layouts
        lay = layouts[0]
        base, line_range = lay.opcode_base, lay.line_range
        self.kind = np.array([K_SPECIAL if op >= base else _STANDARD_KIND.get(op, K_OTHER) for op in range(256)],
                             np.uint8)
        self.operands = np.array([0] + [lay.std_lengths[op - 1] if op <= len(lay.std_lengths) else 0
                                        for op in range(1, 256)])
        special = np.arange(256) >= base
        adjusted = np.arange(256) - base
        self.address_step = np.where(special, (adjusted // line_range) * lay.min_inst, 0).astype(np.uint64)
        if CONST_ADD_PC < base:
            self.address_step[CONST_ADD_PC] = ((255 - base) // line_range) * lay.min_inst
        self.line_step = np.where(special, lay.line_base + adjusted % line_range, 0).astype(np.int64)
        self.min_inst = np.uint64(lay.min_inst)
        sizes = [lay.end - lay.start for lay in layouts]
        copied = [min(lay.end + OVERRUN, len(data)) - lay.start for lay in layouts]
        self.offset = np.cumsum([0] + copied[:-1], dtype=np.int64)   # of each program in the buffer
        self.stop = self.offset + sizes                               # one past each program's opcodes
        self.limit = self.offset + copied                             # one past its copied bytes
        view = memoryview(data)
        self.buf = np.frombuffer(b"".join([*(view[lay.start:lay.start + c] for lay, c in zip(layouts, copied,
                                                                                              strict=True)),
                                           b"\x80"]), np.uint8)
        self.program = np.repeat(np.arange(len(layouts), dtype=np.int32), copied)
        self.index: type[np.signedinteger] = np.int32 if len(self.buf) < 2**31 - 2 else np.int64

    def decode(self) -> list[LineRows | DwarfError]:
        kind, nxt, ends = self.lengths()
        return self.rows(self.opcode_starts(nxt), kind, nxt, ends)

    # -- 1. lengths ---------------------------------------------------------------------------------
    def lengths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per byte: the kind of the opcode that would start there, and where the next would start (at
        most the buffer's length); and per byte and one past the last, the last byte of a ULEB128
        starting there (the buffer's length where none ends)."""
        buf, n, it = self.buf, len(self.buf), self.index
        ends = np.full(n + 1, n, it)
        ends[:n] = np.where(buf < 0x80, np.arange(n, dtype=it), it(n))
        ends = np.minimum.accumulate(ends[::-1])[::-1]
        after = ends[1:]                                       # the end of the operand after each byte
        kind = self.kind[buf]
        nxt = np.arange(1, n + 1, dtype=it)
        one = np.flatnonzero((kind >= K_ADVANCE_PC) & (kind <= K_SET_COLUMN))
        nxt[one] = np.minimum(after[one] + 1, n)
        fixed = np.flatnonzero(kind == K_FIXED_ADVANCE_PC)
        nxt[fixed] = np.minimum(fixed + 3, n)
        ext = np.flatnonzero(kind == K_EXTENDED)
        if len(ext):
            size = _uleb_values(buf, ext + 1, after[ext])
            nxt[ext] = np.minimum(after[ext] + 1 + size.astype(np.float64), n).astype(it)
        other = np.flatnonzero(kind == K_OTHER)
        if len(other):  # set_isa and opcodes this reader does not know: skip their declared operands
            pos = other + 1
            count = self.operands[buf[other]]
            for i in range(int(count.max(initial=0))):
                more = count > i
                pos[more] = ends[np.minimum(pos[more], n)] + 1
            nxt[other] = np.minimum(pos, n)
        return kind, nxt, ends

    # -- 2. opcode starts ---------------------------------------------------------------------------
    def opcode_starts(self, nxt: np.ndarray) -> np.ndarray:
        """The positions (ascending) where the programs' opcodes start."""
        it = self.index
        first_chunk: list[int] = []
        chunk_start: list[int] = []
        chunk_end: list[int] = []
        for o, s in zip(self.offset.tolist(), self.stop.tolist(), strict=True):
            first_chunk.append(len(chunk_start))
            bounds = list(range(o, s, CHUNK))
            chunk_start += bounds
            chunk_end += bounds[1:] + [s] if bounds else []
        starts = np.array(chunk_start, it)
        limit = np.array(chunk_end, it)
        mark = np.full(len(self.buf), -1, np.int32)   # which chunk's guessed walk visited a byte
        exit_at = np.empty(len(starts), it)           # where each guessed walk left its chunk
        cur, own, lim = starts, np.arange(len(starts), dtype=np.int32), limit
        while len(cur):
            mark[cur] = own
            cur = nxt[cur]
            out = cur >= lim
            if out.any():
                exit_at[own[out]] = cur[out]
                keep = ~out
                cur, own, lim = cur[keep], own[keep], lim[keep]
        # Follow each program's true chain chunk by chunk: from where it enters a chunk, the chunk's
        # guessed walk is true once they meet (a byte the guess visited); before that, walk exactly.
        trusted_from = limit.tolist()
        exits, ends = exit_at.tolist(), chunk_end
        marks, steps = mark.data, nxt.data  # memoryviews: a fast element read
        walked: list[int] = []
        for o, s, first in zip(self.offset.tolist(), self.stop.tolist(), first_chunk, strict=True):
            e = o
            while e < s:
                c = first + (e - o) // CHUNK
                end = ends[c]
                while e < end and marks[e] != c:
                    walked.append(e)
                    e = steps[e]
                if e < end:
                    trusted_from[c] = e
                    e = exits[c]
        on_chain = mark >= 0
        on_chain &= np.arange(len(mark), dtype=it) >= np.array(trusted_from + [0], it)[mark]
        on_chain[walked] = True
        return np.flatnonzero(on_chain).astype(it)

    # -- 3 and 4. operands and state ----------------------------------------------------------------
    def rows(self, pos: np.ndarray, kind_at: np.ndarray, nxt: np.ndarray, ends: np.ndarray
             ) -> list[LineRows | DwarfError]:
        buf, n, lays = self.buf, len(self.buf), self.layouts
        program = self.program[pos]
        limit = self.limit[program]
        kind = kind_at[pos]
        bad = (nxt[pos] > limit) & (kind != K_EXTENDED)     # operands past the copied bytes
        # Extended opcodes: length, sub-opcode, and set_address's operand.
        ext = np.flatnonzero(kind == K_EXTENDED)
        at, size_end = pos[ext], ends[pos[ext] + 1].astype(np.int64)
        size = _uleb_values(buf, at + 1, size_end)
        sub_at = size_end + 1
        has_sub = size > 0
        bad[ext] |= (size_end >= limit[ext]) | (has_sub & (sub_at >= limit[ext]))
        sub = np.where(has_sub, buf[np.minimum(sub_at, n - 1)], 0)
        address_bytes = np.minimum(size, 9).astype(np.int64) - 1   # more than 8: the low 64 bits
        set_address = has_sub & (sub == SET_ADDRESS)
        bad[ext] |= set_address & (sub_at + address_bytes >= limit[ext])
        end_sequence = has_sub & (sub == END_SEQUENCE)
        defined = ext[has_sub & (sub == DEFINE_FILE)]
        # The opcodes that move the state or make a row.
        moves = _MOVES[kind]
        moves[ext[set_address | end_sequence]] = True
        keep = np.flatnonzero(moves)
        at, kind, program = pos[keep], kind[keep], program[keep]
        op = buf[at]
        m = len(keep)
        ext_set = np.searchsorted(keep, ext[set_address])
        ext_end = np.searchsorted(keep, ext[end_sequence])
        operand_end = ends[at + 1].astype(np.int64)
        # Address: the last set_address of the sequence (else 0) plus the advances since.
        step = self.address_step[op]
        adv = np.flatnonzero(kind == K_ADVANCE_PC)
        step[adv] = _uleb_values(buf, at[adv] + 1, operand_end[adv]) * self.min_inst
        fixed = np.flatnonzero(kind == K_FIXED_ADVANCE_PC)
        step[fixed] = buf[np.minimum(at[fixed] + 1, n - 1)] | (buf[np.minimum(at[fixed] + 2, n - 1)].astype(np.uint64) << np.uint64(8))
        target = np.zeros(m, np.uint64)
        where, count, first_byte = ext_set, address_bytes[set_address], sub_at[set_address] + 1
        for i in range(8):
            use = np.flatnonzero(count > i)
            target[where[use]] |= buf[np.minimum(first_byte[use] + i, n - 1)].astype(np.uint64) << np.uint64(8 * i)
        is_set = np.zeros(m, bool)
        is_set[ext_set] = True
        end_seq = np.zeros(m, bool)
        end_seq[ext_end] = True
        first = np.ones(m, bool)
        first[1:] = (program[1:] != program[:-1]) | end_seq[:-1]   # a sequence starts here
        address = _since_last(step, is_set | first, target)
        # Line: 1 plus the advances of the sequence.
        line_step = self.line_step[op]
        adv = np.flatnonzero(kind == K_ADVANCE_LINE)
        line_step[adv] = _sleb_values(buf, at[adv] + 1, operand_end[adv])
        line = _since_last(line_step, first, np.ones(m, np.int64))
        # File: the last set_file of the sequence, else 1.
        set_file = np.flatnonzero(kind == K_SET_FILE)
        value = np.ones(m, np.int32)
        value[set_file] = np.minimum(_uleb_values(buf, at[set_file] + 1, operand_end[set_file]),
                                     np.uint64(2**31 - 1)).astype(np.int32)
        latest = np.flatnonzero(first | (kind == K_SET_FILE))
        file = np.repeat(value[latest], np.diff(latest, append=m))

        emits = np.flatnonzero((kind == K_SPECIAL) | (kind == K_COPY) | end_seq)
        corrupt = set(self.program[pos[bad]].tolist())
        bounds = np.searchsorted(program[emits], np.arange(len(lays) + 1))
        rows_addr, rows_file, rows_line, rows_end = address[emits], file[emits], line[emits], end_seq[emits]
        out: list[LineRows | DwarfError] = []
        for k, lay in enumerate(lays):
            if k in corrupt:
                out.append(DwarfError(f"line program opcodes at {lay.start:#x} run past its end"))
                continue
            a, b = bounds[k], bounds[k + 1]
            out.append(LineRows(rows_addr[a:b], rows_file[a:b], rows_line[a:b], rows_end[a:b]))
        for i in defined.tolist():  # DWARF 2-4 only, and rare there: read as the header's file entries are
            k = int(self.program[pos[i]])
            rows = out[k]
            if not isinstance(rows, LineRows):
                continue
            entry = lays[k].start + int(sub_at[np.searchsorted(ext, i)]) + 1 - int(self.offset[k])
            try:
                name, after = cstring(self.data, entry)
                directory, _ = uleb(self.data, after)
            except (IndexError, ValueError):
                out[k] = DwarfError(f"line program opcodes at {lays[k].start:#x}: define_file runs past the section")
                continue
            rows.defined_files.append((name, directory))
        return out


def _since_last(step: np.ndarray, anchor: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Per element: ``base`` at the last anchor at or before it (the first element is one), plus the
    steps from that anchor on, this element's included (a sequence's first opcode may advance; a
    set_address has no step). Wraps as the dtype does."""
    total = np.cumsum(step, dtype=step.dtype)
    at = np.flatnonzero(anchor)
    shift = base[at] - (total[at] - step[at])
    return total + np.repeat(shift, np.diff(at, append=len(step)))


def _uleb_values(buf: np.ndarray, start: np.ndarray, last: np.ndarray) -> np.ndarray:
    """ULEB128 values (modulo 2**64) of the operands in ``buf[start:last + 1]``."""
    value = np.zeros(len(start), np.uint64)
    size = (np.asarray(last, np.int64) - start + 1).clip(0, 10)
    top = len(buf) - 1
    for i in range(int(size.max(initial=0))):
        use = np.flatnonzero(size > i) if i else np.arange(len(start))
        value[use] |= (buf[np.minimum(start[use] + i, top)].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * i)
    return value


def _sleb_values(buf: np.ndarray, start: np.ndarray, last: np.ndarray) -> np.ndarray:
    """SLEB128 values (modulo 2**64) of the operands in ``buf[start:last + 1]``."""
    value = _uleb_values(buf, start, last)
    size = np.asarray(last, np.int64) - start + 1
    negative = (size * 7 < 64) & (buf[np.minimum(np.asarray(last, np.int64), len(buf) - 1)] & 0x40 != 0)
    value[negative] -= np.uint64(1) << (7 * size[negative]).astype(np.uint64)
    return value.view(np.int64)
