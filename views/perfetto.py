"""trace.db as Chrome / Perfetto trace JSON: one track per thread and GPU stream, call paths as nested slices.

A trace line is a sequence of samples (time, context); a sample lasts until the next one, and the line ends
at its last element, the profile's own trace end (:meth:`hpcsa.formats.db.tracedb.TraceDB.line_bounds`),
never the database's. At each depth of the calling context tree the samples whose context has the same
ancestor there merge into one slice, so a track shows the call path over time the way hpctraceviewer's
depth view does, with the names of the top-down view (call sites folded into their callees; short names
unless the experiment shows full ones, the full name in ``args``). Every process -- a rank, or a run where
processes share an identity (:mod:`hpcsa.views.processes`) -- is a Perfetto process of its own, named as
the views name it, with one track per thread or GPU stream named ``thread 3`` or ``GPU context 1 stream 7``
(threads first, in thread order). Times are microseconds from the first sample; ``args`` carry the
context id.

Load the file in https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file
from hpcsa.core.textout import json_safe
from hpcsa.views import tree as T

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment


def _stacks(exp: Experiment, rows: np.ndarray, shown: np.ndarray, max_depth: int) -> np.ndarray:
    """For each unique row, its shown ancestors from the top (entry point) down: rows x depth (-1 = none)."""
    c = exp.cct
    table = np.full((len(rows), max_depth), -1, np.int64)
    for i, r in enumerate(rows.tolist()):  # one step per distinct context in the traces
        chain = []
        while r > 0:
            if shown[r]:
                chain.append(r)
            r = int(c.parent[r])
        chain.reverse()
        chain = chain[:max_depth]
        table[i, :len(chain)] = chain
    return table


def export_trace(exp: Experiment, path: str | os.PathLike[str], max_depth: int = 64,
                 profiles: list[int] | None = None) -> dict[str, int]:
    """Write the JSON; returns counts (processes, tracks, samples, slices, samples of unknown contexts)."""
    tdb = exp.db.trace
    if tdb is None or not len(tdb):
        raise HpcsaError(exp.path, "the database has no trace.db (it was not measured with tracing, hpcrun -t)")
    td = exp.top_down()
    shown = td.parent != -2
    slot_of = {int(p): k for k, p in enumerate(tdb.prof_index.tolist())}
    procs = exp.processes
    wanted = [(g, index) for g, proc in enumerate(procs.processes) for index in proc.profiles
              if index in slot_of and (profiles is None or index in profiles)]
    lines = {index: tdb.trace(slot_of[index]) for _, index in wanted}
    starts = [int(line["timestamp"][0]) for line in lines.values() if len(line)]
    t0 = min(starts) if starts else 0
    events: list[str] = []  # JSON objects, written as text: json.dump of 10^6 dicts is far slower
    counts = {"tracks": 0, "processes": 0, "samples": 0, "slices": 0, "unknown_samples": 0}
    name_json: dict[int, tuple[str, str]] = {}
    named: set[int] = set()

    def meta(name: str, pid: int, tid: int | None, args: dict[str, Any]) -> str:
        obj: dict[str, Any] = {"name": name, "ph": "M", "pid": pid}
        if tid is not None:
            obj["tid"] = tid
        obj["args"] = args
        return json_safe(json.dumps(obj, ensure_ascii=False))

    for order, (g, index) in enumerate(wanted):
        pid = g + 1
        if g not in named:
            named.add(g)
            events.append(meta("process_name", pid, None, {"name": procs.processes[g].label}))
            events.append(meta("process_sort_index", pid, None, {"sort_index": pid}))
            counts["processes"] += 1
        line = lines[index]
        events.append(meta("thread_name", pid, index, {"name": procs.thread_label(index)}))
        events.append(meta("thread_sort_index", pid, index, {"sort_index": order}))
        counts["tracks"] += 1
        if len(line) < 2:  # one element only marks an end: nothing ran
            continue
        stamps = line["timestamp"].astype(np.int64)
        ts, last_end = stamps[:-1], int(stamps[-1])  # the last element is the line's end
        rows = exp.cct.row_of(line["ctxId"][:-1].astype(np.int64))
        urows, inverse = np.unique(rows, return_inverse=True)
        stacks = _stacks(exp, urows, shown, max_depth)
        counts["samples"] += len(ts)
        counts["unknown_samples"] += int((rows < 0).sum())
        for d in range(stacks.shape[1]):
            anc = stacks[inverse.reshape(-1), d]
            change = np.flatnonzero(np.r_[True, anc[1:] != anc[:-1]])
            seg_rows = anc[change]
            seg_end = np.r_[ts[change[1:]], last_end]
            keep = seg_rows >= 0
            if not keep.any():
                break
            seg_rows, start, stop = seg_rows[keep], ts[change][keep], seg_end[keep]
            for r in np.unique(seg_rows).tolist():
                if r not in name_json:
                    full = exp.full_name_of(r)
                    extra = f',"full_name":{json_safe(json.dumps(full, ensure_ascii=False))}' if full else ""
                    name_json[r] = (f'"name":{json_safe(json.dumps(td.label(r), ensure_ascii=False))},'
                                    f'"cat":"{T.KIND_NAME[int(exp.cct.kind[r])]}","ph":"X"', extra)
            tail = f',"pid":{pid},"tid":{index},"args":{{"ctx_id":'
            ctx = exp.cct.ctx_id[seg_rows]
            events.extend(f"{{{name_json[r][0]},\"ts\":{(a - t0) / 1000.0!r},\"dur\":{(b - a) / 1000.0!r}{tail}"
                          f"{c}{name_json[r][1]}}}}}"
                          for r, a, b, c in zip(seg_rows.tolist(), start.tolist(), stop.tolist(), ctx.tolist(),
                                                strict=True))
            counts["slices"] += len(seg_rows)
    other = json_safe(json.dumps({"database": exp.path, "title": exp.title, "time_origin_ns": t0},
                                 ensure_ascii=False))
    with atomic_file(path, "w") as fh:
        fh.write('{"traceEvents":[\n')
        fh.write(",\n".join(events))
        fh.write(f'\n],"displayTimeUnit":"ns","otherData":{other}}}\n')
    return counts
