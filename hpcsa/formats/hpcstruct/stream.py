"""The general reader of the ``.hpcstruct`` XML format (HPCToolkit structure, version 4.9): expat, streamed
(:func:`~hpcsa.formats.hpcstruct.reader.read_hpcstruct` reads most files with :mod:`.scan` instead; the version
and element names are the model's, shared with the writer).

Reading streams the file through the standard library's expat parser, one
``LM`` at a time, straight into the columns of a :class:`.ModuleBuilder` (no
DOM). Every real file carries its DTD inline; it is accepted, but any entity
declaration (internal, external or parameter entity) is refused before it can
be expanded, nothing external is ever fetched, and undefined entity
references are errors. We use expat directly rather than defusedxml because
the protection needed is exactly these handlers (defusedxml installs the same
ones), while the speed needed comes from expat's callbacks, which defusedxml's
ElementTree layer would wrap in per-element objects. A DOCTYPE naming an
external DTD is refused too: unread, it would make expat drop undeclared
entity references from attribute values silently.

Numbers in ``v`` and ``t`` are hexadecimal (hpcprof reads them with base 16,
``0x`` optional); ``i`` and ``l`` are decimal.
"""

from __future__ import annotations

import os
import re
import xml.parsers.expat as expat
from collections.abc import Callable, Iterator
from itertools import chain, count
from typing import cast

import numpy as np

from hpcsa.core.errors import FormatError
from hpcsa.core.fileio import open_input
from hpcsa.formats.hpcstruct.model import (
    ALLOWED_CHILDREN,
    HAS_V,
    KIND_OF_TAG,
    KIND_TAGS,
    RANGE,
    READABLE_VERSIONS,
    ROOT,
    SCOPE,
    F,
    Module,
    StructureFile,
)
from hpcsa.formats.hpcstruct.scan_values import DIGIT, numbers

CHUNK = 1 << 20

_V_FULL = re.compile(r"\{\s*(?:\[\s*(?:0[xX])?[0-9a-fA-F]+\s*-\s*(?:0[xX])?[0-9a-fA-F]+\s*\)\s*)*\}")
_V_RANGE = re.compile(r"\[\s*(?:0[xX])?([0-9a-fA-F]+)\s*-\s*(?:0[xX])?([0-9a-fA-F]+)\s*\)")
_HEX = re.compile(r"\s*(?:0[xX])?([0-9a-fA-F]+)\s*")


class Refused(Exception):
    """Raised inside an expat handler to stop parsing; carries the one-line problem."""


def _refuse_entity(name: str, is_parameter: bool, *rest: object) -> None:
    kind = "parameter entity" if is_parameter else "entity"
    raise Refused(f"declares the {kind} {name!r}; structure files must not declare entities "
                   "(refused without expanding it)")


def _refuse_unparsed(name: str, *rest: object) -> None:
    raise Refused(f"declares the unparsed entity {name!r}; structure files must not declare entities")


def _refuse_external(*args: object) -> int:
    raise Refused("refers to an external entity; hpcsa never fetches external content")


def _refuse_skipped(name: str, is_parameter: bool) -> None:
    raise Refused(f"uses the undeclared entity {name!r}")


def _refuse_external_dtd(name: str, system_id: str | None, public_id: str | None, internal: bool) -> None:
    # Without the external subset, expat would silently drop undeclared entity references inside
    # attribute values; real structure files always carry their DTD inline.
    if system_id or public_id:
        raise Refused(f"refers to the external DTD {system_id or public_id!r}; hpcsa never fetches external "
                       "content (structure files carry their DTD inline)")


_SHAPE = bytes.maketrans(b"0123456789abcdefABCDEF", b"h" * 22)


def parse_vsets(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Vectorized parse of canonical ``v`` sets ``{[0xA-0xB) [0xC-0xD)}``: (ranges per text, lo, hi).

    Returns None when any text is not in the canonical form hpcstruct writes
    (the caller then parses them one by one, tolerantly). The shape check
    collapses each run of hex digits to one ``h`` and requires every text to
    be ``{}`` after removing ``[hxh-hxh)`` tokens and their separating spaces.
    """
    raw = "\x00".join(texts).encode("ascii", "replace")
    if not raw:
        return np.zeros(len(texts), np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    buf = np.frombuffer(raw, np.uint8)
    digit = DIGIT[buf]
    is_digit = digit < 16
    after_digit = np.zeros_like(is_digit)
    after_digit[1:] = is_digit[:-1]
    shape = np.frombuffer(raw.translate(_SHAPE), np.uint8)[~(is_digit & after_digit)].tobytes()
    shape = shape.replace(b"[hxh-hxh)", b"R").replace(b"R ", b"R").replace(b"R", b"")
    if shape != b"\x00".join([b"{}"] * len(texts)):
        return None
    before_digit = np.zeros_like(is_digit)
    before_digit[:-1] = is_digit[1:]
    starts = np.flatnonzero(is_digit & ~after_digit)[1::2]  # runs alternate: the '0' of 0x, then the number
    ends = np.flatnonzero(is_digit & ~before_digit)[1::2] + 1
    lens = ends - starts
    if len(lens) and int(lens.max()) > 16:
        return None
    values = numbers(digit, starts, ends, True, 16)
    owner = np.searchsorted(np.flatnonzero(buf == 0), np.flatnonzero(buf == ord("[")))
    counts = np.bincount(owner, minlength=len(texts))
    return counts, values[0::2], values[1::2]


def _parse_vsets_slowly(texts: list[str]) -> tuple[list[int], list[int], list[int]]:
    counts: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    for v in texts:
        if not _V_FULL.fullmatch(v):
            raise Refused(f"v={v!r} is not an address range set like {{[0x10-0x20) [0x30-0x38)}}")
        pairs = _V_RANGE.findall(v)
        counts.append(len(pairs))
        lo.extend(int(a, 16) for a, _ in pairs)
        hi.extend(int(b, 16) for _, b in pairs)
        if pairs and max(lo[-len(pairs):] + hi[-len(pairs):]) >= 1 << 64:
            raise Refused(f"v={v!r} has an address beyond 64 bits")
    return counts, lo, hi


def _decimal(values: list[str | None], what: str) -> list[int]:
    try:
        out = [-1 if x is None else int(x) for x in values]
    except ValueError:
        bad = next(x for x in values if x is not None and not _is_int(x))
        raise Refused(f"{what}={bad!r} is not a decimal integer") from None
    return _in_64_bits(out, values, what)


def _in_64_bits(out: list[int], values: list[str | None], what: str) -> list[int]:
    """``out`` if every number fits a signed 64-bit column, else the one-line problem."""
    if out and (max(out) >= 1 << 63 or min(out) < -(1 << 63)):
        bad = next(x for x, v in zip(values, out, strict=True) if not -(1 << 63) <= v < 1 << 63)
        raise Refused(f"{what}={bad!r} is out of range (more than 64 bits)")
    return out


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _hexadecimal(values: list[str | None], what: str) -> list[int]:
    out = []
    for x in values:
        if x is None:
            out.append(-1)
            continue
        m = _HEX.fullmatch(x)
        if not m:
            raise Refused(f"{what}={x!r} is not a hexadecimal address")
        out.append(int(m.group(1), 16))
    return _in_64_bits(out, values, what)


#: The attributes a scope may carry; the reader keeps one list per attribute (not a dict per element).
ATTRS = ("i", "l", "s", "t", "f", "n", "ln", "d", "v")


VSET_PART = 1 << 14  # v texts per vectorized parse: its temporaries are ~100 bytes per hex digit


def _parse_vsets_in_parts(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`parse_vsets` over bounded parts of ``texts`` (a large binary's file holds millions of hex digits),
    the tolerant parser for a part that is not canonical; joined."""
    counts, lo, hi = [], [], []
    for start in range(0, len(texts), VSET_PART):
        part = texts[start:start + VSET_PART]
        got = parse_vsets(part)
        c, a, b = got if got is not None else _parse_vsets_slowly(part)
        counts.append(np.asarray(c, np.int64))
        lo.append(np.asarray(a, np.uint64))
        hi.append(np.asarray(b, np.uint64))
    if not counts:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    return np.concatenate(counts), np.concatenate(lo), np.concatenate(hi)


#: Scopes converted from attribute text to columns at a time: the text of a large binary's file (hundreds of
#: thousands of scopes) is never all held as Python strings, only one part of it.
SCOPE_PART = 1 << 11

#: String columns, in the order their strings are numbered (first occurrence in the file column, then new
#: ones in the name column, ...): the numbering of a whole-module pass, whatever the parts.
STRING_COLUMNS = (("file", "f"), ("name", "n"), ("link", "ln"), ("device", "d"))


class _ModuleParts:
    """One LM's scopes converted a part at a time (:data:`SCOPE_PART`), joined when the LM ends."""

    def __init__(self) -> None:
        self.rows = 0
        self.scopes: list[np.ndarray] = []
        self.ranges: list[np.ndarray] = []
        self.local: dict[str, dict[str, int]] = {col: {} for col, _ in STRING_COLUMNS}  # per column, 1st seen
        self.truthy: set[str] = set()   # attributes with a non-empty value somewhere (else the column is -1)
        self.blank: set[str] = set()    # numeric attributes seen empty in a part without any other value

    def add(self, kinds: list[int], parents: list[int], attrs: dict[str, list[str | None]]) -> None:
        """Convert the scopes of rows ``self.rows ...`` (document order) and forget their text."""
        base, n = self.rows, len(kinds)
        scopes = np.empty(n, SCOPE)
        scopes["kind"] = kinds
        scopes["parent"] = parents
        scopes["id"] = _decimal(attrs["i"], "i")
        scopes["line"] = _decimal(attrs["l"], "l")
        for column, key, parse in (("sym", "s", _decimal), ("target", "t", _hexadecimal)):
            values = attrs[key]
            if any(values):
                self.truthy.add(key)
                scopes[column] = parse(values, key)
            else:
                scopes[column] = -1
                if "" in values:
                    self.blank.add(key)
        is_file = scopes["kind"] == F
        file_attr = list(attrs["f"])
        for row in np.flatnonzero(is_file).tolist():
            file_attr[row] = attrs["n"][row]
        for column, key in STRING_COLUMNS:
            values = file_attr if column == "file" else attrs[key]
            if any(values):
                self.truthy.add(key)
            intern = self.local[column].setdefault
            local = self.local[column]
            scopes[column] = [-1 if v is None else intern(v, len(local)) for v in values]
        scopes["name"][is_file] = -1
        v_all = attrs["v"]
        scopes["flags"] = [0 if v is None else HAS_V for v in v_all]
        v_rows = [row for row, v in enumerate(v_all) if v is not None and v != "{}"]
        counts, lo, hi = _parse_vsets_in_parts(cast(list[str], [v_all[row] for row in v_rows]))  # all set
        ranges = np.empty(len(lo), RANGE)
        ranges["lo"] = lo
        ranges["hi"] = hi
        ranges["scope"] = np.repeat(np.array(v_rows, dtype=np.int64) + base, counts)
        self.scopes.append(scopes)
        self.ranges.append(ranges)
        self.rows += n

    def finish(self, path: str, id: int, has_calls: bool | None, has_v: bool) -> Module:
        for key in sorted(self.blank & self.truthy):
            _decimal([""], key) if key == "s" else _hexadecimal([""], key)  # the whole-column error
        scopes = np.concatenate(self.scopes) if self.scopes else np.empty(0, SCOPE)
        ranges = np.concatenate(self.ranges) if self.ranges else np.empty(0, RANGE)
        strings = number_strings(scopes, self.local, {column for column, key in STRING_COLUMNS if key in self.truthy})
        return Module(path=path, scopes=scopes, ranges=ranges, strings=strings, id=id, has_calls=has_calls,
                      has_v=has_v)


def number_strings(scopes: np.ndarray, local: dict[str, dict[str, int]], with_text: set[str]) -> list[str]:
    """A module's strings, numbered as one pass over the whole module numbers them: each column's texts in
    their order of first appearance (``local``: text -> local number, per column), the columns in
    :data:`STRING_COLUMNS` order; ``scopes``' string columns are rewritten from local numbers to these (-1
    stays -1). A link or device column with no non-empty value (not in ``with_text``) gets none. Both
    readers end a module with this."""
    strings: dict[str, int] = {}
    for column, _ in STRING_COLUMNS:
        if column in ("link", "device") and column not in with_text:
            scopes[column] = -1
            continue
        texts = local[column]
        strings.update(zip([t for t in texts if t not in strings], count(len(strings))))  # first seen
        number = np.fromiter(chain(map(strings.__getitem__, texts), (-1,)), np.int32, len(texts) + 1)
        scopes[column] = number[scopes[column]]  # local -1 picks the trailing -1
    return list(strings)


class DocumentReader:
    """The expat callbacks: root and LM elements here, scopes in a tight closure (see ``handlers``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sf = StructureFile(modules=[])
        self.done: list[Module] = []
        self.lm: tuple[str, int, bool | None, bool] | None = None
        self.seen_root = False
        self.closed_root = False
        self.parser: expat.XMLParserType | None = None

    def fail(self, problem: str) -> Refused:
        p = self.parser
        return Refused(problem + (f" (line {p.CurrentLineNumber})" if p is not None else ""))

    def handlers(self) -> tuple[Callable[[str, dict[str, str]], None], Callable[[str], None]]:
        kinds: list[int] = []
        parents: list[int] = []
        columns: dict[str, list[str | None]] = {key: [] for key in ATTRS}
        ai, al, as_, at, af, an, aln, ad, av = (columns[key].append for key in ATTRS)
        parts = [_ModuleParts()]
        rows = [-1]           # open scope rows; -1 stands for the LM

        def flush() -> None:
            parts[0].add(kinds, parents, columns)
            kinds.clear()
            parents.clear()
            for values in columns.values():
                values.clear()
        open_kinds: list[int | None] = [None]
        allowed = ALLOWED_CHILDREN
        kind_of = KIND_OF_TAG

        def start(tag: str, attrs: dict[str, str]) -> None:
            kind = kind_of.get(tag)
            if kind is None or self.lm is None:
                self.outside_start(tag, attrs)
                return
            if kind not in allowed[open_kinds[-1]]:
                where = f"<{KIND_TAGS[open_kinds[-1]]}>" if open_kinds[-1] else "<LM>"
                raise self.fail(f"<{tag}> is not allowed directly inside {where}")
            if len(kinds) >= SCOPE_PART:
                flush()
            rows.append(parts[0].rows + len(kinds))
            kinds.append(kind)
            parents.append(rows[-2])
            get = attrs.get
            ai(get("i"))
            al(get("l"))
            as_(get("s"))
            at(get("t"))
            af(get("f"))
            an(get("n"))
            aln(get("ln"))
            ad(get("d"))
            av(get("v"))
            open_kinds.append(kind)

        def end(tag: str) -> None:
            if len(rows) > 1:
                rows.pop()
                open_kinds.pop()
                return
            if tag == "LM" and self.lm is not None:
                path, lm_id, has_calls, lm_v = self.lm
                flush()
                self.done.append(parts[0].finish(path, lm_id, has_calls, lm_v))
                parts[0] = _ModuleParts()
                self.lm = None
            elif tag == ROOT:
                self.closed_root = True

        return start, end

    def outside_start(self, tag: str, attrs: dict[str, str]) -> None:
        if self.lm is not None:
            raise self.fail(f"unknown element <{tag}>")
        if tag == "LM":
            if not self.seen_root or self.closed_root:
                raise self.fail("<LM> outside <HPCToolkitStructure>")
            self.start_lm(attrs)
        elif tag == ROOT:
            if self.seen_root:
                raise self.fail(f"nested <{ROOT}>")
            self.start_root(attrs)
        else:
            raise self.fail(f"unexpected element <{tag}> (expected <LM> inside <{ROOT}>)")

    def start_root(self, attrs: dict[str, str]) -> None:
        self.seen_root = True
        version = attrs.get("version")
        if version is None:
            raise self.fail(f"<{ROOT}> has no version attribute")
        if version not in READABLE_VERSIONS:
            raise Refused(f"structure format version {version} is not supported "
                           f"(hpcsa reads {', '.join(READABLE_VERSIONS)})")
        self.sf.version = version
        try:
            self.sf.id = int(attrs.get("i", "0"))
        except ValueError:
            raise self.fail(f"<{ROOT} i={attrs['i']!r}> is not a decimal integer") from None
        self.sf.name = attrs.get("n")

    def start_lm(self, attrs: dict[str, str]) -> None:
        name = attrs.get("n")
        if name is None:
            raise self.fail("<LM> without the n (binary path) attribute")
        calls = attrs.get("has-calls")
        if calls is not None and calls not in ("0", "1"):
            raise self.fail(f"<LM has-calls={calls!r}> must be 0 or 1")
        try:
            lm_id = int(attrs.get("i", "-1"))
        except ValueError:
            raise self.fail(f"<LM i={attrs['i']!r}> is not a decimal integer") from None
        self.lm = (name, lm_id, None if calls is None else calls == "1", "v" in attrs)


def make_parser(reader: DocumentReader) -> expat.XMLParserType:
    p = expat.ParserCreate()
    reader.parser = p
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    p.UseForeignDTD(False)
    p.EntityDeclHandler = _refuse_entity
    p.UnparsedEntityDeclHandler = _refuse_unparsed
    p.ExternalEntityRefHandler = _refuse_external
    p.SkippedEntityHandler = _refuse_skipped
    p.StartDoctypeDeclHandler = _refuse_external_dtd
    p.StartElementHandler, p.EndElementHandler = reader.handlers()
    return p


def _expat_problem(exc: expat.ExpatError, total: int) -> str:
    code = exc.code
    msg = expat.ErrorString(code) if code is not None else str(exc)
    where = f"line {exc.lineno}, column {exc.offset}"
    if code in (expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS],
                expat.errors.codes[expat.errors.XML_ERROR_UNCLOSED_TOKEN],
                expat.errors.codes[expat.errors.XML_ERROR_UNCLOSED_CDATA_SECTION]) and total:
        return f"the XML ends before the document is complete ({where}); the file is truncated"
    if code == expat.errors.codes[expat.errors.XML_ERROR_UNDEFINED_ENTITY]:
        return f"uses an undeclared entity ({where})"
    return f"not well-formed structure XML: {msg} ({where})"


def iter_modules(path: str | os.PathLike[str], header: StructureFile | None = None) -> Iterator[Module]:
    """Stream the load modules of a structure file, one finished :class:`.Module` at a time.

    ``header``, when given, receives the root's version, id and name.
    """
    path = os.fspath(path)
    reader = DocumentReader(path)
    parser = make_parser(reader)
    total = 0
    fh = open_input(path, "a structure file")
    with fh:
        while True:
            chunk = fh.read(CHUNK)
            try:
                if total == 0 and chunk and not chunk.lstrip().startswith(b"<"):
                    raise Refused("not an XML structure file (does not start with '<')")
                parser.Parse(chunk, not chunk)
            except Refused as exc:
                raise FormatError(path, str(exc)) from None
            except expat.ExpatError as exc:
                raise FormatError(path, _expat_problem(exc, total)) from None
            except LookupError as exc:  # an XML declaration naming an encoding Python does not know
                raise FormatError(path, f"declares a character encoding that cannot be read ({exc})") from None
            total += len(chunk)
            if header is not None and reader.seen_root:
                header.version, header.id, header.name = reader.sf.version, reader.sf.id, reader.sf.name
            if reader.done:
                yield from reader.done
                reader.done.clear()
            if not chunk:
                break
    if not reader.seen_root:
        raise FormatError(path, f"no <{ROOT}> element; not a structure file")


def read_with_expat(path: str | os.PathLike[str]) -> StructureFile:
    """The whole file in memory, read by expat whatever its form (the general reader)."""
    sf = StructureFile(modules=[])
    sf.modules = list(iter_modules(path, header=sf))
    return sf


__all__ = ["iter_modules", "read_with_expat"]
