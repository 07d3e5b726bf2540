"""CUDA and HIP graphs keep the code that built them.

A graph is built once (by stream capture, ``cudaStreamBeginCapture`` ... ``cudaStreamEndCapture``, or node
by node) and launched many times (``cudaGraphLaunch``, ``hipGraphLaunch``, ``cuGraphLaunch``); every operation
it runs correlates with the launch call only, so a profile that stops there loses the code that built the
graph. Here each operation a graph ran is placed under the launch call's context, then a frame
``<graph> ...``, then the context of the call that created its node (the captured launch, copy or memset
call with its Python frames, operators, ranges or CPU call stack): top-down shows who launched the graph,
bottom-up who built the kernel. This is the model of Proton's CUDA-graph support (Triton PR #8676: the
launch context joined with the captured-at context) and of CUPTI's graph-node tracking (the
``CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED`` callback inside the creating API call, see the CUPTI samples
``cuda_graphs_trace``).

Where the node is known (Nsight Systems: kernel ``graphNodeId`` -> ``CUDA_GRAPH_NODE_EVENTS``, through
``originalGraphNodeId`` from an instantiated graph's node to the captured one), the node's creating call is
taken from the records. Where it is not (PyTorch profiler traces: no graph or node ids), a launch's
operations in device order are matched to the calls of a stream capture of the same process in capture
order, when their number and kinds agree and, where both name the kernel, the names agree; the k-th launch
of a graph shape goes to the k-th capture of that shape (captures and launches of one shape, such as the
layers of a piecewise-captured model, come in the same order). The capture may be in the same trace or in
another one of the same process (a capture trace and a replay trace, as profilers write them).

The ``<graph>`` frame has no metrics of its own: every operation stays one operation at one place.
"""

from __future__ import annotations

import re

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.ingest import model as M

GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch")
CAPTURE_BEGIN = re.compile(r"^(cuda|hip|cu)StreamBeginCapture")
CAPTURE_END = re.compile(r"^(cuda|hip|cu)StreamEndCapture")
_NODE_KIND = ((re.compile(r"Launch(Kernel|CooperativeKernel|HostFunc)|ModuleLaunch|ExtLaunch|LaunchKernelEx"),
               M.KERNEL),
              (re.compile(r"Memcpy"), M.MEMCPY), (re.compile(r"Memset"), M.MEMSET))
PREFIX = "<graph>"


def node_kind(api_name: str) -> int:
    """The operation a call made while its stream was captured creates as a node (0: none)."""
    if GRAPH_LAUNCH.match(api_name):
        return 0
    return next((k for pattern, k in _NODE_KIND if pattern.search(api_name)), 0)


def find_captures(tr: M.GpuTrace, kernel_of_call: list[str]) -> list[M.GraphCapture]:
    """The stream captures of a trace's API calls: per thread, the node-creating calls between a
    ``*StreamBeginCapture`` and its ``*StreamEndCapture`` (``kernel_of_call``: the kernel each call launched,
    where the records name it, "" otherwise; aligned with ``tr.apis``)."""
    apis = tr.apis
    if not len(apis):
        return []
    names = tr.strings
    kind_of_name = np.array([node_kind(n) for n in names] + [0], np.int64)
    begin_of_name = np.array([bool(CAPTURE_BEGIN.match(n)) for n in names] + [False])
    end_of_name = np.array([bool(CAPTURE_END.match(n)) for n in names] + [False])
    begins = begin_of_name[apis["name"]]
    if not np.any(begins):
        return []
    out: list[M.GraphCapture] = []
    keys = np.stack([apis["process"], apis["thread"]], axis=1)
    for pid, tid in np.unique(keys[begins], axis=0).tolist():
        mine = np.flatnonzero((apis["process"] == pid) & (apis["thread"] == tid))
        mine = mine[np.argsort(apis["start"][mine], kind="stable")]
        current: M.GraphCapture | None = None
        for i in mine.tolist():
            name = int(apis["name"][i])
            if begin_of_name[name]:
                current = M.GraphCapture(int(pid), int(tid))
            elif end_of_name[name]:
                if current is not None and current.calls:
                    out.append(current)
                current = None
            elif current is not None and kind_of_name[name]:
                current.calls.append(i)
                current.kinds.append(int(kind_of_name[name]))
                current.names.append(kernel_of_call[i] if i < len(kernel_of_call) else "")
    return out


def attach_graph_contexts(traces: list[M.GpuTrace]) -> tuple[int, int]:
    """Give every operation a graph ran its ``launch_stack`` (launch, ``<graph>``, creating context); return
    (operations placed under ``<graph>`` frames, of which with a known creating context). Run after
    :func:`~hpcsa.ingest.model.join_launches` (and the ranges) of every trace."""
    placed = captured = 0
    for tr in traces:
        a, b = _attach(tr, traces)
        placed += a
        captured += b
    return placed, captured


def _graph_ops(tr: M.GpuTrace) -> np.ndarray:
    ops, apis = tr.ops, tr.apis
    if not len(ops):
        return np.zeros(0, np.int64)
    launch_name = np.array([bool(GRAPH_LAUNCH.match(n)) for n in tr.strings] + [False])
    api = ops["api"]
    by_call = np.zeros(len(ops), bool)
    if len(apis):
        by_call = (api >= 0) & launch_name[np.where(api >= 0, apis["name"][np.maximum(api, 0)], -1)]
    return np.flatnonzero(by_call | (ops["graph_node"] > 0))


@dataclass
class _Creators:
    """Per graph operation of a trace (aligned with the selected ops): the trace holding the call that created
    its node (index into the traces, -1 unknown), that call, and the capture number naming its graph."""

    trace: np.ndarray
    call: np.ndarray
    capture: np.ndarray

    @classmethod
    def none(cls, n: int) -> _Creators:
        return cls(np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64))


def _attach(tr: M.GpuTrace, traces: list[M.GpuTrace]) -> tuple[int, int]:
    sel = _graph_ops(tr)
    if not len(sel):
        return 0, 0
    found = _Creators.none(len(sel))
    _by_node(tr, traces.index(tr), sel, found)
    _by_capture(tr, traces, sel, found)
    ops, apis = tr.ops, tr.apis
    call = ops["api"][sel]
    has_call = call >= 0
    safe = np.maximum(call, 0)
    stack = np.where(has_call, apis["stack"][safe] if len(apis) else -1, -1)
    name = np.where(has_call, apis["name"][safe] if len(apis) else -1, -1)
    keys = np.stack([stack, name, ops["graph"][sel], found.capture, found.trace, found.call], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    made = []
    for stk, nm, graph, capture, ctrace, ccall in uniq.tolist():  # Python over distinct contexts only
        launch = tr.stacks[stk] if stk >= 0 else (
            M.Frame(M.API_FRAME, 0, tr.strings[nm] if nm >= 0 else "<untraced API call>"),)
        label = f"{PREFIX} {graph}" if graph >= 0 else f"{PREFIX} capture {capture}" if capture >= 0 else PREFIX
        frames = launch + (M.Frame(f"[{tr.api_domain} graphs]", M.named_address(label), label),)
        if ctrace >= 0:
            ctr = traces[ctrace]
            cstk = int(ctr.apis["stack"][ccall])
            frames += ctr.stacks[cstk] if cstk >= 0 else (
                M.Frame(M.API_FRAME, 0, ctr.strings[int(ctr.apis["name"][ccall])]),)
        tr.stacks.append(frames)
        made.append(len(tr.stacks) - 1)
    ops["launch_stack"][sel] = np.array(made, np.int64)[inv.reshape(-1)]
    return len(sel), int(np.count_nonzero(found.trace >= 0))


def _by_node(tr: M.GpuTrace, index: int, sel: np.ndarray, found: _Creators) -> None:
    """Operations whose records name their graph node: the node's creating call (through the node it was
    cloned from when the graph was instantiated); the chain is followed once per distinct node."""
    if not tr.graph_nodes:
        return
    ops = tr.ops
    has_node = np.flatnonzero(ops["graph_node"][sel] > 0)
    if not len(has_node):
        return
    pairs, inv = np.unique(np.stack([ops["process"][sel[has_node]], ops["graph_node"][sel[has_node]]], axis=1),
                           axis=0, return_inverse=True)
    creating = np.full(len(pairs), -1, np.int64)
    for k, (pid, node) in enumerate(pairs.tolist()):
        key, seen = (pid, node), set()
        while key not in tr.graph_nodes and key in tr.graph_origin and key not in seen:
            seen.add(key)
            key = (pid, tr.graph_origin[key])
        creating[k] = tr.graph_nodes.get(key, -1)
    got = creating[inv.reshape(-1)]
    ok = got >= 0
    found.trace[has_node[ok]] = index
    found.call[has_node[ok]] = got[ok]


def _signature(tr: M.GpuTrace, ops_of_launch: np.ndarray) -> tuple[tuple[int, ...], tuple[str, ...]]:
    ops = tr.ops
    kinds = tuple(int(k) for k in ops["kind"][ops_of_launch])
    names = tuple(tr.strings[int(n)] if k == M.KERNEL else "" for n, k in zip(ops["name"][ops_of_launch], kinds,
                                                                             strict=True))
    return kinds, names


def _fits(names: tuple[str, ...], cap: M.GraphCapture) -> bool:
    return all(not a or not b or a == b for a, b in zip(names, cap.names, strict=True))


def _by_capture(tr: M.GpuTrace, traces: list[M.GpuTrace], sel: np.ndarray, found: _Creators) -> None:
    """Launches whose operations carry no node: matched to stream captures of the same process."""
    ops = tr.ops
    rest = np.flatnonzero((found.trace < 0) & (ops["api"][sel] >= 0))  # positions in sel
    if not len(rest):
        return
    members_all = sel[rest]
    order = np.lexsort((ops["corr"][members_all], ops["start"][members_all], ops["api"][members_all]))
    pos = rest[order]
    calls, first = np.unique(ops["api"][sel[pos]], return_index=True)
    bounds = [*first.tolist(), len(pos)]
    launches = [(int(calls[k]), pos[bounds[k]:bounds[k + 1]]) for k in range(len(calls))]
    launches.sort(key=lambda item: (int(tr.apis["start"][item[0]]), item[0]))
    best = _capture_source(tr, traces, [(c, sel[p]) for c, p in launches])
    if best is None:
        return
    src, captures = best
    src_index = traces.index(src)
    turn: dict[tuple[int, ...], int] = {}
    for call, members in launches:
        pid = int(tr.apis["process"][call])
        kinds, names = _signature(tr, sel[members])
        group = [k for k, cap in enumerate(captures) if cap.process == pid and tuple(cap.kinds) == kinds
                 and _fits(names, cap)]
        if not group:
            continue
        gkey = tuple(group)
        k = group[turn.get(gkey, 0) % len(group)]
        turn[gkey] = turn.get(gkey, 0) + 1
        found.trace[members] = src_index
        found.call[members] = captures[k].calls
        found.capture[members] = k + 1


def _capture_source(tr: M.GpuTrace, traces: list[M.GpuTrace], launches: list[tuple[int, np.ndarray]]
                    ) -> tuple[M.GpuTrace, list[M.GraphCapture]] | None:
    """The trace whose captures fit the most of ``tr``'s launches (``tr`` itself first on a tie)."""
    best: tuple[int, int] = (0, 0)
    found = None
    pids = {int(tr.apis["process"][c]) for c, _ in launches}
    sigs = [(int(tr.apis["process"][c]), _signature(tr, m)) for c, m in launches]
    for rank, other in enumerate([tr] + [t for t in traces if t is not tr]):
        caps = [c for c in other.captures if c.process in pids]
        if not caps:
            continue
        fit = sum(1 for pid, (kinds, names) in sigs
                  if any(c.process == pid and tuple(c.kinds) == kinds and _fits(names, c) for c in caps))
        if fit > best[0]:
            best, found = (fit, -rank), (other, other.captures)
    return found
