"""hpcrun's placeholder codes and names (hpcsa/formats/measurement/placeholders.py) and id-tuple kinds (hpcsa/formats/measurement/hpcrun.py)."""

from __future__ import annotations

from hpcsa.formats.measurement import hpcrun, placeholders


def test_codes_are_the_shortcodes_packed_big_endian() -> None:
    assert placeholders.GPU_KERNEL == int.from_bytes(b"GPUKernl", "big")
    assert placeholders.PRIMARY == int.from_bytes(b"^Primary", "big")
    assert placeholders.PH["sync"] == int.from_bytes(b"GPU Sync", "big")
    assert len(set(placeholders.PH.values())) == len(placeholders.PH)  # no two roles share a code


def test_names_as_hpcprof_shows_them() -> None:
    assert placeholders.placeholder_name(placeholders.GPU_KERNEL) == "<gpu kernel>"
    assert placeholders.placeholder_name(placeholders.PH["trace"]) == "<gpu kernel>"
    assert placeholders.placeholder_name(placeholders.FENCE_MAIN) == "<program root>"
    # Unnamed codes are shown by their shortcode, unprintable bytes escaped.
    assert placeholders.placeholder_name(int.from_bytes(b"NoActvty", "big")) == "NoActvty"
    assert placeholders.placeholder_name(int.from_bytes(b"ab\x01cdefg", "big")) == "ab\\01cdefg"


def test_element_kinds_carry_their_interpretation_in_the_high_bits() -> None:
    assert hpcrun.NODE_ELEMENT == 0x4001  # NODE, LOGIC_LOCAL
    assert (hpcrun.RANK_ELEMENT, hpcrun.THREAD_ELEMENT) == (0xC002, 0xC003)  # LOGIC_ONLY
    assert hpcrun.GPUSTREAM_ELEMENT & hpcrun.ID_KIND_MASK == hpcrun.ID_GPUSTREAM == 6
    assert hpcrun.ID_KINDS[hpcrun.ID_GPUCONTEXT] == "GPUCONTEXT"
