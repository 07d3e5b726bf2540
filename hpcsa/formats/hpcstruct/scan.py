"""Reading the form hpcstruct writes, with numpy over whole segments of the file instead of expat's callbacks.

Every real structure file comes from one writer in one form: one element per line, attributes as
`` name="value"`` with a single space, the five predefined entities and character references only, and a DTD
without defaults. The general reader (:mod:`hpcsa.formats.hpcstruct.stream`) spends most of its time in a Python
callback per element; for a C library with its debug info (130,000 scopes, 7.6 MB) that is half a second,
which on a first run is most of what ``hpcsa prof`` does. This reader finds the markup of a segment of the
file at once (the positions of ``<``, ``>``, ``"`` and a few others), checks that every tag is exactly in
that form, works out nesting with sorted searches, and converts numbers, address ranges and strings column
by column.

It accepts a file only when the whole of it is in that form and valid; anything else (a comment or text
in the body, other quoting or spacing, an unknown element or attribute, an entity it does not know, a
number the general reader would read differently, a literal tab or newline inside a value, an encoding
other than UTF-8, DTD attribute defaults) makes :func:`read_canonical` return None, and the caller reads
the file with expat, which gives the result or the one-line error. When it accepts, the result is the
general reader's, array for array and string for string (tested on every real file and on mutations).

The prologue (XML declaration, DOCTYPE with its internal DTD, root element) is always read by expat with
the general reader's handlers, so entity declarations and external references are refused as there.
"""

from __future__ import annotations

import io
import os
import re
import xml.parsers.expat as expat
from collections.abc import Callable
from itertools import compress
from typing import Any, BinaryIO, cast

import numpy as np

from hpcsa.core.digests import content_digest
from hpcsa.formats.hpcstruct import scan_values as sv
from hpcsa.formats.hpcstruct.model import (
    ALLOWED_CHILDREN,
    HAS_V,
    KIND_OF_TAG,
    RANGE,
    ROOT,
    SCOPE,
    F,
    Module,
    StructureFile,
)
from hpcsa.formats.hpcstruct.scan_values import DASH, LBRACKET, RPAREN, NotCanonical
from hpcsa.formats.hpcstruct.stream import (
    STRING_COLUMNS,
    DocumentReader,
    Refused,
    make_parser,
    number_strings,
)

#: Smaller files are read by expat: its start is cheaper than this reader's fixed costs (crossover ~40 KB).
SCAN_FROM = 64 << 10

#: Bytes of the body examined at a time (cut before a ``<``): bounds the temporaries to a few times this.
SEGMENT = 1 << 19

#: A module's columns are first sized for this many bytes of the body per scope and per range (hpcstruct
#: writes about 60 and 30), then doubled when short.
BYTES_PER_SCOPE, BYTES_PER_RANGE = 40, 24

# Byte classes: the markup, control bytes (allowed only between tags) and the range marks (the highest).
_LT, _GT, _QUOT, _CTRL = range(1, 5)
_CLASS = np.zeros(256, np.uint8)
_CLASS[:0x20] = _CTRL
for _ch, _cls in ((b"<", _LT), (b">", _GT), (b'"', _QUOT), (b"[", LBRACKET), (b"-", DASH), (b")", RPAREN)):
    _CLASS[_ch[0]] = _cls

_WHITE = np.zeros(256, bool)
_WHITE[list(b" \t\r\n")] = True

_LM = 7  # element code of <LM> (the scope kinds are 1-6)
_ROOT_LEVEL = 0  # "parent kind" of an element directly inside the root
_KIND_OF_BYTE = np.zeros(256, np.uint8)
for _tag, _code in KIND_OF_TAG.items():
    _KIND_OF_BYTE[ord(_tag)] = _code

# _ALLOWED[parent, child]: the 4.9 grammar (parent _LM: directly inside a load module; 0: inside the root).
_ALLOWED = np.zeros((8, 8), bool)
_ALLOWED[_ROOT_LEVEL, _LM] = True
for _parent, _children in ALLOWED_CHILDREN.items():
    for _child in _children:
        _ALLOWED[_LM if _parent is None else _parent, _child] = True

# Attribute codes: the index in ATTRS order ("i", "l", "s", "t", "f", "n", "ln", "d", "v").
_I, _L, _S, _T, _F, _N, _LN, _D, _V = range(9)
_ATTR_OF_BYTE = np.full(256, -1, np.int8)
for _name, _code in (("i", _I), ("l", _L), ("s", _S), ("t", _T), ("f", _F), ("n", _N), ("d", _D), ("v", _V)):
    _ATTR_OF_BYTE[ord(_name)] = _code

# bytes.translate tables: a whole segment is classified at C speed (a numpy gather converts every byte to
# an index first: 3-4 times slower)
_CLASS_TABLE, _SPECIAL_TABLE = bytes(_CLASS), bytes(_CLASS > 0)


def read_canonical(path: str | os.PathLike[str], strict: bool = False) -> StructureFile | None:
    """The structure file at ``path`` if it is in the form hpcstruct writes, else None (see the module
    docstring and :func:`scan`)."""
    got = _scan_path(path, None, strict)
    return None if got is None else got[0]


def scan_file(path: str | os.PathLike[str], strict: bool = False) -> tuple[StructureFile, str] | None:
    """As :func:`read_canonical`, with the content hash (:func:`hpcsa.core.digests.content_digest`) of the bytes
    it read (all of the file): the bytes parsed are the bytes hashed, whatever happens to the file meanwhile."""
    return _scan_path(path, content_digest(), strict)


def scan(data: bytes, strict: bool = False) -> StructureFile | None:
    """The structure file whose bytes are ``data`` if it is in the form hpcstruct writes, else None; never
    raises for the content. A failure of this reader itself also gives None (the general reader then
    reads the file), unless ``strict`` (the tests), where it is raised."""
    got = _scan(io.BytesIO(data), None, len(data), strict)
    return None if got is None else got[0]


def _scan_path(path: str | os.PathLike[str], digest: Any, strict: bool) -> tuple[StructureFile, str] | None:
    try:
        with open(path, "rb") as fh:
            return _scan(fh, digest, os.fstat(fh.fileno()).st_size, strict)
    except OSError:
        return None


def _scan(fh: BinaryIO, digest: Any, size: int, strict: bool) -> tuple[StructureFile, str] | None:
    try:
        sf = _read(_Input(fh, digest), size)
    except NotCanonical:
        return None
    except OSError:
        raise
    except Exception:
        if strict:
            raise
        return None
    return sf, "" if digest is None else digest.hexdigest()


class _Input:
    """The file read forward once, a part at a time (a large file is never all in memory), each byte hashed
    as it is read; ``buf`` holds what is read and not yet examined, from offset ``base`` of the file."""

    def __init__(self, fh: BinaryIO, digest: Any) -> None:
        self.fh, self.digest = fh, digest
        self.buf = bytearray()
        self.base = 0
        self.eof = False

    def more(self, size: int) -> bytes:
        chunk = self.fh.read(size)
        if not chunk:
            self.eof = True
        elif self.digest is not None:
            self.digest.update(chunk)
        self.buf += chunk
        return chunk

    def drop(self, count: int) -> None:
        del self.buf[:count]
        self.base += count


def _read(src: _Input, size: int) -> StructureFile:
    sf, body_start = _prologue(src)
    src.drop(body_start - src.base)
    body = _Body(size - body_start)
    while True:  # cut segments before a '<' at least SEGMENT bytes on, while more of the file follows
        cut = src.buf.find(b"<", SEGMENT)
        while cut < 0 and not src.eof:
            src.more(SEGMENT)
            cut = src.buf.find(b"<", SEGMENT)
        if cut < 0:
            break
        body.segment(src.buf[:cut])
        src.drop(cut)
    tail = bytes(src.buf)  # the end of the body, the root's end tag and what follows it
    close = tail.rfind(b"</" + ROOT.encode())
    if close < 0 or tail[close + len(ROOT) + 2:close + len(ROOT) + 3] != b">" \
            or tail[close + len(ROOT) + 3:].strip(b" \t\r\n"):
        raise NotCanonical  # no root end, or something after it (the general reader decides)
    if close:
        body.segment(tail[:close])
    sf.modules = body.finish()
    return sf


def _prologue(src: _Input) -> tuple[StructureFile, int]:
    """The root's attributes and the offset of the first ``<LM``, read by expat with the general reader's
    handlers (which refuse entities and external DTDs); the DTD may not give attribute defaults or types
    (expat would apply them to every element)."""
    reader = DocumentReader("")
    parser = make_parser(reader)
    # the reader's own handler (DocumentReader.handlers): attributes as a dict
    start_scope = cast(Callable[[str, dict[str, str]], None], parser.StartElementHandler)
    found: list[int] = []

    class _Body(Exception):
        pass

    def start(tag: str, attrs: dict[str, str]) -> None:
        if tag == "LM" and reader.seen_root and reader.lm is None:
            found.append(parser.CurrentByteIndex)
            raise _Body
        start_scope(tag, attrs)

    def attlist(element: str, name: str, type_: str, default: str | None, required: bool) -> None:
        if type_ != "CDATA" or default is not None:
            raise NotCanonical

    def xml_decl(version: str, encoding: str | None, standalone: int) -> None:
        if encoding is not None and encoding.lower() != "utf-8":
            raise NotCanonical

    parser.StartElementHandler = start
    parser.AttlistDeclHandler = attlist
    parser.XmlDeclHandler = xml_decl
    try:
        while not found:
            chunk = src.more(1 << 16)
            if not chunk:
                break
            if not src.base and len(src.buf) == len(chunk) and not re.match(rb"[ \t\r\n]*<", chunk):
                raise NotCanonical
            parser.Parse(chunk, False)
    except (_Body, Refused, expat.ExpatError, NotCanonical, LookupError):
        pass
    at = found[0] - src.base if found else -1
    if at < 0 or src.buf[at:at + 3] != b"<LM":
        raise NotCanonical  # no load module (a trivial file) or a problem: the general reader decides
    return StructureFile(modules=[], version=reader.sf.version, id=reader.sf.id, name=reader.sf.name), found[0]


class _Module:
    """One load module's columns, converted a segment at a time and joined at its end."""

    def __init__(self, attrs: dict[str, str], expect: int) -> None:
        reader = DocumentReader("")
        try:
            reader.seen_root = True
            reader.start_lm(attrs)
        except Refused:
            raise NotCanonical from None
        assert reader.lm is not None
        self.path, self.id, self.has_calls, self.has_v = reader.lm
        self.rows = 0
        self.n_ranges = 0
        # Filled in place and cut to length at the end (no pieces joined: no second copy), sized for the
        # bytes to come (hpcstruct writes ~60 bytes per scope, ~30 per range) and doubled when short; pages
        # beyond what is filled are never touched.
        self.scopes = np.empty(expect // BYTES_PER_SCOPE + 64, SCOPE)
        self.ranges = np.empty(expect // BYTES_PER_RANGE + 64, RANGE)
        self.texts: dict[str, dict[str, int]] = {name: {} for name, _ in STRING_COLUMNS}  # text -> number
        self.by_raw: dict[str, dict[str, int]] = {}  # per column once a value had an entity: as written -> number
        self.with_text: set[str] = set()  # the columns with a non-empty value

    def room(self, scopes: int, ranges: int) -> None:
        """Make room for this many more scopes and ranges."""
        if self.rows + scopes > len(self.scopes):
            self.scopes = _grown(self.scopes, self.rows, self.rows + scopes)
        if self.n_ranges + ranges > len(self.ranges):
            self.ranges = _grown(self.ranges, self.n_ranges, self.n_ranges + ranges)

    def intern(self, column: str, raws: list[str]) -> np.ndarray:
        """The local numbers of these values (as written: entities not replaced) of one string column; new
        texts numbered as first seen. Entities are replaced once per distinct value, not per occurrence."""
        numbers = self.texts[column]
        by_raw = self.by_raw.get(column, numbers)  # the same dictionary while no value had an entity
        new = [t for t in dict.fromkeys(raws) if t not in by_raw]
        if new:
            joined = "\0".join(new)  # no value holds a NUL (a control byte)
            amp = "&" in joined
            if amp and by_raw is numbers:
                by_raw = self.by_raw[column] = dict(numbers)
            texts = sv.replace_entities(joined, new) if amp else new
            first = len(numbers)
            if by_raw is numbers or (numbers.keys().isdisjoint(texts) and len(set(texts)) == len(texts)):
                numbered: range | list[int] = range(first, first + len(texts))
                numbers.update(zip(texts, numbered, strict=True))
            else:  # two spellings of one text (an entity and the character itself)
                numbered = [numbers.setdefault(t, len(numbers)) for t in texts]
            if by_raw is not numbers:
                by_raw.update(zip(new, numbered, strict=True))
            if any(new):
                self.with_text.add(column)
        return np.fromiter(map(by_raw.__getitem__, raws), np.int32, len(raws))

    def finish(self) -> Module:
        scopes = self.scopes[:self.rows]
        strings = number_strings(scopes, self.texts, self.with_text)
        return Module(path=self.path, scopes=scopes, ranges=self.ranges[:self.n_ranges], strings=strings, id=self.id,
                      has_calls=self.has_calls, has_v=self.has_v)


def _grown(array: np.ndarray, used: int, needed: int) -> np.ndarray:
    out = np.empty(max(needed, 2 * len(array)), array.dtype)
    out[:used] = array[:used]
    return out


class _StartsByLevel:
    """The start tags of a segment sorted by (level, index), to find the latest one at a level before a point:
    a parent, the element an end tag closes, or what is open at a level."""

    def __init__(self, starts: np.ndarray, start_level: np.ndarray, n: int) -> None:
        self.span = np.int64(n + 1)
        if len(start_level) and int(start_level.max()) >= 1 << 15:
            raise NotCanonical  # nesting that deep is left to expat
        order = np.argsort(start_level.astype(np.int16), kind="stable")  # radix sort; index order kept
        self.starts = starts[order]
        self.keys = start_level[order].astype(np.int64) * self.span + self.starts

    def latest(self, level: np.ndarray, before: np.ndarray) -> np.ndarray:
        """For each query, the index of the latest start tag at ``level`` below ``before``, or -1."""
        if not len(self.keys):
            return np.full(len(level), -1, np.int64)
        at = np.searchsorted(self.keys, level.astype(np.int64) * self.span + before) - 1
        found = (at >= 0) & (level >= 0)
        found &= self.keys[np.maximum(at, 0)] // self.span == level
        return np.where(found, self.starts[np.maximum(at, 0)], -1)


class _Body:
    """The elements of the body (from the first ``<LM`` to the root's end tag), a segment at a time; the
    open elements and the current module carry over from one segment to the next."""

    def __init__(self, expect: int) -> None:
        self.stack_kind: list[int] = []   # kinds of the open elements, outermost (an LM) first
        self.stack_row: list[int] = []    # their rows (-1 for the LM)
        self.module: _Module | None = None
        self.done: list[Module] = []
        self.expect = expect  # bytes of the body (sizes a module's columns)

    def finish(self) -> list[Module]:
        if self.stack_kind or self.module is not None:
            raise NotCanonical  # an element left open
        return self.done

    def segment(self, raw: bytes | bytearray) -> None:
        """The elements of ``raw``, a piece of the body that starts with a tag and ends before one."""
        seg = np.frombuffer(raw, np.uint8)
        lt, gt, qo, qc, tag_of_q, marks = self._markup(raw, seg)
        kind, is_end, is_lm, self_close, scope_start, attrs, row, parent_row, lm_starts, stack = \
            self._elements(seg, lt, gt, qo, qc, tag_of_q)
        n = len(lt)
        # -- the pieces: the module carried in, then each LM started here
        digits = np.frombuffer(raw.translate(sv.DIGIT_TABLE), np.uint8)
        bounds = np.concatenate([[0], lm_starts, [n]]).tolist()
        for piece in range(len(bounds) - 1):
            lo, hi = bounds[piece], bounds[piece + 1]
            if piece > 0:
                self.module = _Module(_lm_attributes(seg, int(lt[lo]), int(gt[lo])), self.expect)
                lo += 1
                if self_close[lo - 1]:
                    self.done.append(self.module.finish())
                    self.module = None
                    continue
            ends = np.flatnonzero(is_lm[lo:hi] & is_end[lo:hi])
            stop_at = lo + int(ends[0]) if len(ends) else hi
            if self.module is not None:
                self._convert(seg, digits, marks, self.module, kind, row, parent_row, scope_start, lo, stop_at,
                              attrs)
            if len(ends):
                assert self.module is not None  # an end tag matches an open LM
                self.done.append(self.module.finish())
                self.module = None
        self.stack_kind, self.stack_row = stack

    def _elements(self, seg: np.ndarray, lt: np.ndarray, gt: np.ndarray, qo: np.ndarray, qc: np.ndarray,
                  tag_of_q: np.ndarray) -> tuple[Any, ...]:
        """Each tag checked and placed: its kind, whether it ends, opens a module or closes itself, its
        attributes, its row in its module and its parent's row, and what stays open after the segment."""
        n = len(lt)
        # -- tags: every byte outside the values is checked to be where the canonical form puts it
        is_end = seg[lt + 1] == ord("/")
        first = seg[lt + 1 + is_end]
        kind = _KIND_OF_BYTE[first]
        is_lm = (first == ord("L")) & (seg[lt + 2 + is_end] == ord("M"))
        kind[is_lm] = _LM
        if np.any(kind == 0) or np.any(is_end & (gt - lt != 3 + is_lm)):
            raise NotCanonical  # an unknown element, or an end tag other than </X>
        self_close = ~is_end & (seg[gt - 1] == ord("/"))
        scope_start = ~is_end & ~is_lm
        of_scope = scope_start[tag_of_q]
        aq_o, aq_c, a_tag = qo[of_scope], qc[of_scope], tag_of_q[of_scope]
        code, space = self._attribute_names(seg, aq_o)
        firsts = np.ones(len(a_tag), bool)
        firsts[1:] = a_tag[1:] != a_tag[:-1]
        expected = np.empty(len(a_tag), np.int64)
        expected[1:] = aq_c[:-1] + 1
        expected[firsts] = lt[a_tag[firsts]] + 2
        if np.any(space != expected):
            raise NotCanonical  # anything but ' name="value"' after a tag's name or value
        tag_end = lt + 2  # after the one-letter name, or after the last value
        lasts = np.ones(len(a_tag), bool)
        lasts[:-1] = firsts[1:]
        tag_end[a_tag[lasts]] = aq_c[lasts] + 1
        if np.any(scope_start & (tag_end != gt - self_close)):
            raise NotCanonical
        bit, per_tag = np.left_shift(1, code), np.flatnonzero(firsts)
        if len(bit) and np.any(np.add.reduceat(bit, per_tag) != np.bitwise_or.reduceat(bit, per_tag)):
            raise NotCanonical  # a repeated attribute (an error expat reports)
        # -- nesting: the parent of a start tag and the element an end tag closes, by sorted search
        depth_in = len(self.stack_kind)
        delta = np.where(is_end, -1, np.where(self_close, 0, 1))
        after = np.cumsum(delta) + depth_in
        before = after - delta
        if np.any(after < 0):
            raise NotCanonical
        starts = np.flatnonzero(~is_end)
        level = np.where(is_end, after, before - 1)  # the level of the parent, or of the element closed
        by_level = _StartsByLevel(starts, before[starts], n)
        opener = by_level.latest(level, np.arange(n))
        carried = opener < 0
        if np.any(carried & (level >= depth_in)):
            raise NotCanonical
        at = np.clip(level, 0, depth_in)
        stack_kind = np.array(self.stack_kind + [_ROOT_LEVEL], np.int64)[at]
        stack_row = np.array(self.stack_row + [-1], np.int64)[at]
        root_level = carried & (level < 0)
        opener_kind = np.where(carried, np.where(root_level, _ROOT_LEVEL, stack_kind), kind[np.maximum(opener, 0)])
        if np.any(is_end & (opener_kind != kind)):
            raise NotCanonical  # an end tag closing another element
        if np.any(~is_end & ~_ALLOWED[opener_kind, kind]):
            raise NotCanonical  # an element not allowed there (the general reader names it)
        # -- rows within each module; the parent's row (-1 directly inside the LM)
        lm_starts = np.flatnonzero(is_lm & ~is_end)
        rank = np.cumsum(scope_start) - 1
        piece_of = np.searchsorted(lm_starts, np.arange(n), "right")  # 0: the module carried in
        base = np.concatenate([[-(self.module.rows if self.module else 0)], rank[lm_starts] + 1])
        row = rank - base[piece_of]
        parent_row = np.where(carried, np.where(root_level, -1, stack_row),
                              np.where(opener_kind == _LM, -1, row[np.maximum(opener, 0)]))
        attrs = (code, aq_o + 1, aq_c, a_tag, np.flatnonzero(of_scope))
        # -- what stays open: at each level, the latest start there (else what was open before)
        levels = int(after[-1])
        open_here = by_level.latest(np.arange(levels), np.full(levels, n))
        stack_kind_out, stack_row_out = [], []
        for lev, e in enumerate(open_here.tolist()):
            if e >= 0:
                stack_kind_out.append(int(kind[e]))
                stack_row_out.append(-1 if kind[e] == _LM else int(row[e]))
            else:
                stack_kind_out.append(self.stack_kind[lev])
                stack_row_out.append(self.stack_row[lev])
        return (kind, is_end, is_lm, self_close, scope_start, attrs, row, parent_row, lm_starts,
                (stack_kind_out, stack_row_out))


    def _markup(self, raw: bytes | bytearray, seg: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[Any, ...]]:
        """Where the tags and the values of a segment are (each tag's ``<`` and ``>``; each value's quotes and
        its tag), and the range marks inside values; checked to be markup the canonical form allows. Its own
        function so that the arrays over every markup byte (several times the tags') are let go before the
        values are converted (libc's 7.6 MB structure file: the scan's peak of traced memory went from 29.7 to
        24.6 MiB, 16.7 of them the columns it returns)."""
        special = np.flatnonzero(np.frombuffer(raw.translate(_SPECIAL_TABLE), bool))  # the bytes that matter
        classes = np.frombuffer(raw.translate(_CLASS_TABLE), np.uint8)[special]      # and what they are
        is_quote = classes == _QUOT
        quotes_before = np.cumsum(is_quote, dtype=np.int32) - is_quote
        if not len(special) or (int(quotes_before[-1]) + int(is_quote[-1])) % 2:
            raise NotCanonical
        in_value = (quotes_before & 1).astype(bool)  # between a value's quotes (a closing one included)
        if np.any(in_value & (classes == _LT)):
            raise NotCanonical  # a '<' inside a value
        classes[in_value & (classes == _GT)] = 0  # a '>' inside a value is text
        is_lt, is_gt = classes == _LT, classes == _GT
        lt, gt = special[is_lt], special[is_gt]
        if not len(lt) or lt[0] != 0 or len(gt) != len(lt) or np.any(gt <= lt) or np.any(lt[1:] <= gt[:-1]):
            raise NotCanonical
        self._check_gaps(seg, lt, gt)
        tag_of = np.cumsum(is_lt, dtype=np.int32) - 1  # the tag opened last at or before each byte
        in_tag = tag_of == np.cumsum(is_gt, dtype=np.int32) - is_gt  # ... and not closed before it
        at_quote = np.flatnonzero(is_quote)
        if np.any(~in_tag[at_quote]) or np.any(tag_of[at_quote[0::2]] != tag_of[at_quote[1::2]]):
            raise NotCanonical  # a value outside a tag, or running past its tag's end
        if np.any(in_tag & (classes == _CTRL)):
            raise NotCanonical  # a control byte in a tag (expat would make tabs and newlines spaces)
        qo, qc = special[at_quote[0::2]], special[at_quote[1::2]]
        tag_of_q = tag_of[at_quote[0::2]]
        is_mark = in_value & (classes >= LBRACKET)  # '[', '-', ')' inside values (the ranges of v)
        marks = (special[is_mark], classes[is_mark], quotes_before[is_mark] >> 1, len(qo))
        return lt, gt, qo, qc, tag_of_q, marks

    @staticmethod
    def _check_gaps(seg: np.ndarray, lt: np.ndarray, gt: np.ndarray) -> None:
        """Between tags (and after the last) only whitespace."""
        gap_start = gt + 1
        gap_end = np.append(lt[1:], len(seg))
        lens = gap_end - gap_start  # a segment holds at least one tag
        if int(lens.max()) <= 1:
            ones = gap_start[lens == 1]
            if not np.all(_WHITE[seg[ones]]):
                raise NotCanonical
            return
        total = int(lens.sum())
        offsets = np.cumsum(lens) - lens
        index = np.arange(total, dtype=np.int64) + np.repeat(gap_start - offsets, lens)
        if not np.all(_WHITE[seg[index]]):
            raise NotCanonical  # text, or markup expat would read (a comment, an instruction)

    @staticmethod
    def _attribute_names(seg: np.ndarray, qo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each value's attribute code and where its leading space is; only the 4.9 scope attributes."""
        if not len(qo):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if np.any(seg[qo - 1] != ord("=")):
            raise NotCanonical
        one = seg[qo - 3] == ord(" ")
        code = _ATTR_OF_BYTE[seg[qo - 2]].astype(np.int64)
        two = ~one & (seg[qo - 4] == ord(" ")) & (seg[qo - 3] == ord("l")) & (seg[qo - 2] == ord("n"))
        code[two] = _LN
        if np.any(~one & ~two) or np.any(code < 0):
            raise NotCanonical  # an attribute the general reader ignores, or other spacing
        return code, qo - np.where(one, 3, 4)

    @staticmethod
    def _convert(seg: np.ndarray, digits: np.ndarray, marks: tuple[np.ndarray, np.ndarray, np.ndarray, int], module: _Module,
                 kind: np.ndarray, row: np.ndarray, parent_row: np.ndarray, scope_start: np.ndarray, lo: int,
                 hi: int, attrs: tuple[np.ndarray, ...]) -> None:
        """The scope rows of elements ``lo:hi`` (all in ``module``) into its columns."""
        elements = lo + np.flatnonzero(scope_start[lo:hi])
        if not len(elements):
            return
        n = len(elements)
        first_row = int(row[elements[0]])
        if first_row != module.rows:
            raise NotCanonical
        code, vstart, vend, tag, value = attrs
        chosen = (tag >= elements[0]) & (tag <= elements[-1])
        code, vstart, vend, tag, value = code[chosen], vstart[chosen], vend[chosen], tag[chosen], value[chosen]
        local = row[tag] - first_row

        def column(sel: np.ndarray, values: np.ndarray, dtype: type) -> np.ndarray:
            rows = local[sel]
            if len(rows) == n:  # every element has it (rows ascending, one per element)
                return values
            out: np.ndarray = np.full(n, -1, dtype)
            out[rows] = values
            return out

        module.room(n, 0)
        scopes = module.scopes[first_row:first_row + n]
        scopes["kind"] = kind[elements]
        scopes["parent"] = parent_row[elements]
        for attr, name in ((_I, "id"), (_L, "line"), (_S, "sym")):
            sel = code == attr
            scopes[name] = column(sel, sv.decimal(digits, vstart[sel], vend[sel]), np.int64) if np.any(sel) else -1
        sel = code == _T
        scopes["target"] = column(sel, sv.hexadecimal(seg, digits, vstart[sel], vend[sel]), np.int64) if np.any(sel) else -1
        sel = code == _V
        flags = np.zeros(n, np.uint8)
        flags[local[sel]] = HAS_V
        scopes["flags"] = flags
        if np.any(sel):
            counts, rlo, rhi = sv.ranges(seg, digits, marks, value[sel], vstart[sel], vend[sel])
            module.room(0, len(rlo))
            ranges = module.ranges[module.n_ranges:module.n_ranges + len(rlo)]
            ranges["lo"] = rlo
            ranges["hi"] = rhi
            ranges["scope"] = np.repeat(local[sel] + first_row, counts)
            module.n_ranges += len(rlo)
        # strings: F's n is its file (and, as in the general reader, numbered in the name column, then cleared)
        strs = (code >= _F) & (code <= _D)
        texts = sv.values(seg, vstart[strs], vend[strs])
        s_code, s_file = code[strs], kind[tag[strs]] == F
        for name, _ in STRING_COLUMNS:
            if name == "file":
                sel = ((s_code == _F) & ~s_file) | ((s_code == _N) & s_file)
            else:
                sel = s_code == {"name": _N, "link": _LN, "device": _D}[name]
            if np.any(sel):
                ids = module.intern(name, list(compress(texts, sel.tolist())))
                scopes[name] = column(np.flatnonzero(strs)[sel], ids, np.int32)
            else:
                scopes[name] = -1
        scopes["name"][scopes["kind"] == F] = -1
        module.rows += n


def _lm_attributes(seg: np.ndarray, lt: int, gt: int) -> dict[str, str]:
    """An ``<LM>`` tag's attributes, read by expat as a document of its own (only plain ASCII tags)."""
    text = seg[lt:gt + 1].tobytes()
    if b"'" in text or b"&" in text or not text.isascii():
        raise NotCanonical
    got: list[dict[str, str]] = []
    parser = expat.ParserCreate()
    parser.StartElementHandler = lambda tag, attrs: got.append(attrs)
    try:
        parser.Parse(text if text.endswith(b"/>") else text + b"</LM>", True)
    except expat.ExpatError:
        raise NotCanonical from None
    return got[0]


__all__ = ["read_canonical", "scan", "scan_file", "SCAN_FROM", "SEGMENT"]
