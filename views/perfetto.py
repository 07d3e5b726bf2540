"""trace.db as Chrome / Perfetto trace JSON: one track per thread and GPU stream, call paths as nested slices.

A trace line is a sequence of samples (time, context); a sample lasts until the next one (the last one until
the trace's end time). At each depth of the calling context tree the samples whose context has the same
ancestor there merge into one slice, so a track shows the call path over time the way hpctraceviewer's
depth view does, with the names of the top-down view (call sites folded into their callees). Processes are
grouped by rank (or node), tracks named by thread or GPU context and stream. Times are microseconds from the
first sample; ``args`` carry the context id.

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
from hpcsa.views.data import KIND_CORE, KIND_THREAD

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
    """Write the JSON; returns counts (tracks, samples, slices)."""
    tdb = exp.db.trace
    if tdb is None or not len(tdb):
        raise HpcsaError(exp.path, "the database has no trace.db (it was not measured with tracing, hpcrun -t)")
    td = exp.top_down()
    shown = td.parent != -2
    info = {p.index: p for p in exp.profiles}
    slots = [s for s, p in enumerate(tdb.prof_index.tolist()) if profiles is None or p in profiles]
    lines = [tdb.trace(s) for s in slots]
    starts = [int(line["timestamp"][0]) for line in lines if len(line)]
    t0 = min(starts) if starts else 0
    t_end = tdb.max_timestamp
    events: list[str] = []  # JSON objects, written as text: json.dump of 10^6 dicts is far slower
    processes: dict[str, int] = {}
    counts = {"tracks": 0, "samples": 0, "slices": 0}
    name_json: dict[int, str] = {}

    def meta(name: str, pid: int, tid: int | None, args: dict[str, Any]) -> str:
        obj: dict[str, Any] = {"name": name, "ph": "M", "pid": pid}
        if tid is not None:
            obj["tid"] = tid
        obj["args"] = args
        return json_safe(json.dumps(obj, ensure_ascii=False))

    for slot, line in zip(slots, lines, strict=True):
        prof = int(tdb.prof_index[slot])
        p = info.get(prof)
        proc_name = " ".join(f"{k.lower()} {v}" for k, v in p.process) if p and p.process else "process"
        pid = processes.setdefault(proc_name, len(processes) + 1)
        if p is None:
            thread_name = f"profile {prof}"
        elif p.gpu:
            thread_name = "GPU " + " ".join(f"{k.lower().replace('gpu', '')} {v}" for k, v in p.ids.items()
                                            if k.startswith("GPU"))
        else:
            thread_name = " ".join(f"{k.lower()} {v}" for k, v in p.ids.items() if k in (KIND_THREAD, KIND_CORE)) or \
                f"profile {prof}"
        events.append(meta("thread_name", pid, prof, {"name": thread_name}))
        events.append(meta("thread_sort_index", pid, prof, {"sort_index": prof}))
        counts["tracks"] += 1
        if not len(line):
            continue
        ts = line["timestamp"].astype(np.int64)
        rows = exp.cct.row_of(line["ctxId"].astype(np.int64))
        last_end = t_end if ts[-1] <= t_end < (1 << 62) else int(ts[-1])
        urows, inverse = np.unique(rows, return_inverse=True)
        stacks = _stacks(exp, urows, shown, max_depth)
        counts["samples"] += len(ts)
        counts["unknown_samples"] = counts.get("unknown_samples", 0) + int((rows < 0).sum())
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
                    name_json[r] = (f'"name":{json_safe(json.dumps(td.label(r), ensure_ascii=False))},'
                                    f'"cat":"{T.KIND_NAME[int(exp.cct.kind[r])]}","ph":"X"')
            tail = f',"pid":{pid},"tid":{prof},"args":{{"ctx_id":'
            ctx = exp.cct.ctx_id[seg_rows]
            events.extend(f"{{{name_json[r]},\"ts\":{(a - t0) / 1000.0!r},\"dur\":{(b - a) / 1000.0!r}{tail}{c}}}}}"
                          for r, a, b, c in zip(seg_rows.tolist(), start.tolist(), stop.tolist(), ctx.tolist(),
                                                strict=True))
            counts["slices"] += len(seg_rows)
    for name, pid in processes.items():
        events.append(meta("process_name", pid, None, {"name": name}))
    other = json_safe(json.dumps({"database": exp.path, "title": exp.title, "time_origin_ns": t0},
                                 ensure_ascii=False))
    with atomic_file(path, "w") as fh:
        fh.write('{"traceEvents":[\n')
        fh.write(",\n".join(events))
        fh.write(f'\n],"displayTimeUnit":"ns","otherData":{other}}}\n')
    return counts
