"""Inlined call chains from DWARF: every DW_TAG_inlined_subroutine with its ranges, call site and name.

Only subprogram and inlined-subroutine DIEs are decoded (see
:func:`hpcsa.structure.debuginfo.dwarf.walk_unit`); names are resolved on demand by
following ``DW_AT_abstract_origin`` / ``DW_AT_specification`` to the DIE that
carries them (a linkage name, demangled, is preferred to the plain name, as
Dyninst reports inlined functions). The result is an :class:`InlineTable`
of numpy columns: nodes (parent, call file, call line, name) and their
address ranges, sorted, for vectorized lookups per function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.structure.debuginfo.dwarf import (
    AT_ABSTRACT_ORIGIN,
    AT_CALL_FILE,
    AT_CALL_LINE,
    AT_LINKAGE_NAME,
    AT_MIPS_LINKAGE_NAME,
    AT_NAME,
    AT_SPECIFICATION,
    TAG_INLINED_SUBROUTINE,
    TAG_SUBPROGRAM,
    DebugInfo,
    walk_unit,
)
from hpcsa.structure.debuginfo.forms import F_REF_ADDR, REF_FORMS, Abbrev, DwarfError, Unit
from hpcsa.structure.debuginfo.subprogram_names import SubprogramNames

UNKNOWN_PROC = "<unknown procedure>"
_BOTH = frozenset({TAG_SUBPROGRAM, TAG_INLINED_SUBROUTINE})
_INLINED = frozenset({TAG_INLINED_SUBROUTINE})


@dataclass
class InlineTable:
    """Inlined subroutines of a binary. Node ``i``: ``parent[i]`` (-1 when directly inside a subprogram),
    ``call_file[i]`` (into ``files``, -1 unknown), ``call_line[i]``, ``name[i]`` (into ``names``)."""

    parent: np.ndarray
    call_file: np.ndarray
    call_line: np.ndarray
    name: np.ndarray
    depth: np.ndarray
    lo: np.ndarray      # ranges, sorted by (lo, depth)
    hi: np.ndarray
    node: np.ndarray
    files: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    _chains: dict[int, tuple[tuple[str, int, str], ...]] = field(default_factory=dict)
    _reach: np.ndarray | None = None

    @staticmethod
    def empty() -> InlineTable:
        i4 = np.zeros(0, np.int32)
        u8 = np.zeros(0, np.uint64)
        return InlineTable(i4, i4.copy(), i4.copy(), i4.copy(), i4.copy(), u8, u8.copy(), i4.copy())

    def innermost(self, addrs: np.ndarray) -> np.ndarray:
        """Innermost inline node holding each address of a sorted array, -1 for none."""
        out = np.full(len(addrs), -1, np.int32)
        if not len(self.lo) or not len(addrs):
            return out
        if self._reach is None:
            self._reach = np.maximum.accumulate(self.hi)
        # Ranges before `first` all end before addrs[0] (reach is the running maximum of hi).
        first = int(np.searchsorted(self._reach, addrs[0], side="right"))
        last = int(np.searchsorted(self.lo, addrs[-1], side="right"))
        if last <= first:
            return out
        sel = np.arange(first, last)
        sel = sel[self.hi[sel] > addrs[0]]
        sel = sel[np.argsort(self.depth[self.node[sel]], kind="stable")]  # outer first, inner overwrite
        a = np.searchsorted(addrs, self.lo[sel], side="left")
        b = np.searchsorted(addrs, self.hi[sel], side="left")
        for i, j, n in zip(a.tolist(), b.tolist(), self.node[sel].tolist(), strict=True):
            if j > i:
                out[i:j] = n
        return out

    def chain(self, node: int) -> tuple[tuple[str, int, str], ...]:
        """(call file, call line, callee name) from the outermost inlined call down to ``node``."""
        if node < 0:
            return ()
        got = self._chains.get(node)
        if got is not None:
            return got
        steps = []
        n = node
        while n >= 0:
            f = int(self.call_file[n])
            steps.append((self.files[f] if f >= 0 else "", int(self.call_line[n]), self.names[int(self.name[n])]))
            n = int(self.parent[n])
        result = tuple(reversed(steps))
        self._chains[node] = result
        return result


def read_inlines(dw: DebugInfo, unit_files: dict[int, list[str]], demangle: Callable[[str], str],
                 names_of: SubprogramNames | None = None) -> InlineTable:
    """All inlined subroutines of all units. ``unit_files`` maps a unit offset to its line table's file
    names (DW_AT_call_file indexes them). With ``names_of``, the same walk gives it every subprogram DIE
    (the names DWARF offers each function: :mod:`hpcsa.structure.debuginfo.subprogram_names`)."""
    parents: list[int] = []
    cfile: list[int] = []
    cline: list[int] = []
    cname: list[int] = []
    depth: list[int] = []
    los: list[int] = []
    his: list[int] = []
    rnode: list[int] = []
    files: dict[str, int] = {}
    names: dict[str, int] = {}
    name_cache: dict[int, str] = {}
    node_of: dict[int, int] = {}   # DIE offset -> node index (inlined subroutines only)

    for unit in dw.units:
        ufiles = unit_files.get(unit.offset, [])

        def visit(offset: int, _depth: int, parent: int, ab: Abbrev, attrs: dict[int, tuple[int, int]],
                  unit: Unit = unit, ufiles: list[str] = ufiles) -> None:
            if ab.tag == TAG_SUBPROGRAM:
                if names_of is not None:
                    names_of.add(unit, attrs)
                return
            ranges = dw.die_ranges(unit, attrs)
            p = node_of.get(parent, -1)
            idx = len(parents)
            node_of[offset] = idx
            parents.append(p)
            depth.append(depth[p] + 1 if p >= 0 else 0)
            fa = attrs.get(AT_CALL_FILE)
            fname = ufiles[fa[1]] if fa is not None and 0 <= fa[1] < len(ufiles) else ""
            cfile.append(files.setdefault(fname, len(files)) if fname else -1)
            la = attrs.get(AT_CALL_LINE)
            cline.append(int(la[1]) if la is not None else 0)
            name = _callee_name(dw, unit, attrs, name_cache, demangle)
            cname.append(names.setdefault(name, len(names)))
            for lo, hi in ranges:
                los.append(lo)
                his.append(hi)
                rnode.append(idx)

        walk_unit(dw, unit, _BOTH, visit, _BOTH if names_of is not None and names_of.wanted(unit) else _INLINED)

    lo = np.array(los, np.uint64)
    hi = np.array(his, np.uint64)
    node = np.array(rnode, np.int32)
    dep = np.array(depth, np.int32)
    order = np.lexsort((dep[node] if len(node) else node, lo))
    return InlineTable(np.array(parents, np.int32), np.array(cfile, np.int32), np.array(cline, np.int32),
                       np.array(cname, np.int32), dep, lo[order], hi[order], node[order], list(files),
                       list(names))


def _callee_name(dw: DebugInfo, unit: Unit, attrs: dict[int, tuple[int, int]], cache: dict[int, str],
                 demangle: Callable[[str], str]) -> str:
    """The inlined function's name: a linkage name (demangled) anywhere along its origin/specification
    chain, else the first plain name found."""
    origin = attrs.get(AT_ABSTRACT_ORIGIN)
    if origin is None or (origin[0] not in REF_FORMS and origin[0] != F_REF_ADDR):
        return _name_here(dw, unit, attrs, demangle) or UNKNOWN_PROC
    key = origin[1]
    got = cache.get(key)
    if got is not None:
        return got
    plain: str | None = None
    link: str | None = None
    last_link: str | None = None
    last_plain: str | None = None
    seen = set()
    target = key
    for _ in range(8):
        if target in seen:
            break
        seen.add(target)
        try:
            found = dw.die_at(target)
        except (DwarfError, IndexError, ValueError):
            found = None
        if found is None:
            break
        tunit, _ab, tattrs = found
        last_link = last_plain = None
        for at in (AT_LINKAGE_NAME, AT_MIPS_LINKAGE_NAME):
            if at in tattrs:
                last_link = last_link or dw.string(tunit, *tattrs[at])
        if AT_NAME in tattrs:
            last_plain = dw.string(tunit, *tattrs[AT_NAME])
        link = link or last_link
        plain = plain or last_plain
        nxt = tattrs.get(AT_ABSTRACT_ORIGIN) or tattrs.get(AT_SPECIFICATION)
        if nxt is None or (nxt[0] not in REF_FORMS and nxt[0] != F_REF_ADDR):
            break
        target = nxt[1]
    if last_plain and not last_link:
        name = last_plain
    else:
        name = demangle(link) if link else (plain or UNKNOWN_PROC)
    cache[key] = name
    return name


def _name_here(dw: DebugInfo, unit: Unit, attrs: dict[int, tuple[int, int]],
               demangle: Callable[[str], str]) -> str | None:
    for at in (AT_LINKAGE_NAME, AT_MIPS_LINKAGE_NAME):
        if at in attrs:
            s = dw.string(unit, *attrs[at])
            if s:
                return demangle(s)
    if AT_NAME in attrs:
        return dw.string(unit, *attrs[AT_NAME])
    return None
