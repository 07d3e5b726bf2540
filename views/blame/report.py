"""The report of ``hpcsa blame``: parallel efficiency per process, GPU busy shares, top blamed contexts."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from hpcsa.views import tree as T
from hpcsa.views.blame.attribute import (
    BLAME_M,
    CLASS_METRICS,
    IDLENESS_M,
    OVERHEAD_M,
    WAIT_M,
    BlameResult,
)
from hpcsa.views.blame.rules import CLASS_NAMES
from hpcsa.views.experiment import Experiment
from hpcsa.views.render import Notation, notation

TOP_SECTIONS = ((IDLENESS_M, "CPU idleness (insufficient parallelism): contexts that worked while others idled"),
                (OVERHEAD_M, "parallel overhead: time in the OpenMP runtime"),
                (WAIT_M, "where threads waited"),
                (CLASS_METRICS[1], "GPU idle while the CPU waited in a GPU synchronisation call"),
                (CLASS_METRICS[2], "GPU idle while the CPU was in a launch or copy API (launch-bound)"),
                (CLASS_METRICS[0], "GPU idle while the CPU ran other code (CPU-bound)"))


def call_path(exp: Experiment, ctx: int) -> list[str]:
    """The frames from the entry point down to a context (its lines and loops only at the leaf)."""
    cct = exp.cct
    row = int(cct.row_of(np.array([ctx]))[0])
    if row < 0:
        return [f"#{ctx}"]
    out = []
    r, leaf = row, True
    while r > 0:
        if leaf or cct.is_frame[r]:
            out.append(exp.scope_name(r))
        leaf = False
        r = int(cct.parent[r])
    return out[::-1] or [T.ROOT_LABEL]


def top_contexts(exp: Experiment, result: BlameResult, metric: str, n: int) -> list[dict[str, Any]]:
    per = result.by_context.get(metric, {})
    total = sum(per.values())
    items = sorted(((v, c) for c, v in per.items() if v > 0), key=lambda x: (-x[0], x[1]))[:n]
    return [{"context": c, "seconds": v, "share": v / total if total else 0.0, "path": call_path(exp, c)}
            for v, c in items]


def to_json(exp: Experiment, result: BlameResult, top: int) -> str:
    doc = {
        "database": exp.path,
        "processes": [{"process": p.process, "threads": len(p.threads), "span_s": p.span_ns / 1e9,
                       "work_s": p.work_s, "idleness_s": p.idleness_s, "overhead_s": p.overhead_s,
                       "wait_s": p.wait_s, "unattributed_idleness_s": p.unattributed_idleness_s,
                       "parallel_efficiency": p.efficiency} for p in result.processes],
        "gpus": [{"process": g.process, "gpu": g.gpu, "stream_profiles": g.streams, "span_s": g.span_ns / 1e9,
                  "busy_s": g.busy_ns / 1e9, "idle_s": g.idle_ns / 1e9, "busy_share": g.busy_share,
                  "run_s": g.run_ns / 1e9, "busy_share_of_run": g.busy_share_of_run,
                  "blame_s": g.blame_s, "unattributed_blame_s": g.unattributed_s} for g in result.gpus],
        "top": {metric: top_contexts(exp, result, metric, top) for metric, _ in TOP_SECTIONS},
    }
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def _columns(rows: list[list[float]]) -> list[Notation]:
    """One notation per column of a table of seconds (:func:`hpcsa.views.render.notation`)."""
    return [notation(column) for column in zip(*rows, strict=True)] if rows else []


#: Processes (and GPUs) listed one per line in the text report; beyond this it summarises them (min, median,
#: max and the worst few) and the full table is in the JSON report.
LIST_ALL = 8
WORST = 5


def _spread(values: list[float]) -> tuple[float, float, float]:
    """(min, median, max) of some numbers."""
    v = np.sort(np.asarray(values, np.float64))
    return float(v[0]), float(np.median(v)), float(v[-1])


def spread_line(values: list[float], percent: bool = False) -> str:
    """``min / median / max`` of per-process numbers, as one phrase."""
    if not values:
        return "-"
    lo, mid, hi = _spread(values)
    if percent:
        return f"{lo:.1%} / {mid:.1%} / {hi:.1%}"
    write = notation([lo, mid, hi])
    return f"{write(lo, '0')} / {write(mid, '0')} / {write(hi, '0')}"


def _process_table(result: BlameResult) -> list[str]:
    out = [f"  {'process':<28} {'threads':>7} {'span s':>10} {'work s':>10} {'idleness s':>10} "
           f"{'overhead s':>10} {'wait s':>10} {'efficiency':>10}"]
    seconds = [[p.span_ns / 1e9, p.work_s, p.idleness_s, p.overhead_s, p.wait_s] for p in result.processes]
    write = _columns(seconds)
    procs = result.processes
    chosen = list(range(len(procs)))
    if len(procs) > LIST_ALL:
        chosen = sorted(range(len(procs)), key=lambda i: (procs[i].efficiency, i))[:WORST]
    for i in chosen:
        p, row = procs[i], seconds[i]
        out.append(f"  {p.process:<28} {len(p.threads):>7} "
                   + " ".join(f"{w(x, '0'):>10}" for w, x in zip(write, row, strict=True))
                   + f" {p.efficiency:>9.1%}")
    return out


def _process_section(result: BlameResult) -> list[str]:
    procs = result.processes
    out = ["Parallel efficiency per process: work / (work + idleness)"]
    if len(procs) > LIST_ALL:
        out += [f"  {len(procs)} processes, min / median / max:",
                f"    efficiency   {spread_line([p.efficiency for p in procs], True)}",
                f"    threads      {spread_line([float(len(p.threads)) for p in procs])}",
                f"    span s       {spread_line([p.span_ns / 1e9 for p in procs])}",
                f"    work s       {spread_line([p.work_s for p in procs])}",
                f"    idleness s   {spread_line([p.idleness_s for p in procs])}",
                f"    overhead s   {spread_line([p.overhead_s for p in procs])}",
                f"    wait s       {spread_line([p.wait_s for p in procs])}",
                f"  the {min(WORST, len(procs))} least efficient (every process: --format json):"]
    return out + _process_table(result) + [""]


def _gpu_section(result: BlameResult) -> list[str]:
    gpus = result.gpus
    out = ["GPUs: busy share of their span (first to last operation) and blame of the idle time"]
    if len(gpus) > LIST_ALL:
        out += [f"  {len(gpus)} GPUs, min / median / max:",
                f"    busy         {spread_line([g.busy_share for g in gpus], True)}",
                f"    idle s       {spread_line([g.idle_ns / 1e9 for g in gpus])}",
                *(f"    {c + ' s':<12} {spread_line([g.blame_s[c] for g in gpus])}" for c in CLASS_NAMES),
                f"  the {WORST} least busy (every GPU: --format json):"]
    out.append(f"  {'process':<20} {'gpu':<14} {'span s':>10} {'busy':>7} {'of run':>7} {'idle s':>10} "
               + " ".join(f"{c + ' s':>10}" for c in CLASS_NAMES) + f" {'no CPU s':>10}")
    seconds = [[g.span_ns / 1e9, g.idle_ns / 1e9, *(g.blame_s[c] for c in CLASS_NAMES), g.unattributed_s]
               for g in gpus]
    write = _columns(seconds)
    chosen = list(range(len(gpus)))
    if len(gpus) > LIST_ALL:
        chosen = sorted(range(len(gpus)), key=lambda i: (gpus[i].busy_share, i))[:WORST]
    for i in chosen:
        g, row = gpus[i], seconds[i]
        cells = [f"{w(x, '0'):>10}" for w, x in zip(write, row, strict=True)]
        out.append(f"  {g.process:<20} {g.gpu:<14} {cells[0]} {g.busy_share:>6.1%} "
                   f"{g.busy_share_of_run:>6.1%} " + " ".join(cells[1:]))
    out.append("  (busy: of the GPU's span; of run: of the wall time of its process's traces; cpu: the CPU ran "
               "other code; sync: it waited in a GPU synchronisation call; launch: it was in a launch or copy API; "
               "no CPU: no traced CPU thread was running)")
    return out + [""]


def to_text(exp: Experiment, result: BlameResult, top: int) -> str:
    out = [f"{exp.path}: idleness, overhead and GPU idle blame (Adhianto et al. 2010, §2.1.1)", ""]
    if result.processes:
        out += _process_section(result)
    else:
        out.append("No CPU thread has a trace line (vendor records give GPU streams only): no CPU idleness.")
        out.append("")
    if result.gpus:
        out += _gpu_section(result)
    for metric, title in TOP_SECTIONS:
        rows = top_contexts(exp, result, metric, top)
        if not rows:
            continue
        out.append(f"Top {len(rows)} contexts: {title} [{metric}]")
        write_s = notation(r["seconds"] for r in rows)
        for r in rows:
            out.append(f"  {write_s(r['seconds'], '0'):>10} s {r['share']:>6.1%}  {' > '.join(r['path'][-6:])}")
        out.append("")
    if not any(result.by_context.get(BLAME_M, {}).values()) and result.gpus:
        out.append("No GPU idle time could be blamed on a traced CPU context.")
    return "\n".join(out).rstrip() + "\n"
