"""Writing the ``.hpcstruct`` XML format: the text hpcstruct writes, element for element.

The grammar is the one :mod:`hpcsa.formats.hpcstruct.stream` reads (its version, root element and the model's
element tags); the DTD below is the internal one every hpcstruct output carries. The pieces (tags, a
module's scopes) are public so that :mod:`hpcsa.structure.x86.textbuild` can write a big binary's file
straight from its procedure groups.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

from hpcsa.core.outputs import TEXT_BUFFER, atomic_file
from hpcsa.core.textout import ERRORS
from hpcsa.formats.hpcstruct.model import (
    HAS_V,
    KIND_TAGS,
    ROOT,
    VERSION,
    A,
    C,
    F,
    L,
    Module,
    P,
    S,
    StructureFile,
)

# The 4.9 element grammar as an internal DTD (what every hpcstruct output carries).
DTD = """<!DOCTYPE HPCToolkitStructure [
<!-- HPCToolkit structure format, version 4.9 (written by hpcsa) -->
<!ELEMENT HPCToolkitStructure (LM)*>
<!ATTLIST HPCToolkitStructure
        version CDATA #REQUIRED
        i       CDATA #REQUIRED
        n       CDATA #IMPLIED>
  <!-- i: id; n: name; l: line; v: address ranges "{[lo-hi) ...}" (hex, hi exclusive);
       t: call target address; d: device; f: file; ln: link name; s: symbol index -->
  <!ELEMENT LM (F|P)*>
  <!ATTLIST LM
        i CDATA #REQUIRED
        n CDATA #REQUIRED
        has-calls CDATA #REQUIRED
        v CDATA #IMPLIED>
  <!ELEMENT F (P|L|S)*>
  <!ATTLIST F
        i CDATA #REQUIRED
        n CDATA #REQUIRED>
  <!ELEMENT P (P|A|L|S|C)*>
  <!ATTLIST P
        i  CDATA #REQUIRED
        n  CDATA #REQUIRED
        ln CDATA #IMPLIED
        l  CDATA #IMPLIED
        s  CDATA #IMPLIED
        v  CDATA #IMPLIED>
  <!ELEMENT A (A|L|S|C)*>
  <!ATTLIST A
        i CDATA #REQUIRED
        f CDATA #IMPLIED
        n CDATA #IMPLIED
        ln CDATA #IMPLIED
        l CDATA #IMPLIED
        v CDATA #IMPLIED>
  <!ELEMENT L (A|L|S|C)*>
  <!ATTLIST L
        i CDATA #REQUIRED
        l CDATA #REQUIRED
        f CDATA #IMPLIED
        v CDATA #IMPLIED>
  <!ELEMENT S EMPTY>
  <!ATTLIST S
        i CDATA #REQUIRED
        l CDATA #REQUIRED
        v CDATA #IMPLIED>
  <!ELEMENT C (C)*>
  <!ATTLIST C
        i CDATA #REQUIRED
        l CDATA #REQUIRED
        v CDATA #IMPLIED
        t CDATA #IMPLIED
        d CDATA #IMPLIED>
]>
"""

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;",
            "\t": "&#9;"}
_NEEDS_ESCAPE = re.compile(r'[&<>"\n\r\t]')
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def quote(text: str) -> str:
    """An attribute value that reads back as ``text`` (characters XML cannot carry become U+FFFD)."""
    if _NEEDS_ESCAPE.search(text):
        text = _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()], text)
    if _NOT_XML.search(text):
        text = _NOT_XML.sub("\ufffd", text)
    return text


def lm_open_tag(id: int, path: str, has_calls: bool | None, has_v: bool) -> str:
    """The ``<LM ...>`` start tag and its line end."""
    calls = "1" if has_calls else "0"
    v = ' v="{}"' if has_v else ""
    return f'<LM i="{id}" n="{quote(path)}" has-calls="{calls}"{v}>\n'


def lm_close_tag() -> str:
    return "</LM>\n"


def render_module(m: Module) -> Iterator[str]:
    """The ``<LM>`` element of one module, as text chunks."""
    yield lm_open_tag(m.id, m.path, m.has_calls, m.has_v)
    sc = m.scopes
    cols = {name: sc[name].tolist() for name in ("kind", "flags", "parent", "id", "line", "file", "name", "link",
                                                 "sym", "target", "device")}
    yield from render_scopes(cols, m.strings, m.ranges["lo"].tolist(), m.ranges["hi"].tolist(),
                             m.ranges["scope"].tolist())
    yield lm_close_tag()


def render_scopes(cols: dict[str, list[int]], strings: Sequence[str], lo: list[int], hi: list[int],
                  rscope: list[int], first_id: int | None = None) -> Iterator[str]:
    """Scopes as XML elements, as text chunks: ``cols`` are the SCOPE columns as lists in document order
    (parent -1: directly inside the enclosing element, which the caller writes), ``strings`` the strings
    their file/name/link/device columns index, ``lo``/``hi``/``rscope`` their ``v`` ranges grouped by row.
    Ids are the ``id`` column, or ``first_id + row`` (a part rendered before its module is assembled)."""
    quoted = [quote(s) for s in strings]
    kinds = cols["kind"]
    parents = cols["parent"]
    ids = cols["id"] if first_id is None else range(first_id, first_id + len(kinds))
    lines = cols["line"]
    files = cols["file"]
    names = cols["name"]
    links = cols["link"]
    syms = cols["sym"]
    targets = cols["target"]
    devices = cols["device"]
    flags = cols["flags"]
    nr = len(rscope)
    n = len(kinds)
    bounds = [0] * (n + 1)
    j = 0
    for row in range(n):  # ranges are grouped by row, rows ascending
        while j < nr and rscope[j] < row:
            j += 1
        bounds[row] = j
    bounds[n] = nr
    texts = [f"[{a:#x}-{b:#x})" for a, b in zip(lo, hi, strict=True)]
    has_child = [False] * n
    for p in parents:
        if p >= 0:
            has_child[p] = True
    open_rows: list[int] = []
    out: list[str] = []
    for row, kind in enumerate(kinds):
        parent = parents[row]
        while open_rows and open_rows[-1] != parent:
            out.append(f"</{KIND_TAGS[kinds[open_rows.pop()]]}>\n")
        if kind == S and flags[row] & HAS_V and not has_child[row]:  # the commonest element, one format
            a, b = bounds[row], bounds[row + 1]
            out.append(f'<S i="{ids[row]}" l="{lines[row]}" v="{{{" ".join(texts[a:b])}}}"/>\n')
            continue
        tag = KIND_TAGS[kind]
        parts = [f'<{tag} i="{ids[row]}"']
        if kind == F:
            parts.append(f' n="{quoted[files[row]]}"')
        elif kind == P:
            if names[row] >= 0:
                parts.append(f' n="{quoted[names[row]]}"')
            if links[row] >= 0:
                parts.append(f' ln="{quoted[links[row]]}"')
            if syms[row] >= 0:
                parts.append(f' s="{syms[row]}"')
            if lines[row] >= 0:
                parts.append(f' l="{lines[row]}"')
        elif kind == A:
            if lines[row] >= 0:
                parts.append(f' l="{lines[row]}"')
            if files[row] >= 0:
                parts.append(f' f="{quoted[files[row]]}"')
            if names[row] >= 0:
                parts.append(f' n="{quoted[names[row]]}"')
            if links[row] >= 0:
                parts.append(f' ln="{quoted[links[row]]}"')
        elif kind == L:
            parts.append(f' l="{lines[row]}"')
            if files[row] >= 0:
                parts.append(f' f="{quoted[files[row]]}"')
        else:  # S, C
            parts.append(f' l="{lines[row]}"')
        if flags[row] & HAS_V:
            a, b = bounds[row], bounds[row + 1]
            parts.append(' v="{' + " ".join(texts[a:b]) + '}"')
        if kind == C:
            if targets[row] >= 0:
                parts.append(f' t="{targets[row]:#x}"')
            if devices[row] >= 0:
                parts.append(f' d="{quoted[devices[row]]}"')
        if has_child[row]:
            parts.append(">\n")
            open_rows.append(row)
        elif kind in (S, C):
            parts.append("/>\n")
        else:
            parts.append(f">\n</{tag}>\n")
        out.append("".join(parts))
        if len(out) >= 4096:
            yield "".join(out)
            out.clear()
    while open_rows:
        out.append(f"</{KIND_TAGS[kinds[open_rows.pop()]]}>\n")
    if out:
        yield "".join(out)


def file_open_tag(id: int, path: str) -> str:
    """The start tag of an ``F`` whose children are rendered separately (:func:`render_scopes` of parts)."""
    alone = "".join(render_scopes({"kind": [F], "flags": [0], "parent": [-1], "id": [id], "line": [-1],
                                   "file": [0], "name": [-1], "link": [-1], "sym": [-1], "target": [-1],
                                   "device": [-1]}, [path], [], [], []))
    return alone[:-len(file_close_tag())]  # a childless F is written as start tag, line end, end tag


def file_close_tag() -> str:
    return f"</{KIND_TAGS[F]}>\n"


def document_head(name: str | None, id: int = 0) -> Iterator[str]:
    """What precedes the modules: the XML declaration, the DTD and the root start tag."""
    yield '<?xml version="1.0"?>\n'
    yield DTD
    text = "" if name is None else f' n="{quote(name)}"'
    yield f'<{ROOT} i="{id}" version="{VERSION}"{text}>\n'


def document_tail() -> str:
    return f"</{ROOT}>\n"


def render(sf: StructureFile) -> Iterator[str]:
    """The structure file's XML text, in pieces, in document order."""
    yield from document_head(sf.name, sf.id)
    for m in sf.modules:
        yield from render_module(m)
    yield document_tail()


def write_hpcstruct(path: str | os.PathLike[str], sf: StructureFile) -> None:
    """Write ``sf`` as a 4.9 structure file; the file appears under ``path`` only when complete."""
    with atomic_file(path, "wb", TEXT_BUFFER) as fh:
        for chunk in render(sf):
            fh.write(chunk.encode("utf-8", ERRORS))  # a name that was not UTF-8 is written as \\xNN


__all__ = ["DTD", "write_hpcstruct", "render", "render_module", "render_scopes", "quote"]
