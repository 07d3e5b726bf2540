"""The batch decoder of line-number programs against programs written from known rows, and against a plain
opcode-by-opcode reading (DWARF 5 §6.2.5) of arbitrary bytes, with chunks small enough that most guessed
walks start on an operand."""

from __future__ import annotations

import os
import random
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpcsa.structure.debuginfo import line_opcodes
from hpcsa.structure.debuginfo.forms import DwarfError
from hpcsa.structure.debuginfo.line_opcodes import OVERRUN, LineRows, OpcodeLayout, decode_programs
from tests.structure.debuginfo.leb128 import sleb, uleb

# HPCSA_LINE_EXAMPLES=5000 for a longer search (with HPCSA_HYPOTHESIS=explore for new examples).
SETTINGS = settings(max_examples=int(os.environ.get("HPCSA_LINE_EXAMPLES", "150")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MASK = 2**64 - 1


def padded_uleb(value: int, size: int) -> bytes:
    """A ULEB128 of ``size`` bytes (producers pad with 0x80 bytes for relaxation)."""
    raw = bytearray(uleb(value))
    while len(raw) < size:
        raw[-1] |= 0x80
        raw.append(0)
    return bytes(raw)


class Overrun(Exception):
    pass


def reference(data: bytes, lay: OpcodeLayout) -> LineRows | None:
    """Opcode by opcode from the program's first byte; None if an opcode's bytes reach past ``OVERRUN``
    bytes after its end. Addresses and operands wrap at 64 bits, lines at int64, files saturate at int32."""
    limit = min(lay.end + OVERRUN, len(data))

    def byte(i: int) -> int:
        if i >= limit:
            raise Overrun
        return data[i]

    def read_uleb(i: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            b = byte(i)
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value & MASK, i

    def read_sleb(i: int) -> tuple[int, int]:
        start = i
        value, i = read_uleb(i)
        if data[i - 1] & 0x40:
            value -= 1 << (7 * (i - start))
        return value & MASK, i

    base, line_range = lay.opcode_base, lay.line_range
    rows: list[tuple[int, int, int, bool]] = []
    defined: list[tuple[str, int]] = []
    address, file, line = 0, 1, 1
    pos = lay.start
    try:
        while pos < lay.end:
            op = byte(pos)
            pos += 1
            if op >= base:
                address += ((op - base) // line_range) * lay.min_inst
                line += lay.line_base + (op - base) % line_range
                rows.append((address, file, line, False))
            elif op == 0:
                size, pos = read_uleb(pos)
                if size:
                    sub = byte(pos)
                    if sub == 1:
                        rows.append((address, file, line, True))
                        address, file, line = 0, 1, 1
                    elif sub == 2:
                        count = min(size - 1, 8)
                        address = int.from_bytes(bytes(byte(pos + 1 + i) for i in range(count)), "little")
                    elif sub == 3:  # read from the section, as the header's file entries are
                        try:
                            end = data.index(b"\0", pos + 1)
                            directory, _ = read_uleb_unbounded(data, end + 1)
                        except (ValueError, IndexError):
                            return None
                        defined.append((data[pos + 1:end].decode("utf-8", "surrogateescape"), directory))
                pos += size
            elif op == 1:
                rows.append((address, file, line, False))
            elif op == 2:
                value, pos = read_uleb(pos)
                address += value * lay.min_inst
            elif op == 3:
                value, pos = read_sleb(pos)
                line += value
            elif op == 4:
                file, pos = read_uleb(pos)
                file = min(file, 2**31 - 1)
            elif op == 5:
                _, pos = read_uleb(pos)
            elif op == 8:
                address += ((255 - base) // line_range) * lay.min_inst
            elif op == 9:
                address += byte(pos) | byte(pos + 1) << 8
                pos += 2
            elif op not in (6, 7, 10, 11):
                for _ in range(lay.std_lengths[op - 1] if op <= len(lay.std_lengths) else 0):
                    _, pos = read_uleb(pos)
            address &= MASK
            line = (line + 2**63) % 2**64 - 2**63
    except Overrun:
        return None
    a, f, ln, e = zip(*rows, strict=True) if rows else ((), (), (), ())
    return LineRows(np.array(a, np.uint64), np.array(f, np.int32), np.array(ln, np.int64), np.array(e, bool), defined)


def read_uleb_unbounded(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def same(got: LineRows | DwarfError, want: LineRows | None) -> bool:
    if want is None or isinstance(got, DwarfError):
        return want is None and isinstance(got, DwarfError)
    return (np.array_equal(got.addr, want.addr) and np.array_equal(got.file, want.file)
            and np.array_equal(got.line, want.line) and np.array_equal(got.end_seq, want.end_seq)
            and got.defined_files == want.defined_files)


def with_chunk(size: int, data: bytes, layouts: list[OpcodeLayout]) -> list[LineRows | DwarfError]:
    saved = line_opcodes.CHUNK
    line_opcodes.CHUNK = size
    try:
        return decode_programs(data, layouts)
    finally:
        line_opcodes.CHUNK = saved


# ---------------------------------------------------------------------------------------------------
# Programs written from rows


# (min_inst, line_base, line_range, opcode_base): gcc's, clang's, DWARF 2's, and odd ones
WRITABLE = [(1, -5, 14, 13), (1, -3, 12, 13), (4, -5, 14, 10), (1, -5, 14, 16), (2, 1, 1, 13)]
PARAMS = st.sampled_from(WRITABLE)
ANY_PARAMS = st.sampled_from([*WRITABLE, (1, -1, 4, 1), (1, 0, 255, 2)])  # nearly every opcode special


@st.composite
def written(draw):
    """A program written from random sequences of rows with every kind of opcode, and its rows."""
    min_inst, line_base, line_range, base = draw(PARAMS)
    std_lengths = (0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 2, 0, 3)[:base - 1]
    rng = random.Random(draw(st.integers(0, 2**32)))
    out = bytearray()
    rows: list[tuple[int, int, int, bool]] = []
    defined: list[tuple[str, int]] = []

    def noise() -> None:
        for _ in range(rng.choice((0, 0, 1, 2))):
            pick = rng.randrange(6)
            if pick == 0 and base > 5:
                out.extend(b"\x05" + padded_uleb(rng.randrange(300), rng.choice((1, 1, 2, 3))))  # set_column
            elif pick == 1 and base > 7:
                out.append(rng.choice((6, 7)))                    # negate_stmt, basic_block
            elif pick == 2:
                operand = uleb(rng.randrange(200))
                out.extend(b"\x00" + uleb(1 + len(operand)) + b"\x04" + operand)  # set_discriminator
            elif pick == 3 and base > 13:
                op = rng.randrange(13, base)                      # opcodes this reader does not know
                out.append(op)
                for _ in range(std_lengths[op - 1]):
                    out.extend(uleb(rng.randrange(1000)))
            elif pick == 4 and base > 12:
                out.extend(b"\x0c" + uleb(rng.randrange(5)))      # set_isa
            elif pick == 5:
                out.extend(b"\x00" + uleb(3) + b"\x80\x81\x00")  # unknown extended opcode, skipped whole

    for _ in range(rng.randrange(1, 5)):
        address, line, file = rng.randrange(1 << 20, 1 << 40) * min_inst, 1, 1
        out.extend(b"\x00" + uleb(9) + b"\x02" + struct.pack("<Q", address))
        for _ in range(rng.randrange(0, 40)):
            noise()
            if base > 4 and rng.random() < 0.2:
                file = rng.randrange(1, 9)
                out.extend(b"\x04" + uleb(file))
            if rng.random() < 0.05:
                name = f"f{rng.randrange(100)}.c"
                defined.append((name, 1))
                body = b"\x03" + name.encode() + b"\0" + uleb(1) + uleb(0) + uleb(0)
                out.extend(b"\x00" + uleb(len(body)) + body)
            address_step = rng.choice((0, 1, 3, 17, 300, 70000)) * min_inst
            line_step = rng.choice((0, 1, -1, 2, 7, -40, 5000))
            adj = (line_step - line_base) + line_range * (address_step // min_inst)
            how = rng.randrange(4)
            if how == 0 and 0 <= line_step - line_base < line_range and base + adj <= 255:
                out.append(base + adj)                            # special
            elif how == 1 and base > 9 and address_step < 1 << 16:
                out.extend(b"\x09" + struct.pack("<H", address_step))
                out.extend(b"\x03" + sleb(line_step) + b"\x01")
            else:
                if base > 8 and rng.random() < 0.3 and address_step >= ((255 - base) // line_range) * min_inst:
                    const = ((255 - base) // line_range) * min_inst
                    out.append(8)                                 # const_add_pc
                    rest = address_step - const
                else:
                    rest = address_step
                out.extend(b"\x02" + uleb(rest // min_inst) + b"\x03" + sleb(line_step) + b"\x01")
            address += address_step
            line += line_step
            rows.append((address, file, line, False))
        noise()
        rows.append((address, file, line, True))
        out.extend(b"\x00" + uleb(1) + b"\x01")
    return bytes(out), (min_inst, line_base, line_range, base, std_lengths), rows, defined


@given(st.lists(written(), min_size=1, max_size=5), st.sampled_from([1, 2, 3, 7, 64, 256, 4096]),
       st.integers(0, 40))
@SETTINGS
def test_written_programs_decode_to_their_rows(programs, chunk, gap):
    data = bytearray(b"\xff" * gap)
    layouts = []
    for body, (min_inst, line_base, line_range, base, std_lengths), _, _ in programs:
        layouts.append(OpcodeLayout(len(data), len(data) + len(body), min_inst, line_base, line_range, base,
                                    std_lengths))
        data += body + b"\x81" * gap                               # headers would lie between programs
    layouts.append(layouts[0])                                     # two units naming one program
    got = with_chunk(chunk, bytes(data), layouts)
    for result, (_, _, rows, defined) in zip(got, [*programs, programs[0]], strict=True):
        assert isinstance(result, LineRows)
        want = list(zip(*rows, strict=True))
        assert result.addr.tolist() == list(want[0])
        assert result.file.tolist() == list(want[1])
        assert result.line.tolist() == list(want[2])
        assert result.end_seq.tolist() == list(want[3])
        assert result.defined_files == defined


# ---------------------------------------------------------------------------------------------------
# Arbitrary bytes against the plain reading

OPCODE_BYTES = st.one_of(st.integers(0, 15), st.integers(0, 255), st.sampled_from([0x80, 0xFF, 0x7F]))


@st.composite
def arbitrary(draw):
    data = bytes(draw(st.lists(OPCODE_BYTES, min_size=1, max_size=600)))
    layouts = []
    for _ in range(draw(st.integers(1, 4))):  # programs may overlap, nest, or end the section
        start = draw(st.integers(0, len(data) - 1))
        end = draw(st.integers(start, len(data)))
        min_inst, line_base, line_range, base = draw(ANY_PARAMS)
        std_lengths = tuple(draw(st.lists(st.integers(0, 3), min_size=base - 1, max_size=base - 1)))
        layouts.append(OpcodeLayout(start, end, min_inst, line_base, line_range, base, std_lengths))
    return data, layouts


@given(arbitrary(), st.sampled_from([1, 2, 5, 16, 256]))
@SETTINGS
def test_arbitrary_bytes_read_as_one_opcode_at_a_time(case, chunk):
    data, layouts = case
    got = with_chunk(chunk, data, layouts)
    for lay, result in zip(layouts, got, strict=True):
        assert same(result, reference(data, lay)), lay


@given(st.lists(written(), min_size=1, max_size=3), st.data())
@SETTINGS
def test_damaged_programs_read_as_one_opcode_at_a_time(programs, draw):
    data = bytearray()
    layouts = []
    for body, (min_inst, line_base, line_range, base, std_lengths), _, _ in programs:
        layouts.append(OpcodeLayout(len(data), len(data) + len(body), min_inst, line_base, line_range, base,
                                    std_lengths))
        data += body
    for _ in range(draw.draw(st.integers(1, 6))):
        data[draw.draw(st.integers(0, len(data) - 1))] = draw.draw(st.integers(0, 255))
    chunk = draw.draw(st.sampled_from([1, 3, 8, 256]))
    for lay, result in zip(layouts, with_chunk(chunk, bytes(data), layouts), strict=True):
        assert same(result, reference(bytes(data), lay))


# ---------------------------------------------------------------------------------------------------
# Cases by hand


def layout(start: int, end: int, base: int = 13) -> OpcodeLayout:
    return OpcodeLayout(start, end, 1, -5, 14, base, (0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1)[:base - 1])


def test_addresses_wrap_at_64_bits_as_libdw_reads_them():
    program = (b"\x00\x09\x02" + struct.pack("<Q", 2**64 - 16) + b"\x02" + uleb(0x20) + b"\x01"
               + b"\x00\x01\x01")
    rows = decode_programs(program, [layout(0, len(program))])[0]
    assert isinstance(rows, LineRows)
    assert rows.addr.tolist() == [0x10, 0x10]
    assert rows.end_seq.tolist() == [False, True]


def test_a_program_whose_operand_runs_past_its_end_is_corrupt_and_its_neighbours_are_not():
    good = b"\x00\x09\x02" + struct.pack("<Q", 0x1000) + b"\x14\x00\x01\x01"
    bad = b"\x02" + b"\xff" * (OVERRUN + 4)                        # advance_pc whose ULEB128 never ends
    data = good + bad + good
    got = decode_programs(data, [layout(0, len(good)), layout(len(good), len(good) + 1),
                                 layout(len(good + bad), len(data))])
    assert isinstance(got[1], DwarfError)
    for rows in (got[0], got[2]):
        assert isinstance(rows, LineRows)
        assert rows.addr.tolist() == [0x1000 + (0x14 - 13) // 14, 0x1000 + (0x14 - 13) // 14]


def test_empty_programs_have_no_rows():
    assert [len(r.addr) for r in decode_programs(b"\x01\x01", [layout(1, 1), layout(2, 2)])] == [0, 0]


@pytest.mark.parametrize("chunk", [1, 4, 256])
def test_a_long_program_is_one_chain_across_chunks(chunk):
    """Every third byte an operand that looks like an opcode: most guessed walks start wrong."""
    body = b"\x00\x09\x02" + struct.pack("<Q", 0x400000) + (b"\x05\x01\x13" * 500) + b"\x00\x01\x01"
    rows = with_chunk(chunk, body, [layout(0, len(body))])[0]
    assert isinstance(rows, LineRows)
    assert len(rows.addr) == 501
    assert rows.addr[-1] == 0x400000
    assert rows.line.tolist()[:3] == [2, 3, 4]
