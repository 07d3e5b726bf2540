"""Every trace line ends at its profile's own trace end, on the real 1,024-thread run (64 processes run one after
another): trace.db's reader, the serve trace view and its window statistics, ``export-trace`` and ``blame`` agree,
no line is active after its process ended, and window statistics never exceed rows x window length."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.views.blame.attribute import blame
from hpcsa.views.blame.rules import load_rules
from hpcsa.views.experiment import Experiment, open_experiment
from hpcsa.views.perfetto import export_trace
from hpcsa.views.serve.trace import TraceModel
from hpcsa.views.serve.tracestats import window

S = 10**9


@pytest.fixture(scope="module")
def cxx(shared_data: Path) -> Experiment:
    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (db / "trace.db").is_file():
        pytest.skip(f"{db} is absent")
    return open_experiment(db)


def test_line_ends_are_the_profiles_trace_ends(cxx: Experiment, shared_data: Path) -> None:
    tdb = cxx.db.trace
    start, end = tdb.line_bounds()
    for i in range(len(tdb)):
        ts = tdb.trace(i)["timestamp"]
        assert (start[i], end[i]) == (int(ts[0]), int(ts[-1]))
    # hpcrun's header range of each profile (trace-min-time, trace-max-time) is its line's range
    headers = [read_hpcrun(f, values=False).header
               for f in glob.glob(str(shared_data / "hpctoolkit-extra" / "meas-cxx1024" / "*.hpcrun"))]
    assert sorted(int(h["trace-max-time"]) for h in headers) == sorted(end.tolist())
    assert sorted(int(h["trace-min-time"]) for h in headers) == sorted(start.tolist())
    assert int(end.max()) == tdb.max_timestamp  # only the last process reaches the database's end


def test_no_line_is_active_after_its_process_ended(cxx: Experiment, tmp_path: Path) -> None:
    procs = cxx.processes
    assert len(procs) == 64 and all(len(p.cpu) == 16 for p in procs.processes)
    tm = TraceModel(cxx)
    slot = {int(p): k for k, p in enumerate(cxx.db.trace.prof_index.tolist())}
    start, end = cxx.db.trace.line_bounds()
    ends = {p: int(end[k]) for p, k in slot.items()}
    proc_end = {g: max(ends[i] for i in p.profiles) for g, p in enumerate(procs.processes)}
    # the serve view: no sample after a line's end (nor after its process's)
    probe = tm.t_min + np.linspace(0, tm.t_max - tm.t_min, 4001).astype(np.int64)
    for i, p in enumerate(tm.profile):
        rows = tm.sample_rows(i, probe)
        assert not (rows[probe >= ends[p]] >= 0).any()
        assert not (rows[probe >= proc_end[tm.group[i]]] >= 0).any()
    # run 1's main thread ends at its own 1.09 s, not at the database's 80.3 s
    main = procs.processes[0].cpu[0]
    assert (ends[main] - tm.t_min) / S == pytest.approx(1.093, abs=1e-3)
    # export-trace: every process its own Perfetto process; no slice past its line's end
    out = tmp_path / "cxx.json"
    counts = export_trace(cxx, out)
    assert counts["processes"] == 64 and counts["tracks"] == 1024
    doc = json.loads(out.read_text())
    t0 = doc["otherData"]["time_origin_ns"]
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert sorted(names.values()) == sorted(p.label for p in procs.processes) and len(set(names.values())) == 64
    threads = [e for e in doc["traceEvents"] if e["name"] == "thread_name"]
    assert {e["args"]["name"] for e in threads} == {f"core 0 thread {k}" for k in range(16)}
    last: dict[int, float] = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            last[e["tid"]] = max(last.get(e["tid"], 0.0), e["ts"] + e["dur"])
    for tid, t in last.items():
        assert t0 + t * 1000 <= ends[tid] + 1000  # microseconds in the JSON
    mains = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "main thread"]
    assert max(e["dur"] for e in mains) < 1.5e6  # no main-thread slice runs on to the end of the database


def test_window_statistics_never_exceed_rows_times_window(cxx: Experiment) -> None:
    tm = TraceModel(cxx)
    for a in (0, 24, 48):  # 24 s windows
        t0 = tm.t_min + a * S
        t1 = t0 + 24 * S
        w = window(tm, t0, t1, 1)
        assert w["busy"] + w["idle"] == w["present"] <= w["capacity"] == 1024 * 24 * S
        # only the 16 threads of the process running at a moment are present: about 16 x 24 thread-seconds
        assert w["present"] <= 16 * 24 * S * 1.01
        # each process's own rows: never more than its 16 threads x the window, nor its lifetime
        for g in range(0, 64, 7):
            rows = [i for i, grp in enumerate(tm.group) if grp == g]
            sub = window(tm, t0, t1, 1, rows[0], len(rows))
            life = sum(max(0, min(int(tm.end[i]), t1) - max(int(tm.start[i]), t0)) for i in rows)
            assert sub["present"] == life <= 16 * (t1 - t0)
    whole = window(tm, tm.t_min, tm.t_max, 1)
    assert whole["present"] == int((tm.end - tm.start).sum())


def test_blame_lines_end_with_their_profiles(cxx: Experiment) -> None:
    """blame already read lines this way: per process, work + idleness = threads x span, and the spans are the
    processes' own (about 1.1 s each), not stretched to the database's end."""
    res = blame(cxx, None, load_rules(None))
    assert len(res.processes) == 64
    tdb = cxx.db.trace
    start, end = tdb.line_bounds()
    by_prof = {int(p): (int(start[k]), int(end[k])) for k, p in enumerate(tdb.prof_index.tolist())}
    for p in res.processes:
        lo = min(by_prof[i][0] for i in p.threads)
        hi = max(by_prof[i][1] for i in p.threads)
        assert p.span_ns == hi - lo < 2 * S
        assert p.work_s + p.idleness_s == pytest.approx(len(p.threads) * p.span_ns / S, rel=1e-9)
