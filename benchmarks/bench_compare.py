"""``hpcsa compare`` on 100 databases made from a real run, against LLNL thicket on the same databases.

The inputs (:mod:`compare_inputs`): ``hpcsa prof`` of 100 perturbed copies of HPCToolkit's 1,024-thread
``meas-cxx1024`` measurement (values jittered 5 %, in two runs of three 2 % of them dropped), made once
under ``benchmarks/work/compare/runs``. Measured, each in a fresh process (wall time and peak RSS):

- ``hpcsa compare`` of 1, 10 and 100 of them (the text report with statistics and change; the peak RSS
  should stay near the one-database figure, as the runs are read one after another) and of all 100 to the
  tidy table as Parquet;
- thicket (``Thicket.from_hpctoolkit_latest`` of the folder of the 100 databases, in its own venv,
  ``benchmarks/work/thicket-venv``: ``python -m venv benchmarks/work/thicket-venv &&
  benchmarks/work/thicket-venv/bin/pip install llnl-thicket``), by ``benchmarks/thicket_side.py``;
- the values: every context thicket reads, in every run, against hpcsa's value of the same context (matched
  by the path of (kind, name) from the root, names spelt the same way on both sides: procedure names cut as
  hatchet's reader cuts them, files without their folders).

- a real scaling series (``hpcsa prof`` of the first 1, 2, 4 ... 64 processes of the same measurement, weak
  scaling over processes): ``hpcsa compare --group-by procs --plot``, and its growth models against Extra-P's
  own modeler (``extrap`` in its own venv, ``benchmarks/work/extrap-venv``, as it needs numpy < 2; run by
  ``benchmarks/extrap_side.py``) on every context of the series.

    .venv/bin/python benchmarks/bench_compare.py [--runs 100] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_inputs import MEAS, make_process_series, make_runs  # noqa: E402
from machine_speed import probe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / ".venv" / "bin" / "python"
HPCSA = ROOT / ".venv" / "bin" / "hpcsa"
THICKET_PY = ROOT / "benchmarks" / "work" / "thicket-venv" / "bin" / "python"
EXTRAP_PY = ROOT / "benchmarks" / "work" / "extrap-venv" / "bin" / "python"
WORK = ROOT / "benchmarks" / "work" / "compare"

#: Run a command and print its wall seconds and peak RSS (KiB) as JSON on the last line of stderr.
TIMED = ("import json, resource, subprocess, sys, time\n"
         "t = time.perf_counter()\n"
         "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
         "w = time.perf_counter() - t\n"
         "sys.stderr.write(p.stderr)\n"
         "print(json.dumps({'rc': p.returncode, 'wall_s': w, "
         "'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}), file=sys.stderr)\n")


def timed(cmd: list[str]) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", TIMED, *cmd], capture_output=True, text=True,
                          env=dict(os.environ, HPCSA_NO_PROGRESS="1"))
    out = json.loads(proc.stderr.strip().splitlines()[-1])
    if out["rc"]:
        raise SystemExit(f"{' '.join(cmd[:3])}...: exit {out['rc']}\n{proc.stderr}")
    return out


def best(cmd: list[str], repeat: int) -> dict[str, float]:
    runs = [timed(cmd) for _ in range(repeat)]
    return min(runs, key=lambda r: r["wall_s"])


# -- the same contexts on both sides ---------------------------------------------------------------------------

def norm_name(name: str) -> str:
    """A procedure's name as hatchet's reader spells it (it cuts a name at the first `` [``, ``.``, ``@``,
    ``(`` or ``<`` not at its start); hpcsa's full name, without the view's call and inline marks."""
    name = re.sub(r"^(→|⇢)\s*", "", name.strip()).removesuffix(" [inlined]")
    for item in (" [", ".", "@", "(", "<"):
        if item in name and not name.startswith(item):
            name = name[:name.index(item)]
    return name


def hatchet_step(frame_name: str, kind: str) -> tuple[str, str]:
    if kind == "function":
        return ("function", norm_name(frame_name.removeprefix("function: ")))
    if kind in ("loop", "line"):
        loc = frame_name.split(" ", 1)[1]
        return (kind, os.path.basename(loc))
    return (kind, frame_name)


def thicket_keys(values: dict[str, float]) -> dict[str, float]:
    """thicket_side.py's paths (steps of type and name) as :func:`hpcsa_values` keys them."""
    out: dict[str, float] = {}
    for path, v in values.items():
        key = "/".join("|".join(hatchet_step(name, kind)) for kind, name in
                       (step.split("\x1e", 1) for step in path.split("\x1f")))
        out[key] = out.get(key, 0.0) + v
    return out


def hpcsa_step(label: str, kind: str) -> tuple[str, str]:
    k = kind.split("/")[0]
    if k == "function":
        return ("function", norm_name(label))
    if k == "loop":
        return ("loop", label.removeprefix("loop at "))
    if k == "line":
        return ("line", label)
    return (k, label)


def hpcsa_values(dbs: list[Path]) -> dict[str, dict[str, float]]:
    """Per run (database path), each main-thread context's inclusive time keyed by its normalised path."""
    from hpcsa.views.compare import compare
    from hpcsa.views.names import FULL_NAMES

    FULL_NAMES.set(True)  # full procedure names, to be cut as hatchet cuts them
    cmp = compare(dbs, metrics=["CPUTIME (sec)"])
    keys: list[str] = []
    for i, (label, kind) in enumerate(zip(cmp.labels, cmp.kinds, strict=True)):
        p = int(cmp.parent[i])
        step = "|".join(hpcsa_step(label, kind))
        keys.append(step if p < 0 or cmp.kinds[p] == "root" else f"{keys[p]}/{step}")
    mat = cmp.matrix("CPUTIME (sec)", "inclusive")
    out: dict[str, dict[str, float]] = {}
    for run, db in enumerate(dbs):
        d = out.setdefault(os.path.realpath(db), {})
        for i in np.flatnonzero(cmp.present[:, run] & ~np.isnan(mat[:, run])).tolist():
            if keys[i].startswith("entry|main thread"):
                k = "entry|entry" + keys[i][len("entry|main thread"):]
                d[k] = d.get(k, 0.0) + float(mat[i, run])
    return out


def agreement(tk: dict[str, dict[str, float]], ours: dict[str, dict[str, float]]) -> dict[str, float]:
    matched = missing = 0
    worst = 0.0
    for path, values in tk.items():
        mine = ours[os.path.realpath(path)]
        for key, v in values.items():
            if key not in mine:
                missing += 1
                continue
            matched += 1
            worst = max(worst, abs(mine[key] - v) / max(abs(v), 1e-300))
    return {"matched": matched, "missing": missing, "worst_rel": worst}


def extrap_check(series: list[Path], procs: list[int]) -> dict[str, object] | None:
    """hpcsa's growth models of the series against Extra-P's on every context present at every point."""
    if not EXTRAP_PY.exists():
        return None
    from hpcsa.views.compare import compare
    from hpcsa.views.compare.models import EXPONENTS, fit
    from hpcsa.views.compare.series import scaling_series

    cmp = compare(series, meta=[{"procs": str(k)} for k in procs], group_by="procs")
    s = scaling_series(cmp, None, "inclusive", "weak")
    rows = np.flatnonzero(~np.isnan(s.cost).any(axis=1) & (s.cost > 0).all(axis=1))
    t = time.perf_counter()
    ours = fit(s.p, s.cost[rows])
    ours_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"p": s.p.tolist(), "y": s.cost[rows].tolist()}))
        subprocess.run([str(EXTRAP_PY), str(ROOT / "benchmarks" / "extrap_side.py"), str(src), str(dst)],
                       check=True, capture_output=True)
        theirs = json.loads(dst.read_text())
    version = subprocess.run([str(EXTRAP_PY), "-c", "import importlib.metadata as m; print(m.version('extrap'))"],
                             capture_output=True, text=True).stdout.strip()
    same, differ = 0, []
    for i, f in enumerate(theirs["fits"]):
        h = int(ours.hypothesis[i])
        mine = None if h < 0 else (EXPONENTS[h][0] / EXPONENTS[h][1], EXPONENTS[h][2])
        other = None if f["poly"] is None else (float(f["poly"]), int(f["log"]))
        if mine == other:
            same += 1
        else:
            differ.append(f"{cmp.paths[int(rows[i])]}: hpcsa {ours.growth(i)}, Extra-P {other}")
    detail = "" if not differ else f" (differing: {'; '.join(differ[:3])}{' ...' if len(differ) > 3 else ''})"
    return {"version": version, "contexts": len(rows), "same": same, "detail": detail,
            "seconds": theirs["seconds"], "ours_seconds": ours_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    if not MEAS.is_dir():
        print(f"{MEAS}: the real measurement is not here", file=sys.stderr)
        return 2
    speed0 = probe()
    dbs = make_runs(WORK, args.runs)
    size = max(sum(f.stat().st_size for f in d.iterdir() if f.is_file()) for d in dbs)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted({1, min(10, len(dbs)), len(dbs)}):
            r = best([str(HPCSA), "compare", *map(str, dbs[:n]), "--show", "stats,change"], args.repeat)
            rows.append((f"`hpcsa compare` of {n} database{'s' if n > 1 else ''} (text, depth 4)", r))
            print(f"{rows[-1][0]}: {r['wall_s']:.2f} s, {r['peak_kib'] / 1024:.0f} MiB", flush=True)
        pq = Path(tmp) / "runs.parquet"
        r = best([str(HPCSA), "compare", *map(str, dbs), "-o", str(pq)], args.repeat)
        rows.append((f"`hpcsa compare` of {len(dbs)} databases `-o runs.parquet` (every context)", r))
        print(f"{rows[-1][0]}: {r['wall_s']:.2f} s, {r['peak_kib'] / 1024:.0f} MiB", flush=True)
        tk_note, agree, tk_row = "", None, None
        if THICKET_PY.exists():
            folder = Path(tmp) / "dbs"
            folder.mkdir()
            for d in dbs:
                os.symlink(d.resolve(), folder / d.name)
            out = Path(tmp) / "thicket.json"
            r = timed([str(THICKET_PY), str(ROOT / "benchmarks" / "thicket_side.py"), str(folder), str(out)])
            doc = json.loads(out.read_text())
            tk_row = (f"thicket `Thicket.from_hpctoolkit_latest` of the {len(dbs)} databases "
                      f"(import {doc['import_s']:.1f} s, load {doc['load_s']:.1f} s)", r)
            rows.append(tk_row)
            print(f"{tk_row[0]}: {r['wall_s']:.2f} s, {r['peak_kib'] / 1024:.0f} MiB", flush=True)
            agree = agreement({os.path.realpath(p): thicket_keys(v) for p, v in doc["values"].items()},
                              hpcsa_values(dbs))
            agree["nodes"] = doc["nodes"]
            print(f"values: {agree}", flush=True)
        else:
            tk_note = f"thicket was not measured: no {THICKET_PY.relative_to(ROOT)}"
    series = make_process_series(WORK)
    procs = [int(d.name.split("-")[1].removesuffix(".d")) for d in series]
    png = ROOT / "benchmarks" / "results" / "compare-series.png"
    cmd = [str(HPCSA), "compare", *map(str, series), *(f"--meta=procs={k}" for k in procs), "--group-by", "procs",
           "--scaling", "weak"]
    r = best(cmd + (["--plot", str(png)] if args.record else []), args.repeat)
    rows.append((f"`hpcsa compare --group-by procs --scaling weak --plot` of the {len(series)}-point series", r))
    print(f"{rows[-1][0]}: {r['wall_s']:.2f} s, {r['peak_kib'] / 1024:.0f} MiB", flush=True)
    series_text = subprocess.run(cmd + ["--depth", "0"], capture_output=True, text=True, check=True).stdout
    series_text = series_text[series_text.index("scaling series"):]
    extrap = extrap_check(series, procs)
    print(f"Extra-P: {extrap}", flush=True)
    speed1 = probe()
    if not args.record:
        return 0
    ours = next(r for what, r in rows if what.startswith(f"`hpcsa compare` of {len(dbs)} databases (text"))
    lines = ["# `hpcsa compare` benchmark", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}; "
             f"machine-speed probe {speed0:.2f} s at the start, {speed1:.2f} s at the end "
             f"(`benchmarks/machine_speed.py`); load average {os.getloadavg()[0]:.1f}; best of {args.repeat} "
             "(thicket: one run). Command: `.venv/bin/python benchmarks/bench_compare.py --record`.", "",
             f"Inputs: {len(dbs)} databases made by `hpcsa prof` from perturbed copies of the real 1,024-thread "
             "`meas-cxx1024` measurement (`benchmarks/compare_inputs.py`: every value times a lognormal factor of "
             "sigma 5 %, 2 % of the values dropped in two runs of three); the largest database is "
             f"{size / 2**20:.1f} MiB. Each command is a new process; wall time and peak RSS of that process.",
             "", "| what | wall s | peak RSS MiB |", "|---|---:|---:|"]
    lines += [f"| {what} | {r['wall_s']:.2f} | {r['peak_kib'] / 1024:.0f} |" for what, r in rows]
    lines += [""]
    if tk_row is not None and agree is not None:
        speedup = tk_row[1]["wall_s"] / ours["wall_s"]
        lines += [f"hpcsa is **{speedup:.0f}x** faster than thicket on the same {len(dbs)} databases "
                  f"({ours['wall_s']:.2f} s against {tk_row[1]['wall_s']:.2f} s, both as new processes, imports "
                  f"included), with {tk_row[1]['peak_kib'] / ours['peak_kib']:.1f}x less memory.", "",
                  "Values: thicket (hatchet's reader) reads one of the two entry points of these databases (`main "
                  "thread`; the `application thread` partition, 86 % of the time, is not in its tree), "
                  f"{agree['nodes']:.0f} contexts. Every context it has, in every run, was looked up in hpcsa's "
                  "aligned tree by its path (procedure names cut as hatchet cuts them, files without folders): "
                  f"{agree['matched']:,.0f} (run, context) values matched, {agree['missing']:,.0f} not found, "
                  f"largest relative difference {agree['worst_rel']:.1e}.", ""]
    else:
        lines += [tk_note, ""]
    lines += [f"## A scaling series: {len(series)} real databases, growth models against Extra-P", "",
              f"`hpcsa prof` of the first {', '.join(map(str, procs))} processes (16 threads each) of the same "
              "measurement (`make_process_series` in `benchmarks/compare_inputs.py`): each process did the same "
              "work, so this is weak scaling over processes and the ideal is O(1) everywhere: where a context gets "
              "a log term, its coefficient against the constant says how small it is (run-to-run noise). The plot is "
              "`compare-series.png` below. `hpcsa compare`'s text (the 15 costliest contexts):", "",
              "```text", series_text.rstrip("\n"), "```", ""]
    if extrap is not None:
        lines += [f"Extra-P {extrap['version']} (`extrap` from PyPI, its single-parameter basic modeler, one context "
                  f"at a time) on the same {extrap['contexts']} series (every context present at every point): "
                  f"it chose the same model as hpcsa's vectorised search for {extrap['same']} of them"
                  f"{extrap['detail']}. Extra-P took {extrap['seconds']:.1f} s for them; hpcsa "
                  f"{extrap['ours_seconds']:.3f} s.", ""]
    else:
        lines += [f"Extra-P was not compared: no {EXTRAP_PY.relative_to(ROOT)}.", ""]
    lines += ["Memory: the runs are read one after another, so the peak RSS of 100 databases stays near "
              "that of one (the table's first and third rows) -- bounded by the largest database plus the "
              "result, not by the sum of the databases. The Parquet row's memory is pyarrow's (imported for "
              "it), not the databases'."]
    out = ROOT / "benchmarks" / "results" / "compare.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
