"""Agreement between two structure files of one binary, as hpcprof would read them.

Used to judge ``hpcsa struct`` against real hpcstruct (and usable for any two
``.hpcstruct`` files of the same binary):

* procedures: (entry address, name) pairs present in both;
* statements: instruction addresses (decoded with capstone from the ``S``/``C``
  ranges of either file) whose leaf file:line and whole lexical chain
  (procedure, inlined call sites and functions, loops) are equal;
* loops: loops with equal nesting path (procedure, inline steps, enclosing
  loops) and equal header file:line, or, in binaries without line information
  (every loop at line 0), equal header address.

Each score is matched / max(count in either file), so extra and missing items
both count against it. Known defect of the reference: Dyninst reads
``DW_AT_call_file`` given as ``DW_FORM_implicit_const`` (GCC 11+, DWARF 5) as
an unknown call site ``<unknown>``:0; such reference call sites match any.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import capstone
import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.hpcstruct.model import C, L, LexStep, Module, S

UNKNOWN_FILE = "<unknown>"


@dataclass
class Agreement:
    procedures: float
    statements: float
    loops: float
    n_procedures: tuple[int, int]   # (reference, ours)
    n_instructions: int
    n_loops: tuple[int, int]

    def row(self, name: str) -> str:
        return (f"{name:<34} {100 * self.procedures:7.2f} {100 * self.statements:7.2f} {100 * self.loops:7.2f}"
                f"   {self.n_procedures[0]:>4}/{self.n_procedures[1]:<4} {self.n_instructions:>6}"
                f"   {self.n_loops[0]:>3}/{self.n_loops[1]:<3}")


HEADER = (f"{'binary':<34} {'procs%':>7} {'stmts%':>7} {'loops%':>7}   {'procs ref/ours':>14} {'insns':>6}"
          f"   {'loops ref/ours'}")


def _step_key(step: LexStep, line_info: bool) -> tuple:
    if step.kind == "function":
        return ("function", step.name) if step.relation == "enclosure" else ("?", step.name)
    if step.kind == "loop":
        return ("loop", step.file, step.line) if line_info else ("loop", step.address)
    if step.relation == "inlined_call":
        return ("call", step.file, step.line)
    return ("line", step.file, step.line)


def _same_chain(a: tuple, b: tuple) -> bool:
    """Equal chains, where a reference call site <unknown>:0 (see module docstring) matches any call site."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if x[0] == y[0] == "call" and (x[1] == UNKNOWN_FILE and x[2] == 0):
            continue
        return False
    return True


def _chain_cache(module: Module, line_info: bool) -> Callable[[int], tuple]:
    cache: dict[int, tuple] = {}

    def chain(row: int) -> tuple:
        got = cache.get(row)
        if got is None:
            got = cache[row] = tuple(_step_key(s, line_info) for s in module.lexical_path(row))
        return got

    return chain


def instruction_addresses(module: Module, read: Callable[[int, int], bytes]) -> np.ndarray:
    """Start addresses of the instructions in every S/C range of a module (linear decode per range)."""
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    kinds = module.scopes["kind"]
    out: list[int] = []
    for lo, hi, scope in module.ranges.tolist():
        if kinds[scope] not in (S, C) or hi <= lo:
            continue
        pos = lo
        code = read(lo, hi - lo)
        while pos < hi:
            got = [a for a, _s, _m, _o in md.disasm_lite(code[pos - lo:], pos)]
            if not got:
                out.append(pos)  # undecodable byte
                pos += 1
                continue
            out.extend(got)
            last = got[-1]
            pos = last + next(s for a, s, _m, _o in md.disasm_lite(code[last - lo:], last, 1))
    return np.unique(np.array(out, np.uint64))


def _loop_keys(module: Module, line_info: bool) -> Counter:
    chain = _chain_cache(module, line_info)
    return Counter(chain(int(r)) for r in np.flatnonzero(module.scopes["kind"] == L))


def _loops_match(ref: Counter, ours: Counter) -> int:
    matched = 0
    pool = dict(ours)
    for key, n in ref.items():
        take = min(n, pool.get(key, 0))
        matched += take
        if take:
            pool[key] -= take
        left = n - take
        if left and any(k[0] == "call" and k[1] == UNKNOWN_FILE and k[2] == 0 for k in key):
            for other in list(pool):
                if left and pool[other] and _same_chain(key, other):
                    t = min(left, pool[other])
                    matched += t
                    left -= t
                    pool[other] -= t
    return matched


def compare(ref: Module, ours: Module, read: Callable[[int, int], bytes]) -> Agreement:
    """Agreement of ``ours`` with ``ref`` for one binary; ``read(addr, size)`` gives the code bytes."""
    line_info = bool(np.any(ref.scopes["line"][ref.scopes["kind"] == S] > 0))

    def procs(m: Module) -> set[tuple[int, str | None]]:
        rows = m.procedures
        return {(int(e), m.text(int(m.scopes["name"][r]))) for e, r in zip(rows["entry"], rows["scope"],
                                                                           strict=True)}

    pr, po = procs(ref), procs(ours)
    p_score = len(pr & po) / max(len(pr), len(po)) if (pr or po) else 1.0

    addrs = np.union1d(instruction_addresses(ref, read), instruction_addresses(ours, read))
    leaf_r = ref.lookup(addrs).tolist()
    leaf_o = ours.lookup(addrs).tolist()
    chain_r = _chain_cache(ref, line_info)
    chain_o = _chain_cache(ours, line_info)
    same = 0
    pair_cache: dict[tuple[int, int], bool] = {}
    for a, b in zip(leaf_r, leaf_o, strict=True):
        if a < 0 or b < 0:
            continue
        got = pair_cache.get((a, b))
        if got is None:
            got = pair_cache[(a, b)] = _same_chain(chain_r(a), chain_o(b))
        same += got
    s_score = same / len(addrs) if len(addrs) else 1.0

    lr, lo = _loop_keys(ref, line_info), _loop_keys(ours, line_info)
    n_lr, n_lo = sum(lr.values()), sum(lo.values())
    l_score = _loops_match(lr, lo) / max(n_lr, n_lo) if (n_lr or n_lo) else 1.0
    return Agreement(p_score, s_score, l_score, (len(pr), len(po)), len(addrs), (n_lr, n_lo))


@dataclass
class AddressAgreement:
    """What a structure file of a stripped binary finds, judged by address against a structure file of its
    unstripped twin (stripping removes symbols and debug sections and moves no code): procedure entries, and
    loops keyed by (entry of their enclosing procedure, their address ``v``: the lowest entry of the loop)."""

    entry_recall: float
    entry_precision: float
    loop_recall: float
    loop_precision: float
    n_entries: tuple[int, int]   # (twin, ours)
    n_loops: tuple[int, int]
    missed_entries: list[int]
    extra_entries: list[int]
    missed_loops: list[tuple[int, int]]
    extra_loops: list[tuple[int, int]]


def loop_addresses(module: Module) -> Counter:
    """(enclosing procedure entry, loop address) of every loop of a module, counted."""
    sc = module.scopes
    entry_of = dict(zip(module.procedures["scope"].tolist(), module.procedures["entry"].tolist(), strict=True))
    out: Counter = Counter()
    for row in np.flatnonzero(sc["kind"] == L).tolist():
        ranges = module.ranges_of(row)
        proc = int(module.procedure_of[row])
        out[(entry_of.get(proc, -1), ranges[0][0] if ranges else -1)] += 1
    return out


def address_agreement(twin: Module, ours: Module) -> AddressAgreement:
    """Recall and precision of ``ours`` (a stripped binary's structure) against ``twin`` (its unstripped
    twin's) by address alone: names, lines and inline scopes are what stripping takes away."""
    te, oe = set(twin.procedures["entry"].tolist()), set(ours.procedures["entry"].tolist())
    tl, ol = loop_addresses(twin), loop_addresses(ours)
    both = sum((tl & ol).values())
    n_tl, n_ol = sum(tl.values()), sum(ol.values())

    def share(a: int, b: int) -> float:
        return a / b if b else 1.0

    return AddressAgreement(share(len(te & oe), len(te)), share(len(te & oe), len(oe)),
                            share(both, n_tl), share(both, n_ol), (len(te), len(oe)), (n_tl, n_ol),
                            sorted(te - oe), sorted(oe - te), sorted((tl - ol).elements()),
                            sorted((ol - tl).elements()))


__all__ = ["AddressAgreement", "Agreement", "HEADER", "address_agreement", "compare", "instruction_addresses",
           "loop_addresses"]
