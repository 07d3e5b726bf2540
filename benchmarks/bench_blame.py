"""Benchmark of ``hpcsa blame``: 10,000 trace lines, and one long process in bounded memory.

1. ``cpu``: ``hpcsa synth -n 10000 --threads-per-rank 16`` (625 processes of 16 threads, 300 records per line)
   and ``gpu``: ``hpcsa synth -n 10000 --gpu`` (5,000 ranks, each a CPU thread and a GPU stream), both through
   ``hpcsa prof -j 2``; then ``hpcsa blame DB -o OUT`` as a user types it (a fresh process each run).
2. ``long``: one process of 64 threads with ``--records`` elements each (written directly with hpcsa's
   database writers: a small call tree of work, barrier and runtime frames), swept with ``--chunk`` 2^14 to
   2^20: the peak memory follows the window, not the length of the trace (a window whose cutting at every
   change of the working-thread count would exceed 4 x chunk pieces is halved in time).

Wall time and peak RSS of each ``hpcsa blame`` process (``wait4``), median of ``--repeat`` runs.

    .venv/bin/python benchmarks/bench_blame.py [--record] [--repeat N] [--records N] [--work DIR]

``--record`` writes benchmarks/results/blame.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HPCSA = [sys.executable, "-m", "hpcsa"]
ENV = dict(os.environ, HPCSA_NO_PROGRESS="1")


def timed(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, last stderr line) of one hpcsa process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(HPCSA + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"hpcsa {' '.join(args)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024, err.strip().splitlines()[-1] if err.strip() else ""


def synth_db(work: Path, name: str, synth_args: list[str]) -> Path:
    db = work / f"{name}.d"
    if not db.is_dir():
        m = work / f"{name}.m"
        subprocess.run(HPCSA + ["synth", str(m), *synth_args, "--no-structs"], check=True, env=ENV)
        subprocess.run(HPCSA + ["prof", str(m), "-o", str(db), "-j", "2"], check=True, env=ENV)
    return db


def long_db(work: Path, records: int, threads: int = 64) -> Path:
    """One process: threads alternating compute / barrier / runtime at random times."""
    from hpcsa.formats.db.tracedb import elements
    sys.path.insert(0, str(ROOT))  # the database builder is a test helper
    from tests.views.synthetic import DatabaseBuilder, thread_tuple
    db = work / f"long-{threads}x{records}.d"
    if db.is_dir():
        return db
    b = DatabaseBuilder(title="blame long")
    app, gomp = b.module("/app/bin/app"), b.module("/usr/lib/libgomp.so.1")
    main = b.call(None, b.function("main", app))
    rows = [b.call(main, b.function(f"solver_{i}", app)) for i in range(20)]
    rows += [b.call(main, b.function("GOMP_barrier", gomp)), b.call(main, b.function("gomp_team_start", gomp))]
    ctx = np.array(rows) + 2
    rng = np.random.default_rng(1)
    profiles, traces = [], []
    for t in range(threads):
        ts = np.cumsum(rng.integers(1_000, 200_000, records)).astype(np.uint64)
        c = ctx[rng.integers(0, len(ctx), records)].astype(np.uint32)
        profiles.append((thread_tuple(0, None, t), np.ones((len(b.rows), 1))))
        traces.append((t + 1, elements(ts, c)))
    b.write(db, ["REALTIME (sec)"], profiles, traces=traces)
    return db


def run_set(db: Path, work: Path, repeat: int, extra: list[str] = (), write: bool = True) -> dict:
    out = work / "out.d"
    walls, rss, last = [], [], ""
    for _ in range(repeat):
        subprocess.run(["rm", "-rf", str(out)], check=True)
        w, r, last = timed(["blame", str(db), *(["-o", str(out)] if write else []),
                            "--report", str(work / "report.txt"), *extra])
        walls.append(w)
        rss.append(r)
    trace_mb = (db / "trace.db").stat().st_size / 1e6
    return {"walls": walls, "rss": rss, "median": statistics.median(walls), "rss_median": statistics.median(rss),
            "trace_mb": trace_mb, "summary": last}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--long-repeat", type=int, default=1, help="runs per window size of the long process")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    with contextlib.ExitStack() as scratch:  # --work is kept; a directory of its own is removed at the end
        work = args.work or Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="bench-blame-")))
        work.mkdir(parents=True, exist_ok=True)
        load0 = os.getloadavg()[0]
        rows = []
        for name, synth in (("cpu10k", ["-n", "10000", "--threads-per-rank", "16"]), ("gpu10k", ["-n", "10000", "--gpu"])):
            db = synth_db(work, name, synth)
            for write in (False, True):
                r = run_set(db, work, args.repeat, write=write)
                rows.append((name, "10,000 lines", "2^20", "-o OUT" if write else "report only", r))
                print(name, write, r, flush=True)
        db = long_db(work, args.records)
        for chunk in (1 << 14, 1 << 17, 1 << 20):
            r = run_set(db, work, args.long_repeat, ["--chunk", str(chunk)], write=False)
            rows.append(("long", f"64 x {args.records:,} elements", f"2^{chunk.bit_length() - 1}", "report only", r))
            print("long", chunk, r, flush=True)
        r = run_set(db, work, args.long_repeat, write=True)
        rows.append(("long", f"64 x {args.records:,} elements", "2^20", "-o OUT", r))
    load1 = os.getloadavg()[0]
    text = [
        "# `hpcsa blame`: 10,000 trace lines, and one long process in bounded memory", "",
        f"`benchmarks/bench_blame.py --repeat {args.repeat} --records {args.records} --long-repeat {args.long_repeat}` on {platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}; a machine of 2 cores shared with other "
        f"engineers (load average {load0:.1f} at the start, {load1:.1f} at the end), so times are upper bounds. "
        "Each run is `hpcsa blame DB -o OUT --report FILE` in a fresh process (start-up, reading, the sweep, "
        "writing the new database with profile.db, cct.db and trace.db); memory is that process's peak RSS.", "",
        "Peak RSS counts the pages of the memory-mapped trace.db and profile.db that were touched (page cache, "
        "not allocations); `report only` is the sweep and the report without writing a database.", "",
        "| set | traces | window (--chunk) | run | trace.db MB | median s | runs (s) | peak RSS MiB (median) |",
        "|---|---|---|---|---:|---:|---|---:|",
    ]
    for name, what, chunk, mode, r in rows:
        text.append(f"| {name} | {what} | {chunk} | {mode} | {r['trace_mb']:.1f} | {r['median']:.2f} | "
                    f"{', '.join(f'{w:.2f}' for w in r['walls'])} | {r['rss_median']:.0f} |")
    text += ["", "Summaries printed by the runs:", ""] + [f"- {name} ({mode}, {chunk}): `{r['summary']}`"
                                                       for name, _, chunk, mode, r in rows]
    out = "\n".join(text) + "\n"
    print(out)
    if args.record:
        (ROOT / "benchmarks" / "results" / "blame.md").write_text(out)


if __name__ == "__main__":
    main()
