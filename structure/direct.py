"""Structure of a binary from its DWARF alone, as hpcprof reads a binary that has no structure file.

Without a structure file, hpcprof's *direct classification* (HPCToolkit,
``src/hpcprof/finalizers/directclassification.cpp``) reads the measured binary
itself with libdw: every concrete ``DW_TAG_subprogram`` and
``DW_TAG_inlined_subroutine`` becomes a function, an inlined one behind the
line of its call (``DW_AT_call_file``/``DW_AT_call_line``); each DIE claims
those bytes of its ranges that no DIE claimed before it, children before
their parents (a post-order walk, units in order); the line table gives the
innermost line of an address. There are no loops and no control-flow
analysis, so this is fast. The DWARF may sit in a separate debug file, found
by build id (``/usr/lib/debug/.build-id/xx/yyyy.debug``) or ``.gnu_debuglink``.

Functions are merged by their abstract origin, with libdw/hpcprof's rules:
the name is a linkage name (demangled) or the plain name anywhere along
``DW_AT_abstract_origin``/``DW_AT_specification``; of several instances the
lowest entry address, the lexically first declaration file (the lowest
positive line in it) and the lexically first name win. File names are
libdw's (directory entry + name), joined to ``DW_AT_comp_dir`` when relative.

The result is a :class:`~hpcsa.formats.hpcstruct.model.Module` like one read from a
structure file (``P`` per subprogram, an outer and an inner ``A`` per inlined
call, ``S`` per line with a guard ``A`` where its file differs from its
function's), plus, per scope row, the merged function it stands for
(:class:`DirectStructure`). One deliberate difference from hpcprof: in DWARF 5,
file index 0 (the primary source file, DWARF 5 §6.2.4) is a file like any
other; hpcprof takes only indices above 0 and so drops the lines of code
compiled by clang, which numbers its primary file 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field
from typing import Any, cast

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.hpcstruct.model import GUARD_NAME, A, F, Module, ModuleBuilder, P
from hpcsa.structure.debuginfo.dwarf import (
    AT_ABSTRACT_ORIGIN,
    AT_CALL_FILE,
    AT_CALL_LINE,
    AT_DECL_FILE,
    AT_DECL_LINE,
    AT_DECLARATION,
    AT_INLINE,
    AT_LINKAGE_NAME,
    AT_LOW_PC,
    AT_MIPS_LINKAGE_NAME,
    AT_NAME,
    AT_SPECIFICATION,
    CONTAINER_TAGS,
    TAG_INLINED_SUBROUTINE,
    TAG_SUBPROGRAM,
    DebugInfo,
    walk_unit,
)
from hpcsa.structure.debuginfo.forms import (
    F_ADDR,
    F_ADDRX,
    F_ADDRX1,
    F_ADDRX2,
    F_ADDRX3,
    F_ADDRX4,
    F_GNU_ADDR_INDEX,
    F_REF_ADDR,
    REF_FORMS,
    Abbrev,
    DwarfError,
    Unit,
)
from hpcsa.structure.debuginfo.lines import LineProgram, read_programs
from hpcsa.structure.debuginfo.source_info import dwarf_sections
from hpcsa.structure.elf import open_elf

AT_ENTRY_PC = 0x52
ADDRESS_FORMS = frozenset({F_ADDR, F_ADDRX, F_ADDRX1, F_ADDRX2, F_ADDRX3, F_ADDRX4, F_GNU_ADDR_INDEX})
#: libdw's walk descends into these (hpcprof's ``dwarfwalk``): C++ member functions defined in a class too.
DIRECT_CONTAINERS = CONTAINER_TAGS | frozenset({0x02, 0x13, 0x22, 0x03})  # class, structure, with_stmt, entry
UNKNOWN_FILE = "???"  # hpcprof's file for an inlined call whose DW_AT_call_file is unusable


@dataclass
class Function:
    """A function as hpcprof merges it over its instances (None/-1: absent)."""

    name: str = ""
    offset: int = -1
    file: str | None = None
    line: int = 0

    def merge(self, name: str, offset: int, file: str | None, line: int) -> None:
        if offset >= 0 and (self.offset < 0 or offset < self.offset):
            self.offset = offset
        if self.file is None or (file is not None and (self.file > file or (
                self.file == file and (self.line == 0 or (0 < line < self.line))))):
            self.file, self.line = file, line
        if name and (not self.name or name < self.name):
            self.name = name


@dataclass
class DirectStructure:
    """A binary's loop-free structure: the module, and per scope row the function it stands for
    (``function_of[row]``, -1 for files, call sites and statements)."""

    module: Module
    function_of: np.ndarray
    functions: list[Function]
    debug_file: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class _Node:
    """A trie node of hpcprof's: a subprogram, or an inlined call (its call line and then its function)."""

    parent: int
    function: int
    inlined: bool
    call_file: str
    call_line: int
    ranges: list[tuple[int, int]]


def _file_name(plain: str, comp_dir: str | None) -> str:
    return plain if plain.startswith("/") or not comp_dir else os.path.join(comp_dir, plain)


class _Reader:
    """One walk over the DIEs of every unit: trie nodes, merged functions, line rows."""

    def __init__(self, dw: DebugInfo, demangle: Callable[[str], str]) -> None:
        self.dw = dw
        self.demangle = demangle
        self.nodes: list[_Node] = []
        self.functions: list[Function] = []
        self.func_index: dict[int, int] = {}
        self.claims: list[int] = []  # node numbers in claim order (post-order per unit)
        self.line_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # addr, file id, line
        self.files: dict[str, int] = {}  # file -> id, in the order of first use
        self.notes: list[str] = []
        self._origins: dict[int, list[tuple[Unit, dict[int, tuple[int, int]]]]] = {}

    def file_id(self, name: str) -> int:
        return self.files.setdefault(name, len(self.files))

    def unit_files(self, unit: Unit, prog: LineProgram | DwarfError | None) -> tuple[list[str], LineProgram | None]:
        if prog is None:
            return [], None
        if isinstance(prog, DwarfError):
            self.notes.append(str(prog))
            return [], None
        return [_file_name(p, unit.comp_dir) for p in prog.plain_files], prog

    def read(self) -> None:
        named = [unit for unit in self.dw.units if unit.stmt_list is not None]
        programs = dict(zip((unit.offset for unit in named),
                            read_programs(self.dw, [(cast(int, unit.stmt_list), unit) for unit in named]),
                            strict=True))
        for unit in self.dw.units:
            files, prog = self.unit_files(unit, programs.get(unit.offset))
            first = len(self.nodes)
            try:
                self.walk(unit, files)
            except (DwarfError, IndexError, ValueError) as exc:
                self.notes.append(f"unit at {unit.offset:#x}: {exc}")
            self.claims += _post_order([n.parent for n in self.nodes[first:]], first)
            if prog is not None:
                self.add_lines(unit, prog, files)

    def file_at(self, unit: Unit, files: list[str], index: int) -> str | None:
        """The file of a decl/call file index (DWARF < 5 numbers files from 1), noted in the order of first
        use (see :func:`_line_table`)."""
        if (index > 0 or unit.version >= 5) and index < len(files):
            self.file_id(files[index])
            return files[index]
        return None

    def walk(self, unit: Unit, files: list[str]) -> None:
        node_of: dict[int, int] = {}  # DIE offset -> trie node it made, or its parent's (pass-through)

        def visit(offset: int, _depth: int, parent: int, ab: Abbrev, attrs: dict[int, tuple[int, int]]) -> None:
            par = node_of.get(parent, -1)
            node_of[offset] = par
            if AT_DECLARATION in attrs or AT_INLINE in attrs:
                return  # declarations, abstract instances: only concrete code
            chain = self.origin_chain(unit, offset, attrs)
            name = self.name(chain)
            entry = self.entry_pc(unit, attrs)
            decl = self.integrated(chain, AT_DECL_FILE)
            file = self.file_at(unit, files, decl[1][1]) if decl is not None and isinstance(decl[1][1], int) \
                else None
            dline = self.integrated(chain, AT_DECL_LINE)
            line = int(dline[1][1]) if dline is not None and isinstance(dline[1][1], int) else 0
            origin = attrs.get(AT_ABSTRACT_ORIGIN)
            key = origin[1] if origin is not None and _is_ref(origin[0]) else offset
            fi = self.func_index.get(key)
            if fi is None:
                fi = self.func_index[key] = len(self.functions)
                self.functions.append(Function())
            self.functions[fi].merge(name, entry, file, line)
            inlined = ab.tag == TAG_INLINED_SUBROUTINE
            call_file, call_line = "", 0
            if inlined:
                cf = attrs.get(AT_CALL_FILE)
                got = self.file_at(unit, files, cf[1]) if cf is not None and isinstance(cf[1], int) else None
                call_file = got if got is not None else UNKNOWN_FILE
                cl = attrs.get(AT_CALL_LINE)
                call_line = int(cl[1]) if cl is not None and isinstance(cl[1], int) else 0
            node_of[offset] = len(self.nodes)
            self.nodes.append(_Node(par, fi, inlined, call_file, call_line, self.dw.die_ranges(unit, attrs)))

        walk_unit(self.dw, unit, frozenset({TAG_SUBPROGRAM, TAG_INLINED_SUBROUTINE}), visit,
                  containers=DIRECT_CONTAINERS)

    def origin_chain(self, unit: Unit, offset: int, attrs: dict[int, tuple[int, int]]
                     ) -> list[tuple[Unit, dict[int, tuple[int, int]]]]:
        """The DIE and those its DW_AT_abstract_origin / DW_AT_specification lead to (libdw's
        ``dwarf_attr_integrate``)."""
        first = attrs.get(AT_ABSTRACT_ORIGIN) or attrs.get(AT_SPECIFICATION)
        if first is not None and _is_ref(first[0]) and first[1] in self._origins:
            return [(unit, attrs)] + self._origins[first[1]]  # many instances share one origin
        chain: list[tuple[Unit, dict[int, tuple[int, int]]]] = [(unit, attrs)]
        seen = {offset}
        cur = attrs
        for _ in range(16):
            nxt = cur.get(AT_ABSTRACT_ORIGIN) or cur.get(AT_SPECIFICATION)
            if nxt is None or not _is_ref(nxt[0]) or nxt[1] in seen:
                break
            seen.add(nxt[1])
            try:
                found = self.dw.die_at(nxt[1])
            except (DwarfError, IndexError, ValueError):
                found = None
            if found is None:
                break
            chain.append((found[0], found[2]))
            cur = found[2]
        if first is not None and _is_ref(first[0]):
            self._origins[first[1]] = chain[1:]
        return chain

    @staticmethod
    def integrated(chain: list[tuple[Unit, dict[int, tuple[int, int]]]], at: int
                   ) -> tuple[Unit, tuple[int, int]] | None:
        for unit, attrs in chain:
            if at in attrs:
                return unit, attrs[at]
        return None

    def name(self, chain: list[tuple[Unit, dict[int, tuple[int, int]]]]) -> str:
        for at in (AT_LINKAGE_NAME, AT_MIPS_LINKAGE_NAME, AT_NAME):
            got = self.integrated(chain, at)
            text = self.dw.string(got[0], *got[1]) if got is not None else None
            if text:
                return self.demangle(text) if at != AT_NAME else text
        return ""

    def entry_pc(self, unit: Unit, attrs: dict[int, tuple[int, int]]) -> int:
        """libdw's ``dwarf_entrypc``: DW_AT_entry_pc, else DW_AT_low_pc, as an address (-1: none)."""
        got = attrs.get(AT_ENTRY_PC) or attrs.get(AT_LOW_PC)
        if got is None or got[0] not in ADDRESS_FORMS:
            return -1
        try:
            return self.dw.address(unit, *got)
        except DwarfError:
            return -1

    def add_lines(self, unit: Unit, prog: LineProgram, files: list[str]) -> None:
        fidx = prog.file.astype(np.int64)
        ok = (fidx < len(files)) & (fidx >= (0 if unit.version >= 5 else 1))
        ids = np.full(max(len(files), 1), -1, np.int64)
        used, first = np.unique(fidx[ok], return_index=True)
        for index in used[np.argsort(first, kind="stable")].tolist():  # new files in the order of their rows
            ids[index] = self.file_id(files[index])
        fid = np.where(ok, ids[np.where(ok, fidx, 0)], -1)
        self.line_rows.append((prog.addr, fid, prog.line.astype(np.int64)))


def _is_ref(form: int) -> bool:
    return form in REF_FORMS or form == F_REF_ADDR


def _post_order(parents: list[int], base: int) -> list[int]:
    """Node numbers (base + i) in post-order of the forest given by pre-ordered ``parents``."""
    out: list[int] = []
    stack: list[int] = []
    for i, p in enumerate(parents):
        while stack and stack[-1] != p:
            out.append(stack.pop())
        stack.append(base + i)
    out += reversed(stack)
    return out


def _claimed(nodes: list[_Node], claims: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Boundaries and the node owning each segment between them (-1: none): every node's ranges, in claim
    order, keep only the bytes no earlier claim took."""
    lo = [r[0] for n in claims for r in nodes[n].ranges]
    hi = [r[1] for n in claims for r in nodes[n].ranges]
    who = [n for n in claims for _ in nodes[n].ranges]
    if not lo:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    bounds = sorted_unique(np.array(lo + hi, np.uint64))
    a = np.searchsorted(bounds, np.array(lo, np.uint64))
    b = np.searchsorted(bounds, np.array(hi, np.uint64))
    owner = np.full(len(bounds), -1, np.int64)  # owner[i]: segment [bounds[i], bounds[i+1])
    for i, j, n in zip(a[::-1].tolist(), b[::-1].tolist(), who[::-1], strict=True):
        owner[i:j] = n  # latest claims first, so the earliest claim is written last
    return bounds, owner


def _line_table(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Address -> (file id, line) over all units, as hpcprof's line map resolves rows at one address.

    hpcprof (HPCToolkit develop, ``src/hpcprof/finalizers/directclassification.cpp``, ``fullDwarf``) takes
    every row that libdw's ``dwarf_getsrclines`` gives, unit after unit: end-of-sequence rows, rows of line 0
    and rows that are not statements as well (elfutils 0.188, ``libdw/dwarf_getsrclines.c``, keeps all rows
    and only sorts them: by address, an end-of-sequence row first, then in program order). Each row's address
    is a key of a ``range_map`` (``src/hpcprof/util/range_map.hpp``: a key covers the addresses up to the
    next key), so a row followed by another at the same address still counts, and the values of one key are
    merged, in whatever order they come, by ``range_merge::truthy<void, range_merge::min<>>``: a row with a
    file over one without, then the lower ``(file, line)``. Of one file the lower line wins (libm's
    ``__ieee754_fmod`` at 0x27870 has rows for e_fmod.c lines 27, 28, 29, 31, 31, 31: hpcprof shows 27).
    Files compare as ``reference_index<const File>`` (``src/hpcprof/util/ref_wrappers.hpp``:
    ``&a.get() < &b.get()``, C++17), by the memory address of the ``File`` object, a node of the pipeline's
    unordered set allocated when a path is first named (``Source::file`` in ``src/hpcprof/pipeline.cpp``).

    Nothing else in hpcprof's source orders two files. Not the rows' order: in libc (Debian 2.36 with
    libc6-dbg) the rows at 0x5cf69, in vfprintf-internal.c's unit, and at 0x81632, in fileops.c's, are
    alike (libioP.h:947 twice, then a line of the unit's own file, all in one sequence), yet for the
    samples at 0x5cf75 and 0x8163d hpcprof keeps libioP.h:947 at the first and fileops.c:1243 at the
    second; "the last row at an address wins" also contradicts the e_fmod.c rows above (sampled at
    0x27870). Not the paths' order: at 0x98f58 hpcprof keeps malloc.c:3385 over arena.c:162.

    hpcsa compares files in the order hpcprof names them (the declarations and calls of a unit's DIEs, then
    its line rows, units in order), the order of their allocation, which is the order of their addresses
    as long as the allocator hands out ever higher ones. It does not always: in the 1,024-thread run of
    ``tests/aggregate/test_prof_nostruct_cxx.py`` five sampled libc addresses have rows of two files; at
    three (in vfprintf-internal.c, pthread_create.c, malloc.c) hpcprof keeps the file named first, at the
    other two the file named last: fileops.c:1243 over libioP.h:947 at 0x8163d and genops.c:347 over
    libioP.h:947 at 0x8309f, fileops.c and genops.c being named long after libioP.h (in filedoalloc.c's
    unit). Their Files must lie lower in memory, in blocks the allocator had freed. The same requests give
    the same heap, so hpcprof repeats its choice run after run, but foreseeing it would take replaying
    every allocation hpcprof and libdw make before; hpcsa keeps the order of naming (one call site of that
    database, and the genops.c line below it, differ)."""
    if not rows:
        z = np.zeros(0, np.int64)
        return np.zeros(0, np.uint64), z, z.copy()
    addr = np.concatenate([r[0] for r in rows])
    fid = np.concatenate([r[1] for r in rows])
    line = np.concatenate([r[2] for r in rows])
    rank = np.where(fid >= 0, fid, np.iinfo(np.int64).max)
    order = np.lexsort((line, rank, addr))
    addr, fid, line = addr[order], fid[order], line[order]
    first = np.r_[True, addr[1:] != addr[:-1]] if len(addr) else np.zeros(0, bool)
    return addr[first], fid[first], line[first]


def read_direct(path: str | os.PathLike[str], demangle: Callable[[str], str]) -> DirectStructure:
    """The loop-free structure of the ELF binary at ``path`` from its DWARF (or its separate debug file);
    empty when it has none. Raises HpcsaError when ``path`` is not a readable ELF file."""
    image = open_elf(path)
    notes: list[str] = []
    sections = dwarf_sections(image, notes)
    debug_file = None
    if ".debug_info" not in sections and image.debug_link:
        debug_file = image.debug_link
        try:
            sections = dwarf_sections(open_elf(debug_file), notes)
        except HpcsaError as exc:
            notes.append(f"separate debug file unusable: {exc}")
            sections = {}
    reader: _Reader | None = None
    if ".debug_info" in sections:
        try:
            reader = _Reader(DebugInfo(sections), demangle)
            reader.read()
            notes += reader.notes
        except (DwarfError, IndexError, ValueError) as exc:
            notes.append(f"unreadable .debug_info ({exc})")
            reader = None
    name = os.fspath(path)
    if reader is None:
        module = ModuleBuilder(name).finish()
        return DirectStructure(module, np.zeros(0, np.int32), [], debug_file, notes)
    module, function_of = _assemble(name, reader)
    return DirectStructure(module, function_of, reader.functions, debug_file, notes)


def _assemble(name: str, rd: _Reader) -> tuple[Module, np.ndarray]:
    """The module: files, procedures and inlined calls in trie order, a statement per (node, file, line)."""
    files = list(rd.files)
    bounds, owner = _claimed(rd.nodes, rd.claims)
    laddr, lfile, lline = _line_table(rd.line_rows)
    # Pieces: the claimed segments cut again at every line row.
    inside = laddr[(laddr >= bounds[0]) & (laddr <= bounds[-1])] if len(bounds) else laddr[:0]
    cuts = sorted_unique(np.concatenate([bounds, inside])) if len(bounds) else bounds
    seg = np.searchsorted(bounds, cuts[:-1], side="right") - 1
    node = owner[seg] if len(seg) else np.zeros(0, np.int64)
    li = np.searchsorted(laddr, cuts[:-1], side="right") - 1
    has_line = li >= 0
    pfile = np.where(has_line, lfile[np.maximum(li, 0)] if len(laddr) else -1, -2)  # -2: no line at all
    pline = np.where(has_line, lline[np.maximum(li, 0)] if len(laddr) else -1, -1)
    pfile = np.where(pfile == -1, -2, pfile)  # a row without a usable file gives no line either
    keep = node >= 0
    lo, hi = cuts[:-1][keep], cuts[1:][keep]
    node, pfile, pline = node[keep], pfile[keep], pline[keep]
    stmts: dict[int, dict[tuple[int, int], list[tuple[int, int]]]] = {}
    for n, f, ln, a, b in zip(node.tolist(), pfile.tolist(), pline.tolist(), lo.tolist(), hi.tolist(),
                              strict=True):
        rs = stmts.setdefault(n, {}).setdefault((f, ln), [])
        if rs and rs[-1][1] == a:
            rs[-1] = (rs[-1][0], b)
        else:
            rs.append((a, b))
    return _emit(name, rd, files, stmts)


def _emit(name: str, rd: _Reader, files: list[str],
          stmts: dict[int, dict[tuple[int, int], list[tuple[int, int]]]]) -> tuple[Module, np.ndarray]:
    out = ModuleBuilder(name)
    function_of: list[int] = []
    children: list[list[int]] = [[] for _ in rd.nodes]
    tops: list[int] = []
    for i, n in enumerate(rd.nodes):
        (children[n.parent] if n.parent >= 0 else tops).append(i)

    def add(kind: int, parent: int, func: int = -1, **kw: Any) -> int:
        function_of.append(func)
        return out.add(kind, parent, **kw)

    def emit(i: int, parent: int, ctx_file: str | None) -> None:
        n = rd.nodes[i]
        fn = rd.functions[n.function]
        if n.inlined:  # the inner alien names its file; a procedure takes its enclosing scope's
            outer = add(A, parent, file=n.call_file, line=n.call_line, has_v=False)
            row = add(A, outer, n.function, name=fn.name, file=fn.file, line=fn.line, has_v=False)
            here = fn.file if fn.file is not None else ctx_file
        else:
            row = add(P, parent, n.function, name=fn.name, line=fn.line, has_v=False)
            here = ctx_file
        guards: dict[int, int] = {}
        for (f, ln), rs in sorted(stmts.get(i, {}).items()):
            under = row
            if f == -2:
                ln = -1
            elif files[f] != here:
                if f not in guards:
                    guards[f] = add(A, row, name=GUARD_NAME, file=files[f], has_v=False)
                under = guards[f]
            function_of.append(-1)
            out.add_statement(under, ln, rs)
        for c in children[i]:
            emit(c, row, here)

    by_file: dict[str | None, list[int]] = {}
    for i in tops:
        by_file.setdefault(rd.functions[rd.nodes[i].function].file, []).append(i)
    for f in sorted(by_file, key=lambda x: (x is not None, x or "")):
        frow = add(F, -1, file=f, has_v=False) if f is not None else -1
        for i in by_file[f]:
            emit(i, frow, f)
    return out.finish(), np.array(function_of, np.int32)
