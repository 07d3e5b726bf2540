"""Attribute values of the vectorized structure reader (:mod:`hpcsa.formats.hpcstruct.scan`): numbers,
address-range sets and strings, converted for all values of a segment at once, exactly as the general
reader (expat and ``int``) would give them, or :class:`NotCanonical` where they are written otherwise."""

from __future__ import annotations

import numpy as np

#: Byte classes of the range marks, the highest of the reader's classes ('[', '-', ')').
LBRACKET, DASH, RPAREN = 5, 6, 7

#: A byte's value as a (hexa)decimal digit, 255 for other bytes (both readers' number conversion).
DIGIT = np.full(256, 255, np.uint8)
for _i, _ch in enumerate(b"0123456789abcdef"):
    DIGIT[_ch] = _i
for _i, _ch in enumerate(b"ABCDEF"):
    DIGIT[_ch] = 10 + _i
#: For ``bytes.translate``: the same, a segment at a time.
DIGIT_TABLE = bytes(DIGIT)
ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


class NotCanonical(Exception):
    """The file strays from the canonical form (or is invalid): the general reader takes it."""


def decode(raw: bytes) -> str:
    """UTF-8 that XML allows (expat refuses the rest; the general reader then reports it)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotCanonical from None
    if not text.isascii() and ("\ufffe" in text or "\uffff" in text):
        raise NotCanonical
    return text


def replace_entities(joined: str, values: list[str]) -> list[str]:
    """``values`` (``joined`` by NULs) with their entities replaced: the five predefined ones on the whole
    text at once, character references value by value."""
    if "&#" in joined:
        return [entities(t) if "&" in t else t for t in values]
    for entity in ("&lt;", "&gt;", "&quot;", "&apos;"):
        if entity in joined:
            joined = joined.replace(entity, ENTITIES[entity[1:-1]])
    if "&" in joined.replace("&amp;", ""):
        raise NotCanonical  # an entity not declared (expat refuses it)
    return joined.replace("&amp;", "&").split("\0")


def entities(text: str) -> str:
    """A value's predefined entities and character references replaced, as expat does."""
    out = []
    for k, piece in enumerate(text.split("&")):
        if k == 0:
            out.append(piece)
            continue
        name, semi, rest = piece.partition(";")
        if not semi:
            raise NotCanonical
        if name in ENTITIES:
            out.append(ENTITIES[name])
        elif name[:2] == "#x" and 2 < len(name) <= 8 and all(c in "0123456789abcdefABCDEF" for c in name[2:]):
            out.append(char(int(name[2:], 16)))
        elif name[:1] == "#" and 1 < len(name) <= 8 and name[1:].isascii() and name[1:].isdigit():
            out.append(char(int(name[1:])))
        else:
            raise NotCanonical
        out.append(rest)
    return "".join(out)


def char(code: int) -> str:
    """A character reference's character, if XML allows it."""
    if code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF:
        return chr(code)
    raise NotCanonical


def numbers(digits: np.ndarray, start: np.ndarray, end: np.ndarray, hexadecimal: bool, most: int) -> np.ndarray:
    """The numbers written at ``start:end`` (decimal, or hexadecimal of either case; ``digits``: each byte's
    digit value, 255 for other bytes), at most ``most``
    digits each. Numbers of one length are converted together, a digit column at a time: an order of
    magnitude faster than laying all digits end to end and summing them back per number."""
    lens = end - start
    out = np.empty(len(start), np.uint64)
    if not len(lens):
        return out
    if int(lens.min()) < 1 or int(lens.max()) > most:
        raise NotCanonical
    limit = 15 if hexadecimal else 9
    shift, ten = np.uint64(4), np.uint64(10)
    lengths = np.flatnonzero(np.bincount(lens)).tolist()
    for length in lengths:
        chosen = np.flatnonzero(lens == length) if len(lengths) > 1 else slice(None)
        at = start[chosen]
        digit = digits[at]
        worst = int(digit.max())
        acc = digit.astype(np.uint64)
        for k in range(1, length):
            digit = digits[at + k]
            worst = max(worst, int(digit.max()))
            if hexadecimal:
                acc <<= shift
                acc |= digit
            else:
                acc *= ten
                acc += digit
        if worst > limit:
            raise NotCanonical
        out[chosen] = acc
    return out


def decimal(digits: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Values of plain decimal digits (what the general reader's ``int()`` gives), at most 18 digits."""
    return numbers(digits, start, end, False, 18).astype(np.int64)


def hexadecimal(seg: np.ndarray, digits: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``0x`` and at most 15 hex digits (so the value fits the signed column)."""
    if np.any(seg[start] != ord("0")) or np.any(seg[start + 1] != ord("x")):
        raise NotCanonical
    return numbers(digits, start + 2, end, True, 15).astype(np.int64)


def ranges(seg: np.ndarray, digits: np.ndarray, marks: tuple[np.ndarray, np.ndarray, np.ndarray, int], value: np.ndarray,
            start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Address-range sets ``{[0xA-0xB) [0xC-0xD)}`` (the values numbered ``value`` of the segment, at
    ``start:end``): (ranges per value, lo, hi). ``marks``: the '[', '-' and ')' inside the segment's values."""
    if np.any(seg[start] != ord("{")) or np.any(seg[end - 1] != ord("}")):
        raise NotCanonical
    inner_start, inner_end = start + 1, end - 1
    empty = inner_end == inner_start
    mark_pos, mark_class, mark_value, nvalues = marks
    order = np.full(nvalues, -1, np.int64)
    order[value] = np.arange(len(value))
    which = order[mark_value]
    mine = which >= 0
    pos, mark, which = mark_pos[mine], mark_class[mine], which[mine]
    if len(pos) % 3 or np.any(mark[0::3] != LBRACKET) or np.any(mark[1::3] != DASH) \
            or np.any(mark[2::3] != RPAREN):
        raise NotCanonical  # every range is "[0x" digits "-0x" digits ")"
    lb, dash, rp = pos[0::3], pos[1::3], pos[2::3]
    lb_owner = which[0::3]
    if np.any(which[1::3] != lb_owner) or np.any(which[2::3] != lb_owner):
        raise NotCanonical
    counts = np.bincount(lb_owner, minlength=len(start))
    if np.any((counts == 0) != empty):
        raise NotCanonical
    firsts = np.ones(len(lb), bool)
    firsts[1:] = lb_owner[1:] != lb_owner[:-1]
    lasts = np.ones(len(lb), bool)
    lasts[:-1] = firsts[1:]
    expected_lb = np.empty(len(lb), np.int64)
    expected_lb[1:] = rp[:-1] + 2
    expected_lb[firsts] = inner_start[lb_owner[firsts]]
    if np.any(lb != expected_lb) or np.any(rp[lasts] + 1 != inner_end[lb_owner[lasts]]):
        raise NotCanonical
    if np.any(seg[rp[~lasts] + 1] != ord(" ")):
        raise NotCanonical
    for p in (lb, dash):
        if np.any(seg[p + 1] != ord("0")) or np.any(seg[p + 2] != ord("x")):
            raise NotCanonical
    return counts, numbers(digits, lb + 3, dash, True, 16), numbers(digits, dash + 3, rp, True, 16)


def values(seg: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[str]:
    """The values ``seg[start:end]`` (in order, not overlapping) decoded from UTF-8 once, end to end, each
    followed by its closing '"' (no value holds one); entities are left for ``_Module.intern()``."""
    if not len(start):
        return []
    runs = np.empty(2 * len(start) + 1, np.int64)  # bytes skipped, kept, skipped, ...
    runs[0] = start[0]
    runs[1:-1:2] = end + 1 - start  # a value and the '"' after it
    runs[2:-1:2] = start[1:] - end[:-1] - 1
    runs[-1] = len(seg) - end[-1] - 1
    raw = seg[np.repeat(np.arange(len(runs)) % 2 == 1, runs)].tobytes()
    return decode(raw).split('"')[:-1]
