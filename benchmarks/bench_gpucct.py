"""Benchmark: GPU calling-context reconstruction on a synthetic device call graph.

10,000 device functions in layers (like template-heavy code: kernels call
wrappers call helpers...), each called from the layer above and calling up to 3
more functions of the next two layers (shared callees make a DAG with far more
call paths than functions), 1% of
calls indirect, 100 mutually recursive pairs and 50 self-recursive functions; 1,000,000 sample
rows over the functions' instructions (call instructions included, so edges
carry weights) with 4 metric columns. One launch context launches the 20
kernels. Reported: call-graph construction (SCCs included, once per binary),
reconstruction per launch context at several budgets of placed points, and peak memory; and the
cost of the recursive components (with their condensation and topological order) through networkx
against the hand-written Tarjan pass that CallGraph uses, as shares of one launch context's reconstruction
(timed alone, in pairs around reconstructions, and under cProfile).

    .venv/bin/python benchmarks/bench_gpucct.py [--record] [--functions N] [--samples N] [--repeat N]

``--record`` writes the table to benchmarks/results/gpucct.md.
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import resource
import statistics
import time
from pathlib import Path

import networkx as nx
import numpy as np

from hpcsa.core.outputs import write_file
from hpcsa.gpucct import DEFAULT_MAX_POINTS, CallGraph, CallSite, DeviceFunction, PcSamples, reconstruct
from hpcsa.gpucct.scc import call_digraph, components, strongly_connected

INSTR = 0x10  # bytes per instruction


def synthetic(n_functions: int, n_samples: int, seed: int = 1) -> tuple[list[DeviceFunction], list[CallSite],
                                                                        PcSamples, list[int]]:
    rng = np.random.default_rng(seed)
    layers = 8
    n_kernels = 20
    layer = np.sort(rng.integers(1, layers, n_functions))
    layer[:n_kernels] = 0
    sizes = rng.integers(8, 64, n_functions) * INSTR
    sizes[:n_kernels] = rng.integers(256, 1024, n_kernels) * INSTR  # kernels are the big functions
    entries = np.concatenate([[0x1000], 0x1000 + np.cumsum(sizes[:-1])]).astype(np.int64)
    functions = [DeviceFunction(int(e), f"f{i}") for i, e in enumerate(entries)]
    by_layer = [np.flatnonzero(layer == k) for k in range(layers)]
    calls: list[CallSite] = []
    call_pcs: list[int] = []
    used: set[int] = set()
    # Every function but the kernels is called from somewhere in the layer above (compilers drop the rest).
    for i in range(n_kernels, n_functions):
        above = by_layer[layer[i] - 1]
        for _ in range(64):
            caller = int(rng.choice(above))
            pc = int(entries[caller] + INSTR * int(rng.integers(1, sizes[caller] // INSTR)))
            if pc not in used:
                used.add(pc)
                calls.append(CallSite(pc, int(entries[i])))
                call_pcs.append(pc)
                break
    for i in range(n_functions):
        deeper = [c for k in range(layer[i] + 1, min(layer[i] + 3, layers)) for c in by_layer[k]]
        if not deeper:
            continue
        n_calls = int(rng.integers(0, 4)) if layer[i] else 8
        slots = rng.choice(np.arange(1, sizes[i] // INSTR), size=min(n_calls, sizes[i] // INSTR - 1), replace=False)
        for slot in slots:
            pc = int(entries[i] + slot * INSTR)
            if pc in used:
                continue
            used.add(pc)
            callee = None if rng.random() < 0.01 else int(entries[rng.choice(deeper)])
            calls.append(CallSite(pc, callee))
            call_pcs.append(pc)
    # Recursion as device code has it, local: 100 callees call their caller back, 50 functions call themselves.
    taken = set(call_pcs)
    direct = [c for c in calls if c.callee is not None]
    index_of = {int(e): i for i, e in enumerate(entries)}
    picks = [direct[int(k)] for k in rng.choice(len(direct), 100, replace=False)]
    pairs = [(c.callee, int(entries[np.searchsorted(entries, c.pc, side="right") - 1])) for c in picks]
    pairs += [(int(e), int(e)) for e in rng.choice(entries[n_kernels:], 50, replace=False)]
    for src, dst in pairs:
        i = index_of[src]
        pc = int(entries[i] + INSTR * int(rng.integers(1, sizes[i] // INSTR)))
        if pc not in taken:
            taken.add(pc)
            calls.append(CallSite(pc, dst))
            call_pcs.append(pc)
    # Samples: 90% anywhere in the code, 10% on call instructions.
    n_calls_s = n_samples // 10
    f = rng.integers(0, n_functions, n_samples - n_calls_s)
    pcs = entries[f] + INSTR * (rng.integers(0, 1 << 30, len(f)) % (sizes[f] // INSTR))
    pcs = np.concatenate([pcs, rng.choice(np.array(call_pcs), n_calls_s)]).astype(np.uint64)
    values = rng.integers(0, 100, (n_samples, 4)).astype(np.float64)
    values[:, 0] += 1  # GINS > 0
    return functions, calls, PcSamples(pcs, values, weight=0), [int(e) for e in entries[:n_kernels]]


def timed(fn, repeat: int = 3):
    """Median wall time of ``repeat`` runs, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def networkx_part(graph: CallGraph) -> None:
    """What CallGraph hands to networkx: the DiGraph, its components and condensation, topological order."""
    direct = graph.call_callee >= 0
    g = call_digraph(graph.n_functions, zip(graph.call_caller[direct].tolist(), graph.call_callee[direct].tolist(),
                                            strict=True))
    components(g)
    list(nx.nodes_with_selfloops(g))


def tarjan_part(graph: CallGraph) -> None:
    """The same components, condensation order and self calls by the hand-written pass CallGraph uses."""
    succ: list[list[int]] = [[] for _ in range(graph.n_functions)]
    for a, b in zip(graph.call_caller.tolist(), graph.call_callee.tolist(), strict=True):
        if b >= 0:
            succ[a].append(b)
    strongly_connected(succ)


def paired_networkx_share(graph: CallGraph, samples: PcSamples, kernels: list[int],
                          repeat: int) -> list[float]:
    """networkx's time over one default-budget reconstruction, each run timed between two networkx runs
    (so that both see the same load on a shared machine)."""
    shares = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        networkx_part(graph)
        t1 = time.perf_counter()
        reconstruct(graph, samples, kernels)
        t2 = time.perf_counter()
        networkx_part(graph)
        t3 = time.perf_counter()
        shares.append(((t1 - t0) + (t3 - t2)) / 2 / (t2 - t1))
    return shares


def profiled_networkx_share(functions, calls, samples, kernels) -> tuple[float, float]:
    """Seconds inside networkx's own code and in total, under cProfile, for one graph (its components through
    networkx) and one reconstruction."""
    prof = cProfile.Profile()
    prof.enable()
    graph = CallGraph(functions, calls)
    networkx_part(graph)
    reconstruct(graph, samples, kernels)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    inside = sum(tt for (path, _, _), (_, _, tt, _, _) in stats.items() if "networkx" in path)
    return inside, sum(tt for (_, _, tt, _, _) in stats.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--functions", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()

    functions, calls, samples, kernels = synthetic(args.functions, args.samples)
    t_graph, graph = timed(lambda: CallGraph(functions, calls), args.repeat)
    t_nx, _ = timed(lambda: networkx_part(graph), args.repeat)
    t_tarjan, _ = timed(lambda: tarjan_part(graph), args.repeat)
    n_rec = int(np.count_nonzero(graph.comp_recursive))
    largest = max(len(m) for m in graph.comp_members)
    rows = []
    for budget in (100_000, 1_000_000, DEFAULT_MAX_POINTS, 10_000_000):
        t, rec = timed(lambda b=budget: reconstruct(graph, samples, kernels, max_points=b), args.repeat)
        assert np.allclose(rec.totals(), samples.totals(), rtol=1e-9)
        rows.append((budget, t, len(rec.frames), len(rec.point_pc), rec.stats.truncated_frames,
                     rec.stats.recursion_frames, rec.stats.unknown_points))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    nx_inside, prof_total = profiled_networkx_share(functions, calls, samples, kernels)
    paired = paired_networkx_share(graph, samples, kernels, args.repeat)
    t_default = next(t for budget, t, *_ in rows if budget == DEFAULT_MAX_POINTS)

    lines = [
        "# gpucct reconstruction benchmark",
        "",
        f"`benchmarks/bench_gpucct.py --functions {args.functions} --samples {args.samples}` "
        f"(median of {args.repeat}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.machine()}, shared 2-core machine).",
        "",
        f"Synthetic graph: {graph.n_functions} functions, {len(graph.call_pc)} call sites "
        f"({int(np.count_nonzero(graph.call_callee < 0))} indirect), {graph.n_components} components, "
        f"{n_rec} recursive (largest: {largest} functions); {len(samples.pcs)} sample rows x "
        f"{samples.n_metrics} metrics; {len(kernels)} kernels launched from one context.",
        "",
        f"Call graph construction (ranges, calls, hand-written Tarjan SCC; once per GPU binary): "
        f"**{t_graph:.3f} s**.",
        "",
        f"Recursive components, one launch context's reconstruction at the default budget taking {t_default:.2f} s: "
        f"hand-written Tarjan **{t_tarjan:.3f} s** (**{100 * t_tarjan / t_default:.1f}%**); networkx (DiGraph, "
        f"strongly connected components, condensation, topological order) **{t_nx:.3f} s** "
        f"(**{100 * t_nx / t_default:.1f}%**). Timed in {len(paired)} pairs (networkx, reconstruction, networkx), "
        f"networkx's share is **{100 * statistics.median(paired):.1f}%** (median; {100 * min(paired):.1f}% to "
        f"{100 * max(paired):.1f}%). Under cProfile, networkx's own code takes {nx_inside:.3f} s of "
        f"{prof_total:.2f} s (**{100 * nx_inside / prof_total:.1f}%**) for one graph, its networkx components "
        "and one reconstruction.",
        "",
        "| max_points | reconstruct (s) | frames | placed points | cut into <more call paths> | recursion frames | "
        "pcs under unknown |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for budget, t, nf, npnt, ntr, nrf, nunk in rows:
        lines.append(f"| {budget:,} | {t:.2f} | {nf:,} | {npnt:,} | {ntr:,} | {nrf:,} | {nunk:,} |")
    distinct = len(np.unique(samples.pcs))
    lines += ["", f"The flat profile has {distinct:,} distinct sample pcs, the floor of any tree. Placed points "
              "include the `<more call paths>` frames (one per launched kernel, each holding at most one point "
              "per distinct pc), so they can exceed `max_points`; the frames outside them stay within it.",
              "", f"Peak resident memory of the process: {peak_mb:.0f} MiB.", ""]
    text = "\n".join(lines)
    print(text)
    if args.record:
        out = Path(__file__).resolve().parent / "results" / "gpucct.md"
        out.parent.mkdir(exist_ok=True)
        write_file(out, text.encode())
        print(f"recorded in {out}")


if __name__ == "__main__":
    main()
