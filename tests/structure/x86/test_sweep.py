"""A sweep made by two processes (one from a point well into the code) is the one sweep, row for row, wherever
the point falls: on an instruction start, inside an instruction, at a section's start, or where the two
sweeps never meet."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.structure.elf import open_elf
from hpcsa.structure.x86 import sweep as sweep_module
from hpcsa.structure.x86.sweep import SweptTail, TailShare, sweep_code, sweep_tail, tail_start
from tests.conftest import FIXTURES, SHARED_DATA


def _binaries() -> list:
    out = [FIXTURES / "structure" / "sample.so"]
    bins = SHARED_DATA / "hpctoolkit" / "bin"
    for name in ("inlines+loops-x86_64-gcc12-dr", "recursion-x86_64-llvm7-0"):
        if (bins / name).exists():
            out.append(bins / name)
    return out


def _one_sweep(image) -> tuple[np.ndarray, dict[int, str]]:
    operands: dict[int, str] = {}
    return sweep_code(image, operands), operands


def _in_two(image, section: int, start: int) -> tuple[np.ndarray, dict[int, str], TailShare]:
    share = TailShare(section, start, lambda: sweep_tail(image, section, start))
    operands: dict[int, str] = {}
    return sweep_code(image, operands, share), operands, share


@pytest.mark.parametrize("binary", _binaries(), ids=lambda p: p.name)
def test_two_sweeps_are_the_one_sweep_wherever_they_are_split(binary):
    image = open_elf(binary)
    rows, operands = _one_sweep(image)
    assert len(rows) > 100
    secs = image.code_sections
    points = {(i, sec.addr) for i, sec in enumerate(secs)}                 # at a section's start
    for i, sec in enumerate(secs):
        for fraction in (0.1, 0.5, 0.9):
            middle = sec.addr + int(sec.size * fraction)
            points |= {(i, middle + k) for k in range(8) if middle + k < sec.end}  # inside instructions too
    for both in (False, True):
        point = tail_start(image, both)
        assert point is not None
        points.add(point)
    for section, start in sorted(points):
        got, got_operands, share = _in_two(image, section, start)
        assert share.taken
        assert got.tobytes() == rows.tobytes(), (section, hex(start))
        assert got_operands == operands


def test_sweeps_that_never_meet_end_as_this_process_sweeping_on():
    """A tail whose rows start nowhere this sweep goes (as if it were made from bytes that decode otherwise
    to the end): this process sweeps the rest itself."""
    image = open_elf(FIXTURES / "structure" / "sample.so")
    rows, operands = _one_sweep(image)
    section = max(range(len(image.code_sections)), key=lambda i: image.code_sections[i].size)
    sec = image.code_sections[section]
    start = sec.addr + sec.size // 3
    real = sweep_tail(image, section, start)
    stray = real.rows[0].copy()
    stray["addr"] += np.uint64(1 << 40)
    tail = SweptTail(section, start, [stray, *real.rows[1:]], real.operands)
    got_operands: dict[int, str] = {}
    got = sweep_code(image, got_operands, TailShare(section, start, lambda: tail))
    assert got.tobytes() == rows.tobytes()
    assert got_operands == operands


def test_a_small_window_still_meets(monkeypatch):
    monkeypatch.setattr(sweep_module, "SYNC_WINDOW", 1)
    image = open_elf(FIXTURES / "structure" / "sample.so")
    rows, _ = _one_sweep(image)
    sec = max(image.code_sections, key=lambda s: s.size)
    section = image.code_sections.index(sec)
    for k in range(1, 16):
        got, _, _ = _in_two(image, section, sec.addr + sec.size // 2 + k)
        assert got.tobytes() == rows.tobytes()


def test_shares_follow_the_other_process_s_work():
    image = open_elf(FIXTURES / "structure" / "sample.so")
    total = sum(sec.size for sec in image.code_sections)
    for both, share in ((True, sweep_module.TAIL_SHARE_WITH_DEBUG), (False, sweep_module.TAIL_SHARE_ALONE)):
        section, start = tail_start(image, both)
        before = sum(sec.size for sec in image.code_sections[:section]) + start - image.code_sections[section].addr
        assert abs(before - total * (1 - share)) <= 1
