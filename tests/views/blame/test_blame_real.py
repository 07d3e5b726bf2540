"""``hpcsa blame`` on real data: GPU busy time against SQL over the vendor records, and CPU idleness of real
OpenMP measurements against a brute-force reference (every elementary interval, exact fractions)."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hpcsa.views import tree as T
from hpcsa.views.blame.attribute import IDLENESS_M, WAIT_M, WORK_M, _layout, blame
from hpcsa.views.blame.report import call_path
from hpcsa.views.blame.rules import Rules, load_rules
from hpcsa.views.experiment import Experiment, open_experiment
from tests.conftest import run_cli

NSYS = {"cloverleaf": "nvidia/nsys-2024.5-cloverleaf-4xa100/perlmutter-cloverleaf-cuda.sqlite",
        "streams": "nvidia/nsys-2023.1-a100-streams/report13.sqlite"}

# The union of a device's operation intervals, in SQL only: a running maximum of the ends starts a new group
# wherever an operation begins after everything before it has ended.
UNION_SQL = """
WITH ops AS ({ops}),
o AS (SELECT s, e, MAX(e) OVER (ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM ops),
g AS (SELECT s, e, SUM(CASE WHEN reach IS NULL OR s > reach THEN 1 ELSE 0 END)
             OVER (ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS grp FROM o)
SELECT SUM(ge - gs), MAX(ge) - MIN(gs) FROM (SELECT MIN(s) AS gs, MAX(e) AS ge FROM g GROUP BY grp)
"""


def sql_busy(path: Path) -> list[tuple[int, int]]:
    """(busy ns, span ns) per device, from kernels, copies and memsets."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    kinds = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
             if t in tables]
    devices = sorted({d for t in kinds for (d,) in con.execute(f"SELECT DISTINCT deviceId FROM {t}")})
    out = []
    for dev in devices:
        ops = " UNION ALL ".join(f"SELECT start AS s, end AS e FROM {t} WHERE deviceId = {int(dev)}" for t in kinds)
        busy, span = con.execute(UNION_SQL.format(ops=ops)).fetchone()
        out.append((int(busy), int(span)))
    con.close()
    return out


@pytest.mark.parametrize("name", sorted(NSYS))
def test_gpu_busy_equals_the_union_of_operations_in_sql(shared_data: Path, tmp_path: Path, name: str) -> None:
    src = shared_data / "gpu-records" / NSYS[name]
    run_cli("ingest", str(src), "-o", str(tmp_path / "m"), check=True)
    run_cli("prof", str(tmp_path / "m"), "-o", str(tmp_path / "d"), check=True)
    res = blame(open_experiment(tmp_path / "d"), tmp_path / "b.d", load_rules())
    expected = sql_busy(src)
    got = sorted((g.busy_ns, g.span_ns) for g in res.gpus)
    assert got == sorted(expected)
    for g in res.gpus:
        assert g.busy_ns + g.idle_ns == g.span_ns
        assert sum(g.blame_s.values()) + g.unattributed_s == pytest.approx(g.idle_ns / 1e9, rel=1e-12)


# -- a brute-force reference for the CPU charges ----------------------------------------------------------


def naive_states(exp: Experiment, rules: Rules) -> dict[int, str]:
    """ctx id -> "work" / "overhead" / "idle", by walking each context's path from the root in Python."""
    c, fn, mods = exp.cct, exp.meta.functions, exp.meta.modules
    out = {}
    for row in range(len(c)):
        path = []
        r = row
        while r >= 0:
            path.append(r)
            r = int(c.parent[r])
        state = "work"
        for r in reversed(path):
            f = int(c.function[r])
            if c.kind[r] != T.FUNCTION or f < 0:
                continue
            raw = fn.names[f] or ""
            name = raw if raw.startswith("<unknown procedure>") else raw.split(" [")[0]
            m = int(fn.module[f])
            mod = mods[m] if m >= 0 else None
            if rules.matches("gpu_sync", name) or rules.matches("wait", name):
                state = "idle"
            elif rules.matches("gpu_launch", name):
                state = "work"
            elif rules.matches("overhead", name) or (mod and rules.matches("overhead_modules", mod)):
                state = "idle" if state == "idle" else "overhead"
            elif mod and not rules.matches("system_modules", mod):
                state = "work"
        out[int(c.ctx_id[row])] = state
    return out


def brute_force(lines: list[np.ndarray], states: dict[int, str]) -> tuple[dict, dict, Fraction]:
    """Per (thread position, ctx): work and idleness in ns as exact fractions; plus unattributed idleness."""
    T_ = len(lines)
    times = np.unique(np.concatenate([ln["timestamp"].astype(np.int64) for ln in lines]))
    lo, hi = min(int(ln["timestamp"][0]) for ln in lines), max(int(ln["timestamp"][-1]) for ln in lines)
    ctx_at = []
    for ln in lines:
        ts = ln["timestamp"].astype(np.int64)
        k = np.searchsorted(ts, times[:-1], "right") - 1
        ctx = np.where(k >= 0, ln["ctxId"][np.maximum(k, 0)].astype(np.int64), 0)
        ctx[k >= len(ts) - 1] = 0  # the last element ends the line
        ctx_at.append(ctx.tolist())
    work: dict = {}
    idle: dict = {}
    lost = Fraction(0)
    for k in range(len(times) - 1):
        a, b = int(times[k]), int(times[k + 1])
        if a < lo or a >= hi:
            continue
        dt = b - a
        now = [(j, ctx_at[j][k], "absent" if ctx_at[j][k] == 0 else states.get(ctx_at[j][k], "work"))
               for j in range(T_)]
        working = [(j, c) for j, c, s in now if s in ("work", "overhead")]
        present = [(j, c) for j, c, s in now if s == "idle"]
        for j, c in working:
            work[(j, c)] = work.get((j, c), 0) + dt
            idle[(j, c)] = idle.get((j, c), Fraction(0)) + Fraction(dt * (T_ - len(working)), len(working))
        if not working:
            if present:
                for j, c in present:
                    idle[(j, c)] = idle.get((j, c), Fraction(0)) + Fraction(dt * T_, len(present))
            else:
                lost += dt * T_
    return work, idle, lost


def point(exp: Experiment, profile: int, metric: str) -> dict[int, float]:
    mid = exp.meta.prop_metric_id(metric, "point")
    pv = exp.db.profiles.profile(profile)
    sel = pv.metric_ids == mid
    return dict(zip(pv.value_ctx_ids()[sel].tolist(), pv.values[sel].tolist(), strict=True))


def check_against_brute_force(src: Experiment, out: Experiment, processes: int | None = None) -> list[float]:
    """Every CPU charge equals the brute-force reference exactly (one rounding of the exact fraction);
    returns the parallel efficiencies."""
    states = naive_states(src, load_rules())
    effs = []
    for _label, cpu, _all, _gpus in _layout(src)[:processes]:
        work, idle, lost = brute_force([ln.elements for ln in cpu], states)
        tot_w, tot_i = Fraction(0), lost
        for j, ln in enumerate(cpu):
            want_w = {c: v / 1e9 for (jj, c), v in work.items() if jj == j and v}
            want_i = {c: float(v / 10**9) for (jj, c), v in idle.items() if jj == j and v}
            if j == 0 and lost:
                want_i[0] = want_i.get(0, 0.0) + float(lost / 10**9)
            assert point(out, ln.profile, WORK_M) == want_w
            assert point(out, ln.profile, IDLENESS_M) == want_i
            tot_w += sum(v for (jj, _), v in work.items() if jj == j)
            tot_i += sum(v for (jj, _), v in idle.items() if jj == j)
        span = max(int(ln.elements["timestamp"][-1]) for ln in cpu) - min(int(ln.elements["timestamp"][0]) for ln in cpu)
        assert tot_w + tot_i == len(cpu) * span  # conservation, exactly, in the reference too
        effs.append(float(tot_w / (tot_w + tot_i)))
    return effs


def test_openmp_loops_parallel_efficiency(hpctoolkit_data: Path, tmp_path: Path) -> None:
    run_cli("prof", str(hpctoolkit_data / "meas" / "loops-cputime-t.m"), "-o", str(tmp_path / "d"), check=True)
    src = open_experiment(tmp_path / "d")
    res = blame(src, tmp_path / "b.d", load_rules())
    out = open_experiment(tmp_path / "b.d")
    (eff,) = check_against_brute_force(src, out)
    (p,) = res.processes
    assert len(p.threads) == 4
    assert p.efficiency == pytest.approx(eff, rel=1e-14)
    assert 0.5 < eff < 1.0  # four threads, the program's parallel loops; the serial start is idleness


@pytest.fixture(scope="module")
def cxx1024(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Experiment, Experiment, object]:
    meas = shared_data / "hpctoolkit-extra" / "meas-cxx1024"
    if not meas.is_dir():
        pytest.skip(f"{meas} is absent")
    tmp = tmp_path_factory.mktemp("cxx1024")
    run_cli("prof", str(meas), "-o", str(tmp / "d"), check=True)
    src = open_experiment(tmp / "d")
    res = blame(src, tmp / "b.d", load_rules())
    return src, open_experiment(tmp / "b.d"), res


def test_openmp_barrier_waiting_is_charged_to_working_contexts(cxx1024) -> None:
    src, out, res = cxx1024
    # 64 runs of 16 threads into one directory, without MPI ranks: told apart by time
    assert len(res.processes) == 64 and all(len(p.threads) == 16 for p in res.processes)
    effs = check_against_brute_force(src, out, processes=3)
    for p, eff in zip(res.processes, effs, strict=False):
        assert p.efficiency == pytest.approx(eff, rel=1e-14)
    waited = {c: v for c, v in res.by_context[WAIT_M].items() if v}
    # the threads waited in libgomp (its stripped wait loops), and that time is charged to the working threads
    assert waited and all(any("libgomp" in f for f in call_path(out, c)) for c in waited)
    idle = res.by_context[IDLENESS_M]
    at_work = sum(v for c, v in idle.items() if c not in waited)
    assert at_work > 0.9 * sum(idle.values())
    top = max(idle, key=idle.get)
    assert "_omp_fn" in " ".join(call_path(out, top))
