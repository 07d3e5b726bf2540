"""Unit tests of the GPU structure pieces on hand-made inputs with hand-computed answers:
NVIDIA's line-table extension, the nvdisasm listing reader, basic blocks and loops, names."""

from __future__ import annotations

import struct

import numpy as np

from hpcsa.structure.gpu.build import demangle, drop_return_type
from hpcsa.structure.gpu.cfg import (
    E_CALL_FT,
    E_DIRECT,
    E_FALLTHROUGH,
    E_INDIRECT,
    E_NOT_TAKEN,
    E_TAKEN,
    Code,
    build_graph,
)
from hpcsa.structure.gpu.cubin_lines import read_cubin_lines
from hpcsa.structure.gpu.nvdisasm import (
    K_BRANCH,
    K_CALL,
    K_EXIT,
    K_INDIRECT,
    K_OTHER,
    K_RETURN,
    parse_listing,
)
from hpcsa.structure.loops import find_loops
from tests.structure.debuginfo.leb128 import sleb, uleb

# -- NVIDIA's inline records in .debug_line ---------------------------------------------------------


def ext(sub: int, payload: bytes) -> bytes:
    return b"\0" + uleb(1 + len(payload)) + bytes([sub]) + payload


def line_unit(program: bytes, str_base: int) -> bytes:
    """A DWARF 2 line unit as nvcc writes it: one directory, one file, 4 bytes of .debug_str base."""
    header = bytes([1, 1]) + struct.pack("b", -5) + bytes([14, 10]) + bytes([0, 1, 1, 1, 1, 0, 0, 0, 1])
    header += b"/src\0\0" + b"a.cu\0" + uleb(1) + uleb(0) + uleb(0) + b"\0" + struct.pack("<I", str_base)
    body = struct.pack("<H", 2) + struct.pack("<I", len(header)) + header + program
    return struct.pack("<I", len(body)) + body


def set_address(a: int) -> bytes:
    return ext(2, struct.pack("<Q", a))


def inlined(ctx: int, fn: int) -> bytes:
    return ext(0x90, uleb(ctx) + uleb(fn))


COPY, ADV_PC, ADV_LINE = b"\x01", b"\x02", b"\x03"


def test_line_table_with_nested_inline_contexts():
    # sequence 1 (0x100): rows 1..6; row 2 (line 12) calls f, f's row 4 (line 4) calls g
    seq1 = (set_address(0x100) + ADV_LINE + sleb(9) + COPY                # row 1: 0x100 l10
            + ADV_PC + uleb(0x20) + ADV_LINE + sleb(2) + COPY             # row 2: 0x120 l12 (call site of f)
            + inlined(2, 0) + ADV_LINE + sleb(-9) + COPY                  # row 3: 0x120 l3 in f
            + ADV_PC + uleb(0x10) + ADV_LINE + sleb(1) + COPY             # row 4: 0x130 l4 in f (calls g)
            + inlined(4, 6) + ADV_LINE + sleb(3) + COPY                   # row 5: 0x130 l7 in g in f
            + ADV_PC + uleb(0x10) + inlined(0, 0) + ADV_LINE + sleb(6) + COPY  # row 6: 0x140 l13
            + ADV_PC + uleb(0x10) + ext(1, b""))                          # end at 0x150
    # sequence 2 (0x200): context numbers restart with each sequence
    seq2 = (set_address(0x200) + ADV_LINE + sleb(19) + COPY               # row 1: 0x200 l20
            + inlined(1, 0) + ADV_LINE + sleb(-17) + ADV_PC + uleb(0x10) + COPY  # row 2: 0x210 l3 in f
            + ADV_PC + uleb(0x10) + ext(1, b""))
    strings = b"junk\0" + b"_Z1fv\0" + b"_Z1gv\0"   # this unit's strings start at 5 in .debug_str
    got = read_cubin_lines(line_unit(seq1 + seq2, 5), strings, demangle)
    assert got.notes == []
    lm = got.lines
    rows = [(int(a), int(b), lm.files[int(f)], int(ln)) for a, b, f, ln in zip(lm.lo, lm.hi, lm.file, lm.line,
                                                                                strict=True)]
    assert rows == [(0x100, 0x120, "/src/a.cu", 10), (0x120, 0x130, "/src/a.cu", 3),
                    (0x130, 0x140, "/src/a.cu", 7), (0x140, 0x150, "/src/a.cu", 13),
                    (0x200, 0x210, "/src/a.cu", 20), (0x210, 0x220, "/src/a.cu", 3)]
    inl = got.inlines
    addrs = np.array([0x100, 0x120, 0x130, 0x140, 0x200, 0x210], np.uint64)
    chains = [inl.chain(int(n)) for n in inl.innermost(addrs)]
    f12, g4, f20 = ("/src/a.cu", 12, "f()"), ("/src/a.cu", 4, "g()"), ("/src/a.cu", 20, "f()")
    assert chains == [(), (f12,), (f12, g4), (), (), (f20,)]


def test_unreadable_line_unit_is_a_note_not_an_error():
    got = read_cubin_lines(struct.pack("<IH", 100, 9) + b"\0" * 10, b"", demangle)
    assert len(got.lines.lo) == 0 and got.notes and "unreadable" in got.notes[0]


def test_line_and_address_registers_pushed_past_machine_integers():
    """A damaged program can advance the line past 2^63 and the address past 2^64 (found by fuzzing a
    cubin): the address wraps as a 64-bit target address does, the line is held at the largest the tables
    store, and the rows around them stay as they are."""
    program = (set_address(0x100) + ADV_LINE + sleb(9) + COPY                    # 0x100 l10
               + ADV_PC + uleb(0x10) + ADV_LINE + sleb(1 << 70) + COPY          # 0x110, line past 2^63
               + ADV_LINE + sleb(-(1 << 70)) + ADV_PC + uleb(0x10) + COPY       # 0x120 l10 again
               + ADV_PC + uleb(0x10) + ext(1, b"")                              # end at 0x130
               + set_address(0xFFFF_FFFF_FFFF_FFF0) + ADV_LINE + sleb(4) + COPY  # 0xfff...f0 l5
               + ADV_PC + uleb(0x20) + ext(1, b""))                             # end: wraps to 0x10
    got = read_cubin_lines(line_unit(program, 0), b"", demangle)
    assert got.notes == []
    lm = got.lines
    rows = [(int(a), int(b), int(ln)) for a, b, ln in zip(lm.lo, lm.hi, lm.line, strict=True)]
    assert rows[:3] == [(0x100, 0x110, 10), (0x110, 0x120, 2**31 - 1), (0x120, 0x130, 10)]


# -- nvdisasm listings --------------------------------------------------------------------------------

LISTING = """
\t.section\t.text._Z1kv,"ax",@progbits
_Z1kv:
.text._Z1kv:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/               @P0 BRA `(.L_x_1) ;
        /*0020*/                   CALL.REL.NOINC `($_Z1kv$_Z1fv) ;
        /*0030*/                   CALL.REL.NOINC R6 `(_Z1kv) ;
.L_x_1:
        /*0040*/                   BRX R4 -0x50                            (*"BRANCH_TARGETS .L_x_1,.L_x_2"*);
        /*0050*/              @!P1 EXIT ;
.L_x_2:
        /*0060*/                   EXIT ;
        .type           $_Z1kv$_Z1fv,@function
$_Z1kv$_Z1fv:
        /*0070*/                   BSSY B0, `(.L_x_3) ;
        /*0080*/                   BRA P1, `(.L_x_3) ;
.L_x_3:
        /*0090*/                   RET.REL.NODEC R20 `(_Z1kv) ;
.L_x_4:
        /*00a0*/                   BRA `(.L_x_4);
\t.section\t.nv.info,"",@"SHT_CUDA_INFO"
"""


def test_listing_columns():
    (sc,) = parse_listing(LISTING)
    assert sc.name == ".text._Z1kv"
    assert sc.offset.tolist() == list(range(0, 0xB0, 0x10))
    assert sc.kind.tolist() == [K_OTHER, K_BRANCH, K_CALL, K_CALL, K_INDIRECT, K_EXIT, K_EXIT, K_OTHER, K_BRANCH,
                                K_RETURN, K_BRANCH]
    # a guard, or a predicate operand (BRA P1), makes a branch conditional; @!P1 EXIT falls through
    assert sc.conditional.tolist() == [False, True, False, False, False, True, False, False, True, False, False]
    assert sc.target.tolist() == [-1, 0x40, -1, -1, -1, -1, -1, -1, 0x90, -1, 0xA0]
    assert sc.callee == {2: "$_Z1kv$_Z1fv"}   # the register call names only its own kernel: no callee
    assert sc.targets == {4: [0x40, 0x60]}
    assert sc.labels["$_Z1kv$_Z1fv"] == 0x70 and sc.labels["_Z1kv"] == 0


def code_of(sc, lo: int, hi: int, base: int = 0x1000) -> Code:
    rows = (sc.offset >= lo) & (sc.offset < hi)
    target = np.where(sc.target[rows] >= 0, sc.target[rows] + base, -1)
    first = int(np.flatnonzero(rows)[0])
    indirect = {r - first: [t + base for t in ts] for r, ts in sc.targets.items() if rows[r]}
    return Code(sc.offset[rows] + np.uint64(base), np.full(int(rows.sum()), 16), sc.kind[rows],
                sc.conditional[rows], target, {}, indirect)


def test_blocks_edges_and_loops():
    (sc,) = parse_listing(LISTING)
    g = build_graph(code_of(sc, 0, 0x70))
    blocks = [(b.start, b.end) for b in g.blocks]
    # 0x50 (@!P1 EXIT) is reached by no edge: padding-like code is left to the gaps
    assert blocks == [(0x1000, 0x1020), (0x1020, 0x1030), (0x1030, 0x1040), (0x1040, 0x1050), (0x1060, 0x1070)]
    succ = {g.blocks[i].start: [(g.blocks[t].start, k) for t, k in b.succs] for i, b in enumerate(g.blocks)}
    assert succ == {0x1000: [(0x1040, E_TAKEN), (0x1020, E_NOT_TAKEN)], 0x1020: [(0x1030, E_CALL_FT)],
                    0x1030: [(0x1040, E_CALL_FT)], 0x1040: [(0x1040, E_INDIRECT), (0x1060, E_INDIRECT)],
                    0x1060: []}
    assert [g.blocks[i].call for i in range(5)] == [None, 2, 3, None, None]  # rows of the two calls
    top, _ = find_loops(g.succ_lists(), g.entry)
    assert len(top) == 1 and top[0].entries == {3} and top[0].blocks == {3}

    f = build_graph(code_of(sc, 0x70, 0xB0))
    assert [(b.start, b.end) for b in f.blocks] == [(0x1070, 0x1090), (0x1090, 0x10A0)]  # BRA-to-self padding out
    assert f.blocks[0].succs == [(1, E_TAKEN), (1, E_NOT_TAKEN)]
    assert find_loops(f.succ_lists(), f.entry)[0] == []


def test_straight_line_blocks_fall_through():
    code = Code(np.array([0, 16, 32, 48], np.uint64), np.full(4, 16), np.array([K_OTHER, K_BRANCH, K_OTHER, K_EXIT],
                np.uint8), np.zeros(4, bool), np.array([-1, 32, -1, -1]))
    g = build_graph(code)
    assert [(b.start, b.end, b.succs) for b in g.blocks] == [(0, 32, [(1, E_DIRECT)]), (32, 64, [])]
    code.target[1] = 48  # a branch into the middle of a run splits it
    g = build_graph(code)
    assert [(b.start, b.succs) for b in g.blocks] == [(0, [(1, E_DIRECT)]), (48, [])]
    assert E_FALLTHROUGH not in [k for b in g.blocks for _t, k in b.succs]


# -- names ----------------------------------------------------------------------------------------------


def test_demangled_names_drop_template_return_types():
    assert demangle("_ZN2QS15atomicIncrementImEEvRT_") == "QS::atomicIncrement<unsigned long>(unsigned long&)"
    assert demangle("_Z4leafi") == "leaf(int)"
    assert demangle("$_Z8kernmainv$_Z4leafi") == "$_Z8kernmainv$_Z4leafi"  # clones stay as nvcc names them
    assert drop_return_type("unsigned long f<int>(int)") == "f<int>(int)"
    assert drop_return_type("void (anonymous namespace)::f<int>(int)") == "(anonymous namespace)::f<int>(int)"
    assert drop_return_type("std::vector<int>::size() const") == "std::vector<int>::size() const"
