"""Program structure in memory: the content of a ``.hpcstruct`` file as columns.

A structure file is a tree per load module (``LM``) of files (``F``),
procedures (``P``), aliens (``A``: inlined code), loops (``L``), statements
(``S``) and call sites (``C``). Big binaries have hundreds of thousands of
scopes, so a :class:`Module` keeps them as numpy columns in document
(pre-)order, with a parent index per scope, and every address range of every
``v`` attribute in one sorted-by-scope array. Queries that the aggregation
needs per sample (address -> innermost statement, -> chain of enclosing
scopes; procedures by entry; call sites) are built from those arrays once and
cached.

The meaning of the tree follows hpcprof's reader (``finalizers/struct.cpp``):
an ``A`` whose parent is not an alien is an *outer* alien (the call site of an
inlined call, or a guard ``<inline>`` that only switches the file); an ``A``
directly inside an outer alien is the *inner* alien (the inlined function).
Statements take the file of their nearest enclosing ``F``/``L``/``A``.
"""

from __future__ import annotations

import bisect
import mmap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.core.binfmt import field_names
from hpcsa.core.dataclass import dataclass
from hpcsa.formats.hpcstruct.claims import claims_by_address
from hpcsa.formats.hpcstruct.columns import PackedStrings, bisect_right

# Scope kinds; the code is the index in KIND_TAGS.
F, P, A, L, S, C = 1, 2, 3, 4, 5, 6
#: The version hpcstruct writes and the versions read (the same elements; 4.9 added ``LM has-calls``), and the
#: root element of the document.
VERSION = "4.9"
READABLE_VERSIONS = ("4.7", "4.8", "4.9")
ROOT = "HPCToolkitStructure"

KIND_TAGS = ("", "F", "P", "A", "L", "S", "C")
KIND_OF_TAG = {tag: code for code, tag in enumerate(KIND_TAGS) if tag}

# Which kinds may appear directly inside which (None = directly inside the LM), per the 4.9 DTD.
ALLOWED_CHILDREN: dict[int | None, frozenset[int]] = {
    None: frozenset({F, P}),
    F: frozenset({P, L, S}),
    P: frozenset({P, A, L, S, C}),
    A: frozenset({A, L, S, C}),
    L: frozenset({A, L, S, C}),
    S: frozenset(),
    C: frozenset({C}),
}

GUARD_NAME = "<inline>"  # hpcstruct's name for a guard alien (switches the file only)

HAS_V = 0x1  # flag: the element carries a v attribute (possibly "{}")

NONE = -1  # absent integer attribute / string

# One row per scope, in document order; string columns index Module.strings.
SCOPE = np.dtype([
    ("kind", "u1"),
    ("flags", "u1"),
    ("parent", "i4"),   # row of the enclosing scope, -1 directly inside the LM
    ("id", "i8"),       # the i attribute
    ("line", "i8"),     # l
    ("file", "i4"),     # F: n; A and L: f
    ("name", "i4"),     # P and A: n
    ("link", "i4"),     # P and A: ln
    ("sym", "i8"),      # P: s (ELF symbol index, GPU binaries)
    ("target", "i8"),   # C: t (callee entry address)
    ("device", "i4"),   # C: d
])

# One row per address range [lo, hi) of a v attribute, grouped by scope in document order.
RANGE = np.dtype([("lo", "u8"), ("hi", "u8"), ("scope", "i4")])

# Roles of aliens, as hpcprof reads them.
NOT_ALIEN, OUTER_ALIEN, INNER_ALIEN = 0, 1, 2


def lexical_columns(kind: np.ndarray, up: np.ndarray, own_file: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """hpcprof's reading of a tree of scopes (``up``: each one's parent index, -1 at the top; every ancestor
    of a scope is among them, before it): per scope its alien role, the file in effect for it, the file of
    its call site (inner aliens) and its nearest enclosing context-making scope (P, L, inner A; an index, -1:
    none). An alien directly inside an outer alien is inner: down a run of nested aliens the roles alternate,
    outer first. F, and A and L naming a file, set the file below them."""
    is_alien = kind == A
    runs = _run_lengths(is_alien, up)
    role = np.where(is_alien, np.where(runs % 2 == 1, OUTER_ALIEN, INNER_ALIEN), NOT_ALIEN).astype(np.int8)
    sets_file = (kind == F) | ((is_alien | (kind == L)) & (own_file >= 0))
    source = _nearest_marked(sets_file, up)
    scope_file = np.where(source >= 0, own_file[np.maximum(source, 0)], NONE)
    above = np.maximum(up, 0)
    call_file = np.where((role == INNER_ALIEN) & (up >= 0), scope_file[above], NONE)
    opens = (kind == P) | (kind == L) | (role == INNER_ALIEN)
    lex_parent = np.where(up >= 0, _nearest_marked(opens, up)[above], NONE)
    i4 = np.int32
    return role, scope_file.astype(i4), call_file.astype(i4), lex_parent.astype(i4)


def enclosing_procedures(kind: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Each scope's nearest enclosing P (an index, -1: none), in a tree given as :func:`lexical_columns`
    takes it."""
    return np.where(up >= 0, _nearest_marked(kind == P, up)[np.maximum(up, 0)], NONE).astype(np.int32)


def _nearest_marked(marked: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Each scope's nearest marked scope among itself and its ancestors (-1: none), by pointer jumping: a
    constant number of vectorized steps per doubling of the depth, never a loop per scope."""
    at = np.where(marked, np.arange(len(up)), up)
    while True:
        safe = np.maximum(at, 0)
        jump = (at >= 0) & ~marked[safe]
        if not jump.any():
            return at
        at = np.where(jump, at[safe], at)


def _run_lengths(flag: np.ndarray, up: np.ndarray) -> np.ndarray:
    """For each flagged scope, how many flagged scopes lead up from it without a break (itself included), by
    Wyllie's list ranking; 0 where not flagged."""
    count = flag.astype(np.int64)
    nxt = np.where(flag & (up >= 0), up, -1)
    nxt = np.where((nxt >= 0) & flag[np.maximum(nxt, 0)], nxt, -1)
    while (nxt >= 0).any():
        safe = np.maximum(nxt, 0)
        count = np.where(nxt >= 0, count + count[safe], count)
        nxt = np.where(nxt >= 0, nxt[safe], -1)
    return count


class LexStep(NamedTuple):
    """One step of a lexical path, as hpcprof creates contexts from a structure file.

    ``relation`` is ``"enclosure"`` or ``"inlined_call"``; ``kind`` is
    ``"function"``, ``"loop"`` or ``"line"``. ``address`` is a procedure's
    entry or a loop's header; ``scope`` the row that produced the step.
    """

    relation: str
    kind: str
    name: str | None
    file: str | None
    line: int | None
    address: int | None
    scope: int


CALL_SITE = np.dtype([("scope", "i4"), ("caller", "i4"), ("address", "u8"), ("target", "i8"),
                      ("callee", "i4")])
PROCEDURE = np.dtype([("entry", "u8"), ("scope", "i4")])


@dataclass(eq=False)
class Module:
    """One ``LM``: a binary's structure tree as columns (see the module docstring)."""

    path: str
    scopes: np.ndarray  # SCOPE, document order, parent row < own row
    ranges: np.ndarray  # RANGE, non-decreasing scope
    strings: Sequence[str]  # a list, or PackedStrings from a cache entry
    id: int = 2
    has_calls: bool | None = False  # None: the attribute is absent (format 4.7)
    has_v: bool = True

    # -- plain access -------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, object]:
        """Pickled (sent to a worker or rank) without the mapping of its cache entry: its arrays are copied."""
        return {k: v for k, v in self.__dict__.items() if k != "mapping"}

    def release_pages(self) -> None:
        """Drop the pages of this module's cache entry from the process (``madvise(MADV_DONTNEED)``; a
        no-op for a module parsed from XML). Its arrays stay valid: a page read again faults back in from
        the page cache. Bisections and lexical paths touch scattered pages (and the kernel maps the pages
        around each fault), so a pass over many samples would otherwise leave much of the entry resident."""
        mapping = self.__dict__.get("mapping")
        if mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
            mapping.madvise(mmap.MADV_DONTNEED)

    def __len__(self) -> int:
        return len(self.scopes)

    def text(self, index: int) -> str | None:
        return None if index < 0 else self.strings[index]

    def texts(self, indexes: Iterable[int]) -> dict[int, str]:
        """The strings at these indexes (negative ones left out, as :meth:`.text` gives them None), looked up
        together."""
        wanted = [i for i in set(indexes) if i >= 0]
        strings = self.strings
        found = strings.many(wanted) if isinstance(strings, PackedStrings) else [strings[i] for i in wanted]
        return dict(zip(wanted, found, strict=True))

    @cached_property
    def range_bounds(self) -> np.ndarray:
        """``ranges`` rows of scope ``s`` are ``range_bounds[s]:range_bounds[s+1]``."""
        return np.searchsorted(self.ranges["scope"], np.arange(len(self.scopes) + 1), side="left")

    def ranges_of(self, scope: int) -> list[tuple[int, int]]:
        if "range_bounds" in self.__dict__:
            lo, hi = self.range_bounds[scope], self.range_bounds[scope + 1]
        else:  # one scope: two bisections of the strided column (reading log n of its pages, copying none)
            rs = self.ranges["scope"]
            lo = bisect.bisect_left(rs, scope)
            hi = bisect.bisect_left(rs, scope + 1, lo)
        r = self.ranges[lo:hi]
        return list(zip(r["lo"].tolist(), r["hi"].tolist(), strict=True))

    def children(self) -> list[list[int]]:
        """Child rows of every scope (index len(scopes) holds the LM's own children)."""
        out: list[list[int]] = [[] for _ in range(len(self.scopes) + 1)]
        for row, parent in enumerate(self.scopes["parent"].tolist()):
            out[parent].append(row)  # parent -1 lands in the last list
        return out

    def count(self, kind: int) -> int:
        return int(np.count_nonzero(self.scopes["kind"] == kind))

    def same_content(self, other: Module) -> bool:
        """Equal trees: same columns, same ranges, same strings behind every index."""
        if (self.path, self.id, self.has_calls, self.has_v) != (other.path, other.id, other.has_calls,
                                                                   other.has_v):
            return False
        if len(self.scopes) != len(other.scopes) or not np.array_equal(self.ranges, other.ranges):
            return False
        a, b = self.scopes, other.scopes
        for col in ("kind", "flags", "parent", "id", "line", "sym", "target"):
            if not np.array_equal(a[col], b[col]):
                return False
        sa, sb = np.array([*self.strings, None], dtype=object), np.array([*other.strings, None], dtype=object)
        return all(np.array_equal(sa[a[col]], sb[b[col]]) for col in ("file", "name", "link", "device"))

    # -- hpcprof's reading of the tree -----------------------------------------------------------
    @cached_property
    def _lexical(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per row: alien role, file in effect for the scope, call-site file (inner aliens),
        nearest enclosing context-making scope (P, L, inner A) and nearest enclosing P."""
        kind, up = self.scopes["kind"], self.scopes["parent"].astype(np.int64)
        return *lexical_columns(kind, up, self.scopes["file"].astype(np.int64)), enclosing_procedures(kind, up)

    @property
    def alien_role(self) -> np.ndarray:
        """NOT_ALIEN / OUTER_ALIEN (call site or guard) / INNER_ALIEN (inlined function) per row."""
        return self._lexical[0]

    @property
    def scope_file(self) -> np.ndarray:
        """String index of the source file hpcprof attributes to each scope (-1: none)."""
        return self._lexical[1]

    @property
    def procedure_of(self) -> np.ndarray:
        """Row of the nearest enclosing ``P`` of each row (-1 outside procedures); a P maps to its parent P."""
        return self._lexical[4]

    def lexical_path(self, leaf: int) -> list[LexStep]:
        """The contexts hpcprof creates for an instruction in ``leaf`` (an S or C row), outermost first.

        Outer aliens produce no step of their own: their line becomes the
        ``inlined_call`` step of the inner alien below them.
        """
        return self.lexical_paths([leaf])[0]

    def lexical_paths(self, leaves: Sequence[int]) -> list[list[LexStep]]:
        """:meth:`lexical_path` of each leaf, worked out together: the leaves' ancestors are gathered level by
        level (a path costs its depth, not the module's size, and a row shared by many paths is read once),
        their columns read in one go, and the entry address of every procedure and loop on the way found by
        one vectorized bisection."""
        if not len(leaves):
            return []
        leaf_rows = np.asarray(leaves, np.int64)
        rows, up, (_, scope_file, call_file, lex_parent) = self._lexical_rows(leaf_rows)
        sc = self.scopes[rows]
        kind, line, name = (sc[c].tolist() for c in ("kind", "line", "name"))
        row_of, up_of, lex_of = rows.tolist(), up.tolist(), lex_parent.tolist()
        sfile, cfile = scope_file.tolist(), call_file.tolist()
        heads = np.flatnonzero((sc["kind"] == P) | (sc["kind"] == L))
        entry = dict(zip(heads.tolist(), self._first_range_starts(rows[heads]), strict=True))
        text = self.texts(name + sfile + cfile).get  # -1: None
        steps_of: dict[int, tuple[LexStep, ...]] = {}

        def steps(i: int) -> tuple[LexStep, ...]:
            k, ln, row = kind[i], line[i], row_of[i]
            line_or_none = None if ln < 0 else ln
            if k == P:
                return (LexStep("enclosure", "function", text(name[i]), text(sfile[i]), line_or_none, entry[i], row),)
            if k == L:
                return (LexStep("enclosure", "loop", None, text(sfile[i]), line_or_none, entry[i], row),)
            if k == A:  # an inner alien (outer ones are never lexical parents)
                outer = up_of[i]
                call_line = line[outer]
                return (LexStep("inlined_call", "line", None, text(cfile[i]), None if call_line < 0 else call_line,
                                None, row_of[outer]),
                        LexStep("enclosure", "function", text(name[i]), text(sfile[i]), line_or_none, None, row))
            return (LexStep("enclosure", "line", None, text(sfile[i]), line_or_none, None, row),)

        out = []
        for i in np.searchsorted(rows, leaf_rows).tolist():
            chain = []
            while i >= 0:
                chain.append(i)
                i = lex_of[i]
            path: list[LexStep] = []
            for i in reversed(chain):
                got = steps_of.get(i)
                if got is None:
                    got = steps_of[i] = steps(i)
                path.extend(got)
            out.append(path)
        return out

    def _lexical_rows(self, leaves: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """The leaves and all their ancestors (sorted rows), the index in them of each one's parent (-1: none),
        and what :func:`lexical_columns` gives each (lexical parents as indexes in the rows too): from the
        whole-module arrays when they are computed, else from the ancestors' columns alone."""
        parent_col = self.scopes["parent"]
        levels = [sorted_unique(leaves)]
        while True:
            up = parent_col[levels[-1]].astype(np.int64)
            up = sorted_unique(up[up >= 0])
            if not len(up):
                break
            levels.append(up)
        rows = sorted_unique(np.concatenate(levels))
        sc = self.scopes[rows]
        up_rows = sc["parent"].astype(np.int64)
        up = np.where(up_rows >= 0, np.searchsorted(rows, up_rows), NONE)  # every ancestor is in rows
        if "_lexical" in self.__dict__:
            role, sfile, cfile, lex_rows = (a[rows] for a in self._lexical[:4])
            return rows, up, (role, sfile, cfile, np.where(lex_rows >= 0, np.searchsorted(rows, lex_rows), NONE))
        return rows, up, lexical_columns(sc["kind"], up, sc["file"].astype(np.int64))

    def _first_range_starts(self, rows: np.ndarray) -> list[int | None]:
        """The start of each row's first ``v`` range (None where it has none): bisections of the ranges'
        scope column in place, for all rows at once."""
        rs = self.ranges["scope"]
        if "range_bounds" in self.__dict__:
            lo = self.range_bounds[rows]
            has = self.range_bounds[rows + 1] > lo
        else:
            lo = bisect_right(rs, rows - 1)
            has = (lo < len(rs)) & (rs[np.minimum(lo, max(len(rs) - 1, 0))] == rows) if len(rs) else lo < 0
        starts = self.ranges["lo"][lo[has]].tolist()
        out: list[int | None] = [None] * len(rows)
        for i, v in zip(np.flatnonzero(has).tolist(), starts, strict=True):
            out[i] = v
        return out

    # -- address queries --------------------------------------------------------------------------
    @cached_property
    def leaf_map(self) -> np.ndarray:
        """Disjoint ``[lo, hi)`` -> statement row, sorted by ``lo`` (RANGE dtype).

        Built from the ranges of every S and C in document order; like hpcprof,
        a range overlapping one already taken is ignored (the first claim wins).
        """
        # Temporaries are let go as soon as they are used: this runs in the worker that parsed a large
        # structure file, where the run's memory peaks (see claims_by_address).
        kind = self.scopes["kind"][self.ranges["scope"]]
        rows = np.flatnonzero(((kind == S) | (kind == C)) & (self.ranges["hi"] > self.ranges["lo"]))
        del kind
        rows = rows[np.argsort(self.ranges["lo"][rows], kind="stable")]  # by address, equal starts in document order
        return claims_by_address(self.ranges, rows)

    def lookup(self, addresses: Sequence[int] | np.ndarray) -> np.ndarray:
        """Statement row holding each address (-1 where no statement does); vectorized."""
        addr = np.asarray(addresses, dtype=np.uint64)
        lm = self.leaf_map
        pos = bisect_right(lm["lo"], addr) - 1
        ok = pos >= 0
        clipped = np.where(ok, pos, 0)
        ok &= addr < lm["hi"][clipped] if len(lm) else np.zeros_like(ok)
        return np.where(ok, lm["scope"][clipped] if len(lm) else -1, -1).astype(np.int32)

    @cached_property
    def procedures(self) -> np.ndarray:
        """Procedures by entry address (PROCEDURE dtype, sorted by entry): the first v range's start."""
        rows = np.flatnonzero(self.scopes["kind"] == P)
        bounds = self.range_bounds
        has = bounds[rows + 1] > bounds[rows]
        rows = rows[has]
        out = np.empty(len(rows), PROCEDURE)
        out["entry"] = self.ranges["lo"][bounds[rows]]
        out["scope"] = rows
        return out[np.argsort(out["entry"], kind="stable")]

    def procedure_at(self, entry: int) -> int:
        """Row of the procedure whose entry is ``entry`` (-1 if none)."""
        procs = self.procedures
        i = int(np.searchsorted(procs["entry"], np.uint64(entry)))
        return int(procs["scope"][i]) if i < len(procs) and int(procs["entry"][i]) == entry else -1

    @cached_property
    def call_sites(self) -> np.ndarray:
        """Every ``C``: caller procedure, call instruction address, callee entry ``t`` (-1 if absent)
        and the callee's procedure row (-1 if ``t`` names no procedure entry)."""
        rows = np.flatnonzero(self.scopes["kind"] == C)
        out = np.zeros(len(rows), CALL_SITE)
        out["scope"] = rows
        out["caller"] = self.procedure_of[rows]
        bounds = self.range_bounds
        has_range = bounds[rows + 1] > bounds[rows]
        out["address"][has_range] = self.ranges["lo"][bounds[rows[has_range]]]
        target = self.scopes["target"][rows]
        out["target"] = target
        out["callee"] = -1
        procs = self.procedures
        if len(procs) and len(rows):
            want = target.astype(np.uint64)
            pos = np.minimum(np.searchsorted(procs["entry"], want), len(procs) - 1)
            hit = (target >= 0) & (procs["entry"][pos] == want)
            out["callee"][hit] = procs["scope"][pos[hit]]
        return out


@dataclass(eq=False)
class StructureFile:
    """A whole ``.hpcstruct`` file: the root's attributes and its load modules."""

    modules: list[Module] = field(default_factory=list)
    version: str = "4.9"
    id: int = 0
    name: str | None = ""

    def same_content(self, other: StructureFile) -> bool:
        return (self.id, self.name) == (other.id, other.name) and len(self.modules) == len(other.modules) \
            and all(a.same_content(b) for a, b in zip(self.modules, other.modules, strict=True))


class ModuleBuilder:
    """Builds a :class:`Module` scope by scope, in document order (parents before children).

    Used by the XML reader and by every producer of structure (CPU and GPU
    binaries): ``add`` returns the new row, ``add_ranges`` attaches ``v`` ranges
    to the row added last.
    """

    def __init__(self, path: str, id: int = 2, has_calls: bool | None = False, has_v: bool = True) -> None:
        self.path = path
        self.id = id
        self.has_calls = has_calls
        self.has_v = has_v
        self._strings: dict[str, int] = {}
        self._cols: dict[str, list[int]] = {name: [] for name in field_names(SCOPE)}
        self._lo: list[int] = []
        self._hi: list[int] = []
        self._rscope: list[int] = []

    def __len__(self) -> int:
        return len(self._cols["kind"])

    def intern(self, text: str | None) -> int:
        if text is None:
            return NONE
        idx = self._strings.get(text)
        if idx is None:
            idx = self._strings[text] = len(self._strings)
        return idx

    def add(self, kind: int, parent: int, id: int = NONE, *, line: int | None = None, file: str | None = None,
            name: str | None = None, link: str | None = None, sym: int | None = None,
            target: int | None = None, device: str | None = None,
            ranges: Iterable[tuple[int, int]] | None = None, has_v: bool = True) -> int:
        cols = self._cols
        row = len(cols["kind"])
        if parent >= row:
            raise ValueError("a scope's parent must be added before it")
        cols["kind"].append(kind)
        cols["flags"].append(HAS_V if has_v else 0)
        cols["parent"].append(parent)
        cols["id"].append(id)
        cols["line"].append(NONE if line is None else line)
        cols["file"].append(self.intern(file))
        cols["name"].append(self.intern(name))
        cols["link"].append(self.intern(link))
        cols["sym"].append(NONE if sym is None else sym)
        cols["target"].append(NONE if target is None else target)
        cols["device"].append(self.intern(device))
        if ranges is not None:
            self.add_ranges(row, ranges)
        return row

    def add_ranges(self, row: int, ranges: Iterable[tuple[int, int]]) -> None:
        if self._rscope and self._rscope[-1] > row:
            raise ValueError("ranges must be added in document order")
        for lo, hi in ranges:
            self._lo.append(lo)
            self._hi.append(hi)
            self._rscope.append(row)

    def add_statement(self, parent: int, line: int, ranges: list[tuple[int, int]]) -> int:
        """Fast path for the commonest scope, an ``S`` with its ranges (what ``add(S, ...)`` does)."""
        cols = self._cols
        kind = cols["kind"]
        row = len(kind)
        kind.append(S)
        cols["flags"].append(HAS_V)
        cols["parent"].append(parent)
        cols["line"].append(line)
        for name in ("id", "file", "name", "link", "sym", "target", "device"):
            cols[name].append(NONE)
        for lo, hi in ranges:
            self._lo.append(lo)
            self._hi.append(hi)
        self._rscope.extend([row] * len(ranges))
        return row

    def add_statements(self, parent: int, lines: list[int], ranges: list[list[tuple[int, int]]]) -> None:
        """Several ``S`` under one parent, one per line, each with its ranges (``add_statement`` in bulk:
        the columns grow by whole lists)."""
        cols = self._cols
        n = len(lines)
        row = len(cols["kind"])
        cols["kind"].extend([S] * n)
        cols["flags"].extend([HAS_V] * n)
        cols["parent"].extend([parent] * n)
        cols["line"].extend(lines)
        absent = [NONE] * n
        for name in ("id", "file", "name", "link", "sym", "target", "device"):
            cols[name].extend(absent)
        lo, hi, rscope = self._lo, self._hi, self._rscope
        for rs in ranges:
            if len(rs) == 1:
                a, b = rs[0]
                lo.append(a)
                hi.append(b)
                rscope.append(row)
            else:
                for a, b in rs:
                    lo.append(a)
                    hi.append(b)
                rscope.extend([row] * len(rs))
            row += 1

    def extend_ranges(self, row: int, lo: list[int], hi: list[int]) -> None:
        if self._rscope and self._rscope[-1] > row:
            raise ValueError("ranges must be added in document order")
        self._lo.extend(lo)
        self._hi.extend(hi)
        self._rscope.extend([row] * len(lo))

    def append(self, part: ModuleBuilder, parent: int) -> None:
        """Append the scopes of ``part`` (built separately, e.g. in a worker process) after the rows added so
        far; its top-level scopes get ``parent`` as their parent."""
        offset = len(self)
        smap = [self.intern(s) for s in part._strings]
        mine, theirs = self._cols, part._cols
        for name in ("kind", "flags", "id", "line", "sym", "target"):
            mine[name].extend(theirs[name])
        mine["parent"].extend([parent if p < 0 else p + offset for p in theirs["parent"]])
        for name in ("file", "name", "link", "device"):
            mine[name].extend([-1 if i < 0 else smap[i] for i in theirs[name]])
        self._lo.extend(part._lo)
        self._hi.extend(part._hi)
        self._rscope.extend([r + offset for r in part._rscope])

    def columns(self) -> tuple[dict[str, list[int]], list[str], list[int], list[int], list[int]]:
        """The scopes added so far, uncopied: column lists, strings, and range lo, hi and row (for a writer
        that renders a part without making a Module of it)."""
        return self._cols, list(self._strings), self._lo, self._hi, self._rscope

    def finish(self) -> Module:
        n = len(self)
        scopes = np.empty(n, SCOPE)
        for name, values in self._cols.items():
            scopes[name] = values
        ranges = np.empty(len(self._lo), RANGE)
        ranges["lo"] = self._lo
        ranges["hi"] = self._hi
        ranges["scope"] = self._rscope
        return Module(path=self.path, scopes=scopes, ranges=ranges, strings=list(self._strings), id=self.id,
                      has_calls=self.has_calls, has_v=self.has_v)


def renumber(sf: StructureFile) -> None:
    """Give ids as hpcstruct does: root 0, then 2, 3, ... in document order across modules."""
    sf.id = 0
    next_id = 2
    for m in sf.modules:
        m.id = next_id
        m.scopes["id"] = np.arange(next_id + 1, next_id + 1 + len(m.scopes))
        next_id += 1 + len(m.scopes)


def walk(module: Module) -> Iterator[tuple[int, int]]:
    """(row, depth) in document order; depth 0 is directly inside the LM."""
    depth = [0] * len(module.scopes)
    for row, parent in enumerate(module.scopes["parent"].tolist()):
        d = 0 if parent < 0 else depth[parent] + 1
        depth[row] = d
        yield row, d
