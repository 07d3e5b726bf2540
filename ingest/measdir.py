"""The one writer: GPU records (:class:`~hpcsa.ingest.model.GpuTrace`) -> an hpcrun measurement directory.

Placement follows HPCToolkit's hpcrun (its GPU measurement, ``src/tool/hpcrun/gpu``
in the HPCToolkit sources): per CPU thread one ``.hpcrun`` whose contexts are the launch call paths (the CPU call stack where the
source has one, else the API call under the thread root), with ``<gpu kernel>``,
``<gpu copyin>``/``<gpu copyout>``/``<gpu copy>``, ``<gpu memset>``, ``<gpu sync>``,
``<gpu alloc>``/``<gpu delete>`` and ``<gpu kernel>`` trace placeholders below; the
kernel's entry point below ``<gpu kernel>``; PC samples as ``unwound = 0``
children of ``<gpu kernel>``. Per GPU stream a pseudo-thread (numbered from 500)
with its own ``.hpcrun`` and a call-trace ``.hpctrace``: two records per
operation, the leaf at its start and ``NoActvty`` at its end.

Work per record is done on numpy columns; Python loops run over unique launch
contexts, kernels, sample points, threads and streams only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.demangle import demangle
from hpcsa.core.digests import md5
from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import write_file
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    FIRST_STREAM_THREAD,
    ID_ELEMENT,
    LOADMAP_ANALYZE,
    UNWOUND,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    default_id_names,
    pack_values,
    write_hpcrun,
)
from hpcsa.formats.measurement.hpcrun import GPUCONTEXT_ELEMENT as GPUCONTEXT
from hpcsa.formats.measurement.hpcrun import GPUSTREAM_ELEMENT as GPUSTREAM
from hpcsa.formats.measurement.hpcrun import NODE_ELEMENT as NODE
from hpcsa.formats.measurement.hpcrun import RANK_ELEMENT as RANK
from hpcsa.formats.measurement.hpcrun import THREAD_ELEMENT as THREAD
from hpcsa.formats.measurement.hpctrace import FLAG_CALL_TRACE, HpctraceFile, make_records, write_hpctrace
from hpcsa.formats.measurement.placeholders import PH
from hpcsa.ingest import model as M
from hpcsa.ingest.cputrace import call_line
from hpcsa.ingest.gpumetrics import metric_ids, metric_table, operation_values, sum_values
from hpcsa.ingest.names import safe_name, write_names_files
from hpcsa.ingest.samplemetrics import has_instruction_trace, sample_values

KERNEL_SPAN = 1 << 32  # address space given to each kernel of a synthetic kernel module
UNKNOWN_CTX = -1


@dataclass
class Summary:
    """What was written, for the one-line summary and for tests."""

    files: list[str] = field(default_factory=list)
    threads: int = 0
    streams: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    samples: int = 0
    instructions: int = 0  # instruction-trace records (AMD thread trace), counted apart from PC samples
    unattributed: int = 0  # ops with a correlation id whose API call is not in the source
    gpubins: int = 0
    api_calls: int = 0  # calls written as CPU contexts of a source with no GPU operations
    ranged_calls: int = 0  # API calls placed below user ranges
    range_contexts: int = 0  # range paths written as contexts of a source with no GPU operations
    graph_ops: int = 0  # operations a CUDA/HIP graph ran, placed under <graph> frames
    graph_captured: int = 0  # of those, the ones whose node's creation context is known
    cpu_trace_records: int = 0  # records of the CPU threads' trace lines (their API calls over time)

    def line(self) -> str:
        ops = ", ".join(f"{n} {k}" for k, n in self.ops.items() if n)
        extra = f", {self.samples} PC-sample records" if self.samples else ""
        if self.instructions:
            extra += f", {self.instructions} instruction-trace records"
        if self.ranged_calls:
            extra += f", {self.ranged_calls} API call(s) inside user ranges"
        if self.graph_ops:
            extra += (f", {self.graph_ops} graph operation(s) under <graph> frames ({self.graph_captured} with the "
                      "context that built them)")
        if self.cpu_trace_records:
            extra += f", {self.cpu_trace_records} CPU trace records (the API calls over time)"
        if self.api_calls or self.range_contexts:
            parts = [f"{n} {what}" for n, what in ((self.api_calls, "API call(s)"), (self.range_contexts,
                                                                                      "range context(s)")) if n]
            extra += f" (API records only: the CPU contexts of {' and '.join(parts)})"
        return (f"{self.threads} CPU thread(s), {self.streams} GPU stream(s): {ops or 'no GPU operations'}"
                f"{extra}")


class Cct:
    """A calling-context tree under construction: nodes interned by (parent, module, address, flags)."""

    def __init__(self) -> None:
        self.keys: dict[tuple[int, int, int, int], int] = {}
        self.rows: list[tuple[int, int, int, int, int]] = []  # id, parent, lm_id, lm_ip, flags
        self.root = self.child(0, 0, PH["primary"])

    def child(self, parent: int, lm_id: int, lm_ip: int, flags: int = UNWOUND) -> int:
        key = (parent, lm_id, lm_ip, flags)
        node = self.keys.get(key)
        if node is None:
            node = self.keys[key] = len(self.rows) + 1
            self.rows.append((node, parent, lm_id, lm_ip, flags))
        return node

    def path(self, parent: int, frames: Iterable[tuple[int, int]]) -> int:
        for lm_id, lm_ip in frames:
            parent = self.child(parent, lm_id, lm_ip)
        return parent

    def records(self) -> np.ndarray:
        """The nodes in pre-order (children by (module, address, flags)), as hpcrun's CCT section."""
        kids: dict[int, list[tuple[int, int, int, int]]] = {}
        for node, parent, lm_id, lm_ip, flags in self.rows:
            kids.setdefault(parent, []).append((lm_id, lm_ip, -flags, node))
        order: list[int] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(n for *_, n in sorted(kids.get(node, ()), reverse=True))
        rows = np.array(self.rows, dtype=np.uint64).reshape(-1, 5)[np.array(order) - 1]
        out = np.zeros(len(rows), CCT_NODE)
        for i, name in enumerate(("id", "parent", "lm_id", "lm_ip", "flags")):
            out[name] = rows[:, i]
        return out


@dataclass
class Modules:
    """The load map of one process: synthetic modules for names, real gpubins, CPU modules from stacks."""

    entries: dict[str, int] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    names: dict[str, dict[str, tuple[set[int], int]]] = field(default_factory=dict)

    def id(self, path: str, flags: int = 0) -> int:
        if path not in self.entries:
            self.entries[path] = len(self.entries) + 1
            self.flags[path] = flags
        return self.entries[path]

    def name(self, path: str, address: int, name: str, span: int = 1) -> None:
        procs = self.names.setdefault(path, {})
        if name in procs:
            procs[name][0].add(address)
        else:
            procs[name] = ({address}, span)

    def loadmap(self) -> list[LoadModule]:
        return [LoadModule(i, p, self.flags[p]) for p, i in self.entries.items()]


class ProcessWriter:
    """Builds and writes every file of one process of one trace."""

    def __init__(self, trace: M.GpuTrace, pid: int, outdir: str, metrics: list[MetricDesc],
                 used: set[str], gpubins: dict[int, tuple[str, dict[str, int]]],
                 names: dict[str, dict[str, tuple[set[int], int]]] | None = None) -> None:
        self.trace, self.pid, self.outdir, self.metrics = trace, pid, outdir, metrics
        self.names = names if names is not None else {}  # module -> procedures, shared by the processes
        self.mid = metric_ids(metrics)
        self.used = used
        self.gpubins = gpubins  # code object id -> (loadmap path, {symbol: entry offset})
        self.info = trace.processes.get(pid) or M.ProcessInfo(pid)
        self.modules = Modules()
        self.api_module = f"[{trace.api_domain} API]"
        self.kernel_module = f"[{trace.api_domain} GPU kernels]"

    # -- launch contexts --------------------------------------------------------------------------

    def _api_frames(self, stack: int, name_id: int) -> tuple[tuple[int, int], ...]:
        tr = self.trace
        name = tr.strings[name_id]
        if stack >= 0 and tr.stacks[stack]:
            frames = []
            for fr in tr.stacks[stack]:
                if fr.module == M.API_FRAME:  # the call itself, below frames a stack got (e.g. ranges)
                    frames.append(self.api_node(fr.symbol))
                    continue
                lm = self.modules.id(fr.module)
                self.modules.name(fr.module, fr.ip, fr.symbol)
                frames.append((lm, fr.ip))
            return tuple(frames)
        return (self.api_node(name),)

    def api_node(self, name: str) -> tuple[int, int]:
        lm = self.modules.id(self.api_module)
        addr = 16 * (1 + int(md5(name.encode()).hexdigest()[:12], 16))
        self.modules.name(self.api_module, addr, name, 16)
        return (lm, addr)

    def symbol_point(self, code: int, name: str) -> tuple[int, int]:
        tr = self.trace
        if code >= 0:
            sym = tr.symbols[code]
            name = sym.name or name
            bin_ = self.gpubins.get(sym.code_object)
            if bin_ is not None:
                path, entries = bin_
                if name in entries:
                    return self.modules.id(path, LOADMAP_ANALYZE), entries[name]
        lm = self.modules.id(self.kernel_module)
        addr = KERNEL_SPAN * (1 + int(md5(name.encode()).hexdigest()[:7], 16))
        self.modules.name(self.kernel_module, addr, demangle(name), KERNEL_SPAN)
        return lm, addr

    # -- main --------------------------------------------------------------------------------------

    def write(self, summary: Summary) -> None:
        tr = self.trace
        sel = np.flatnonzero(tr.ops["process"] == self.pid)
        ops = tr.ops[sel]
        apis = tr.apis
        api = ops["api"]
        has_api = api >= 0
        thread = np.where(has_api, apis["thread"][np.maximum(api, 0)] if len(apis) else -1, ops["thread"])
        main_tid = self._main_thread(thread)
        thread = np.where(thread >= 0, thread, main_tid)
        summary.unattributed += int(np.count_nonzero(~has_api & (ops["corr"] != 0)))

        # Unique launch contexts: (thread, call stack, API name) of traced calls; ops whose call is not in
        # the source go under "<untraced API call>", ops without a call (correlation 0) under the thread root.
        a = np.maximum(api, 0)
        stack = np.where(has_api, apis["stack"][a], -1) if len(apis) else np.full(len(ops), -1)
        stack = np.where(ops["launch_stack"] >= 0, ops["launch_stack"], stack)  # a graph's node: its own context
        api_name = np.where(has_api, apis["name"][a], -1) if len(apis) else np.full(len(ops), -1)
        untraced = ~has_api & (ops["corr"] != 0)
        ctx_key = np.stack([thread, stack, api_name, untraced], axis=1).astype(np.int64)
        if len(ops):
            uniq_ctx, ctx_of = np.unique(ctx_key, axis=0, return_inverse=True)
            ctx_of = ctx_of.reshape(-1)
        else:
            uniq_ctx, ctx_of = np.zeros((0, 4), np.int64), np.zeros(0, np.int64)
        # Frames of each context (Python over unique contexts only).
        ctx_frames = []
        for _t, stk, nm, untr in uniq_ctx.tolist():
            if nm >= 0:
                ctx_frames.append(self._api_frames(stk, nm))
            elif untr:
                ctx_frames.append((self.api_node("<untraced API call>"),))
            else:
                ctx_frames.append(())

        # every API call of the process: each thread's CPU trace line (:mod:`hpcsa.ingest.cputrace`)
        calls = apis[apis["process"] == self.pid] if len(apis) else apis
        call_tid = np.where(calls["thread"] >= 0, calls["thread"], main_tid) if len(calls) else np.zeros(0, np.int64)
        threads = sorted(set(int(t) for t in thread) | {main_tid} | set(call_tid.tolist()))
        thread_index = {main_tid: 0}
        first_seen: dict[int, int] = {}
        if len(ops):
            t_uniq, t_inv = np.unique(thread, return_inverse=True)
            earliest = np.full(len(t_uniq), np.iinfo(np.int64).max)
            np.minimum.at(earliest, t_inv.reshape(-1), ops["start"])
            first_seen = dict(zip(t_uniq.tolist(), earliest.tolist(), strict=True))
        late = np.iinfo(np.int64).max  # threads that launched nothing (only API calls) come last
        for t in sorted((t for t in threads if t != main_tid), key=lambda t: (first_seen.get(t, late), t)):
            thread_index[t] = len(thread_index)

        placeholder = self._placeholders(ops)
        kernel_pt = {}
        kern = ops["kind"] == M.KERNEL
        for code, name_id in M.distinct_rows(ops["code"][kern], ops["name"][kern])[0]:
            kernel_pt[(code, name_id)] = self.symbol_point(code, tr.strings[name_id])

        # -- per CPU thread profile ------------------------------------------------------------------
        samples = tr.samples[tr.samples["process"] == self.pid] if len(tr.samples) else tr.samples
        local = np.full(len(samples), -1, np.int64)  # each sample's launch, as an index into ops
        if len(samples) and len(sel):
            pos = np.minimum(np.searchsorted(sel, samples["op"]), len(sel) - 1)
            local = np.where((samples["op"] >= 0) & (sel[pos] == samples["op"]), pos, -1)
        sample_thread = np.where(local >= 0, thread[np.maximum(local, 0)] if len(ops) else main_tid, main_tid)
        for t in threads:
            mine = sample_thread == t
            self._write_thread(t, thread_index[t], ops, thread, ctx_of, ctx_frames, placeholder, kernel_pt,
                               samples[mine], local[mine], summary, calls[call_tid == t] if len(calls) else calls)
        # -- per GPU stream pseudo-thread ----------------------------------------------------------
        traced = np.isin(ops["kind"], (M.KERNEL, M.MEMCPY, M.MEMSET)) & (ops["count"] == 1) & (ops["end"] >= ops["start"]) & (ops["start"] > 0)
        skey = np.stack([ops["device"], ops["context"], ops["stream"]], axis=1)[traced]
        if len(skey):
            streams, s_of = np.unique(skey, axis=0, return_inverse=True)
            s_of = s_of.reshape(-1)
            idx_traced = np.flatnonzero(traced)
            for si, (dev, ctx, stream) in enumerate(streams.tolist()):
                mine = idx_traced[s_of == si]
                self._write_stream(FIRST_STREAM_THREAD + si, dev, ctx, stream, mine, ops, thread, thread_index,
                                   ctx_of, ctx_frames, kernel_pt, summary)
        summary.threads += len(threads)
        for kind, name in M.KIND_NAMES.items():
            n = int(ops["count"][ops["kind"] == kind].sum())
            summary.ops[name] = summary.ops.get(name, 0) + n
        traced = int(np.count_nonzero(samples["latency"] | samples["stall_cycles"] | samples["idle_cycles"])) \
            if len(samples) else 0
        summary.samples += len(samples) - traced
        summary.instructions += traced
        self._write_names()

    def write_calls_only(self, summary: Summary) -> None:
        """A process with API calls and no GPU operations: per thread, the contexts of its calls."""
        from hpcsa.ingest.ranges import range_paths

        apis = self.trace.apis[self.trace.apis["process"] == self.pid]
        paths = range_paths(self.trace, self.pid)
        main_tid = self._main_thread(np.concatenate([apis["thread"], np.array(list(paths), np.int64)]))
        tids = np.where(apis["thread"] >= 0, apis["thread"], main_tid)
        order = sorted(set(tids.tolist()) | {t if t >= 0 else main_tid for t in paths},
                       key=lambda t: (t != main_tid, t))
        for index, tid in enumerate(order):
            cct = Cct()
            root = self._thread_root(cct, index)
            mine = apis[tids == tid]
            for stk, nm in M.distinct_rows(mine["stack"], mine["name"])[0]:
                cct.path(root, self._api_frames(stk, nm))
            def node_of(stk: int, nm: int, root: int = root, cct: Cct = cct) -> int:
                return cct.path(root, self._api_frames(stk, nm))

            times, trace_nodes = call_line(mine, node_of, root)
            mine_paths = paths.get(tid, set()) | (paths.get(-1, set()) if tid == main_tid else set())
            summary.range_contexts += len(mine_paths)
            for path in sorted(mine_paths, key=lambda p: [(f.module, f.ip) for f in p]):
                cct.path(root, [(self.modules.id(f.module), f.ip) for f in path])
                for f in path:
                    self.modules.name(f.module, f.ip, f.symbol)
            trace = HpctraceFile(flags=FLAG_CALL_TRACE, records=make_records(times, trace_nodes)) \
                if len(times) else None
            self._emit(cct, index, np.zeros(0, np.uint32), np.zeros(0, np.uint16), np.zeros(0),
                       self._id_tuple([(THREAD, index)]), int(times[0]) if len(times) else 0,
                       int(times[-1]) if len(times) else 0, tid, trace_flags=FLAG_CALL_TRACE if len(times) else 0,
                       trace=trace, summary=summary)
            summary.cpu_trace_records += len(times)
        summary.threads += len(order)
        summary.api_calls += len(apis)
        self._write_names()

    def _main_thread(self, thread: np.ndarray) -> int:
        known = thread[thread >= 0]
        if self.pid in set(known.tolist()) or not len(known):
            return self.pid if self.pid >= 0 else 0
        return int(known[0])

    def _placeholders(self, ops: np.ndarray) -> np.ndarray:
        """The placeholder code of each operation's metric node."""
        kind, sub = ops["kind"], ops["sub"]
        code = np.zeros(len(ops), np.uint64)
        code[kind == M.KERNEL] = PH["kernel"]
        copy = kind == M.MEMCPY
        code[copy] = PH["copy"]
        code[copy & (sub == M.CP_H2D)] = PH["copyin"]
        code[copy & (sub == M.CP_D2H)] = PH["copyout"]
        code[kind == M.MEMSET] = PH["memset"]
        code[kind == M.SYNC] = PH["sync"]
        code[kind == M.ALLOC] = PH["alloc"]
        code[kind == M.FREE] = PH["delete"]
        return code

    def _thread_root(self, cct: Cct, index: int) -> int:
        return cct.child(cct.root, 0, PH["main"] if index == 0 else PH["thread"])

    def _write_thread(self, tid: int, index: int, ops: np.ndarray, thread: np.ndarray, ctx_of: np.ndarray,
                      ctx_frames: list, placeholder: np.ndarray, kernel_pt: dict, samples: np.ndarray,
                      sample_op: np.ndarray, summary: Summary, calls: np.ndarray | None = None) -> None:
        cct = Cct()
        root = self._thread_root(cct, index)
        mine = np.flatnonzero(thread == tid)
        ctx_node = {}
        for c in np.unique(ctx_of[mine]).tolist():
            ctx_node[c] = cct.path(root, ctx_frames[c])
        # Placeholder node of each op (unique (context, placeholder) pairs), kernel nodes below <gpu kernel>.
        leaf = np.zeros(len(ops), np.int64)
        pairs, inv = M.distinct_rows(ctx_of[mine], placeholder[mine].view(np.int64))
        nodes_of_pair = np.array([cct.child(ctx_node[c], 0, code & 0xFFFFFFFFFFFFFFFF) for c, code in pairs]
                                 + [0], np.int64)
        for c, _ in pairs:
            cct.child(ctx_node[c], 0, PH["trace"])
        leaf[mine] = nodes_of_pair[inv]
        kern = mine[ops["kind"][mine] == M.KERNEL]
        keys, inv = M.distinct_rows(leaf[kern], ops["code"][kern], ops["name"][kern], ctx_of[kern])
        knodes = []
        for ph_node, code, name, c in keys:
            lm, ip = kernel_pt[(code, name)]
            knodes.append(cct.child(ph_node, lm, ip))
            cct.child(cct.child(ctx_node[c], 0, PH["trace"]), lm, ip)
        if len(kern):
            leaf[kern] = np.array(knodes, np.int64)[inv]

        devices = {dev: props for (pid, dev), props in self.trace.devices.items() if pid == self.pid}
        nodes, mets, vals = operation_values(ops[mine], leaf[mine], self.mid, devices)
        # PC samples: children of <gpu kernel> at the sampled pc, unwound = 0 (merged into the entry node).
        if "GINS" in self.mid:
            sn, sm, sv = sample_values(self, cct, root, ops, samples, sample_op, leaf, mine)
            nodes += sn
            mets += sm
            vals += sv
        n, m, v = sum_values(nodes, mets, vals)
        times, trace_nodes = call_line(calls if calls is not None else M.empty(M.API_DTYPE),
                                       lambda stk, nm: cct.path(root, self._api_frames(stk, nm)), root)
        trace = HpctraceFile(flags=FLAG_CALL_TRACE, records=make_records(times, trace_nodes)) if len(times) else None
        self._emit(cct, index, n, m, v, self._id_tuple([(THREAD, index)]), int(times[0]) if len(times) else 0,
                   int(times[-1]) if len(times) else 0, tid, trace_flags=FLAG_CALL_TRACE if len(times) else 0,
                   trace=trace, summary=summary)
        summary.cpu_trace_records += len(times)

    def _write_stream(self, number: int, dev: int, ctx: int, stream: int, mine: np.ndarray, ops: np.ndarray,
                      thread: np.ndarray, thread_index: dict, ctx_of: np.ndarray, ctx_frames: list,
                      kernel_pt: dict, summary: Summary) -> None:
        cct = Cct()
        noact = cct.child(cct.root, 0, PH["noact"])
        order = mine[np.lexsort((ops["end"][mine], ops["start"][mine]))]
        is_k = ops["kind"][order] == M.KERNEL
        keys, inv = M.distinct_rows(thread[order], ctx_of[order], np.where(is_k, ops["code"][order], -2),
                            np.where(is_k, ops["name"][order], -2))
        nodes = []
        for t, c, code, name in keys:
            node = cct.child(cct.path(self._thread_root(cct, thread_index[t]), ctx_frames[c]), 0, PH["trace"])
            nodes.append(cct.child(node, *kernel_pt[(code, name)]) if name != -2 else node)
        leaf = np.array(nodes, np.int64)[inv]
        start = ops["start"][order].astype(np.int64)
        end = ops["end"][order].astype(np.int64)
        # hpcrun bumps a start past the previous end when operations of one stream overlap.
        prev_end = np.maximum.accumulate(np.concatenate([[start[0]], end[:-1]])) if len(end) else end
        start = np.maximum(start, prev_end)
        end = np.maximum(end, start)
        times = np.empty(2 * len(order), np.int64)
        ctxs = np.empty(2 * len(order), np.int64)
        times[0::2], times[1::2] = start, end
        ctxs[0::2], ctxs[1::2] = leaf, noact
        trace = HpctraceFile(flags=FLAG_CALL_TRACE, records=make_records(times, ctxs))
        context = ctx if ctx >= 0 else max(dev, 0)
        self._emit(cct, number, np.zeros(0, np.uint32), np.zeros(0, np.uint16), np.zeros(0),
                   self._id_tuple([(GPUCONTEXT, context), (GPUSTREAM, max(stream, 0))]), int(times.min()),
                   int(times.max()), None, trace_flags=FLAG_CALL_TRACE, trace=trace, summary=summary)
        summary.streams += 1

    def _id_tuple(self, tail: list[tuple[int, int]]) -> np.ndarray:
        elems = [(NODE, self.info.host, 0)]
        if self.info.rank is not None:
            elems.append((RANK, self.info.rank, self.info.rank))
        elems += [(k, v, v) for k, v in tail]
        out = np.zeros(len(elems), ID_ELEMENT)
        for i, (k, p, lg) in enumerate(elems):
            out[i] = (k, p, lg)
        return out

    def _emit(self, cct: Cct, number: int, nodes: np.ndarray, mets: np.ndarray, vals: np.ndarray,
              id_tuple: np.ndarray, tmin: int, tmax: int, tid: int | None, trace_flags: int,
              trace: HpctraceFile | None, summary: Summary) -> None:
        recs = cct.records()
        values, index = pack_values(nodes, mets, vals, self.metrics, recs["id"])
        info = self.info
        prog = safe_name(os.path.basename(info.name or info.path or "program"), 60)
        header = {"program-name": info.name or prog, "program-path": info.path or info.name or prog,
                  "env-path": "", "job-id": "", "mpi-rank": str(info.rank or 0), "thread-id": str(number),
                  "host-id": f"{info.host & 0xFFFFFFFF:08x}", "process-id": str(self.pid),
                  "trace-min-time": str(tmin), "trace-max-time": str(tmax), "trace-disorder": "0"}
        prof = HpcrunProfile(header=header, loadmap=self.modules.loadmap(), cct=recs, metrics=self.metrics,
                             id_names=default_id_names(), id_tuple=id_tuple, values=values, index=index)
        gen = 0
        while True:
            stem = f"{prog}-{info.rank or 0:06d}-{number:03d}-{info.host & 0xFFFFFFFF:08x}-{self.pid}-{gen}"
            if stem not in self.used:
                break
            gen += 1
        self.used.add(stem)
        path = os.path.join(self.outdir, stem + ".hpcrun")
        write_hpcrun(path, prof)
        write_hpctrace(os.path.join(self.outdir, stem + ".hpctrace"),
                       trace or HpctraceFile(flags=trace_flags, records=make_records(np.zeros(0), np.zeros(0))))
        summary.files.append(path)

    def _write_names(self) -> None:
        """Procedure names of this process's synthetic and absent modules, for hpcprof: merged over the
        processes of the measurement (hpcprof takes one structure file per module path)."""
        for module, procs in self.modules.names.items():
            merged = self.names.setdefault(module, {})
            for name, (addrs, span) in procs.items():
                if name in merged:
                    merged[name][0].update(addrs)
                else:
                    merged[name] = (set(addrs), span)



def write_gpubins(trace: M.GpuTrace, outdir: str) -> dict[int, tuple[str, dict[str, int]]]:
    """Write every carried code object to ``gpubins/<md5>.gpubin``; return their loadmap paths and entries."""
    from hpcsa.structure.gpu import gpubin

    out: dict[int, tuple[str, dict[str, int]]] = {}
    for co in trace.code_objects.values():
        if not co.data:
            continue
        digest = md5(co.data).hexdigest()
        rel = f"gpubins/{digest}.gpubin"
        full = os.path.join(outdir, rel)
        if not os.path.exists(full):
            os.makedirs(os.path.dirname(full), exist_ok=True)
            write_file(full, co.data)
        out[co.id] = (rel, gpubin.entry_offsets(co.data))
    return out


def write_measurement(traces: list[M.GpuTrace], outdir: str, ranges: bool = True) -> Summary:
    """Write all traces into ``outdir`` (an existing, empty directory); with ``ranges``, the user ranges
    (NVTX, roctx, ``record_function``) become ``<range>`` frames above the calls made inside them. The
    operations CUDA/HIP graphs ran get ``<graph>`` frames and the contexts that built them (from any of the
    traces: a capture may be recorded apart from its replay)."""
    from hpcsa.ingest.graphs import attach_graph_contexts
    from hpcsa.ingest.ranges import apply_ranges

    summary = Summary()
    pc = any(len(t.samples) or len(t.sample_info) for t in traces)
    implicit = any(bool(np.any(t.ops["implicit"])) for t in traces)
    metrics = metric_table(pc, implicit, any(has_instruction_trace(t.samples) for t in traces))
    used: set[str] = set()
    names: dict[str, dict[str, tuple[set[int], int]]] = {}
    for tr in traces:
        if ranges:
            summary.ranged_calls += apply_ranges(tr)
        M.join_launches(tr)
    summary.graph_ops, summary.graph_captured = attach_graph_contexts(traces)
    for tr in traces:
        bins = write_gpubins(tr, outdir)
        summary.gpubins += len(bins)
        pids = sorted(set(tr.ops["process"].tolist()) | set(tr.samples["process"].tolist()))
        if not pids and (len(tr.apis) or (ranges and len(tr.ranges))):
            # API records only (e.g. a HIP API trace without activity records): the calls' CPU contexts.
            for pid in sorted(set(tr.apis["process"].tolist()) | set(tr.ranges["process"].tolist())):
                ProcessWriter(tr, int(pid), outdir, metrics, used, bins, names).write_calls_only(summary)
            continue
        if not pids:
            raise HpcsaError(tr.path, "no GPU operations, PC samples or API calls in this source; nothing to ingest")
        for pid in pids:
            ProcessWriter(tr, int(pid), outdir, metrics, used, bins, names).write(summary)
    write_names_files(names, outdir)
    return summary
