"""Lexical expansion of instruction contexts, as hpcprof's classification finalizers do it.

A measured context is an instruction: (load module, offset). hpcprof turns
it into a chain of source-level contexts — function, loops, inlined calls,
lines, then the instruction itself — from, in order of preference:

1. a structure file for the module (hpcprof's ``src/lib/profile/finalizers/struct.cpp`` in the
   HPCToolkit sources; the file's procedure, loop, alien and statement scopes are those of the
   HPCToolkit User's Manual's chapter on hpcstruct): the statement holding the offset and the
   chain of procedures, loops and aliens around it. An offset in no statement
   of a module the file describes gets no information: the instruction stays
   where it is;
2. kernel symbols (``kernel_symbols/vmlinux.<host>``, xz-compressed ``nm``
   output): the kernel function holding the address;
3. the binary itself, read at its recorded path (hpcprof's
   DirectClassification), but only when hpcsa can trust it is the measured
   one: files named by their content hash (``vdso/<md5>.vdso``,
   ``gpubins/<md5>.gpubin``) are checked against it, other binaries against a
   structure file of the measured binary when there is one
   (:func:`agrees_with_structure`), else used with a warning that they may be
   a different build. Its DWARF (functions, inlined calls, lines; no loops:
   :mod:`hpcsa.structure.direct`, also from a separate debug file) comes
   first, its ELF symbols cover the addresses DWARF does not
   (:func:`read_binary`).

Scopes are plain tuples ordered by kind, so contexts can be sorted by path:
``UNKNOWN``, ``(PLACEHOLDER, code)``, ``(FUNCTION, name, module, offset, file, line)``,
``(LOOP, file, line, module, offset)``, ``(LINE, file, line)``, ``(POINT, module, offset)``.
Absent strings are ``""``, absent numbers ``-1``.
"""

from __future__ import annotations

import lzma
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import file_digest, md5
from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import find_by_name
from hpcsa.formats.db.metadb_model import INLINED_CALL, LEXICAL  # relations, as meta.db codes them
from hpcsa.formats.hpcstruct.model import LexStep, Module

if TYPE_CHECKING:
    from hpcsa.structure.direct import DirectStructure

# Scope kinds (their order is the order of sibling contexts).
UNKNOWN_KIND, PLACEHOLDER, FUNCTION, LOOP, LINE, POINT = 0, 1, 2, 3, 4, 5
Scope = tuple

UNKNOWN: Scope = (UNKNOWN_KIND,)

#: One step of an expansion: (relation, scope); relation None = the relation the caller asked for.
Step = tuple[int | None, Scope]

LINUX_KERNEL_NAME = "[vmlinux]"


def function_scope(name: str, module: str = "", offset: int = -1, file: str = "", line: int = -1) -> Scope:
    return (FUNCTION, name, module, offset, file, line)


def point_scope(module: str, offset: int) -> Scope:
    return (POINT, module, int(offset))


def placeholder_scope(code: int) -> Scope:
    return (PLACEHOLDER, int(code))


@dataclass
class ModuleInfo:
    """A load module as the aggregation names it: ``key`` identifies it (the path resolved against its
    measurement directory), ``path`` is what the database shows (as recorded: relative stays relative)."""

    key: str
    path: str
    measdir: str


def module_key(recorded: str, measdir: str) -> str:
    return os.path.normpath(recorded if os.path.isabs(recorded) else os.path.join(measdir, recorded))


def hashed_name(path: str) -> tuple[str, str] | None:
    """(kind, md5) for hpcrun's content-addressed files ``.../vdso/<md5>.vdso`` and ``.../gpubins/<md5>.gpubin``."""
    parent = os.path.basename(os.path.dirname(path))
    base = os.path.basename(path)
    for kind, suffix in (("vdso", ".vdso"), ("gpubins", ".gpubin")):
        if parent == kind and base.endswith(suffix):
            stem = base[: -len(suffix)]
            if len(stem) == 32 and all(c in "0123456789abcdef" for c in stem):
                return kind, stem
    return None


def local_copy(info: ModuleInfo) -> str:
    """Where the binary of a module is on this machine: content-addressed files are looked up in the
    measurement directory (hpcrun records the directory where it ran), others at their recorded path."""
    named = hashed_name(info.key)
    if named is not None:
        kind, _ = named
        return os.path.join(info.measdir, kind, os.path.basename(info.key))
    return info.key


# -- structure files ------------------------------------------------------------------------------------


#: Statements whose chains are worked out together (their ancestors' rows and steps are held meanwhile).
CHAIN_BATCH = 4096


class StructExpander:
    """Expansion through one structure-file module: statement lookup, then the lexical chain above it."""

    def __init__(self, module: Module, display_path: str) -> None:
        self.module = module
        self.path = display_path
        self._chains: dict[int, tuple[tuple[Step, ...], int]] = {}
        self._leaves: dict[int, int] = {}  # offset -> statement row (-1: none), as looked up so far

    @property
    def has_data(self) -> bool:
        return len(self.module.leaf_map) > 0

    def chain(self, leaf: int) -> tuple[tuple[Step, ...], int]:
        """The contexts above the instruction for statement row ``leaf`` and the relation into the
        instruction.

        hpcprof's trie stores with each node the relation to the *next* context:
        the first context takes the caller's relation (None here), an inlined
        call's line is entered lexically and its function by ``inlined_call``.
        """
        got = self._chains.get(leaf)
        if got is None:
            self.ensure([leaf])
            got = self._chains[leaf]
        return got

    def ensure(self, leaves: list[int]) -> None:
        """Work out the chains of these statement rows not known yet, together (:meth:`.Module.lexical_paths`),
        CHAIN_BATCH at a time (what a batch holds of its rows' ancestors stays small)."""
        todo = [leaf for leaf in leaves if leaf not in self._chains]
        for at in range(0, len(todo), CHAIN_BATCH):
            self._add_chains(todo[at:at + CHAIN_BATCH])

    def _add_chains(self, todo: list[int]) -> None:
        for leaf, path in zip(todo, self.module.lexical_paths(todo), strict=True):
            steps: list[Step] = []
            into: int | None = None
            for s in path:
                scope = self._scope(s, leaf)
                if scope is None:
                    continue
                steps.append((into, scope))
                into = INLINED_CALL if s.relation == "inlined_call" else LEXICAL
            self._chains[leaf] = (tuple(steps), LEXICAL if into is None else into)

    def _scope(self, s: LexStep, leaf: int) -> tuple | None:
        """The context of one step of a statement's lexical path (None: the step makes none)."""
        line = -1 if s.line is None else int(s.line)
        if s.kind == "function":
            offset = -1 if s.address is None else int(s.address)  # inlined functions have no entry
            return function_scope(s.name or "", self.path, offset, s.file or "", line if s.file else -1)
        if s.kind == "loop":
            return (LOOP, s.file or "", line, self.path, -1 if s.address is None else int(s.address))
        return (LINE, s.file or "", line)

    def lookup(self, offsets: np.ndarray) -> np.ndarray:
        """:meth:`.Module.lookup`, remembered: an offset is looked up once, when phase 1 warms it, not again
        when class 2 expands the union (each lookup bisects the module's statement map)."""
        offs = offsets.tolist()
        known = self._leaves
        todo = [o for o in dict.fromkeys(offs) if o not in known]
        if todo:
            known.update(zip(todo, self.module.lookup(np.array(todo, np.uint64)).tolist(), strict=True))
        return np.fromiter(map(known.__getitem__, offs), np.int32, len(offs))

    def chains_at(self, offsets: np.ndarray) -> np.ndarray:
        """The statement row holding each offset (-1 where none does), with the chains of those statements
        worked out (together, those not known yet)."""
        leaves = self.lookup(offsets)
        self.ensure(sorted_unique(leaves[leaves >= 0]).tolist())
        return leaves

    def warm(self, offsets: np.ndarray) -> None:
        """Compute the chains of the statements holding these offsets now, ahead of :meth:`Classifier.expand`."""
        if not self.has_data:
            return
        self.chains_at(offsets)
        self.module.release_pages()


def struct_keys(module: Module, struct_measdir: str | None) -> list[str]:
    """The load-module keys a structure file's module may describe, most specific first: its path as the
    measurement directory resolves it, then as written."""
    keys = [module_key(module.path, struct_measdir)] if struct_measdir else []
    keys.append(os.path.normpath(module.path))
    return keys


# -- kernel symbols --------------------------------------------------------------------------------------


class KernelSymbols:
    """``nm``-style kernel symbol list: an address belongs to the text symbol at or before it."""

    def __init__(self, addrs: np.ndarray, names: list[str], path: str) -> None:
        self.addrs = addrs
        self.names = names
        self.path = path

    @classmethod
    def load(cls, file: str, display_path: str) -> KernelSymbols:
        try:
            with open(file, "rb") as fh:
                raw = fh.read()
            try:
                text = lzma.decompress(raw)
            except lzma.LZMAError:
                text = raw  # hpcprof's reader also takes an uncompressed list
        except OSError as exc:
            raise HpcsaError(file, f"cannot read kernel symbols: {exc.strerror or exc}") from None
        addrs: list[int] = []
        names: list[str] = []
        for line in text.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) < 3 or len(parts[1]) != 1 or parts[1] not in "tT":
                continue
            try:
                addr = int(parts[0], 16)
            except ValueError:
                continue
            name = parts[2] + (f" {parts[3]}" if len(parts) > 3 else "") + f" {LINUX_KERNEL_NAME}"
            addrs.append(addr)
            names.append(name)
        arr = np.array(addrs, dtype=np.uint64)
        order = np.argsort(arr, kind="stable")
        arr = arr[order]
        names = [names[i] for i in order.tolist()]
        first = np.r_[True, arr[1:] != arr[:-1]] if len(arr) else np.zeros(0, bool)  # first symbol wins
        keep = np.flatnonzero(first)
        return cls(arr[keep], [names[i] for i in keep.tolist()], display_path)

    def lookup(self, offsets: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.addrs, np.asarray(offsets, np.uint64), side="right") - 1
        return pos.astype(np.int64)

    def steps(self, index: int) -> tuple[Step, ...]:
        return ((None, function_scope(self.names[index], self.path, int(self.addrs[index]))),)


# -- binaries read in place of missing structure files ---------------------------------------------------


@dataclass
class BinarySymbols:
    """Function symbols of a binary (start, end, name), for the fallback classification."""

    starts: np.ndarray
    ends: np.ndarray
    names: list[str]
    path: str

    def lookup(self, offsets: np.ndarray) -> np.ndarray:
        off = np.asarray(offsets, np.uint64)
        pos = np.searchsorted(self.starts, off, side="right") - 1
        ok = (pos >= 0) & (off < self.ends[np.maximum(pos, 0)]) if len(self.starts) else np.zeros(len(off), bool)
        return np.where(ok, pos, -1).astype(np.int64)

    def steps(self, index: int) -> tuple[Step, ...]:
        return ((None, function_scope(self.names[index], self.path, int(self.starts[index]))),)


class DirectExpander(StructExpander):
    """Expansion through the loop-free structure read from a binary's DWARF (hpcprof's direct
    classification): like a structure file's, but functions carry what hpcprof merged over their DWARF
    instances (entry, declaration file and line, also for inlined ones), and an address with no line row
    gets no line context."""

    def __init__(self, direct: DirectStructure, display_path: str) -> None:
        super().__init__(direct.module, display_path)
        self.direct = direct

    def _scope(self, s: LexStep, leaf: int) -> tuple | None:
        if s.kind == "function":
            fn = self.direct.functions[int(self.direct.function_of[s.scope])]
            return function_scope(fn.name, self.path, fn.offset, fn.file or "", fn.line if fn.file is not None else -1)
        if s.scope == leaf and s.line is None:
            return None  # no line row holds the address
        return (LINE, s.file or "", -1 if s.line is None else int(s.line))


@dataclass
class BinaryExpander:
    """A binary read in place of its structure file: DWARF first, ELF symbols for the rest."""

    dwarf: DirectExpander | None
    symbols: BinarySymbols | None

    def expand(self, offs: np.ndarray, path: str) -> list[tuple[Step, ...]]:
        n = len(offs)
        leaves = self.dwarf.lookup(offs) if self.dwarf is not None and self.dwarf.has_data \
            else np.full(n, -1, np.int64)
        syms = self.symbols.lookup(offs) if self.symbols is not None else np.full(n, -1, np.int64)
        out: list[tuple[Step, ...]] = []
        for off, leaf, i in zip(offs.tolist(), leaves.tolist(), syms.tolist(), strict=True):
            if leaf >= 0:
                assert self.dwarf is not None
                chain, into = self.dwarf.chain(leaf)
                out.append(chain + ((into, point_scope(path, off)),))
            elif i >= 0:
                assert self.symbols is not None
                out.append(self.symbols.steps(i) + ((LEXICAL, point_scope(path, off)),))
            else:
                out.append(((None, point_scope(path, off)),))
        return out


def read_binary_symbols(file: str, display_path: str) -> BinarySymbols | None:
    """ELF function symbols of ``file`` (``.symtab``, else ``.dynsym``), None when it is not a readable ELF."""
    from hpcsa.core.demangle import demangle
    from hpcsa.structure.elf import open_elf

    try:
        funcs = open_elf(file).functions
    except HpcsaError:
        return None
    funcs = sorted((f for f in funcs if f.size > 0), key=lambda f: f.addr)
    starts = np.array([f.addr for f in funcs], np.uint64)
    ends = np.array([f.addr + f.size for f in funcs], np.uint64)
    names = [demangle(f.names[0]) for f in funcs]
    return BinarySymbols(starts, ends, names, display_path)


def read_binary(file: str, display_path: str, warn: list[str] | None = None) -> BinaryExpander | None:
    """What hpcprof reads from a binary without a structure file: functions, inlined calls and lines from
    its DWARF (or its separate debug file), and its ELF symbols. None when ``file`` is not a readable ELF."""
    from hpcsa.core.demangle import demangle
    from hpcsa.structure.direct import read_direct

    symbols = read_binary_symbols(file, display_path)
    if symbols is None:
        return None
    try:
        direct = read_direct(file, demangle)
    except HpcsaError as exc:
        if warn is not None:
            warn.append(f"{file}: DWARF not read ({exc.problem})")
        return BinaryExpander(None, symbols)
    if warn is not None:
        warn += [f"{file}: {note}" for note in direct.notes]
    dwarf = DirectExpander(direct, display_path) if len(direct.module) else None
    return BinaryExpander(dwarf, symbols)


#: Share of the checkable procedures of a structure file that must be at their address in a binary for it
#: to be taken as the measured one.
WITNESS_AGREEMENT = 0.9


@dataclass
class Agreement:
    """What an identity check compared: procedures of the structure file (``procedures``), those that
    can be checked (named by a function symbol of the binary or of its separate debug file: PLT stubs,
    hpcstruct's ``targ<addr>`` names and names the binary has no symbol for cannot) and those at their
    address in the binary."""

    procedures: int = 0
    named: int = 0  # neither PLT stubs nor code hpcstruct names by its address (``targ<hex>``)
    checked: int = 0
    found: int = 0

    @property
    def agrees(self) -> bool:
        return self.checked > 0 and self.found >= WITNESS_AGREEMENT * self.checked

    def describe(self) -> str:
        if not self.checked:
            return f"none of the {self.named} named procedures of its structure file is a symbol of it"
        return (f"{self.found} of the {self.checked} procedures of its structure file that name a symbol of "
                f"it are at their address ({self.procedures - self.checked} of {self.procedures} not checkable: "
                "PLT stubs, unnamed code, names it has no symbol for)")


def _symbols_of(file: str) -> dict[str, set[int]] | None:
    """Function symbols (raw names) of a binary and of its separate debug file, if any."""
    from hpcsa.structure.elf import open_elf

    try:
        image = open_elf(file)
        names = image.symbol_addresses()
    except HpcsaError:
        return None
    link = image.debug_link
    if link:
        try:
            for name, addrs in open_elf(link).symbol_addresses().items():
                names.setdefault(name, set()).update(addrs)
        except HpcsaError:
            pass
    return names


_TARG = re.compile(r"targ[0-9a-f]+")


def agrees_with_structure(file: str, witness: Module) -> Agreement:
    """Compare a binary's function symbols with a structure file of the measured binary: a procedure is
    checkable when its link name (``ln``, else its name) is a function symbol of the binary, and found when
    one such symbol is at the procedure's entry."""
    out = Agreement()
    names = _symbols_of(file)
    if names is None:
        return out
    by_pretty: dict[str, set[int]] | None = None
    procs = witness.procedures
    scopes = witness.scopes
    for entry, row in zip(procs["entry"].tolist(), procs["scope"].tolist(), strict=True):
        out.procedures += 1
        link = witness.text(int(scopes["link"][row]))
        name = witness.text(int(scopes["name"][row])) or ""
        name = name.rsplit(" [", 1)[0] if name.endswith("]") else name  # hpcstruct appends " [library]"
        if (link or name).endswith("@plt") or _TARG.fullmatch(link or name) or not (link or name) \
                or name.startswith("<unknown"):
            continue
        out.named += 1
        if link:
            addrs = names.get(link.split("@", 1)[0])
        else:
            if by_pretty is None:
                from hpcsa.core.demangle import demangle

                by_pretty = {}
                for raw, a in names.items():
                    by_pretty.setdefault(demangle(raw), set()).update(a)
            addrs = by_pretty.get(name)
        if addrs is None:
            continue
        out.checked += 1
        out.found += entry in addrs
    return out


def trusted_binary(info: ModuleInfo, warn: list[str], witness: Module | None = None,
                   search: Sequence[str] = ()) -> str | None:
    """The local file to read for a module without structure, or None when it cannot be trusted.

    A binary that is not where the measurement says is looked for by its file name in the folders of
    ``search`` (``--binaries``). Identity is checked where the inputs record one: content-addressed names
    (``vdso/<md5>.vdso``, ``gpubins/<md5>.gpubin``) against the content; a
    structure file made from the measured binary (``witness``, used even
    under ``--ignore-structs``) against the binary's symbols. Without either,
    the binary is used with a warning.
    """
    file = local_copy(info)
    by_name = False
    if not os.path.isfile(file) and search:
        found = find_by_name(file, search)
        file, by_name = (found, True) if found is not None else (file, False)
    if not os.path.isfile(file):
        return None
    named = hashed_name(info.key)
    if named is not None:
        with open(file, "rb") as fh:
            digest = file_digest(fh, md5())
        if digest.hexdigest() != named[1]:
            warn.append(f"{file}: content does not match the hash in its name; not used for attribution")
            return None
        return file
    if witness is not None:
        agreement = agrees_with_structure(file, witness)
        if agreement.agrees:
            return file
        if agreement.named:
            warn.append(f"{file}: not the measured binary: {agreement.describe()}; its contexts stay instructions")
            return None
    if by_name:
        warn.append(f"{file} stands for {info.path} (found by its file name in --binaries): no structure file "
                    "for this load module, so its symbols are read from this file, and the measurement records "
                    "no identity to check that it is the measured build")
        return file
    warn.append(f"{file}: no structure file for this load module; its symbols are read from the binary at "
                "the recorded path, which may not be the measured build (run hpcstruct on the measurement "
                "to be sure)")
    return file


# -- the classifier --------------------------------------------------------------------------------------


@dataclass
class Classifier:
    """Expands (module, offset) points into context chains, with one source of information per module.

    Modules are named by :class:`ModuleInfo` key; ``display`` gives the path shown for each.
    """

    display: dict[str, str] = field(default_factory=dict)
    structs: dict[str, StructExpander] = field(default_factory=dict)
    kernels: dict[str, KernelSymbols] = field(default_factory=dict)
    binaries: dict[str, BinaryExpander] = field(default_factory=dict)
    read_from: list[str] = field(default_factory=list)  # the binary files behind ``binaries``

    def expand(self, module: str, offsets: Iterable[int]) -> list[tuple[Step, ...]]:
        """For each offset in ``module``: the chain of (relation, scope) ending with the instruction.

        The chain's first context is the "relation" context (where hpcprof puts
        move2proc metrics); its relation is None, i.e. the caller's.
        """
        offs = np.fromiter((int(o) for o in offsets), dtype=np.uint64)
        path = self.display.get(module, module)
        st = self.structs.get(module)
        if st is not None and st.has_data:
            out: list[tuple[Step, ...]] = []
            leaves = st.chains_at(offs)  # the chains phase 1 did not warm, worked out together
            for off, leaf in zip(offs.tolist(), leaves.tolist(), strict=True):
                if leaf < 0:  # a gap in a module the structure file describes: no information
                    out.append(((None, point_scope(path, off)),))
                else:
                    chain, into = st.chain(leaf)
                    out.append(chain + ((into, point_scope(path, off)),))
            st.module.release_pages()
            return out
        binary = self.binaries.get(module)
        if binary is not None:
            return binary.expand(offs, path)
        table = self.kernels.get(module)
        if table is not None:
            out = []
            for off, i in zip(offs.tolist(), table.lookup(offs).tolist(), strict=True):
                if i < 0:
                    out.append(((None, point_scope(path, off)),))
                else:
                    out.append(table.steps(i) + ((LEXICAL, point_scope(path, off)),))
            return out
        return [((None, point_scope(path, off)),) for off in offs.tolist()]


def warn(lines: list[str]) -> None:
    for line in lines:
        print(f"hpcsa: warning: {line}", file=sys.stderr)
