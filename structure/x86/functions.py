"""The functions of an x86-64 binary as hpcstruct's parser (Dyninst's ParseAPI) finds them: from symbols,
PLT stubs, the entry point and the targets of direct calls and tail calls, each a list of basic blocks of one
:class:`~hpcsa.structure.x86.cfg.ProgramCFG`."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable

import numpy as np

from hpcsa.core.arrays import sorted_unique
from hpcsa.structure.elf import ElfImage
from hpcsa.structure.x86.cfg import (
    NORETURN_NAMES,
    TAIL_ALWAYS,
    TAIL_IF_TORN_DOWN,
    TAIL_NEVER,
    CodeIndex,
    ProgramCFG,
    in_sorted,
    rows_of,
)
from hpcsa.structure.x86.exceptions import try_regions
from hpcsa.structure.x86.stripped import is_stripped, loader_entries, unwind_entries
from hpcsa.structure.x86.sweep import TailShare


class Functions(dict[int, list[int]]):
    """Parsed functions: entry -> its blocks (sorted block numbers of the ProgramCFG ``cfg``);
    ``containers``: entry -> the entries of the other functions whose blocks include its entry block."""

    def __init__(self, cfg: ProgramCFG | None) -> None:
        super().__init__()
        self.cfg = cfg
        self.containers: dict[int, list[int]] = {}


def discover_functions(image: ElfImage, share: TailShare | None = None
                       ) -> tuple[CodeIndex | None, Functions, dict[int, str]]:
    """Every function reachable from symbols, the entry point and direct calls (tail calls included),
    as block lists of one :class:`~hpcsa.structure.x86.cfg.ProgramCFG`; returns the decoded code, the functions and the names of
    those without a symbol (PLT names, ``targXXXX``, ``_start``).

    Rounds run until nothing changes: edges for the current entries and never-returning functions, a
    walk of every function, targets of reached calls and tail calls that are no function yet become
    ones, functions without a returning path become never-returning (their callers lose the
    fall-through). ``share``: part of the code is swept by another process (:mod:`hpcsa.structure.x86.sweep`)."""
    code_secs = image.code_sections
    if not code_secs:
        return None, Functions(None), {}
    symbols = image.structure_functions
    extent = {f.addr: f.end for f in symbols}
    stripped = is_stripped(image)
    if stripped:  # the unwind table's extents stand in for the symbols' sizes
        for start, end in unwind_entries(image).items():
            extent.setdefault(start, end)
    plt = image.plt_names
    names: dict[int, str] = {}
    entries = _first_entries(image, extent, plt, names, stripped)
    tries = try_regions(image)
    restarts = sorted(entries | set(plt) | set(tries.pad.tolist()))
    code = CodeIndex(image, restarts, share)
    extent_of = _switch_extents(image, extent)
    cfg = ProgramCFG(code, restarts, extent_of, tries)
    noreturn: set[int] = {f.addr for f in symbols if any(n in NORETURN_NAMES for n in f.names)}
    bound = plt | image.plt_got_targets  # what each stub jumps to (.plt.got's keep their targXXXX names)
    noreturn |= {a for a, n in bound.items() if n in NORETURN_NAMES}
    stub_target = _local_stub_targets(image, bound, extent)
    outside_is_tail = _tail_targets(image, plt, extent, stripped)
    funcs = Functions(cfg)
    outside_code = {a for a in entries if image.code_region(a) is None}
    returns: dict[int, bool] = {}
    todo: set[int] | None = None      # functions to walk again (None: all)
    changed: set[int] = set()         # addresses whose status changed (new entries, never-returning)
    internal: set[int] = set()        # jumps to an entry that are that entry's function's own edges
    tail_cfg: ProgramCFG | None = None
    tail_rows = np.zeros(0, np.int8)
    for _round in range(64):  # converges in a few rounds; the cap only guards against a defect
        if code.resync(np.array(sorted(entries), np.uint64)):  # entries inside a sweep's instruction
            restarts = code.restarts.tolist()
            cfg = funcs.cfg = ProgramCFG(code, restarts, extent_of, tries)
            todo = None
        ent = np.array(sorted(entries), np.uint64)
        owner_start, owner_end = _owners(image, extent, ent, code.addr[cfg.cf])
        if tail_cfg is not cfg:  # depends on the code only: once per ProgramCFG
            tail_cfg, tail_rows = cfg, outside_is_tail(np.maximum(code.target[cfg.cf], 0).astype(np.uint64))
        cfg.set_edges(ent, np.array(sorted(noreturn), np.uint64), owner_start, owner_end, tail_rows,
                      np.array(sorted(internal), np.uint64))
        if todo is not None and changed:
            # Only functions with a branch, call or tail call to a changed address can change.
            hit = in_sorted(code.target[cfg.cf], np.array(sorted(changed), np.int64))
            touched = set(cfg.blocks_of_rows(cfg.cf[hit]).tolist())
            todo |= {a for a, blocks in funcs.items() if not touched.isdisjoint(blocks)}
        walk = [a for a in ent.tolist() if (todo is None or a in todo or a not in funcs) and a not in outside_code]
        walk_blocks = cfg.entry_blocks(rows_of(code, np.array(walk, np.uint64))).tolist() if walk else []
        walked = [(a, cfg.reach(b0)) for a, b0 in zip(walk, walk_blocks, strict=True) if b0 >= 0]
        funcs.update(walked)
        # Whether each walked function returns, and the call and tail-call targets it reaches, at once.
        counts = [len(blocks) for _a, blocks in walked]
        reached = np.fromiter(itertools.chain.from_iterable(blocks for _a, blocks in walked), np.int64,
                              sum(counts))
        if len(reached):
            firsts = np.zeros(len(counts), np.int64)
            np.cumsum(counts[:-1], out=firsts[1:])
            returning = np.logical_or.reduceat(cfg.block_returns[reached], firsts).tolist()
            returns.update(zip((a for a, _b in walked), returning, strict=True))
        targets = sorted_unique(cfg.block_target[reached])
        found = {t for t in targets[targets >= 0].tolist() if t not in entries}
        new = {t for t in found if image.code_region(t) is not None}
        todo = set()
        if new:
            entries |= new
            changed = new
            continue
        dead = {a for a, r in returns.items() if not r and a not in noreturn}
        dead |= {stub for stub, target in stub_target.items()
                 if stub not in noreturn and (target in noreturn or target in dead)}
        if dead:
            noreturn |= dead
            changed = dead
            continue
        back = _jumps_back_to_own_entry(cfg, funcs)
        if not back:
            break
        internal |= set(back)
        changed = set(back.values())
    for a in funcs:
        if a in extent or a in names:
            continue
        names[a] = plt.get(a, f"targ{a:x}")
    funcs.containers = _containers(cfg, funcs)
    return code, funcs, names


def _containers(cfg: ProgramCFG, funcs: Functions) -> dict[int, list[int]]:
    """Entry -> the other functions (entries) whose blocks include its entry block (hpcstruct parses such a
    function no further: ``containingFuncs`` in HPCToolkit's ``src/hpcstruct/Struct.cpp``)."""
    if not funcs:
        return {}
    entries = sorted(funcs)
    firsts = cfg.entry_blocks(rows_of(cfg.code, np.array(entries, np.uint64)))
    counts = [len(funcs[a]) for a in entries]
    blocks = np.fromiter(itertools.chain.from_iterable(funcs[a] for a in entries), np.int64, sum(counts))
    owner = np.repeat(np.array(entries, np.uint64), counts)
    order = np.argsort(firsts, kind="stable")
    sorted_firsts = firsts[order]
    hit = in_sorted(blocks, sorted_firsts) & (blocks >= 0)
    inner = np.array(entries, np.uint64)[order[np.searchsorted(sorted_firsts, blocks[hit])]]
    keep = inner != owner[hit]  # every function holds its own entry block
    out: dict[int, list[int]] = {}
    for e, o in zip(inner[keep].tolist(), owner[hit][keep].tolist(), strict=True):
        out.setdefault(e, []).append(o)
    return out


def _jumps_back_to_own_entry(cfg: ProgramCFG, funcs: Functions) -> dict[int, int]:
    """Jump address -> target of the tail calls to a function entry from a block that function reaches
    itself. ParseAPI decides once per edge, while parsing the first function that reaches its block, and a
    jump to the entry of the function being parsed is no tail call (``IA_x86::isTailCall``: the callee is
    the context), so the edge is that function's own: gcc's ``main.cold`` reaches ``main``'s landing pads
    through ``main`` and returns to its own entry from one of them. Then ``main`` takes the same edge into
    ``main.cold`` too (which makes ``main.cold``'s entry a block of ``main``)."""
    code = cfg.code
    out: dict[int, int] = {}
    for b, target in cfg.block_tail.items():
        blocks = funcs.get(target)
        if blocks is None:
            continue
        k = bisect.bisect_left(blocks, b)
        if k < len(blocks) and blocks[k] == b:
            out[int(code.addr[cfg.ends[b]])] = target
    return out


def _local_stub_targets(image: ElfImage, bound: dict[int, str], extent: dict[int, int]) -> dict[int, int]:
    """PLT stub -> entry of the function it binds where the binary defines that function itself (ld.so calls
    its own ``_dl_signal_error`` through its PLT): a stub whose function never returns does not either. A
    name defined at several addresses binds none of them."""
    if not bound:
        return {}
    defined = image.symbol_addresses()
    out = {}
    for stub, name in bound.items():
        addrs = defined.get(name, set()) & extent.keys() if name else set()
        if len(addrs) == 1:
            out[stub] = next(iter(addrs))
    return out


def _first_entries(image: ElfImage, extent: dict[int, int], plt: dict[int, str], names: dict[int, str],
                   stripped: bool) -> set[int]:
    """Where parsing starts: symbols, every PLT stub (Dyninst makes one function per JUMP_SLOT relocation:
    also the stubs called only from exception landing pads, _Unwind_Resume, __cxa_begin_catch, which no
    parsed call reaches), the entry point of an executable (named ``_start`` in ``names``) and, in a
    stripped binary, the starts of the unwind table's entries."""
    entries = set(extent) | set(plt)
    e_entry = int(image.elf.header["e_entry"])
    if e_entry and image.has_interpreter and image.code_region(e_entry) is not None and e_entry not in entries:
        entries.add(e_entry)
        names[e_entry] = "_start"
    if stripped:
        # The dynamic symbols name only the exported functions; the unwind table knows where every function
        # starts and the dynamic section where the loader enters (hpcstruct's Dyninst sees only the called
        # ones): hpcsa.structure.x86.stripped.
        entries |= set(unwind_entries(image)) | loader_entries(image)
    return entries


def _switch_extents(image: ElfImage, extent: dict[int, int]) -> Callable[[int], tuple[int, int]]:
    """``extent_of(addr)``: the code a switch in the function holding ``addr`` may jump to: its symbol,
    else its section."""
    sym_list = sorted(extent.items())
    sym_keys = [a for a, _ in sym_list]

    def extent_of(addr: int) -> tuple[int, int]:
        i = bisect.bisect_right(sym_keys, addr) - 1
        if i >= 0 and addr < sym_list[i][1]:
            return sym_list[i]
        region = image.code_region(addr)
        return (region.addr, region.end) if region else (addr, addr)

    return extent_of


def _tail_targets(image: ElfImage, plt: dict[int, str], extent: dict[int, int], stripped: bool
                  ) -> Callable[[np.ndarray], np.ndarray]:
    """``outside_is_tail(targets)``: what a jump to each target outside its function's extent is, as
    ``cfg.TAIL_*``: a tail call to a PLT section; a tail call if the frame was torn down before it, into
    some symbol's code (``extent``: start -> end of the symbols, and of the FDEs of a stripped binary);
    into code of no known function, a tail call in a stripped binary (in its unstripped twin that code has
    a symbol and an FDE), else no tail call."""
    plt_sections = [(s.addr, s.end) for s in image.code_sections if s.name.startswith(".plt")]
    plt_addrs = np.array(sorted(plt), np.uint64)
    sym_starts = np.array(sorted(extent), np.uint64)
    sym_ends = np.array([extent[a] for a in sorted(extent)], np.uint64)
    unknown = TAIL_ALWAYS if stripped else TAIL_NEVER

    def outside_is_tail(targets: np.ndarray) -> np.ndarray:
        plt_hit = in_sorted(targets, plt_addrs)
        for lo, hi in plt_sections:
            plt_hit |= (targets >= lo) & (targets < hi)
        known = np.zeros(len(targets), bool)
        if len(sym_starts):
            k = np.searchsorted(sym_starts, targets, side="right") - 1
            ok = k >= 0
            known[ok] = targets[ok] < sym_ends[k[ok]]
        out = np.where(known, TAIL_IF_TORN_DOWN, unknown).astype(np.int8)
        out[plt_hit] = TAIL_ALWAYS
        return out

    return outside_is_tail


def _owners(image: ElfImage, extent: dict[int, int], ent: np.ndarray, cf_addr: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of the function each control-flow instruction at ``cf_addr`` lies in (the last entry
    at or before it, up to its symbol's end or the next entry), 0 and 0 outside every function."""
    ends = np.array([extent.get(int(a)) or _next_end(image, ent, i) for i, a in enumerate(ent.tolist())],
                    np.uint64)
    k = np.searchsorted(ent, cf_addr, side="right") - 1
    if len(ent) == 0:
        k[:] = -1
    owner_start = np.where(k >= 0, ent[np.maximum(k, 0)] if len(ent) else 0, 0).astype(np.uint64)
    owner_end = np.where(k >= 0, ends[np.maximum(k, 0)] if len(ent) else 0, 0).astype(np.uint64)
    outside = cf_addr >= owner_end
    owner_start[outside] = 0
    owner_end[outside] = 0
    return owner_start, owner_end

def _next_end(image: ElfImage, entries: np.ndarray, i: int) -> int:
    """Extent end of an entry without a symbol: the next entry, or the end of its section."""
    a = int(entries[i])
    region = image.code_region(a)
    nxt = int(entries[i + 1]) if i + 1 < len(entries) else (region.end if region else a + 16)
    return min(nxt, region.end) if region else nxt

