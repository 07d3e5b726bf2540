"""Agreement of two structure files of one GPU binary (hpcsa's against real hpcstruct's).

GPU instructions have a fixed size, so every address in the ``S``/``C`` ranges of either file is an
instruction (no disassembler needed, unlike the x86 matcher in :mod:`hpcsa.formats.hpcstruct.compare`).

* procedures: (entry address, name) pairs;
* call sites: (call instruction address, target) pairs, target None for a ``<C>`` without ``t``;
* statements: instruction addresses whose whole lexical chain is equal: procedure entry, enclosing
  loops by header address, inlined call sites by file base name and line, and the leaf's file base name
  and line. Base names, because hpcstruct writes source paths after a ``realpath`` on the machine that
  ran it (``/usr/local/cuda`` resolves differently on each); inlined functions' names are left out,
  because Dyninst names them from ``DW_AT_name`` in ``-G`` cubins (``f_inlined``) and hpcsa demangles
  the linkage name (``ns::f_inlined()``);
* loops: (procedure entry, enclosing loop headers, header address, header file base name, line).

Each score is matched / max(count in either file), so missing and extra items both count against it.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from hpcsa.formats.hpcstruct.model import C, L, Module, S


@dataclass
class GpuAgreement:
    procedures: float
    calls: float
    statements: float
    loops: float
    counts: dict[str, tuple[int, int]]  # what -> (reference, ours)

    def row(self, name: str) -> str:
        c = self.counts
        return (f"{name:<34} procs {100 * self.procedures:6.2f} calls {100 * self.calls:6.2f} "
                f"stmts {100 * self.statements:6.2f} loops {100 * self.loops:6.2f}  "
                + " ".join(f"{k} {a}/{b}" for k, (a, b) in c.items()))


def _base(path: str | None) -> str:
    return os.path.basename(path) if path else ""


def procedures(m: Module) -> set[tuple[int, str | None]]:
    rows = m.procedures
    return {(int(e), m.text(int(m.scopes["name"][r]))) for e, r in zip(rows["entry"], rows["scope"], strict=True)}


def call_sites(m: Module) -> set[tuple[int, int | None]]:
    cs = m.call_sites
    return {(int(a), None if t < 0 else int(t)) for a, t in zip(cs["address"], cs["target"], strict=True)}


def _chain(m: Module, row: int, cache: dict[int, tuple]) -> tuple:
    got = cache.get(row)
    if got is None:
        steps = []
        for s in m.lexical_path(row):
            if s.kind == "function":
                steps.append(("proc", s.address) if s.address is not None else ("inline",))
            elif s.kind == "loop":
                steps.append(("loop", s.address))
            elif s.relation == "inlined_call":
                steps.append(("call", _base(s.file), s.line))
            else:
                steps.append(("line", _base(s.file), s.line))
        got = cache[row] = tuple(steps)
    return got


def instruction_addresses(m: Module, size: int) -> np.ndarray:
    kinds = m.scopes["kind"]
    r = m.ranges
    keep = ((kinds[r["scope"]] == S) | (kinds[r["scope"]] == C)) & (r["hi"] > r["lo"])
    parts = [np.arange(lo, hi, size, dtype=np.uint64) for lo, hi in zip(r["lo"][keep].tolist(),
                                                                         r["hi"][keep].tolist(), strict=True)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)


def loops(m: Module) -> Counter:
    out: Counter = Counter()
    cache: dict[int, tuple] = {}
    for row in np.flatnonzero(m.scopes["kind"] == L).tolist():
        chain = [s for s in _chain(m, row, cache) if s[0] in ("proc", "loop")]
        out[(tuple(chain), _base(m.text(int(m.scope_file[row]))), int(m.scopes["line"][row]))] += 1
    return out


def _score(a: int, n_ref: int, n_ours: int) -> float:
    return a / max(n_ref, n_ours) if (n_ref or n_ours) else 1.0


def gpu_agreement(ref: Module, ours: Module, insn_size: int = 16) -> GpuAgreement:
    pr, po = procedures(ref), procedures(ours)
    cr, co = call_sites(ref), call_sites(ours)
    addrs = np.union1d(instruction_addresses(ref, insn_size), instruction_addresses(ours, insn_size))
    leaf_r = ref.lookup(addrs).tolist()
    leaf_o = ours.lookup(addrs).tolist()
    cache_r: dict[int, tuple] = {}
    cache_o: dict[int, tuple] = {}
    same = sum(1 for a, b in zip(leaf_r, leaf_o, strict=True)
               if a >= 0 and b >= 0 and _chain(ref, a, cache_r) == _chain(ours, b, cache_o))
    lr, lo = loops(ref), loops(ours)
    n_lr, n_lo = sum(lr.values()), sum(lo.values())
    matched_loops = sum(min(n, lo.get(k, 0)) for k, n in lr.items())
    return GpuAgreement(_score(len(pr & po), len(pr), len(po)), _score(len(cr & co), len(cr), len(co)),
                        same / len(addrs) if len(addrs) else 1.0, _score(matched_loops, n_lr, n_lo),
                        {"procs": (len(pr), len(po)), "calls": (len(cr), len(co)), "insns": (len(addrs),) * 2,
                         "loops": (n_lr, n_lo)})
