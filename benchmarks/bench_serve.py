"""Benchmark of ``hpcsa serve`` on a database of 100,000+ contexts and 10,000 profiles: first paint and expansions.

The database is ``hpcsa synth big.m -n 10000 --contexts 150000`` (109,018 contexts) aggregated by ``hpcsa prof`` (made once in a
temporary directory, or given with ``--db``). Each run starts a fresh server in this process (a new
:class:`~hpcsa.views.experiment.Experiment`: nothing cached) on 127.0.0.1 and times, over real HTTP:

- ``ready``: opening the database and reading what the first page needs (what ``hpcsa serve`` does before it
  prints the URL);
- ``first paint``: the page's own requests until its tree is drawn -- ``/``, the script and style sheet,
  ``/api/info``, the roots and the first three levels opened along the heaviest child;
- ``expand``: ``/api/children`` of 200 nodes with children, drawn at random over the whole tree (each request
  timed; median, 95th percentile and maximum);
- with a filter (``self:`` the procedure with the most frames that call something): the first request of
  the bottom-up and flat views (the filtered tree and the view are built then) and ``/api/children`` of 100
  nodes with children drawn at random in each (callers nodes above the levels built at first; opening one
  of the last level built deepens the view: ``bottom-up filtered deepen``);
- the first request of the bottom-up and flat views (their forests are built then), the hot path, a
  context's values over the 10,000 profiles (first and next), the trace view's pixels (1,000 x 400) and a
  window summary over every profile;
- with ``--browser`` (Debian's chromium and chromedriver), the time from loading the URL in headless Chromium
  to the page's tree drawn.

    .venv/bin/python benchmarks/bench_serve.py [--db big.d] [--repeat 5] [--browser] [--record]

``--record`` writes benchmarks/results/serve.md. Times are medians over the runs.
"""

from __future__ import annotations

import argparse
import glob
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

from hpcsa.cli.serve import warm
from hpcsa.views import tree as T
from hpcsa.views.experiment import open_experiment
from hpcsa.views.filters import parse_filters
from hpcsa.views.serve.model import CALLER_LEVELS, Model
from hpcsa.views.serve.server import make_server

ROOT = Path(__file__).resolve().parent.parent


def make_database(tmp: Path, profiles: int, contexts: int) -> Path:
    hpcsa = [sys.executable, "-m", "hpcsa"]
    meas, db = tmp / "big.m", tmp / "big.d"
    subprocess.run([*hpcsa, "synth", str(meas), "-n", str(profiles), "--contexts", str(contexts), "-j", "2"],
                   check=True)
    subprocess.run([*hpcsa, "prof", str(meas), "-o", str(db), "-j", "2"], check=True)
    return db


class Client:
    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.token = token

    def get(self, path: str, **params: Any) -> tuple[float, Any]:
        t = time.perf_counter()
        self.conn.request("GET", f"{path}?{urlencode({**params, 'token': self.token})}")
        r = self.conn.getresponse()
        body = r.read()
        dt = time.perf_counter() - t
        assert r.status == 200, (path, r.status, body[:200])
        return dt, json.loads(body) if r.getheader("Content-Type", "").startswith("application/json") else body


def one_run(db: Path, rng: np.random.Generator, browser: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t = time.perf_counter()
    exp = open_experiment(db)
    server, app = make_server(exp, "127.0.0.1", 0)
    warm(app.model)
    out["ready"] = time.perf_counter() - t
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        c = Client(server.server_address[1], app.token)
        t = time.perf_counter()
        for p in ("/", "/static/app.js", "/static/style.css"):
            c.get(p)
        _, info = c.get("/api/info")
        cols = ",".join(map(str, info["default_columns"]))
        _, roots = c.get("/api/children", node=-1, columns=cols)
        level = [roots["rows"][0]]
        for _ in range(3):
            _, kids = c.get("/api/children", node=level[0]["node"], columns=cols)
            level = kids["rows"][:1]
            if not level:
                break
        out["first paint"] = time.perf_counter() - t
        td = exp.top_down()
        n_kids = np.bincount(td.parent[td.parent >= 0], minlength=len(td))
        inc = td.values(app.model.column(f"${info['default_columns'][0]}"), "inclusive")
        candidates = np.flatnonzero((n_kids > 0) & (inc != 0))
        times = [c.get("/api/children", node=int(n), columns=cols)[0]
                 for n in rng.choice(candidates, size=min(200, len(candidates)), replace=False)]
        out["expand median"] = statistics.median(times)
        out["expand p95"] = float(np.percentile(times, 95))
        out["expand max"] = max(times)
        out["bottom-up first"] = c.get("/api/children", node=-1, columns=cols, view="bottom-up")[0]
        out["flat first"] = c.get("/api/children", node=-1, columns=cols, view="flat")[0]
        out.update(filtered_steps(c, app.model, cols, rng))
        dt, hot = c.get("/api/hotpath", columns=cols)
        out["hot path"] = dt
        out["profiles first"] = c.get("/api/distribution", node=hot["path"][-1], columns=cols)[0]
        out["profiles next"] = c.get("/api/distribution", node=hot["path"][-2], columns=cols)[0]
        if info["trace"]:
            c.get("/api/trace/meta")
            out["trace pixels"] = c.get("/api/trace/pixels", width=1000, height=400, depth=3)[0]
            out["trace pixels again"] = c.get("/api/trace/pixels", width=1000, height=400, depth=4)[0]
            out["trace window"] = c.get("/api/trace/window", depth=2)[0]
        if browser:
            out["browser first paint"] = browser_paint(server.server_address[1], app.token)
    finally:
        server.shutdown()
        server.server_close()
    return out


def busiest_procedure(exp: Any) -> str:
    """The named procedure with the most frames that call something."""
    c = exp.cct
    frames = (c.kind == T.FUNCTION) & (c.relation != T.LEXICAL) & (c.function >= 0)
    has_kids = np.bincount(c.parent[c.parent >= 0], minlength=len(c)) > 0
    return exp.meta.functions.names[int(np.argmax(np.bincount(c.function[frames & has_kids])))]


def filtered_steps(c: Client, model: Model, cols: str, rng: np.random.Generator) -> dict[str, float]:
    out: dict[str, float] = {}
    filters = f"self:{glob.escape(busiest_procedure(model.exp))}"
    for view in ("bottom-up", "flat"):
        out[f"{view} filtered first"] = c.get("/api/children", node=-1, columns=cols, view=view, filters=filters)[0]
        forest = model.forest(view, 0, parse_filters([filters]))
        n_kids = np.bincount(forest.parent[forest.parent >= 0], minlength=len(forest))
        ok = n_kids > 0
        if view == "bottom-up":
            levels = forest.level  # type: ignore[attr-defined]
            deep = np.flatnonzero(ok & (levels == CALLER_LEVELS - 2))
            ok &= levels < CALLER_LEVELS - 2
        candidates = np.flatnonzero(ok)
        times = [c.get("/api/children", node=int(n), columns=cols, view=view, filters=filters)[0]
                 for n in rng.choice(candidates, size=min(100, len(candidates)), replace=False)]
        out[f"{view} filtered expand median"] = statistics.median(times)
        out[f"{view} filtered expand max"] = max(times)
        if view == "bottom-up" and len(deep):
            out["bottom-up filtered deepen"] = c.get("/api/children", node=int(deep[0]), columns=cols, view=view,
                                                     filters=filters)[0]
    return out


def browser_paint(port: int, token: str) -> float:
    sys.path.insert(0, str(ROOT))
    from tests.views.serve.browser import chromium

    with chromium() as drv:
        drv.get("about:blank")
        t = time.perf_counter()
        drv.get(f"http://127.0.0.1:{port}/?token={token}")
        while not drv.execute_script("return document.body.dataset.ready === '1'"):
            time.sleep(0.01)
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, help="an existing database (default: synthesize one)")
    ap.add_argument("--profiles", type=int, default=10000)
    ap.add_argument("--contexts", type=int, default=150000, help="synth --contexts (150,000 give 109,018 "
                    "contexts in the database: synth counts contexts before prof merges them)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--browser", action="store_true")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        db = args.db or make_database(Path(tmp), args.profiles, args.contexts)
        exp = open_experiment(db)
        shape = f"{len(exp.cct):,} contexts, {len(exp.profiles):,} profiles, " \
                f"{sum(os.path.getsize(db / f) for f in os.listdir(db) if f.endswith('.db')) / 2**20:.0f} MiB"
        del exp
        rng = np.random.default_rng(1)
        runs = [one_run(db, rng, args.browser) for _ in range(args.repeat)]
    keys = list(runs[0])
    lines = [f"# hpcsa serve on {shape}", "",
             f"`{' '.join(['.venv/bin/python', 'benchmarks/bench_serve.py'] + sys.argv[1:])}` on "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs shared with other work "
             f"(a loaded machine); Python {platform.python_version()}. Medians of {len(runs)} runs, each a fresh "
             "server (nothing cached); every run listed.", "",
             "| step | median (ms) | runs (ms) |", "|---|---:|---|"]
    for k in keys:
        vals = [r[k] * 1000 for r in runs if k in r]
        lines.append(f"| {k} | {statistics.median(vals):.1f} | {', '.join(f'{v:.1f}' for v in vals)} |")
    lines += ["", "Goals: first paint under 1 s (ready + first paint: the server prints its URL only once it is "
              "ready), each expansion under 200 ms (filtered views included)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        (ROOT / "benchmarks" / "results" / "serve.md").write_text(text)


if __name__ == "__main__":
    main()
