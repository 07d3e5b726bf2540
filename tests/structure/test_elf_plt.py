"""PLT stubs are named after the GOT slot their jump goes through (``ElfImage.plt_names``)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from hpcsa.structure.elf import _plt_jump_slot, open_elf
from tests.structure.measured import plt_got_truth, plt_truth

ENDBR64 = bytes.fromhex("f30f1efa")


@pytest.mark.parametrize(("stub", "jump_end"), [
    (ENDBR64 + b"\xf2\xff\x25" + struct.pack("<i", 0x1234) + bytes.fromhex("0f1f440000"), 11),  # .plt.sec, IBT
    (b"\xff\x25" + struct.pack("<i", 0x1234) + b"\x68\x03\x00\x00\x00\xe9\x00\xfe\xff\xff", 6),  # lazy .plt
])
def test_the_slot_a_stub_jumps_through(stub: bytes, jump_end: int) -> None:
    """rip-relative: the slot is the end of the jump instruction plus its displacement (by hand: the IBT
    stub's ``bnd jmp`` spans bytes 4-10, the lazy stub's ``jmp`` bytes 0-5)."""
    assert len(stub) == 16
    assert _plt_jump_slot(0x10090, stub) == 0x10090 + jump_end + 0x1234
    negative = stub.replace(struct.pack("<i", 0x1234), struct.pack("<i", -0x20))
    assert _plt_jump_slot(0x10090, negative) == 0x10090 + jump_end - 0x20


def test_a_stub_without_an_indirect_jump_has_no_slot() -> None:
    assert _plt_jump_slot(0x1000, ENDBR64 + bytes.fromhex("e9000000000f1f440000") + b"\x90" * 2) is None
    assert _plt_jump_slot(0x1000, b"\x90" * 14 + b"\xff\x25") is None  # cut short


@pytest.mark.parametrize("library", ["libm.so.6", "libc.so.6"])
def test_system_library_stubs_named_as_objdump_names_them(library: str) -> None:
    """This machine's glibc (whatever its build): every stub of .plt / .plt.sec named as an independent
    reading (pyelftools' relocations, capstone's decoding of each jump) names it; IRELATIVE stubs name
    nothing. glibc interleaves IRELATIVE slots, so names by position would differ here."""
    path = Path("/usr/lib/x86_64-linux-gnu") / library
    if not path.exists():
        pytest.skip(f"{path} is absent (not a Debian/Ubuntu x86-64 system)")
    truth = plt_truth(str(path))
    names = open_elf(str(path)).plt_names
    assert truth and names == truth


def test_plt_got_stubs_bound_as_objdump_binds_them() -> None:
    """libstdc++ reaches ``std::terminate`` (and 24 other functions whose address it also takes) through
    ``.plt.got``: the function each stub jumps to is that of its slot's GLOB_DAT relocation."""
    path = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
    if not path.exists():
        pytest.skip(f"{path} is absent (not a Debian/Ubuntu x86-64 system with libstdc++)")
    truth = plt_got_truth(str(path))
    targets = open_elf(str(path)).plt_got_targets
    assert "_ZSt9terminatev" in truth.values() and targets == truth
