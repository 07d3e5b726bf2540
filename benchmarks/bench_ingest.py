"""Benchmark: ``hpcsa ingest`` records per second on the largest real source of each vendor.

Sources (from ../shared/data/gpu-records): the 23,419-kernel Nsight Systems export (NVIDIA), the
rocpd database of the MI300X batched GEMM run (AMD), the largest unitrace device timeline (Intel),
and the stochastic PC-sampling CSV (AMD PC samples). "Records" are the GPU operations, API calls and
PC-sample rows the reader takes from the source. Each source is read and written (a full
measurement directory in a temporary folder) ``--repeat`` times; the best time is reported, split
into reading and writing, with the peak resident memory of the process.

    .venv/bin/python benchmarks/bench_ingest.py [--record] [--repeat N]

``--record`` writes the table to benchmarks/results/ingest.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

from hpcsa.core.outputs import write_file
from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import read_sources

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data")) / "gpu-records"
SOURCES = [
    ("NVIDIA", "nsys 2023.1 export, 23k kernels", "nvidia/nsys-2023.1-rtx3060-23k-kernels/report1.sqlite"),
    ("NVIDIA", "nsys 2024.5 export with CPU-sample stacks", "nvidia/nsys-2024.5-cloverleaf-4xa100/"
     "perlmutter-cloverleaf-cuda.sqlite"),
    ("AMD", "rocpd (rocprofv3, ROCm 7.1)", "amd/rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm/21_results.db"),
    ("AMD", "rocprofv3 stochastic PC-sampling CSV", "amd/rocprofv3-doc-excerpts/pc_sampling_stochastic_debug.csv"),
    ("Intel", "unitrace device timeline (SYCL graph)", "intel/unitrace-gold-graph/t.txt"),
]


def records(traces: list) -> int:
    return sum(len(t.ops) + len(t.apis) + len(t.samples) for t in traces)


def run(repeat: int) -> list[tuple[str, str, int, float, float]]:
    rows = []
    for vendor, what, rel in SOURCES:
        path = DATA / rel
        if not path.exists():
            print(f"skipping {rel}: not found")
            continue
        best_read = best_write = float("inf")
        n = 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            traces = read_sources([str(path)])
            t1 = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                write_measurement(traces, tmp)
            t2 = time.perf_counter()
            best_read, best_write = min(best_read, t1 - t0), min(best_write, t2 - t1)
            n = records(traces)
        rows.append((vendor, what, n, best_read, best_write))
        total = best_read + best_write
        print(f"{vendor:6} {what:45} {n:8d} records  read {best_read:6.3f} s  write {best_write:6.3f} s  "
              f"{n / total:10.0f} records/s")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    rows = run(args.repeat)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.record:
        lines = ["# hpcsa ingest: records per second", "",
                 f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
                 f"best of {args.repeat}; peak RSS {peak:.0f} MiB. Command: "
                 "`.venv/bin/python benchmarks/bench_ingest.py --record`.", "",
                 "| vendor | source | records | read (s) | write (s) | records/s |", "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {v} | {w} | {n} | {r:.3f} | {wr:.3f} | {n / (r + wr):,.0f} |" for v, w, n, r, wr in rows]
        write_file(ROOT / "benchmarks" / "results" / "ingest.md", "\n".join(lines) + "\n")
    print(f"peak RSS {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
