"""Benchmark of ``hpcsa serve``'s trace view in headless Chromium at 10,000 lines x 1,000,000 records.

The database is ``hpcsa synth big.m -n 10000 --contexts 2000 --samples 100`` (10,000 profiles with 100
trace records each) aggregated by ``hpcsa prof`` (made once in a temporary directory, or given with
``--db``). Each run starts a fresh server in this process (nothing cached) and a fresh page, and times in
Debian's chromium (selenium):

- ``first trace paint``: from loading the page's URL in trace mode to the main view painted (the page's
  requests: ``/api/info``, ``/api/trace/meta``, ``/api/trace/pixels`` for the canvas, then drawing the main,
  summary and ruler canvases, the row labels and the legend);
- ``zoom step``: a click on *Zoom +* (half the time window, around its middle) until the view is painted
  again, four times in a row (each step timed);
- ``window statistics``: a window of the middle half selected over every row, until its statistics are shown.

    .venv/bin/python benchmarks/bench_serve_trace.py [--db big.d] [--repeat 3] [--record]

``--record`` writes benchmarks/results/serve_trace.md. Times are medians over the runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def make_database(tmp: Path, profiles: int, samples: int) -> Path:
    hpcsa = [sys.executable, "-m", "hpcsa"]
    meas, db = tmp / "big.m", tmp / "big.d"
    subprocess.run([*hpcsa, "synth", str(meas), "-n", str(profiles), "--contexts", "2000", "--samples",
                    str(samples), "-j", "2"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*hpcsa, "prof", str(meas), "-o", str(db), "-j", "2"], check=True, stdout=subprocess.DEVNULL)
    return db


def painted(drv: Any) -> int:
    return int(drv.execute_script("return +(document.getElementById('trace').dataset.painted || 0)"))


def settle(drv: Any, cond: Any, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"the page did not settle; browser log: {drv.get_log('browser')}")
        time.sleep(0.005)


def one_run(drv: Any, db: Path) -> dict[str, Any]:
    from tests.views.serve.helpers import serving

    out: dict[str, Any] = {}
    with serving(db) as s:
        drv.get("about:blank")
        t = time.perf_counter()
        drv.get(s.url + "#mode=trace")
        settle(drv, lambda: painted(drv) >= 1)
        out["first trace paint"] = time.perf_counter() - t
        steps = []
        for _ in range(4):
            before = painted(drv)
            t = time.perf_counter()
            drv.find_element("id", "t-zoom-in").click()
            settle(drv, lambda before=before: painted(drv) > before)
            steps.append(time.perf_counter() - t)
        out["zoom steps"] = steps
        drv.find_element("id", "t-reset").click()
        settle(drv, lambda: drv.execute_script("return window.__busy === 0"))
        t = time.perf_counter()
        drv.execute_script("""const T = window.__trace, m = T.meta, q = (m.t_max - m.t_min) / 4;
          document.getElementById('trace-stats').dataset.t0 = '';
          import('./static/trace.js').then((mod) => mod.traceWindow(m.t_min + q, m.t_max - q));""")
        settle(drv, lambda: drv.execute_script("return !!document.getElementById('trace-stats').dataset.t0"))
        out["window statistics"] = time.perf_counter() - t
        out["rows"] = drv.execute_script("return window.__trace.meta.rows")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, help="an existing database with a trace.db (default: synthesize one)")
    ap.add_argument("--profiles", type=int, default=10000)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import pytest

    from hpcsa.formats.db.database import open_database
    from tests.views.serve.browser import browser_paths, chromium

    try:
        browser_paths()
    except pytest.skip.Exception as why:  # no chromium here: nothing to measure, nothing recorded
        print(f"bench_serve_trace: skipped: {why}")
        return

    with tempfile.TemporaryDirectory(prefix="bench-serve-trace-") as tmp:
        db = args.db or make_database(Path(tmp), args.profiles, args.samples)
        tdb = open_database(db).trace
        assert tdb is not None, f"{db} has no trace.db"
        shape = f"{len(tdb):,} trace lines, {int(tdb.n_elements().sum()):,} records"
        with chromium() as drv:
            drv.set_window_size(1280, 760)
            runs = [one_run(drv, db) for _ in range(args.repeat)]
    lines = [f"# hpcsa serve's trace view on {shape}", "",
             f"`{' '.join(['.venv/bin/python', 'benchmarks/bench_serve_trace.py'] + sys.argv[1:])}` on "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs shared with other work "
             f"(a loaded machine); Python {platform.python_version()}; headless Chromium at 1280 x 760. "
             f"Medians of {len(runs)} runs, each a fresh server and page; every run listed.", "",
             "| step | median (ms) | runs (ms) |", "|---|---:|---|"]
    for k in ("first trace paint", "window statistics"):
        vals = [r[k] * 1000 for r in runs]
        lines.append(f"| {k} | {statistics.median(vals):.1f} | {', '.join(f'{v:.1f}' for v in vals)} |")
    zooms = [z * 1000 for r in runs for z in r["zoom steps"]]
    lines.append(f"| zoom step | {statistics.median(zooms):.1f} | {', '.join(f'{v:.1f}' for v in zooms)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        (ROOT / "benchmarks" / "results" / "serve_trace.md").write_text(text)


if __name__ == "__main__":
    main()
