"""The static call graph of a GPU binary, from its ``.hpcstruct`` module.

Functions are the procedures (``P``: entry = first address of ``v``); a
function's code is the address ranges of the statements and call sites whose
nearest enclosing procedure it is (the same leaf map hpcprof uses to place a
pc, so samples and calls land in the function the aggregation will show).
Call sites are the ``C`` elements with their call instruction address and
callee entry ``t``; a ``C`` without ``t`` is an indirect call.
"""

from __future__ import annotations

import numpy as np

from hpcsa.formats.hpcstruct.model import Module
from hpcsa.gpucct.model import CallGraph, CallSite, DeviceFunction


def call_graph_from_module(module: Module, source: str | None = None) -> CallGraph:
    procs = module.procedures  # sorted by entry
    leaves = module.leaf_map
    owner = module.procedure_of[leaves["scope"]] if len(leaves) else np.zeros(0, np.int32)
    by_proc: dict[int, list[tuple[int, int]]] = {}
    for lo, hi, p in zip(leaves["lo"].tolist(), leaves["hi"].tolist(), owner.tolist(), strict=True):
        if p >= 0:
            spans = by_proc.setdefault(p, [])
            if spans and spans[-1][1] == lo:  # leaves are sorted: merge adjacent ones
                spans[-1] = (spans[-1][0], hi)
            else:
                spans.append((lo, hi))
    names = module.scopes["name"]
    functions = [DeviceFunction(entry, module.text(int(names[row])) or "", tuple(by_proc.get(row, ())))
                 for entry, row in zip(procs["entry"].tolist(), procs["scope"].tolist(), strict=True)]

    bounds = module.range_bounds
    calls = []
    for rec in module.call_sites:
        row = int(rec["scope"])
        if bounds[row + 1] == bounds[row]:  # a call site without an address cannot be sampled
            continue
        target = int(rec["target"])
        calls.append(CallSite(int(rec["address"]), None if target < 0 else target))
    return CallGraph(functions, calls, source=source or module.path)
