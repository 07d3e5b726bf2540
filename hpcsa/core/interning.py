"""String interning shared by the readers and writers: each distinct string numbered once, in order of
first use (the string tables of hpcrun's and hpcstruct's formats and of the ingest model)."""

from __future__ import annotations


def intern(strings: list[str], index: dict[str, int], text: str) -> int:
    """The number of ``text`` in ``strings``; a new string is appended and noted in ``index`` (which maps
    every string of ``strings`` to its position)."""
    i = index.get(text)
    if i is None:
        i = index[text] = len(strings)
        strings.append(text)
    return i
