"""The reconstructed GPU calling contexts of one measurement file, as text (``hpcsa gpucct``).

For every ``<gpu kernel>`` launch context of the file and every GPU binary
sampled under it, the call graph comes from the binary's structure file
(``-S``, or the measurement directory's ``structs/<gpubin>*.hpcstruct``) and
the tree is printed with inclusive and exclusive values of one metric. With no
structure file, every sample is shown under the unknown-caller frame.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.hpcstruct.model import Module
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.measurement.hpcrun import HpcrunProfile
from hpcsa.gpucct.fromstruct import call_graph_from_module
from hpcsa.gpucct.launches import WEIGHT_METRIC
from hpcsa.gpucct.model import (
    TRUNCATED_NAME,
    UNKNOWN_CALLER_NAME,
    CallGraph,
    Reconstruction,
    StepKind,
    recursion_name,
)


def choose_metric(prof: HpcrunProfile, name: str | None, path: str) -> int:
    names = [m.name for m in prof.metrics]
    if name is not None:
        if name not in names:
            raise HpcsaError(path, f"no metric named {name!r} (the file has: {', '.join(names[:12])}"
                             f"{', ...' if len(names) > 12 else ''})")
        return names.index(name)
    if WEIGHT_METRIC in names:
        return names.index(WEIGHT_METRIC)
    used = np.unique(prof.values["metric"]) if len(prof.values) else np.zeros(1, int)
    return int(used[0]) if len(names) else 0


class StructureFinder:
    """Call graphs by GPU binary path, from the given structure files or the measurement's structs/."""

    def __init__(self, measurement: Path, given: list[Path]) -> None:
        self.directory = measurement.parent / "structs"
        self.given = given
        self.cache: dict[str, tuple[CallGraph, str]] = {}
        self._given_modules: list[tuple[Module, Path]] | None = None

    def graph(self, binary: str) -> tuple[CallGraph, str]:
        base = os.path.basename(binary)
        if base not in self.cache:
            found = self._find(base)
            if found is None:
                self.cache[base] = (CallGraph([]), f"none found for {base} (every sample under "
                                    f"{UNKNOWN_CALLER_NAME})")
            else:
                module, path = found
                g = call_graph_from_module(module, str(path))
                rec = int(np.count_nonzero(g.comp_recursive))
                self.cache[base] = (g, f"{path} ({g.n_functions} functions, {len(g.call_pc)} call sites, "
                                    f"{rec} recursive component(s))")
        return self.cache[base]

    def _find(self, base: str) -> tuple[Module, Path] | None:
        if self.given:
            if self._given_modules is None:
                self._given_modules = [(m, p) for p in self.given for m in read_hpcstruct(p).modules]
            for m, p in self._given_modules:
                if os.path.basename(m.path) == base:
                    return m, p
            return None
        for p in sorted(self.directory.glob(f"{base}*.hpcstruct")):
            for m in read_hpcstruct(p).modules:
                if os.path.basename(m.path) == base:
                    return m, p
        return None


def function_name(graph: CallGraph, entry: int) -> str:
    i = graph.index_of(entry)
    return graph.functions[i].name or f"{entry:#x}" if i >= 0 else f"{entry:#x}"


def frame_label(graph: CallGraph, rec: Reconstruction, index: int) -> str:
    f = rec.frames[index]
    if f.step is None:
        return "<gpu kernel>"
    kind = f.step.kind
    if kind == StepKind.CALL:
        caller = graph.function_of([f.step.pc])[0]
        where = graph.functions[int(caller)].name if caller >= 0 else "?"
        return f"call {f.step.pc:#x} in {where} -> {function_name(graph, f.callee or 0)}"
    if kind == StepKind.RECURSION:
        return recursion_name([function_name(graph, e) for e in f.members])
    if kind == StepKind.UNKNOWN:
        return UNKNOWN_CALLER_NAME
    return f"{TRUNCATED_NAME[:-1]} of {function_name(graph, f.step.pc)}>" if f.step.pc else TRUNCATED_NAME


def render(graph: CallGraph, rec: Reconstruction, metric: int, *, pcs: bool = False) -> list[str]:
    """The tree as text lines: inclusive, exclusive, factor, then the frame indented by depth; below each
    frame, its points grouped by function (or one line per pc). ``metric`` is a column of the values."""
    incl = rec.inclusive()[:, metric]
    excl = rec.exclusive()[:, metric]
    func = graph.function_of(rec.point_pc)
    starts = np.searchsorted(rec.point_frame, np.arange(len(rec.frames) + 1))
    depth = [0] * len(rec.frames)
    lines = [f"{'inclusive':>14} {'exclusive':>14} {'factor':>7}  frame"]
    for i, f in enumerate(rec.frames):
        if i:
            depth[i] = depth[f.parent] + 1
        pad = "  " * depth[i]
        lines.append(f"{incl[i]:>14.6g} {excl[i]:>14.6g} {f.factor:>7.4g}  {pad}{frame_label(graph, rec, i)}")
        a, b = int(starts[i]), int(starts[i + 1])
        if a == b:
            continue
        vals = rec.point_values[a:b, metric]
        if pcs:
            for pc, v, fn in zip(rec.point_pc[a:b].tolist(), vals.tolist(), func[a:b].tolist(), strict=True):
                name = graph.functions[fn].name if fn >= 0 else "(no function)"
                lines.append(f"{'':>14} {v:>14.6g} {'':>7}  {pad}  . {pc:#x} in {name}")
        else:
            groups, inverse = np.unique(func[a:b], return_inverse=True)
            sums = np.zeros(len(groups))
            np.add.at(sums, inverse, vals)
            counts = np.bincount(inverse, minlength=len(groups))
            for fn, s, n in zip(groups.tolist(), sums.tolist(), counts.tolist(), strict=True):
                name = graph.functions[fn].name if fn >= 0 else "(no function)"
                lines.append(f"{'':>14} {s:>14.6g} {'':>7}  {pad}  . {name}: {n} pc(s)")
    return lines
