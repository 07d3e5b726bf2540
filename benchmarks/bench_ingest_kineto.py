"""Benchmark: ``hpcsa ingest`` of PyTorch profiler (Kineto) traces, which are large JSON documents.

The real traces at hand are small (under 400 launches), so the trace is generated: N kernel launches,
each a ``cudaLaunchKernel`` call inside an operator inside a Python frame inside a ``ProfilerStep#k``
range (100 launches per step), with its kernel: 5 events per launch. Each size is read and written (a
full measurement directory in a temporary folder) ``--repeat`` times; the median wall and CPU (process)
time are reported, split into reading and writing, with the peak resident memory of the process. CPU time
is the steadier number on a shared machine.

    .venv/bin/python benchmarks/bench_ingest_kineto.py [--record] [--repeat N] [--sizes 10000,50000]

``--record`` writes the table to benchmarks/results/ingest_kineto.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path

from hpcsa.core.outputs import write_file
from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import read_sources

ROOT = Path(__file__).resolve().parent.parent


def generate(path: Path, launches: int) -> None:
    def x(cat: str, name: str, pid: int, tid: int, s: int, e: int, **args: object) -> dict:
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": s / 1000, "dur": (e - s) / 1000,
                "args": args}

    ev = [x("python_function", "train.py(1): <module>", 1, 1, 0, 10_000 * launches + 10)]
    for i in range(launches):
        s = 10 + i * 10_000
        ev += [x("user_annotation", f"ProfilerStep#{i // 100}", 1, 1, s, s + 9000),
               x("python_function", f"model.py({i % 50}): layer{i % 50}", 1, 1, s + 1, s + 8000),
               x("cpu_op", "aten::addmm", 1, 1, s + 2, s + 7000),
               x("cuda_runtime", "cudaLaunchKernel", 1, 1, s + 3, s + 50, correlation=i + 1),
               x("kernel", f"gemm_{i % 20}", 0, 7, s + 100, s + 900, device=0, stream=7, correlation=i + 1,
                 grid=[8, 1, 1], block=[256, 1, 1])]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))


def measure(path: Path, repeat: int) -> tuple[float, float, float, float]:
    runs = []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        traces = read_sources([str(path)])
        w1, c1 = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory() as tmp:
            write_measurement(traces, tmp)
        w2, c2 = time.perf_counter(), time.process_time()
        runs.append((w1 - w0, w2 - w1, c1 - c0, c2 - c1))
    return tuple(statistics.median(r[i] for r in runs) for i in range(4))  # type: ignore[return-value]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="10000,50000")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"trace{n}.json"
            generate(path, n)
            mib = path.stat().st_size / (1 << 20)
            rw, ww, rc, wc = measure(path, args.repeat)
            rows.append((n, 5 * n + 1, mib, rw, ww, rc, wc))
            print(f"{n:7d} launches {mib:6.1f} MiB  read {rw:6.2f} s ({rc:6.2f} CPU)  write {ww:6.2f} s "
                  f"({wc:6.2f} CPU)  {(5 * n + 1) / (rc + wc):8.0f} events per CPU second")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.record:
        lines = ["# hpcsa ingest: PyTorch profiler (Kineto) traces", "",
                 f"Machine: {platform.machine()}, {os.cpu_count()} CPUs shared with other work (wall times vary "
                 f"with its load; CPU times are steadier), Python {platform.python_version()}; median of "
                 f"{args.repeat}; peak RSS {peak:.0f} MiB. Command: "
                 "`.venv/bin/python benchmarks/bench_ingest_kineto.py --record`.", "",
                 "| launches | events | JSON (MiB) | read wall (s) | write wall (s) | read CPU (s) | write CPU (s) "
                 "| events per CPU second |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n, ev, mib, rw, ww, rc, wc in rows:
            lines.append(f"| {n:,} | {ev:,} | {mib:.1f} | {rw:.2f} | {ww:.2f} | {rc:.2f} | {wc:.2f} | "
                         f"{ev / (rc + wc):,.0f} |")
        write_file(str(ROOT / "benchmarks" / "results" / "ingest_kineto.md"), ("\n".join(lines) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
