"""Benchmark: ``hpcsa struct`` on the Quicksilver cubins of the reference data (sm_62, sm_70, sm_87).

Reported per cubin (best of N runs): the whole analysis (``build_cubin_module``: nvdisasm, listing,
line tables, blocks, loops, tree) and its parts (nvdisasm alone, reading its listing, everything else),
writing the ``.hpcstruct`` text, and what was found. nvdisasm 13 refuses sm_62 and sm_70, so those two
measure the degraded path (ELF + DWARF only). Peak memory is the process's.

    .venv/bin/python benchmarks/bench_struct_gpu.py [--record] [--runs N]

``--record`` writes the table to benchmarks/results/struct_gpu.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from pathlib import Path

from hpcsa.core.outputs import write_file
from hpcsa.formats.hpcstruct.model import C, L, P, S, StructureFile, renumber
from hpcsa.formats.hpcstruct.writer import render
from hpcsa.structure.gpu import nvdisasm
from hpcsa.structure.gpu.cubin import build_cubin_module

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data")) / "hpctoolkit" / "bin"
CUBINS = ["quicksilver-sm_62-dr", "quicksilver-sm_70-dr", "quicksilver-sm_87-dr"]


def best(fn, runs: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def one(path: Path, runs: int) -> dict[str, object]:
    total, (module, notes) = best(lambda: build_cubin_module(str(path)), runs)  # type: ignore[misc]
    row: dict[str, object] = {"cubin": path.name, "bytes": path.stat().st_size, "total": total,
                              "degraded": bool(notes)}
    if not notes:
        t_dis, text = best(lambda: nvdisasm.run_nvdisasm(str(path)), runs)
        t_parse, listing = best(lambda: nvdisasm.parse_listing(text), runs)  # type: ignore[arg-type]
        row.update(nvdisasm=t_dis, parse=t_parse, rest=max(total - t_dis - t_parse, 0.0),
                   insns=sum(len(sc) for sc in listing))  # type: ignore[union-attr]
    sf = StructureFile([module])
    renumber(sf)
    t_write, _ = best(lambda: sum(len(chunk) for chunk in render(sf)), runs)
    row.update(write=t_write, procs=module.count(P), loops=module.count(L), calls=module.count(C),
               stmts=module.count(S))
    return row


def table(rows: list[dict[str, object]], runs: int) -> str:
    exe = nvdisasm.find_nvdisasm()
    head = (f"# GPU structure benchmark\n\n`benchmarks/bench_struct_gpu.py --runs {runs}` (best of {runs}; "
            f"Python {platform.python_version()}, {platform.machine()}, shared 2-core machine; "
            f"nvdisasm: {exe or 'absent'}).\n\n"
            "| cubin | size | total (s) | nvdisasm (s) | read listing (s) | rest (s) | write (s) | instructions "
            "| procedures | loops | call sites | statements |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    lines = []
    for r in rows:
        def f(key: str, r: dict[str, object] = r) -> str:
            v = r.get(key)
            return f"{v:.3f}" if isinstance(v, float) else "-"
        name = str(r["cubin"]) + (" (degraded: nvdisasm refuses it)" if r["degraded"] else "")
        lines.append(f"| {name} | {r['bytes']:,} | {f('total')} | {f('nvdisasm')} | {f('parse')} | {f('rest')} "
                     f"| {f('write')} | {r.get('insns', '-')} | {r['procs']} | {r['loops']} | {r['calls']} "
                     f"| {r['stmts']} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tail = (f"\n\nPeak resident memory of the process: {peak:.0f} MiB.\n\n"
            "Most of the time of a disassembled cubin is nvdisasm itself (a process per cubin, ~0.5 s even for "
            "tiny ones); hpcsa's own work (reading the listing, line tables with NVIDIA's inline records, "
            "blocks, WMZC loops, hpcstruct's tree rules) is the rest. The degraded sm_62/sm_70 runs include "
            "nvdisasm's refusal.\n")
    return head + "\n".join(lines) + tail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/struct_gpu.md")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    missing = [c for c in CUBINS if not (DATA / c).is_file()]
    if missing:
        print(f"bench_struct_gpu: reference cubins missing under {DATA}: {', '.join(missing)}")
        return 2
    rows = [one(DATA / c, args.runs) for c in CUBINS]
    text = table(rows, args.runs)
    print(text)
    if args.record:
        write_file(ROOT / "benchmarks" / "results" / "struct_gpu.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
