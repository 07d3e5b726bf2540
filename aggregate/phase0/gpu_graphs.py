"""Phase 0 of ``hpcsa prof``: the GPU structure files, parsed and their call graphs built, on every rank.

Small, and needed by every reader of phase 1: a profile's GPU PC samples are reconstructed into calling
contexts as it is read (:mod:`.gpu_contexts`), with the call graph of the binary they lie in.
"""

from __future__ import annotations

import os

from hpcsa.aggregate import lexical
from hpcsa.aggregate.handoff import GpuStructures
from hpcsa.aggregate.inputs import StructInput
from hpcsa.formats.hpcstruct.model import C, Module
from hpcsa.formats.hpcstruct.parsedcache import read_structure


def has_call_graph(module: Module) -> bool:
    """hpcprof reconstructs when the LM says has-calls or carries call sites (else: no flow graph)."""
    return bool(module.has_calls) or module.count(C) > 0


def read_gpu_structures(structs: list[StructInput]) -> GpuStructures:
    """The GPU structure files among ``structs``: their modules, and the call graphs of the modules that
    have one."""
    out = GpuStructures()
    for s in structs:
        if not s.is_gpu:
            continue
        for module in read_structure(s.path).modules:
            out.modules.append((s.measdir, module))
            if not has_call_graph(module):
                continue
            from hpcsa.gpucct.fromstruct import call_graph_from_module
            graph = call_graph_from_module(module, source=s.path)
            key = lexical.module_key(module.path, s.measdir) if s.measdir else os.path.normpath(module.path)
            out.graphs_by_key[key] = graph
            named = lexical.hashed_name(module.path)
            if named is not None:
                out.graphs_by_name[named[1]] = graph
    return out
