"""Sizes in bytes as users write them in environment variables: ``500M``, ``2G``, ``4096``, ``1.5KiB``."""

from __future__ import annotations

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of ``text``: a number with an optional binary suffix K, M, G or T (``B`` and ``iB`` allowed,
    any case). ValueError when it is not one, or negative."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (t[:-1], t[-1]) if t and t[-1] in _UNITS else (t, "")
    value = float(number) * _UNITS[unit]
    if not value >= 0:  # negative, or NaN
        raise ValueError(text)
    return int(value)
