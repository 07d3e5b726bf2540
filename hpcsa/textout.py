"""Text output that never fails on names that are not UTF-8.

Names read from binary formats (load modules, functions, files, metrics) are decoded with
``surrogateescape``, so a byte that is not UTF-8 survives as a lone surrogate (PEP 383). Printing such
a string with the strict encoder raises ``UnicodeEncodeError``; :func:`escape_streams` makes stdout and
stderr write it as ``\\xNN`` (the original byte, as Python writes bytes) and any other character the
stream cannot encode as ``\\uNNNN``, whether the stream is a terminal, a pipe or a file.
:func:`end_now` ends a process once what it wrote to them is out.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import sys
from typing import NoReturn

ERRORS = "hpcsa-escape"


def _escape(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out), exc.end


codecs.register_error(ERRORS, _escape)


def escape(text: str) -> str:
    """``text`` with what UTF-8 cannot encode written as escapes (for strings put into files)."""
    return text.encode("utf-8", ERRORS).decode("utf-8")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\\\u{code:04x}"


def json_safe(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with each lone surrogate, which can only
    stand inside a string literal there, replaced by an escaped backslash and ``xNN``: the string then
    reads ``\\xNN``, as every other output of hpcsa shows the byte, and the file stays valid UTF-8 JSON."""
    return text if text.isascii() else _SURROGATE.sub(_json_escape, text)


def escape_streams() -> None:
    """Make sys.stdout and sys.stderr escape what their encoding cannot write instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors=ERRORS)
            except (ValueError, io.UnsupportedOperation):  # closed or detached: nothing to configure
                pass


def flush_std_streams() -> None:
    """Out with what stdout and stderr hold. A reader that has gone, a closed stream or none at all is
    ignored: nothing is left to say."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


def end_now(code: int) -> NoReturn:
    """Flush stdout and stderr (:func:`flush_std_streams`), then end the process at once (``os._exit``): no
    object or module is freed one by one, the system takes the pages back whole. For a process whose work
    and files are done (and whose threads are joined); functions registered with :mod:`atexit` do not run
    unless the caller runs them first."""
    flush_std_streams()
    os._exit(code)
