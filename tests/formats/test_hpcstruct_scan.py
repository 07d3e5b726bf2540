"""The vectorized structure reader (:func:`hpcsa.formats.hpcstruct.scan.read_canonical`) against the expat
reader, differentially.

The scanner is a fast path: it may decline any file (None, and the caller falls back to expat), but whatever
it returns must be exactly what expat gives, and it must never accept a file that expat refuses. Real
structure files (the reference data, and files written by hpcsa's own writer) must all be accepted; mutated
ones (targeted edits of the XML, then random byte edits) are checked with the fallback rule: expat refuses
-> the scanner returns None; expat accepts -> the scanner returns None or an identical result. The body is
scanned in segments (``scan.SEGMENT``), so the same checks run again with tiny segments. Last, the expat reader itself
must refuse bad files with a FormatError (the fallback's errors are the user's errors).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import FormatError
from hpcsa.formats.hpcstruct import reader, scan
from hpcsa.formats.hpcstruct.model import RANGE, SCOPE, Module, StructureFile
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.hpcstruct.scan import read_canonical
from hpcsa.formats.hpcstruct.stream import read_with_expat
from hpcsa.formats.hpcstruct.writer import write_hpcstruct
from hpcsa.structure.binary import write_structure
from tests.conftest import FIXTURES, SHARED_DATA

#: Reference files larger than this are read only once (the smallest of them): the test stays quick.
SIZE_LIMIT = 2 << 20

#: Small reference files whose features the targeted mutations aim at: F/P/L/A/S with ``ln`` and ``&lt;``
#: (x86-64), C with ``t`` and ``d`` (GPU), ``s`` (GPU symbols), format 4.7 without ``has-calls`` (its DTD
#: indented with tabs).
MUTATION_BASES = (
    "hpctoolkit/struct/inlines+loops-x86_64-gcc10-dr.hpcstruct",
    "hpctoolkit/struct/recursion-sm_75-nvcc112-dr+gpucfg.hpcstruct",
    "hpctoolkit/struct/inlines+loops-sm_62-nvcc102-r.hpcstruct",
    "hpctoolkit/jokeren-gpu-samples/cpu_utils/call_struct/main.hpcstruct",
)

#: Binaries of the project's fixtures that hpcsa's writer turns into structure files (x86-64 through the
#: streaming text builder, NVIDIA and AMD GPU code through the Module writer).
WRITER_BINARIES = (
    "structure/sample.so",
    "gpu/libcallgraph-cuda.so",
    "gpu/callgraph-sm75-lineinfo.cubin",
    "gpu/callgraph-gfx90a-O2.co",
)

RANDOM_CASES = 400


# -- comparing results ----------------------------------------------------------------------------------

def _array_difference(what: str, a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> str | None:
    if a.dtype != dtype or b.dtype != dtype:
        return f"{what} dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"{what} shape {a.shape} vs {b.shape}"
    if not np.array_equal(np.frombuffer(a.tobytes(), np.uint8), np.frombuffer(b.tobytes(), np.uint8)):
        for name in dtype.names or ():
            bad = np.flatnonzero(a[name] != b[name])
            if len(bad):
                row = int(bad[0])
                return f"{what}[{row}].{name} {a[name][row]!r} vs {b[name][row]!r} ({len(bad)} rows differ)"
        return f"{what} bytes differ"
    return None


def module_difference(a: Module, b: Module) -> str | None:
    """The first difference between two modules, or None when they are identical."""
    for name in ("path", "id", "has_calls", "has_v"):
        x, y = getattr(a, name), getattr(b, name)
        if type(x) is not type(y) or x != y:
            return f"{name} {x!r} vs {y!r}"
    diff = _array_difference("scopes", a.scopes, b.scopes, SCOPE) or \
        _array_difference("ranges", a.ranges, b.ranges, RANGE)
    if diff:
        return diff
    sa, sb = list(a.strings), list(b.strings)
    if not all(type(s) is str for s in sa + sb):
        return "strings that are not str"
    if sa != sb:
        if len(sa) != len(sb):
            return f"{len(sa)} strings vs {len(sb)}"
        i = next(i for i, (x, y) in enumerate(zip(sa, sb, strict=True)) if x != y)
        return f"strings[{i}] {sa[i]!r} vs {sb[i]!r}"
    return None


def structure_difference(a: StructureFile, b: StructureFile) -> str | None:
    """The first difference between two structure files (header, then module by module), or None."""
    for name in ("version", "id", "name"):
        x, y = getattr(a, name), getattr(b, name)
        if type(x) is not type(y) or x != y:
            return f"header {name} {x!r} vs {y!r}"
    if len(a.modules) != len(b.modules):
        return f"{len(a.modules)} modules vs {len(b.modules)}"
    for k, (ma, mb) in enumerate(zip(a.modules, b.modules, strict=True)):
        diff = module_difference(ma, mb)
        if diff:
            return f"module {k}: {diff}"
    return None


def same_structure(a: StructureFile, b: StructureFile) -> bool:
    """Complete equality: header, module order, every column's bytes, strings, module attributes."""
    return structure_difference(a, b) is None


# -- the fallback rule ----------------------------------------------------------------------------------

@dataclass
class Tally:
    """What the scanner did over many cases: the counts show the check was not vacuous."""

    cases: int = 0
    accepted: int = 0          # read_canonical returned a result
    expat_refused: int = 0     # the expat reader raised FormatError
    failures: list[str] = field(default_factory=list)

    def check(self) -> None:
        shown = "\n".join(self.failures[:40])
        more = f"\n... and {len(self.failures) - 40} more" if len(self.failures) > 40 else ""
        assert not self.failures, f"{len(self.failures)} of {self.cases} cases break the contract:\n{shown}{more}"


def check_case(path: Path, name: str | Callable[[], str], tally: Tally, must_accept: bool = False) -> None:
    """Apply the rule to one file: expat refuses -> None; expat accepts -> None (unless ``must_accept``) or
    the same result. Anything raised by the scanner is a failure. ``name`` (a string, or a function giving it:
    it is needed only for a failure) says which case it is."""
    tally.cases += 1
    failures_before = len(tally.failures)
    _check(path, tally, must_accept)
    if len(tally.failures) > failures_before:
        label = name if isinstance(name, str) else name()
        tally.failures[failures_before:] = [f"{label}: {problem}" for problem in tally.failures[failures_before:]]


def _check(path: Path, tally: Tally, must_accept: bool) -> None:
    try:
        reference: StructureFile | None = read_with_expat(path)
        refusal = ""
    except FormatError as exc:
        reference, refusal = None, str(exc).removeprefix(f"{path}: ")
    except Exception as exc:  # the fallback's contract too: bad input is a FormatError, never a traceback
        tally.failures.append(f"the expat reader raised {type(exc).__name__}: {exc}")
        reference, refusal = None, f"{type(exc).__name__}: {exc}"
    try:
        got = read_canonical(path, strict=True)
    except Exception as exc:
        tally.failures.append(f"read_canonical raised {type(exc).__name__}: {exc}")
        return
    if got is not None:
        tally.accepted += 1
    if reference is None:
        tally.expat_refused += 1
        if got is not None:
            tally.failures.append(f"expat refuses ({refusal}) but read_canonical returned a result")
        return
    if got is None:
        if must_accept:
            tally.failures.append("read_canonical declined a file expat reads")
        return
    diff = structure_difference(got, reference)
    if diff:
        tally.failures.append(f"read_canonical differs from expat: {diff} (scanner vs expat)")


# -- real files -----------------------------------------------------------------------------------------

def _reference_files(root: Path) -> list[Path]:
    """Every reference structure file up to SIZE_LIMIT, plus the smallest larger one; identical copies once."""
    files = sorted(root.rglob("*.hpcstruct"))
    small = [p for p in files if p.stat().st_size <= SIZE_LIMIT]
    large = sorted((p for p in files if p.stat().st_size > SIZE_LIMIT), key=lambda p: p.stat().st_size)
    seen: set[bytes] = set()
    out = []
    for p in small + large[:1]:
        data = p.read_bytes()
        if data not in seen:
            seen.add(data)
            out.append(p)
    return out


def test_reference_files_are_read_identically(shared_data: Path) -> None:
    """Real hpcstruct output is the scanner's reason to exist: every file must take the fast path and agree."""
    files = _reference_files(shared_data)
    assert len(files) > 50
    tally = Tally()
    for path in files:
        check_case(path, str(path.relative_to(shared_data)), tally, must_accept=True)
    tally.check()
    # the only refused reference file is one whose DTD is cut off (no root element): expat refuses it too
    assert tally.expat_refused <= 1, tally
    assert tally.accepted == tally.cases - tally.expat_refused


def _fixture_structure_files() -> list[Path]:
    return sorted(FIXTURES.rglob("*.hpcstruct"))


@pytest.fixture(scope="module")
def written_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Structure files written by hpcsa: of the fixture binaries, and re-written reference files."""
    out_dir = tmp_path_factory.mktemp("written")
    out = []
    for name in WRITER_BINARIES:
        target = out_dir / (Path(name).name + ".hpcstruct")
        write_structure(FIXTURES / name, [str(target)], lm_name=f"/opt/app/{Path(name).name}")
        out.append(target)
    if SHARED_DATA.is_dir():
        for rel in MUTATION_BASES:
            target = out_dir / ("rewritten-" + Path(rel).name)
            write_hpcstruct(target, read_with_expat(SHARED_DATA / rel))
            out.append(target)
    return out


def test_written_files_are_read_identically(written_files: list[Path]) -> None:
    """hpcsa's own writer produces the canonical form too (the cache and ``hpcsa struct`` read it back)."""
    tally = Tally()
    for path in [*_fixture_structure_files(), *written_files]:
        check_case(path, path.name, tally, must_accept=True)
    tally.check()
    assert tally.accepted == tally.cases


# -- targeted mutations ---------------------------------------------------------------------------------

Mutation = Callable[[bytes], "bytes | None"]
ROOT_TAG = b"<HPCToolkitStructure"


def _body(data: bytes) -> int:
    """Where the root element starts (edits aimed at elements leave the DTD alone)."""
    at = data.find(ROOT_TAG + b" ")
    return at if at >= 0 else 0


def _start_tags(data: bytes, tag: bytes) -> list[re.Match[bytes]]:
    return list(re.finditer(b"<" + re.escape(tag) + rb"(?=[\s/>])[^>]*>", data[_body(data):]))


def edit_tag(tag: bytes, fn: Callable[[bytes], bytes | None], which: int = 0) -> Mutation:
    """Rewrite the ``which``-th start tag of ``tag`` (modulo their number) with ``fn``."""
    def apply(data: bytes) -> bytes | None:
        tags = _start_tags(data, tag)
        if not tags:
            return None
        m = tags[which % len(tags)]
        new = fn(m.group())
        if new is None:
            return None
        start, end = _body(data) + m.start(), _body(data) + m.end()
        return data[:start] + new + data[end:]
    return apply


def set_attr(tag: bytes, name: bytes, value: bytes, which: int = 0) -> Mutation:
    """Give an existing attribute the raw (already escaped) text ``value``."""
    def fn(text: bytes) -> bytes | None:
        a = re.search(rb"(?<=\s)" + re.escape(name) + rb'="[^"]*"', text)
        return None if a is None else text[:a.start()] + name + b'="' + value + b'"' + text[a.end():]
    return edit_tag(tag, fn, which)


def map_attr(tag: bytes, name: bytes, fn: Callable[[bytes], bytes], which: int = 0) -> Mutation:
    """Rewrite the text of an existing attribute value with ``fn``."""
    def edit(text: bytes) -> bytes | None:
        a = re.search(rb"(?<=\s)" + re.escape(name) + rb'="([^"]*)"', text)
        if a is None:
            return None
        return text[:a.start(1)] + fn(a.group(1)) + text[a.end(1):]
    return edit_tag(tag, edit, which)


def drop_attr(tag: bytes, name: bytes, which: int = 0) -> Mutation:
    def fn(text: bytes) -> bytes | None:
        a = re.search(rb"\s" + re.escape(name) + rb'="[^"]*"', text)
        return None if a is None else text[:a.start()] + text[a.end():]
    return edit_tag(tag, fn, which)


def add_attr(tag: bytes, text: bytes, which: int = 0) -> Mutation:
    """Append raw attribute text (with its leading space) to a start tag."""
    def fn(tag_text: bytes) -> bytes:
        cut = len(tag_text) - (2 if tag_text.endswith(b"/>") else 1)
        return tag_text[:cut] + text + tag_text[cut:]
    return edit_tag(tag, fn, which)


def regex(pattern: bytes, repl: Callable[[re.Match[bytes]], bytes], which: int = 0, body: bool = True) -> Mutation:
    """Replace the ``which``-th match of ``pattern`` (in the root element, or anywhere)."""
    rx = re.compile(pattern)

    def apply(data: bytes) -> bytes | None:
        base = _body(data) if body else 0
        matches = list(rx.finditer(data, base))
        if not matches:
            return None
        m = matches[which % len(matches)]
        return data[:m.start()] + repl(m) + data[m.end():]
    return apply


def after_tag(tag: bytes, text: bytes, which: int = 0) -> Mutation:
    """Insert ``text`` right after the ``which``-th start tag of ``tag``."""
    return edit_tag(tag, lambda t: t + text, which)


def before_tag(tag: bytes, text: bytes, which: int = 0) -> Mutation:
    return edit_tag(tag, lambda t: text + t, which)


def whole(fn: Callable[[bytes], bytes]) -> Mutation:
    return fn


def _lines_of_body(fn: Callable[[bytes], bytes]) -> Mutation:
    def apply(data: bytes) -> bytes:
        at = _body(data)
        return data[:at] + fn(data[at:])
    return apply


def _indent(body: bytes) -> bytes:
    depth, out = 0, []
    for line in body.split(b"\n"):
        if line.startswith(b"</"):
            depth -= 1
        out.append(b"  " * max(depth, 0) + line)
        if line.startswith(b"<") and not line.startswith(b"</") and not line.endswith(b"/>"):
            depth += 1
    return b"\n".join(out)


def _dtd_edit(old: bytes, new: bytes) -> Mutation:
    """Edit the internal DTD (None where the file's DTD lacks ``old``)."""
    def apply(data: bytes) -> bytes | None:
        at = data.find(old, 0, _body(data))
        return None if at < 0 else data[:at] + new + data[at + len(old):]
    return apply


def _attlist_default(element: bytes, attr: bytes, default: bytes) -> Mutation:
    """Give an attribute in an element's ATTLIST a default value, which expat then reports on every element
    of that kind that lacks it."""
    def apply(data: bytes) -> bytes | None:
        head = data[:_body(data)]
        m = re.search(rb"<!ATTLIST\s+" + re.escape(element) + rb"\s[^>]*?\b" + re.escape(attr)
                      + rb"\s+CDATA\s+(#IMPLIED|#REQUIRED)", head)
        if m is None:
            return None
        return data[:m.start(1)] + default + data[m.end(1):]
    return apply


def _truncate(fraction: float) -> Mutation:
    return lambda data: data[:int(len(data) * fraction)]


def _p_with_single_child_self_closed(data: bytes) -> bytes | None:
    m = re.search(rb'(<P [^>]*)>\n<S [^>]*/>\n</P>', data[_body(data):])
    if m is None:
        return None
    at = _body(data)
    return data[:at + m.start()] + m.group(1) + b"/>" + data[at + m.end():]


def _second_lm(data: bytes) -> bytes | None:
    m = re.search(rb"<LM .*?</LM>\n", data, re.S)
    if m is None:
        return None
    copy = m.group().replace(b'<LM i="2" n="', b'<LM i="2" n="/second', 1)
    return data[:m.end()] + copy + data[m.end():]


def _lms(data: bytes, *edits: Callable[[bytes], bytes]) -> bytes | None:
    """The file with its (first) LM repeated once per edit, each copy rewritten by its edit."""
    m = re.search(rb"<LM .*?</LM>\n", data, re.S)
    if m is None:
        return None
    copies = b"".join(edit(m.group()) for edit in edits)
    return data[:m.start()] + copies + data[m.end():]


def _renamed(k: int) -> Callable[[bytes], bytes]:
    return lambda lm: re.sub(rb'(<LM i="\d+" n=")', rb"\g<1>/copy%d" % k, lm, count=1)


def _emptied(lm: bytes) -> bytes:
    return re.sub(rb"(<LM [^>]*>\n).*(</LM>\n)", rb"\1\2", lm, flags=re.S)


def _self_closed(lm: bytes) -> bytes:
    return re.sub(rb"<LM ([^>]*)>\n.*</LM>\n", rb"<LM \1/>\n", lm, flags=re.S)


def _same_text_two_ways(data: bytes) -> bytes | None:
    """Two procedures named by the same text, spelled with an entity and with a character reference."""
    first = set_attr(b"P", b"n", b"a&lt;b&#x3E;", 0)(data)
    return None if first is None else set_attr(b"P", b"n", b"a&#60;b&gt;", 1)(first)


def _shared_string(data: bytes) -> bytes | None:
    """The file's name given to a procedure, its link name and a call's device: one string, numbered once."""
    f = re.search(rb'<F i="\d+" n="([^"]*)"', data[_body(data):])
    if f is None:
        return None
    out = set_attr(b"P", b"n", f.group(1), 0)(data)
    out = set_attr(b"P", b"ln", f.group(1), 1)(out or data) or out
    return set_attr(b"C", b"d", f.group(1), 0)(out or data) or out


def _empty_lm(data: bytes) -> bytes | None:
    m = re.search(rb"(<LM [^>]*>\n).*?(</LM>\n)", data, re.S)
    return None if m is None else data[:m.start()] + m.group(1) + m.group(2) + data[m.end():]


def _self_closed_lm(data: bytes) -> bytes | None:
    m = re.search(rb"<LM ([^>]*)>\n.*?</LM>\n", data, re.S)
    return None if m is None else data[:m.start()] + b"<LM " + m.group(1) + b"/>\n" + data[m.end():]


def _without_dtd(data: bytes) -> bytes | None:
    m = re.search(rb"<!DOCTYPE.*?\]>\n", data, re.S)
    return None if m is None else data[:m.start()] + data[m.end():]


NAME = (b"P", b"n")  # the name of a procedure: where text from a binary lands

TARGETED: list[tuple[str, Mutation]] = [
    # layout between and inside tags
    ("indented body", _lines_of_body(_indent)),
    ("blank lines between tags", _lines_of_body(lambda b: b.replace(b">\n<", b">\n\n\n<"))),
    ("tabs between tags", _lines_of_body(lambda b: b.replace(b">\n<", b">\n\t<"))),
    ("tags on one line", _lines_of_body(lambda b: b.replace(b">\n<", b"><"))),
    ("spaces around =", _lines_of_body(lambda b: b.replace(b'="', b' = "'))),
    ("tab before = in one S", edit_tag(b"S", lambda t: t.replace(b' l="', b' l\t="'), 1)),
    ("two spaces between attributes", edit_tag(b"S", lambda t: t.replace(b'" ', b'"  '), 2)),
    ("newline between attributes", edit_tag(b"P", lambda t: t.replace(b'" ', b'"\n   '), 0)),
    ("tab between attributes", edit_tag(b"P", lambda t: t.replace(b'" ', b'"\t'), 1)),
    ("space before />", edit_tag(b"S", lambda t: t.replace(b"/>", b" />"), 0)),
    ("newline before >", edit_tag(b"P", lambda t: t[:-1] + b"\n>", 0)),
    ("space in end tag", regex(rb"</P>", lambda m: b"</P  >", 1)),
    ("newline in end tag", regex(rb"</F>", lambda m: b"</F\n>")),
    ("CRLF line ends", whole(lambda d: d.replace(b"\n", b"\r\n"))),
    ("CR line ends", whole(lambda d: d.replace(b"\n", b"\r"))),
    ("no final newline", whole(lambda d: d.rstrip(b"\n"))),
    # quoting
    ("single-quoted i", edit_tag(b"S", lambda t: re.sub(rb'i="(\d+)"', rb"i='\1'", t), 1)),
    ("single-quoted everything", _lines_of_body(lambda b: b.replace(b'"', b"'"))),
    ("single-quoted name holding a double quote", edit_tag(b"P", lambda t: re.sub(
        rb' n="([^"]*)"', rb""" n='\1"x'""", t), 0)),
    ("> inside a name", map_attr(*NAME, lambda v: v + b">x")),
    ("' inside a name", map_attr(*NAME, lambda v: b"it's " + v)),
    ("/> inside a name", map_attr(*NAME, lambda v: v + b"/>")),
    ("= and space inside a name", map_attr(*NAME, lambda v: v + b' a="b"')),
    # entities and character references
    *[(f"{ent.decode()} in a name", map_attr(*NAME, lambda v, e=ent: v + e, which))
      for which, ent in enumerate([b"&lt;", b"&gt;", b"&amp;", b"&quot;", b"&apos;", b"&#65;", b"&#x41;",
                                   b"&#x10FFFF;", b"&#10;", b"&#9;", b"&#13;", b"&#32;", b"&#x20;&#x20;"])],
    *[(f"bad reference {ent.decode()!r} in a name", map_attr(*NAME, lambda v, e=ent: v + e, which))
      for which, ent in enumerate([b"&foo;", b"&#0;", b"&", b"& ", b"&amp", b"&#;", b"&#x;", b"&#xD800;",
                                   b"&#1;", b"&#x110000;", b"&#65", b"&lt ", b"&LT;", b"<"])],
    ("&lt; in a file name", map_attr(b"F", b"n", lambda v: v + b"&lt;x&gt;")),
    ("&amp; in a link name", map_attr(b"P", b"ln", lambda v: b"&amp;" + v)),
    ("&#65; in a device", map_attr(b"C", b"d", lambda v: v + b"&#65;")),
    ("&amp; in the LM path", map_attr(b"LM", b"n", lambda v: v + b"&amp;x")),
    ("&lt; in the root name", set_attr(b"HPCToolkitStructure", b"n", b"a&lt;b")),
    ("character reference in i", set_attr(b"S", b"i", b"&#49;2", 3)),
    ("character reference in v", map_attr(b"S", b"v", lambda v: v.replace(b"0x", b"&#48;x", 1), 2)),
    ("&#32; in v", map_attr(b"S", b"v", lambda v: v.replace(b") [", b")&#32;[", 1), 4)),
    # whitespace characters inside values (expat turns a literal tab, newline or CR into a space)
    ("literal tab in a name", map_attr(*NAME, lambda v: v + b"\tx")),
    ("literal newline in a name", map_attr(*NAME, lambda v: v + b"\nx", 1)),
    ("literal CR in a name", map_attr(*NAME, lambda v: v + b"\rx", 2)),
    ("literal CRLF in a name", map_attr(*NAME, lambda v: v + b"\r\nx", 3)),
    ("literal tab in v", map_attr(b"S", b"v", lambda v: v.replace(b") [", b")\t[", 1), 8)),
    ("literal newline in v", map_attr(b"S", b"v", lambda v: v.replace(b") [", b")\n[", 1), 9)),
    ("literal tab in i", map_attr(b"S", b"i", lambda v: b"\t" + v, 3)),
    ("literal newline in l", map_attr(b"S", b"l", lambda v: v + b"\n", 3)),
    # bytes that are not plain ASCII text
    *[(f"byte {c!r} in a name", map_attr(*NAME, lambda v, c=c: v + c, 1))
      for c in [b"\x00", b"\x01", b"\x08", b"\x0b", b"\x0c", b"\x1f", b"\x7f"]],
    ("UTF-8 \u00e9 in a name", map_attr(*NAME, lambda v: v + "\u00e9".encode())),
    ("UTF-8 CJK in a file name", map_attr(b"F", b"n", lambda v: v + "\u65e5\u672c".encode())),
    ("UTF-8 emoji in a name", map_attr(*NAME, lambda v: v + "\U0001f389".encode(), 2)),
    ("UTF-8 U+FFFE in a name", map_attr(*NAME, lambda v: v + b"\xef\xbf\xbe")),
    ("UTF-8 U+FEFF in a name", map_attr(*NAME, lambda v: v + b"\xef\xbb\xbf")),
    ("UTF-8 U+0085 in a name", map_attr(*NAME, lambda v: v + b"\xc2\x85")),
    ("UTF-8 U+2028 in a name", map_attr(*NAME, lambda v: v + b"\xe2\x80\xa8")),
    *[(f"invalid UTF-8 {c!r} in a name", map_attr(*NAME, lambda v, c=c: v + c))
      for c in [b"\xff", b"\xc3", b"\xc3x", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]],
    ("non-ASCII in a number", set_attr(b"S", b"l", "\u0663".encode(), 2)),
    ("fullwidth digit in i", set_attr(b"S", b"i", "\uff11".encode(), 2)),
    ("Latin-1 declared, non-ASCII name", whole(lambda d: d.replace(
        b'<?xml version="1.0"?>', b'<?xml version="1.0" encoding="ISO-8859-1"?>', 1).replace(
        b'<F i="3" n="', b'<F i="3" n="\xe9\xff', 1))),
    ("UTF-8 declared", whole(lambda d: d.replace(b'<?xml version="1.0"?>',
                                                 b'<?xml version="1.0" encoding="UTF-8"?>', 1))),
    ("US-ASCII declared", whole(lambda d: d.replace(b'<?xml version="1.0"?>',
                                                    b'<?xml version="1.0" encoding="US-ASCII"?>', 1))),
    ("unknown encoding declared", whole(lambda d: d.replace(b'<?xml version="1.0"?>',
                                                            b'<?xml version="1.0" encoding="x-bogus"?>', 1))),
    ("standalone declared", whole(lambda d: d.replace(b'<?xml version="1.0"?>',
                                                      b'<?xml version="1.0" standalone="yes"?>', 1))),
    ("XML 1.1 declared", whole(lambda d: d.replace(b'<?xml version="1.0"?>', b'<?xml version="1.1"?>', 1))),
    ("no XML declaration", whole(lambda d: d.replace(b'<?xml version="1.0"?>\n', b"", 1))),
    ("space before the XML declaration", whole(lambda d: b" " + d)),
    ("newline before the XML declaration", whole(lambda d: b"\n" + d)),
    ("BOM", whole(lambda d: b"\xef\xbb\xbf" + d)),
    ("UTF-16 BOM", whole(lambda d: b"\xff\xfe" + d)),
    # comments, processing instructions, CDATA, text
    ("comment between tags", after_tag(b"P", b"\n<!-- a comment <S i=\"1\" l=\"1\"/> -->", 1)),
    ("comment before the LM", before_tag(b"LM", b"<!-- before -->\n")),
    ("comment with -- inside", after_tag(b"P", b"<!-- a -- b -->")),
    ("comment holding </P>", after_tag(b"P", b"<!-- </P> -->", 2)),
    ("processing instruction between tags", after_tag(b"L", b"<?hpc x=\"1\"?>\n")),
    ("processing instruction holding >", after_tag(b"P", b"<?hpc a>b?>\n", 1)),
    ("XML declaration in the body", after_tag(b"P", b'<?xml version="1.0"?>\n')),
    ("CDATA between tags", after_tag(b"P", b"<![CDATA[<S i=\"1\" l=\"1\"/>]]>\n")),
    ("unterminated CDATA", after_tag(b"P", b"<![CDATA[x\n")),
    ("text between tags", after_tag(b"P", b"hello\n", 1)),
    ("text with a reference between tags", after_tag(b"F", b"a &amp; b &#65;\n")),
    ("text with an undeclared entity between tags", after_tag(b"F", b"a &foo; b\n")),
    ("stray < between tags", after_tag(b"P", b"<\n")),
    ("stray > between tags", after_tag(b"P", b">\n")),
    ("text right after the root start tag", after_tag(b"HPCToolkitStructure", b"text")),
    # attributes
    ("unknown attribute on S", add_attr(b"S", b' x="1"', 1)),
    ("unknown attribute on P", add_attr(b"P", b' x="1"')),
    ("unknown attribute on LM", add_attr(b"LM", b' x="1"')),
    ("unknown attribute on the root", add_attr(b"HPCToolkitStructure", b' x="1"')),
    ("attribute with a namespace prefix", add_attr(b"S", b' x:y="1"', 2)),
    ("xmlns attribute", add_attr(b"S", b' xmlns="urn:x"', 2)),
    ("attribute name with a dash", add_attr(b"S", b' has-calls="1"', 2)),
    ("attribute without a value", add_attr(b"S", b" x", 2)),
    ("attribute without quotes", add_attr(b"S", b" x=1", 2)),
    ("duplicated i", add_attr(b"S", b' i="99"', 1)),
    ("duplicated l", edit_tag(b"S", lambda t: t.replace(b' l="', b' l="1" l="', 1), 3)),
    ("duplicated n on LM", add_attr(b"LM", b' n="x"')),
    ("f on a P", add_attr(b"P", b' f="/src/other.c"')),
    ("n on an S", add_attr(b"S", b' n="x"', 2)),
    ("ln on an L", add_attr(b"L", b' ln="x"')),
    ("t and d on an S", add_attr(b"S", b' t="0x10" d="dev"', 2)),
    ("s on an S", add_attr(b"S", b' s="3"', 2)),
    ("l on an F", add_attr(b"F", b' l="3"')),
    ("v on an F", add_attr(b"F", b' v="{[0x1-0x2)}"')),
    ("f on an F", add_attr(b"F", b' f="/src/x.c"')),
    ("s on an A", add_attr(b"A", b' s="3"')),
    ("attributes reversed on S", edit_tag(b"S", lambda t: b"<S " + b" ".join(
        reversed(re.findall(rb'\w+="[^"]*"', t))) + b"/>", 1)),
    ("v before l on P", edit_tag(b"P", lambda t: re.sub(rb'( l="[^"]*")( v="[^"]*")', rb"\2\1", t))),
    ("n after v on P", edit_tag(b"P", lambda t: re.sub(rb'( n="[^"]*")(.*?)( v="[^"]*")', rb"\2\3\1", t), 1)),
    ("ln before n on P", edit_tag(b"P", lambda t: re.sub(rb'( n="[^"]*")( ln="[^"]*")', rb"\2\1", t), 1)),
    ("t before v on C", edit_tag(b"C", lambda t: re.sub(rb'( v="[^"]*")( t="[^"]*")', rb"\2\1", t))),
    ("has-calls first on LM", edit_tag(b"LM", lambda t: re.sub(rb'(<LM)(.*?)( has-calls="[^"]*")', rb"\1\3\2",
                                                                t))),
    ("version after n on the root", edit_tag(b"HPCToolkitStructure", lambda t: re.sub(
        rb'( version="[^"]*")(.*?)(>)', rb"\2\1\3", t))),
    ("missing i on S", drop_attr(b"S", b"i", 2)),
    ("missing l on S", drop_attr(b"S", b"l", 2)),
    ("missing v on S", drop_attr(b"S", b"v", 2)),
    ("missing i on P", drop_attr(b"P", b"i")),
    ("missing n on P", drop_attr(b"P", b"n")),
    ("missing ln on P", drop_attr(b"P", b"ln", 1)),
    ("missing l on P", drop_attr(b"P", b"l")),
    ("missing v on P", drop_attr(b"P", b"v", 1)),
    ("missing n on F", drop_attr(b"F", b"n")),
    ("missing f on L", drop_attr(b"L", b"f")),
    ("missing f on A", drop_attr(b"A", b"f")),
    ("missing n on A", drop_attr(b"A", b"n")),
    ("missing t on C", drop_attr(b"C", b"t")),
    ("missing d on C", drop_attr(b"C", b"d", 1)),
    ("missing s on P", drop_attr(b"P", b"s", 1)),
    ("missing i on the root", drop_attr(b"HPCToolkitStructure", b"i")),
    ("missing n on the root", drop_attr(b"HPCToolkitStructure", b"n")),
    ("missing version", drop_attr(b"HPCToolkitStructure", b"version")),
    # decimal numbers
    *[(f"S i={v.decode(errors='replace')!r}", set_attr(b"S", b"i", v, k)) for k, v in enumerate(
        [b"007", b"+5", b"-5", b" 5", b"5 ", b"5_0", b"", b"0", b"-1", b"9223372036854775807",
         b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809", b"99999999999999999999999",
         b"5.0", b"0x5", b"1e3", b"\xd9\xa3", b"--5", b"5-"])],
    *[(f"S l={v.decode()!r}", set_attr(b"S", b"l", v, k + 1)) for k, v in enumerate(
        [b"00", b"+0", b"-0", b"", b" 12", b"12 ", b"18446744073709551616", b"-1", b"1_2", b"abc"])],
    *[(f"P l={v.decode()!r}", set_attr(b"P", b"l", v, k)) for k, v in enumerate([b"012", b"", b"-3", b"x"])],
    *[(f"L l={v.decode()!r}", set_attr(b"L", b"l", v, k)) for k, v in enumerate([b"+24", b"", b" 1"])],
    *[(f"P s={v.decode()!r}", set_attr(b"P", b"s", v, k)) for k, v in enumerate(
        [b"", b"020", b"-1", b"-2", b" 3", b"x", b"9223372036854775808", b"0"])],
    ("s='' on every P", _lines_of_body(lambda b: re.sub(rb' s="\d+"', b' s=""', b))),
    ("s='' on one P, numbers on others", set_attr(b"P", b"s", b"", 1)),
    ("s added to one P only", add_attr(b"P", b' s="7"', 1)),
    ("s='' added to one P only", add_attr(b"P", b' s=""', 1)),
    ("i='' on the root", set_attr(b"HPCToolkitStructure", b"i", b"")),
    ("i='007' on the root", set_attr(b"HPCToolkitStructure", b"i", b"007")),
    ("i='-3' on the root", set_attr(b"HPCToolkitStructure", b"i", b"-3")),
    ("i=' 1' on the root", set_attr(b"HPCToolkitStructure", b"i", b" 1")),
    ("huge i on the root", set_attr(b"HPCToolkitStructure", b"i", b"99999999999999999999999")),
    ("i='x' on the LM", set_attr(b"LM", b"i", b"x")),
    ("i='02' on the LM", set_attr(b"LM", b"i", b"02")),
    ("i='' on the LM", set_attr(b"LM", b"i", b"")),
    ("missing i on the LM", drop_attr(b"LM", b"i")),
    ("huge i on the LM", set_attr(b"LM", b"i", b"99999999999999999999999")),
    # hexadecimal call targets
    *[(f"C t={v.decode()!r}", set_attr(b"C", b"t", v, k)) for k, v in enumerate(
        [b"3260", b"0X3260", b"0x3A6F", b"0x3a6F", b"0xZZ", b"", b"0x", b" 0x10", b"0x10 ", b"-0x10", b"0x-10",
         b"0x00000000000000010", b"0x10000000000000000", b"0xffffffffffffffff", b"0x8000000000000000",
         b"0x7fffffffffffffff", b"x10", b"00x10", b"0x1_0", b"10h"])],
    ("t added to an S", add_attr(b"S", b' t="0x10"', 1)),
    ("t='' on every C", _lines_of_body(lambda b: re.sub(rb' t="[^"]*"', b' t=""', b))),
    # address range sets
    *[(f"S v={v.decode()!r}", set_attr(b"S", b"v", v, k)) for k, v in enumerate(
        [b"{[0x1110-0x111E)}", b"{[0X1110-0X111e)}", b"{[1110-111e)}", b"{[0x1110-111e)}",
         b"{ [0x1110-0x111e) }", b"{[ 0x1110 - 0x111e )}", b"{[0x1-0x2)  [0x3-0x4)}", b"{[0x1-0x2)[0x3-0x4)}",
         b"{[0x1-0x2), [0x3-0x4)}", b"{}", b" {}", b"{} ", b" { }", b"{ }", b"", b"{", b"}", b"{[0x1-0x2)",
         b"[0x1-0x2)}", b"{[0x1-0x2]}", b"{(0x1-0x2)}", b"{[0x1-0x2) }", b"{ [0x1-0x2)}",
         b"{[0x10000000000000000-0x10000000000000001)}", b"{[0x00000000000000001-0x2)}",
         b"{[0xffffffffffffffff-0xffffffffffffffff)}", b"{[0x20-0x10)}", b"{[0x10-0x20) [0x18-0x30)}",
         b"{[0x10-0x20) [0x10-0x20)}", b"{[0x-0x2)}", b"{[0x1-0x)}", b"{[-0x2)}", b"{[0x1-0x2-0x3)}",
         b"{[0x1--0x2)}", b"{[0xg-0x2)}", b"{[0x1 -0x2)}", b"{[0x1- 0x2)}", b"{[0x1-0x2) [0x3-0x4) [0x5-0x6)}",
         b"{[0x1-0x2)\t[0x3-0x4)}", b"{[0x1-0x2)&#9;[0x3-0x4)}", b"{[00x1-0x2)}", b"{[0x01-0x02)}",
         b"{{[0x1-0x2)}}", b"{[0x1-0x2)}{}", b"{[1-2)}", b"{[0xA-0xB)}", b"{[0-0)}"])],
    ("v='{}' on a P", set_attr(b"P", b"v", b"{}", 1)),
    ("v='' on a P", set_attr(b"P", b"v", b"", 1)),
    ("v=' {}' on an A", set_attr(b"A", b"v", b" {}", 0)),
    ("v='{ }' on an L", set_attr(b"L", b"v", b"{ }", 0)),
    ("v with two ranges on a C", set_attr(b"C", b"v", b"{[0x10-0x20) [0x30-0x38)}", 1)),
    ("uppercase hex in every v", _lines_of_body(lambda b: re.sub(
        rb' v="[^"]*"', lambda m: m.group().upper().replace(b" V=", b" v="), b))),
    ("no 0x in every v", _lines_of_body(lambda b: re.sub(rb' v="[^"]*"', lambda m: m.group().replace(b"0x", b""),
                                                         b))),
    # element structure
    ("self-closing P", _p_with_single_child_self_closed),
    ("S with an end tag", edit_tag(b"S", lambda t: t[:-2] + b"></S>", 1)),
    ("S with an end tag and a newline", edit_tag(b"S", lambda t: t[:-2] + b">\n</S>", 2)),
    ("S with a child", edit_tag(b"S", lambda t: t[:-2] + b'>\n<S i="999" l="1" v="{}"/>\n</S>', 1)),
    ("C with a C child", edit_tag(b"C", lambda t: t[:-2] + b'>\n<C i="999" l="1" v="{[0x1-0x2)}"/>\n</C>', 0)),
    ("C with an S child", edit_tag(b"C", lambda t: t[:-2] + b'>\n<S i="999" l="1" v="{}"/>\n</C>', 0)),
    ("self-closing L", regex(rb'(<L [^>]*)>\n(<S [^>]*/>\n)*</L>', lambda m: m.group(1) + b"/>")),
    ("self-closing A", regex(rb'(<A [^>]*)>\n(<S [^>]*/>\n)*</A>', lambda m: m.group(1) + b"/>")),
    ("end tag mismatch", regex(rb"</P>", lambda m: b"</L>", 1)),
    ("end tag mismatch on LM", regex(rb"</LM>", lambda m: b"</F>")),
    ("end tag of another case", regex(rb"</P>", lambda m: b"</p>")),
    ("unclosed L", regex(rb"</L>\n", lambda m: b"")),
    ("unclosed P", regex(rb"</P>\n", lambda m: b"", 2)),
    ("unclosed F", regex(rb"</F>\n", lambda m: b"")),
    ("unclosed LM", regex(rb"</LM>\n", lambda m: b"")),
    ("unclosed root", regex(rb"</HPCToolkitStructure>\n?", lambda m: b"")),
    ("extra end tag", regex(rb"</P>\n", lambda m: m.group() + b"</P>\n", 1)),
    ("extra end tag of the root", regex(rb"</HPCToolkitStructure>", lambda m: m.group() + b"</HPCToolkitStructure>")),
    ("S directly in LM", after_tag(b"LM", b'<S i="999" l="1" v="{[0x1-0x2)}"/>\n')),
    ("L directly in LM", after_tag(b"LM", b'<L i="999" l="1" v="{}">\n</L>\n')),
    ("F in P", after_tag(b"P", b'<F i="999" n="x">\n</F>\n', 1)),
    ("F in F", after_tag(b"F", b'<F i="999" n="x">\n</F>\n')),
    ("P directly in LM", after_tag(b"LM", b'<P i="999" n="x" v="{[0x1-0x2)}">\n</P>\n')),
    ("A in F", after_tag(b"F", b'<A i="999" n="x" v="{}">\n</A>\n')),
    ("C in F", after_tag(b"F", b'<C i="999" l="1" v="{}"/>\n')),
    ("L in C", edit_tag(b"C", lambda t: t[:-2] + b'>\n<L i="999" l="1" v="{}">\n</L>\n</C>')),
    ("P in L", after_tag(b"L", b'<P i="999" n="x" v="{}">\n</P>\n')),
    ("P in A", after_tag(b"A", b'<P i="999" n="x" v="{}">\n</P>\n')),
    ("P in P", after_tag(b"P", b'<P i="999" n="x" v="{[0x1-0x2)}">\n<S i="1000" l="1" v="{}"/>\n</P>\n', 1)),
    ("A in A", after_tag(b"A", b'<A i="999" n="x" v="{}">\n<S i="1000" l="1" v="{}"/>\n</A>\n')),
    ("L in L", after_tag(b"L", b'<L i="999" l="5" v="{}">\n</L>\n')),
    ("S in the root", after_tag(b"HPCToolkitStructure", b'\n<S i="999" l="1" v="{}"/>')),
    ("unknown element in P", after_tag(b"P", b"<X/>\n", 1)),
    ("unknown element in LM", after_tag(b"LM", b'<X i="1">\n</X>\n')),
    ("unknown element in the root", after_tag(b"HPCToolkitStructure", b"\n<X/>")),
    ("unknown element with the prefix of a known one", after_tag(b"P", b'<Sx i="1" l="1"/>\n', 1)),
    ("lower-case element", after_tag(b"P", b'<s i="1" l="1" v="{}"/>\n', 1)),
    ("element with a namespace prefix", after_tag(b"P", b'<x:S i="1" l="1" v="{}"/>\n', 1)),
    ("nested LM", after_tag(b"F", b'<LM i="9" n="x" has-calls="0" v="{}">\n</LM>\n')),
    ("nested root", after_tag(b"LM", b'<HPCToolkitStructure i="0" version="4.9" n="">\n</HPCToolkitStructure>\n')),
    ("two LMs", _second_lm),
    ("empty LM", _empty_lm),
    ("self-closing LM", _self_closed_lm),
    ("LM before the root", before_tag(b"HPCToolkitStructure", b'<LM i="2" n="x" has-calls="0" v="{}"/>\n')),
    ("LM after the root", regex(rb"</HPCToolkitStructure>", lambda m: m.group() + b'\n<LM i="2" n="x"/>')),
    ("self-closing root", whole(lambda d: d[:_body(d)] + b'<HPCToolkitStructure i="0" version="4.9" n=""/>\n')),
    ("empty root", whole(lambda d: d[:_body(d)] + b'<HPCToolkitStructure i="0" version="4.9" n="">\n'
                         b"</HPCToolkitStructure>\n")),
    ("another root element", whole(lambda d: d[:_body(d)] + b'<Other i="0" version="4.9" n="">\n</Other>\n')),
    ("empty file", whole(lambda d: b"")),
    ("whitespace only", whole(lambda d: b" \n\t\n")),
    ("XML declaration only", whole(lambda d: b'<?xml version="1.0"?>\n')),
    ("DTD only", whole(lambda d: d[:_body(d)])),
    ("not XML", whole(lambda d: b"hello\n" + d)),
    # LM attributes
    *[(f"LM has-calls={v.decode()!r}", set_attr(b"LM", b"has-calls", v)) for v in
      [b"2", b"", b" 1", b"1 ", b"01", b"true", b"-0", b"0", b"1"]],
    ("LM without has-calls", drop_attr(b"LM", b"has-calls")),
    ("LM has-calls added", add_attr(b"LM", b' has-calls="1"')),
    ("LM without v", drop_attr(b"LM", b"v")),
    ("LM v added", add_attr(b"LM", b' v="{}"')),
    ("LM v with a range", set_attr(b"LM", b"v", b"{[0x1-0x2)}")),
    ("LM v=''", set_attr(b"LM", b"v", b"")),
    ("LM v='x'", set_attr(b"LM", b"v", b"x")),
    ("LM without n", drop_attr(b"LM", b"n")),
    ("LM n=''", set_attr(b"LM", b"n", b"")),
    # the root
    *[(f"root version={v.decode()!r}", set_attr(b"HPCToolkitStructure", b"version", v)) for v in
      [b"4.8", b"4.7", b"4.10", b"5.0", b"", b" 4.9", b"4.9 ", b"4.90", b"04.9"]],
    ("root n with a value", set_attr(b"HPCToolkitStructure", b"n", b"app")),
    ("root n with a space", set_attr(b"HPCToolkitStructure", b"n", b"a b")),
    ("root element lower case", whole(lambda d: d.replace(b"HPCToolkitStructure", b"hpctoolkitstructure"))),
    # after the root
    ("garbage after the root", whole(lambda d: d + b"garbage\n")),
    ("whitespace after the root", whole(lambda d: d + b"\n \t\r\n\n")),
    ("comment after the root", whole(lambda d: d + b"<!-- done -->\n")),
    ("processing instruction after the root", whole(lambda d: d + b"<?pi x?>\n")),
    ("element after the root", whole(lambda d: d + b"<X/>\n")),
    ("NUL after the root", whole(lambda d: d + b"\x00")),
    ("a second document", whole(lambda d: d + d)),
    # the DTD
    ("no DTD", _without_dtd),
    ("entity declared", _dtd_edit(b"<!ELEMENT LM", b'<!ENTITY foo "bar">\n<!ELEMENT LM')),
    ("entity declared and used", whole(lambda d: (_dtd_edit(b"<!ELEMENT LM", b'<!ENTITY foo "bar">\n<!ELEMENT LM')(
        d) or d).replace(b'<F i="3" n="', b'<F i="3" n="&foo;', 1))),
    ("parameter entity declared", _dtd_edit(b"<!ELEMENT LM", b'<!ENTITY % p "x">\n<!ELEMENT LM')),
    ("external entity declared", _dtd_edit(b"<!ELEMENT LM", b'<!ENTITY e SYSTEM "/etc/passwd">\n<!ELEMENT LM')),
    ("external DTD", regex(rb"(?s)<!DOCTYPE HPCToolkitStructure \[.*?\]>", lambda m: b'<!DOCTYPE '
                           b'HPCToolkitStructure SYSTEM "hpcstruct.dtd">', 0, False)),
    ("external DTD and internal subset", regex(rb"<!DOCTYPE HPCToolkitStructure \[", lambda m: b'<!DOCTYPE '
                                               b'HPCToolkitStructure SYSTEM "x.dtd" [', 0, False)),
    ("DOCTYPE naming another root", regex(rb"<!DOCTYPE HPCToolkitStructure", lambda m: b"<!DOCTYPE Other", 0,
                                          False)),
    ("comment in the DTD holding ]>", _dtd_edit(b"<!ELEMENT LM", b"<!-- ]> -->\n<!ELEMENT LM")),
    ("DTD without its comments", whole(lambda d: re.sub(rb"<!--.*?-->", b"", d, flags=re.S))),
    ("default for P l", _attlist_default(b"P", b"l", b'"99"')),
    ("default for S v", _attlist_default(b"S", b"v", b'"{[0x1-0x2)}"')),
    ("default for LM v", _attlist_default(b"LM", b"v", b'"{}"')),
    ("default for C d", _attlist_default(b"C", b"d", b'"gpu"')),
    ("fixed root n", _attlist_default(b"HPCToolkitStructure", b"n", b'#FIXED ""')),
    ("default for LM has-calls", _dtd_edit(b"<!ATTLIST LM\n", b'<!ATTLIST LM has-calls CDATA "1">\n<!ATTLIST LM\n')),
    ("default for an undeclared attribute", _dtd_edit(b"<!ELEMENT LM", b'<!ATTLIST S x CDATA "1">\n<!ELEMENT LM')),
    ("NMTOKENS type for F n", whole(lambda d: (_dtd_edit(b"<!ELEMENT LM", b"<!ATTLIST F n NMTOKENS #IMPLIED>\n"
                                                         b"<!ELEMENT LM")(d) or d).replace(
        b'<F i="3" n="', b'<F i="3" n="  a  b  ', 1))),
    ("NMTOKENS type for S v", whole(lambda d: (_dtd_edit(b"<!ELEMENT LM", b"<!ATTLIST S v NMTOKENS #IMPLIED>\n"
                                                         b"<!ELEMENT LM")(d) or d))),
    ("ID type for S i", _dtd_edit(b"<!ELEMENT LM", b"<!ATTLIST S i ID #IMPLIED>\n<!ELEMENT LM")),
    ("processing instruction in the DTD", _dtd_edit(b"<!ELEMENT LM", b"<?pi x?>\n<!ELEMENT LM")),
    ("truncated DTD", whole(lambda d: d[:_body(d) // 2])),
    ("processing instruction before the root", before_tag(b"HPCToolkitStructure", b"<?pi x?>\n")),
    ("comment before the root", before_tag(b"HPCToolkitStructure", b"<!-- x -->\n")),
    ("text before the root", before_tag(b"HPCToolkitStructure", b"x\n")),
    # edits aimed at the column conversion (strings numbered once, per column, in order of appearance)
    ("same name spelled two ways", _same_text_two_ways),
    ("one string in several columns", _shared_string),
    ("&#38;lt; (a reference to '&' is not decoded twice)", map_attr(*NAME, lambda v: v + b"&#38;lt;")),
    ("&#X41; (upper-case X)", map_attr(*NAME, lambda v: v + b"&#X41;")),
    ("&#x0000041; (long hexadecimal reference)", map_attr(*NAME, lambda v: v + b"&#x0000041;")),
    ("&#0000065; (long decimal reference)", map_attr(*NAME, lambda v: v + b"&#0000065;")),
    *[(f"reference {ref.decode()} in a name", map_attr(*NAME, lambda v, r=ref: v + r, 1))
      for ref in [b"&#xFFFE;", b"&#xFFFF;", b"&#xFFFD;", b"&#xD7FF;", b"&#xE000;", b"&#x10000;", b"&#x85;",
                  b"&#x7F;", b"&#127;", b"&#x1F;", b"&#8;"]],
    ("name ending in /", set_attr(b"P", b"n", b"a/", 1)),
    ("name /> before a self-closing S", set_attr(b"P", b"n", b"/>", 0)),
    ("ln='' on every P", _lines_of_body(lambda b: re.sub(rb' ln="[^"]*"', b' ln=""', b))),
    ("ln='' on one P", set_attr(b"P", b"ln", b"", 1)),
    ("d='' on every C", _lines_of_body(lambda b: re.sub(rb' d="[^"]*"', b' d=""', b))),
    ("d='' on one C", set_attr(b"C", b"d", b"", 1)),
    ("f='' on an L", set_attr(b"L", b"f", b"")),
    ("n='' on the F", set_attr(b"F", b"n", b"")),
    ("f='' on an A", set_attr(b"A", b"f", b"")),
    ("S without attributes", edit_tag(b"S", lambda t: b"<S/>", 2)),
    ("P without attributes", edit_tag(b"P", lambda t: b"<P>", 1)),
    ("F without attributes", edit_tag(b"F", lambda t: b"<F>")),
    ("18-digit i", set_attr(b"S", b"i", b"999999999999999999", 1)),
    ("19-digit i", set_attr(b"S", b"i", b"1000000000000000000", 1)),
    ("19-digit i with a leading zero", set_attr(b"S", b"i", b"0999999999999999999", 1)),
    ("15-digit t", set_attr(b"C", b"t", b"0xfffffffffffffff", 1)),
    ("16-digit t below 2**63", set_attr(b"C", b"t", b"0x0fffffffffffffff", 1)),
    ("v with 16 digits", set_attr(b"S", b"v", b"{[0x0000000000000001-0xffffffffffffffff)}", 5)),
    ("space in the root end tag", regex(rb"</HPCToolkitStructure>", lambda m: b"</HPCToolkitStructure >")),
    ("spaces around = in the LM", edit_tag(b"LM", lambda t: t.replace(b'="', b' = "'))),
    ("single quotes in the LM", edit_tag(b"LM", lambda t: t.replace(b'"', b"'"))),
    ("tab in the LM", edit_tag(b"LM", lambda t: t.replace(b" ", b"\t", 1))),
    ("non-ASCII LM path", map_attr(b"LM", b"n", lambda v: v + "\u00e9".encode())),
    ("&lt; in the LM path", map_attr(b"LM", b"n", lambda v: v + b"&lt;")),
    ("comment between LMs", lambda d: _lms(d, _renamed(1), lambda lm: b"<!-- x -->\n" + _renamed(2)(lm))),
    # several load modules
    ("three LMs", lambda d: _lms(d, _renamed(1), _renamed(2), _renamed(3))),
    ("an empty LM between two", lambda d: _lms(d, _renamed(1), lambda lm: _emptied(_renamed(2)(lm)), _renamed(3))),
    ("a self-closing LM first", lambda d: _lms(d, lambda lm: _self_closed(_renamed(1)(lm)), _renamed(2))),
    ("a self-closing LM last", lambda d: _lms(d, _renamed(1), lambda lm: _self_closed(_renamed(2)(lm)))),
    ("two LMs, the second unclosed", lambda d: _lms(d, _renamed(1), lambda lm: _renamed(2)(lm)[:-6])),
    ("two LMs, the first unclosed", lambda d: _lms(d, lambda lm: _renamed(1)(lm)[:-6], _renamed(2))),
    ("two LMs, the second without has-calls", lambda d: _lms(d, _renamed(1), lambda lm: re.sub(
        rb' has-calls="\d"', b"", _renamed(2)(lm)))),
    ("LM inside an LM", lambda d: _lms(d, lambda lm: lm[:-6] + _renamed(2)(lm) + b"</LM>\n")),
    ("forty LMs", lambda d: _lms(d, *[_renamed(k) for k in range(40)])),
    ("loops nested 300 deep", after_tag(b"P", b"".join(b'<L i="%d" l="%d" v="{}">\n' % (900 + k, k) for k in range(300))
                                        + b'<S i="1" l="1" v="{[0x1-0x2)}"/>\n' + b"</L>\n" * 300, 1)),
    ("calls nested 300 deep", after_tag(b"P", b"".join(b'<C i="%d" l="%d" v="{}">\n' % (900 + k, k) for k in range(300))
                                        + b"</C>\n" * 300, 1)),
    ("loops nested 300 deep, one end tag missing", after_tag(b"P", b"".join(
        b'<L i="%d" l="%d" v="{}">\n' % (900 + k, k) for k in range(300)) + b"</L>\n" * 299, 1)),
    # truncation
    *[(f"truncated at {f:.3f}", _truncate(f)) for f in
      [0.0005, 0.01, 0.1, 0.5, 0.61, 0.7, 0.73, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99, 0.995, 0.999]],
    ("truncated before the last newline", whole(lambda d: d[:-1])),
    ("truncated inside the root end tag", whole(lambda d: d[:-5])),
    ("truncated after the LM end tag", whole(lambda d: d[:d.rfind(b"</LM>") + 6])),
    ("truncated inside a v", lambda d: d[:d.find(b"-0x", _body(d)) + 2]),
]


def _truncations_in(data: bytes, rng: random.Random, count: int) -> Iterator[tuple[str, bytes]]:
    """Cuts at random points of the root element (most land inside a tag or a value)."""
    start = _body(data)
    for _ in range(count):
        at = rng.randrange(start, len(data))
        yield f"truncated at byte {at}", data[:at]


def _diff_excerpt(base: bytes, mutated: bytes) -> str:
    """Where a mutated file differs from its base: enough to rebuild it by hand."""
    n = min(len(base), len(mutated))
    a, b = np.frombuffer(base, np.uint8), np.frombuffer(mutated, np.uint8)
    differ = np.flatnonzero(a[:n] != b[:n])
    p = int(differ[0]) if len(differ) else n
    differ = np.flatnonzero(a[::-1][:n - p] != b[::-1][:n - p])
    s = int(differ[0]) if len(differ) else n - p
    old, new = base[max(0, p - 24):len(base) - s + 8], mutated[max(0, p - 24):len(mutated) - s + 8]
    cut = 160
    return (f"at byte {p}: {old[:cut]!r}{'...' if len(old) > cut else ''} -> "
            f"{new[:cut]!r}{'...' if len(new) > cut else ''}")


def _mutation_bases(written_files: list[Path]) -> list[tuple[str, bytes]]:
    """The targeted edits start from small reference files (where present) and from hpcsa's own output."""
    bases = [(written_files[0].name, written_files[0].read_bytes())]
    if SHARED_DATA.is_dir():
        bases += [(Path(rel).name, (SHARED_DATA / rel).read_bytes()) for rel in MUTATION_BASES]
    return bases


def _check_bytes(tmp: Path, name: str, base: bytes, label: str, data: bytes, tally: Tally, k: int) -> None:
    path = tmp / f"case{k}.hpcstruct"
    path.write_bytes(data)
    check_case(path, lambda: f"{name} [{label}] {_diff_excerpt(base, data)}", tally)


def test_targeted_mutations(written_files: list[Path], tmp_path: Path) -> None:
    """Every kind of divergence from the canonical form falls back (None) or reads exactly as expat reads it."""
    tally = Tally()
    unused = {label for label, _ in TARGETED}
    rng = random.Random(20240611)
    k = 0
    for name, base in _mutation_bases(written_files):
        cases = [(label, mutate(base)) for label, mutate in TARGETED]
        cases += list(_truncations_in(base, rng, 25))
        for label, data in cases:
            if data is None or data == base:
                continue
            unused.discard(label)
            k += 1
            _check_bytes(tmp_path, name, base, label, data, tally, k)
    tally.check()
    if SHARED_DATA.is_dir():  # hpcsa's sample alone lacks C, A, s, ...: some edits find nothing to edit there
        assert not unused, f"mutations that applied to no base file: {sorted(unused)}"
    assert tally.accepted > 0 and tally.expat_refused > 0, tally


# -- hostile names from hpcsa's writer ------------------------------------------------------------------

HOSTILE_NAMES = ["a&b<c>d\"e'f", "tab\there", "nl\nhere", "cr\rhere", "\u00e9\u65e5\U0001f389", "\x01ctl\x7f",
                 "bad\udcffbyte", "\ufffe", "  lead and trail  ", "", "]]>", "<!-- x -->", "&amp;", "&#65;",
                 "{[0x1-0x2)}", "x" * 5000]


def test_writer_output_with_hostile_names(written_files: list[Path], tmp_path: Path) -> None:
    """Names that need escaping, written by hpcsa's writer: fall back or read exactly as expat reads them."""
    tally = Tally()
    for k, path in enumerate(written_files):
        sf = read_with_expat(path)
        for m in sf.modules:
            m.strings = [HOSTILE_NAMES[(i + k) % len(HOSTILE_NAMES)] + f"#{i}" for i in range(len(m.strings))]
        sf.name = HOSTILE_NAMES[k % len(HOSTILE_NAMES)]
        target = tmp_path / f"hostile{k}.hpcstruct"
        write_hpcstruct(target, sf)
        check_case(target, f"{path.name} with hostile names", tally)
    tally.check()


# -- random byte edits ----------------------------------------------------------------------------------

STRUCTURAL = b'<>"=/ &{}[]-)x' + b"0123456789" + b"\n\t'#;!?"


def random_edit(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Replace, insert or delete 1-3 bytes, mostly structural ones, mostly in the root element."""
    buf = bytearray(data)
    start = _body(data) if rng.random() < 0.9 else 0
    structural = [i for i in range(start, len(buf)) if buf[i] in STRUCTURAL] if rng.random() < 0.7 else []
    at = rng.choice(structural) if structural else rng.randrange(start, len(buf))
    n = rng.randint(1, 3)

    def pick() -> int:
        r = rng.random()
        if r < 0.75:
            return rng.choice(STRUCTURAL)
        if r < 0.9:
            return rng.choice(b"aAfFgG\r\x00 ")
        return rng.randrange(256)
    op = rng.choice(("replace", "insert", "delete"))
    if op == "replace":
        buf[at:at + n] = bytes(pick() for _ in range(n))
    elif op == "insert":
        buf[at:at] = bytes(pick() for _ in range(n))
    else:
        del buf[at:at + n]
    return f"{op} {n} at {at}", bytes(buf)


def test_random_byte_mutations(written_files: list[Path], tmp_path: Path) -> None:
    """Small random edits: the scanner's shape checks must catch whatever expat catches."""
    tally = Tally()
    rng = random.Random(8675309)
    bases = _mutation_bases(written_files)
    for k in range(RANDOM_CASES):
        name, base = bases[k % len(bases)]
        label, data = random_edit(base, rng)
        _check_bytes(tmp_path, name, base, f"seed 8675309 case {k}: {label}", data, tally, k)
    tally.check()
    assert tally.accepted > 0 and tally.expat_refused > 0, tally


# -- segment boundaries ---------------------------------------------------------------------------------

#: Segment sizes (bytes) for the body scan: 1 cuts before every tag; the default (1 MiB) covers small files whole.
SEGMENTS = (1, 41, 333)

#: Sizes for the mutated files (a cut every few tags; the smallest sizes cost ~50 ms a file).
MUTATED_SEGMENTS = (97, 333, 1000)
MUTATED_SEGMENT_CASES = 120


def test_segment_boundaries(written_files: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body is scanned a segment at a time: elements open across a cut, and modules that start in one
    segment and end in another, must read as in one pass (only files over 1 MiB have cuts otherwise)."""
    bases = _mutation_bases(written_files)[:3]
    several = [(f"{name} (three LMs, the second empty)", _lms(data, _renamed(1), lambda lm: _emptied(_renamed(2)(lm)),
                                                             _renamed(3))) for name, data in bases]
    tally = Tally()
    for k, (name, data) in enumerate(bases + several):
        assert data is not None
        path = tmp_path / f"segments{k}.hpcstruct"
        path.write_bytes(data)
        for size in SEGMENTS:
            monkeypatch.setattr(scan, "SEGMENT", size)
            check_case(path, f"{name} with SEGMENT={size}", tally, must_accept=True)
    tally.check()


def test_columns_that_grow(written_files: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A module's columns start small when the bytes per scope and range are estimated high: doubling them
    as the module grows keeps every scope, range and string."""
    monkeypatch.setattr(scan, "BYTES_PER_SCOPE", 1 << 40)
    monkeypatch.setattr(scan, "BYTES_PER_RANGE", 1 << 40)
    monkeypatch.setattr(scan, "SEGMENT", 4096)
    tally = Tally()
    for path in written_files:
        check_case(path, f"{path.name} with small columns", tally, must_accept=True)
    tally.check()


def test_segment_boundaries_in_mutated_files(written_files: list[Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The targeted edits again with a cut before every few tags: a bad tag is caught whichever segment
    holds it, and what is open is carried over correctly."""
    tally = Tally()
    rng = random.Random(1234)
    name, base = _mutation_bases(written_files)[1 if SHARED_DATA.is_dir() else 0]
    cases = [(label, mutate(base)) for label, mutate in TARGETED]
    cases = [(label, data) for label, data in cases if data is not None and data != base]
    for k, (label, data) in enumerate(rng.sample(cases, min(MUTATED_SEGMENT_CASES, len(cases)))):
        size = rng.choice(MUTATED_SEGMENTS)
        monkeypatch.setattr(scan, "SEGMENT", size)
        _check_bytes(tmp_path, name, base, f"{label}, SEGMENT={size}", data, tally, k)
    tally.check()
    assert tally.accepted > 0 and tally.expat_refused > 0, tally


def test_last_segment_of_end_tags_only(tmp_path: Path) -> None:
    """A canonical file just over one segment long, cut where only end tags follow: the last segment holds no
    start tag (a real file of the right size ends so)."""
    lm = b'<LM i="2" n="/x" has-calls="0" v="{}">\n<F i="3" n="a.c">\n<P i="4" n="f" l="1" v="{[0x10-0x11)}">\n'
    lines, size, i = [lm], len(lm), 5
    while True:
        line = b'<S i="%d" l="1" v="{[0x10-0x11)}"/>\n' % i
        if size + len(line) > scan.SEGMENT:
            break
        lines.append(line)
        size += len(line)
        i += 1
    lines[0] = lm.replace(b'n="f"', b'n="f' + b"x" * (scan.SEGMENT - size) + b'"')  # '</P>' at the cut
    data = (b'<?xml version="1.0"?>\n<HPCToolkitStructure i="0" version="4.9" n="">\n' + b"".join(lines)
            + b"</P>\n</F>\n</LM>\n</HPCToolkitStructure>\n")
    assert data[data.index(b"<LM") + scan.SEGMENT:].startswith(b"</P>")
    path = tmp_path / "one-segment-and-end-tags.hpcstruct"
    path.write_bytes(data)
    tally = Tally()
    check_case(path, path.name, tally, must_accept=True)
    tally.check()


@pytest.mark.parametrize("depth", [300, (1 << 15) + 5])
def test_deep_nesting(tmp_path: Path, depth: int) -> None:
    """Call sites nested ``depth`` deep (C may hold C): read identically, or left to expat beyond the levels
    the scanner sorts in 16 bits, never misplaced."""
    opening = b"".join(b'<C i="%d" l="1" v="{[0x%x-0x%x)}">\n' % (k, 16 + k, 17 + k) for k in range(4, 4 + depth))
    data = (b'<?xml version="1.0"?>\n<HPCToolkitStructure i="0" version="4.9" n="">\n'
            b'<LM i="2" n="/x" has-calls="1" v="{}">\n<F i="3" n="a.c">\n<P i="4" n="f" l="1" v="{[0x10-0x11)}">\n'
            + opening + b"</C>\n" * depth + b"</P>\n</F>\n</LM>\n</HPCToolkitStructure>\n")
    path = tmp_path / "deep.hpcstruct"
    path.write_bytes(data)
    tally = Tally()
    check_case(path, path.name, tally, must_accept=depth < 1 << 14)
    tally.check()
    assert (read_canonical(path, strict=True) is None) == (depth >= 1 << 15)


# -- the reference reader's own contract ----------------------------------------------------------------

EXPAT_CRASHES: list[tuple[str, Mutation]] = [
    ("S i=2**63", set_attr(b"S", b"i", b"9223372036854775808", 1)),
    ("S i=-2**63-1", set_attr(b"S", b"i", b"-9223372036854775809", 1)),
    ("S l=2**64", set_attr(b"S", b"l", b"18446744073709551616", 1)),
    ("P s=2**63", add_attr(b"P", b' s="9223372036854775808"')),
    ("t=0x8000000000000000", add_attr(b"S", b' t="0x8000000000000000"', 1)),
    ("v with 17 hex digits", set_attr(b"S", b"v", b"{[0x10000000000000000-0x10000000000000001)}", 1)),
    ("unknown encoding declared", whole(lambda d: d.replace(b'<?xml version="1.0"?>',
                                                            b'<?xml version="1.0" encoding="x-bogus"?>', 1))),
]


@pytest.mark.parametrize("label", [label for label, _ in EXPAT_CRASHES])
def test_expat_reader_refuses_in_one_line(written_files: list[Path], tmp_path: Path, label: str) -> None:
    """Found by the mutations above: the fallback must end in a result or a FormatError (one line), never in
    a traceback, whatever the numbers or the declared encoding."""
    base = written_files[0].read_bytes()
    data = dict(EXPAT_CRASHES)[label](base)
    assert data is not None and data != base
    path = tmp_path / "case.hpcstruct"
    path.write_bytes(data)
    try:
        read_with_expat(path)
    except FormatError:
        pass
    assert read_canonical(path, strict=True) is None


def test_read_hpcstruct_takes_the_scanner_for_large_files_and_expat_otherwise(shared_data: Path, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    """What users get (``read_hpcstruct``, the parsed-structure cache): the vectorized reader for a file of
    at least ``SCAN_FROM`` bytes in hpcstruct's form, expat when it declines (here, a comment in the body) or
    for a small file; the same modules every way."""
    structs = shared_data / "hpctoolkit" / "meas" / "loops-cputime-t.m" / "structs"
    large, small = structs / "libgomp.so.1.0.0.hpcstruct", structs / "testmeas-loops.hpcstruct"
    assert large.stat().st_size >= scan.SCAN_FROM > small.stat().st_size
    commented = tmp_path / "commented.hpcstruct"
    commented.write_bytes(large.read_bytes().replace(b"</F>\n", b"</F>\n<!-- a comment -->\n", 1))
    calls: list[tuple[str, bool]] = []
    scanned = scan.read_canonical

    def counting(path: str, strict: bool = False) -> StructureFile | None:
        got = scanned(path, strict)
        calls.append((Path(path).name, got is not None))
        return got

    monkeypatch.setattr(reader, "read_canonical", counting)
    for path, expected in ((large, [(large.name, True)]), (commented, [(commented.name, False)]), (small, [])):
        calls.clear()
        got = read_hpcstruct(path)
        assert calls == expected
        assert not structure_difference(got, read_with_expat(path))
