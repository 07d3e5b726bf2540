"""What a structure file names, read from its head without parsing it: hpcprof matches a structure file to a
measured load module by the path in its first ``<LM n="...">``, and listing the inputs of a run must not load
the XML readers."""

from __future__ import annotations

import re

from hpcsa.core.fileio import read_input

_LM_NAME = re.compile(rb'<LM\b[^>]*?\bn="([^"]*)"')
#: Bytes read for the first ``LM`` tag: it follows the inline DTD, a few KB into the file.
HEAD_BYTES = 1 << 18


def first_module_path(path: str) -> str | None:
    """The load-module path (``n``) of a structure file's first ``<LM>`` (None: no ``LM`` in the head)."""
    head = read_input(path, HEAD_BYTES, "a structure file")
    m = _LM_NAME.search(head)
    if not m:
        return None
    text = m.group(1).decode("utf-8", "replace")
    return text.replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
