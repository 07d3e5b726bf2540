"""What ``hpcsa prof`` computes, checked against hand-computed values and independent recomputation."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from hpcsa.aggregate import driver
from hpcsa.aggregate.inputs import default_output_name
from hpcsa.aggregate.metrictable import parse_statistics
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db.database import open_database
from hpcsa.formats.db.propagate import TreeArrays, propagate
from hpcsa.formats.measurement.hpcrun import read_hpcrun, write_hpcrun
from tests.aggregate.profcheck import build, read_sums, root_execution
from tests.conftest import assert_one_line_error, run_cli
from tests.formats.trees import preorder

# -- propagation on a hand-made tree ---------------------------------------------------------------------
#
#   0 root
#   1   entry            (call)
#   2     main           (call)
#   3       loop L1                 no value of its own
#   4         line a     = 1
#   5           f        (call) = 4
#   6         loop L2
#   7           line b   = 2
#   8       loop L3      = 8        a value of its own
#   9         line c     = 16
PARENT = np.array([-1, 0, 1, 2, 3, 4, 3, 6, 2, 8])
CALL = np.array([False, True, True, False, False, True, False, False, False, False])
LOOP = np.array([False, False, False, True, False, False, True, False, True, False])
DEPTH = np.array([0, 1, 2, 3, 4, 5, 4, 5, 3, 4])


def _tree() -> TreeArrays:
    end = np.arange(len(PARENT)) + 1
    for c in range(len(PARENT) - 1, 0, -1):  # ids are pre-order: a subtree is an id range
        end[PARENT[c]] = max(end[PARENT[c]], end[c])
    return TreeArrays.build(PARENT, DEPTH, CALL, LOOP, end)


def test_propagation_into_the_four_scopes() -> None:
    ctx = np.array([4, 5, 7, 8, 9, 9])
    p = propagate(ctx, np.zeros(6, np.int64), np.array([1.0, 4.0, 2.0, 8.0, 10.0, 6.0]), _tree())
    assert p.ctx.tolist() == list(range(10)) and set(p.metric.tolist()) == {0}
    assert p.point.tolist() == [0, 0, 0, 0, 1, 4, 0, 2, 8, 16]
    assert p.execution.tolist() == [31, 31, 31, 7, 5, 4, 2, 2, 24, 16]
    # function: stops at calls (f is not in line a's, nor main in the entry's)
    assert p.function.tolist() == [0, 0, 27, 3, 1, 4, 2, 2, 24, 16]
    # loop-free sums of the loops: L1 takes line a only, L3 itself and line c
    assert p.noloops[[3, 6, 8]].tolist() == [1, 2, 24]
    # hpcprof's thread lex_aware: a loop without a value of its own reports its function sum (L1: 3, not 1)
    assert p.lex_aware.tolist() == [0, 0, 27, 3, 1, 4, 2, 2, 24, 16]
    assert np.flatnonzero(p.aside).tolist() == [3]  # kept aside for the summary: L1 = 1


def test_duplicate_values_are_summed_and_metrics_kept_apart() -> None:
    p = propagate(np.array([7, 7, 5]), np.array([3, 3, 9]), np.array([0.5, 0.25, 2.0]), _tree())
    pairs = list(zip(p.ctx.tolist(), p.metric.tolist(), strict=True))
    # (context, metric) pairs present: ancestors of 7 for metric 3, ancestors of 5 for metric 9; sorted
    assert pairs == [(0, 3), (0, 9), (1, 3), (1, 9), (2, 3), (2, 9), (3, 3), (3, 9), (4, 9), (5, 9), (6, 3), (7, 3)]
    assert p.point[pairs.index((7, 3))] == 0.75 and p.execution[pairs.index((0, 3))] == 0.75
    assert p.execution[pairs.index((0, 9))] == 2.0 and p.function[pairs.index((4, 9))] == 0.0


def _random_tree(n: int, seed: int) -> tuple[TreeArrays, np.ndarray, np.ndarray, np.ndarray]:
    """A random tree with pre-order ids, and its parent / call / loop columns."""
    rng = np.random.default_rng(seed)
    _order, par, depth, end = preorder(np.array([-1] + [int(rng.integers(max(0, i - 40), i)) for i in range(1, n)]))
    call = rng.random(n) < 0.3
    loop = (rng.random(n) < 0.2) & ~call
    call[0] = loop[0] = False
    return TreeArrays.build(par, depth, call, loop, end), par, call, loop


@pytest.mark.parametrize("chunk", [None, 300])
def test_propagation_agrees_with_walking_up_every_path(chunk: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcsa.formats.db import propagate as prop

    if chunk:
        monkeypatch.setattr(prop, "QUERY_CHUNK", chunk)  # metrics processed in several groups
    tree, par, call, loop = _random_tree(1500, 7)
    rng = np.random.default_rng(8)
    ctx, met, val = rng.integers(0, 1500, 3000), rng.integers(0, 12, 3000), rng.random(3000)
    p = propagate(ctx, met, val, tree)
    want: dict[tuple[int, int], list[float]] = {}
    for d, m, v in zip(ctx.tolist(), met.tolist(), val.tolist(), strict=True):
        c, fn_open, nl_open = d, True, True
        while c >= 0:  # the value counts in every ancestor's execution, until a call for function, ...
            w = want.setdefault((c, m), [0.0, 0.0, 0.0])
            w[0] += v
            w[1] += v if fn_open else 0.0
            w[2] += v if nl_open else 0.0
            fn_open &= not call[c]
            nl_open &= not (call[c] or loop[c])  # ... and until a call or a loop for the loop-free sum
            c = par[c]
    got = {(c, m): (e, f, n) for c, m, e, f, n in zip(p.ctx.tolist(), p.metric.tolist(), p.execution.tolist(),
                                                     p.function.tolist(), p.noloops.tolist(), strict=True)}
    assert set(got) == set(want)
    for k, (e, f, n) in want.items():
        assert got[k] == pytest.approx((e, f, n), rel=1e-12, abs=1e-12), k
    assert list(zip(p.ctx.tolist(), p.metric.tolist(), strict=True)) == sorted(got)


@pytest.mark.parametrize("chunk", [None, 700])
def test_profiles_propagated_together_get_exactly_their_values_alone(chunk: int | None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of profiles propagated in one call: each profile's rows are bit-for-bit those of the profile
    propagated alone (the same sums in the same order), and its closure is every ancestor of its points."""
    from hpcsa.formats.db import propagate as prop

    if chunk:
        monkeypatch.setattr(prop, "QUERY_CHUNK", chunk)
    tree, par, _, _ = _random_tree(800, 3)
    rng = np.random.default_rng(4)
    profiles = []
    for b in range(9):
        n = 0 if b == 4 else int(rng.integers(1, 400))  # one profile without values
        deep = rng.integers(600, 800, n // 2)  # points deep in the tree, and duplicates summed in order
        ctx = np.concatenate([deep, rng.integers(0, 800, n - len(deep)), deep[:3]])
        profiles.append((ctx, rng.integers(0, 3 + b, len(ctx)), rng.standard_normal(len(ctx)) * 10.0 ** b))
    prof = np.repeat(np.arange(9), [len(c) for c, _, _ in profiles])
    together = propagate(*(np.concatenate([p[k] for p in profiles]) for k in range(3)), tree, prof)
    for b, (ctx, met, val) in enumerate(profiles):
        alone = propagate(ctx, met, val, tree)
        rows = together.prof == b
        for name in ("ctx", "metric", "point", "function", "lex_aware", "execution", "noloops", "aside"):
            assert np.array_equal(getattr(together, name)[rows], getattr(alone, name)), (b, name)
        cb, cc = prop.closure(ctx, tree)
        want = set()
        for c in set(ctx.tolist()):
            while c >= 0 and c not in want:
                want.add(c)
                c = int(par[c])
        assert cc.tolist() == sorted(want) and not cb.any()
    assert np.array_equal(together.prof, np.sort(together.prof))


# -- statistics --------------------------------------------------------------------------------------------


def test_statistics_words() -> None:
    assert parse_statistics(None) == ("Sum",)
    assert parse_statistics(["mean,max", "sum"]) == ("Sum", "Mean", "Max")
    assert parse_statistics(["stats"]) == ("Sum", "Mean", "StdDev", "CfVar", "Min", "Max")
    with pytest.raises(HpcsaError, match="unknown statistic"):
        parse_statistics(["median"])


def test_summary_partials_recomputed_from_the_threads(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """With -M stats the summary holds count, sum, sum of squares, min and max of the threads' values."""
    db_path = tmp_path / "stats.d"
    build(hpctoolkit_data / "meas" / "loops-cputime-t.m", db_path, statistics=parse_statistics(["stats"]))
    db = open_database(db_path)
    meta = db.meta
    metric = "CPUTIME (sec)"
    threads: dict[tuple[int, str], list[float]] = {}
    for i in range(1, len(db.profiles)):
        prof = db.profiles.profile(i)
        names = meta.prop_metric_names()
        for c, m, v in zip(prof.value_ctx_ids().tolist(), prof.metric_ids.tolist(), prof.values.tolist(),
                           strict=True):
            threads.setdefault((c, names[m][1]), []).append(v)
    summary = db.profiles.summary()
    checked = 0
    for (c, scope), vals in threads.items():
        if scope == "lex_aware":
            continue  # hpcprof's thread lex_aware is not what its summary sums (see propagate.py)
        got = summary.get(c)
        def partial(f: str, comb: str, got: dict[int, float] = got, scope: str = scope) -> float | None:
            return got.get(meta.stat_metric_id(metric, scope, f, comb))

        assert partial("$$", "sum") == pytest.approx(sum(vals), rel=1e-12)
        assert partial("($$^2)", "sum") == pytest.approx(sum(v * v for v in vals), rel=1e-12)
        assert partial("$$", "min") == min(vals) and partial("$$", "max") == max(vals)
        if scope == "execution":  # present in a thread exactly where it has an execution value
            assert partial("1", "sum") == len(vals)
        checked += 1
    assert checked > 100
    variants = {v for root in db.metrics.roots for v in root.get("variants", {})}
    assert variants == {"Sum", "Mean", "StdDev", "CfVar", "Min", "Max"}
    # The Sum partial is the same with and without the other statistics.
    plain = tmp_path / "sum.d"
    build(hpctoolkit_data / "meas" / "loops-cputime-t.m", plain)
    a, b = open_database(plain), db
    sa, sb = a.profiles.summary(), b.profiles.summary()
    for c in sa.ctx_ids.tolist():
        for scope in ("point", "function", "lex_aware", "execution"):
            x = sa.get(c).get(a.meta.stat_metric_id(metric, scope))
            assert x == sb.get(c).get(b.meta.stat_metric_id(metric, scope))


# -- GPU samples hpcprof would drop ------------------------------------------------------------------------


def test_samples_of_an_unlaunched_kernel_are_kept(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """Without the kernel's entry node (the launch), hpcprof gives every template of the launch context
    the factor 0 and drops the samples (HPCToolkit's GPU reconstruction of call paths from flat samples). hpcsa keeps them below an
    unknown caller under ``<gpu kernel>``: nothing is lost."""
    src = hpctoolkit_data / "meas" / "recursion-cuda-nvidiapc-t.m"
    meas = tmp_path / "m"
    meas.mkdir()
    for sub in ("structs", "gpubins"):
        os.symlink(src / sub, meas / sub)
    gpubin = next((src / "gpubins").glob("*.gpubin")).name
    for f in src.glob("*.hpcrun"):
        prof = read_hpcrun(f)
        lm = next((e.id for e in prof.loadmap if e.path.endswith(gpubin)), None)
        kernel = (prof.cct["lm_id"] == lm) & ((prof.cct["flags"] & 1) == 1)
        if "-000-" in f.name and kernel.any():
            dropped = set(prof.cct["id"][kernel].tolist())
            prof.cct = prof.cct[~kernel]
            keep = ~np.isin(prof.value_nodes(), list(dropped))
            from hpcsa.formats.measurement.hpcrun import pack_values

            prof.values, prof.index = pack_values(prof.value_nodes()[keep], prof.values["metric"][keep],
                                                  prof.value_floats()[keep], prof.metrics, prof.cct["id"])
        write_hpcrun(meas / f.name, prof)
    out = tmp_path / "db.d"
    build(meas, out)
    read, written = read_sums(meas), root_execution(out)
    main = next(k for k in read if "GINS" in read[k])
    assert written[main]["GINS"] == pytest.approx(read[main]["GINS"], rel=1e-12)
    db = open_database(out)
    t = db.meta.contexts
    names = db.meta.functions.names
    kernel_rows = [r for r in range(len(t)) if t.flags[r] & 1 and names[t.function[r]] == "<gpu kernel>"]
    unknown = [r for r in range(len(t)) if t.lexical_type[r] == 0 and not t.flags[r] & 1
               and t.parent[r] in kernel_rows]
    assert len(unknown) == 1  # every sample went below the unknown caller
    gins = db.meta.prop_metric_id("GINS", "execution")
    below = db.profiles.profile(1 if db.profiles.profile(1).get(0).get(gins) else 2)
    assert below.get(int(t.ctx_id[unknown[0]]))[gins] == pytest.approx(read[main]["GINS"], rel=1e-12)


# -- the command ---------------------------------------------------------------------------------------------


def test_default_output_names() -> None:
    assert default_output_name(["/x/hpctoolkit-lulesh-measurements"], "lulesh2") == "hpctoolkit-lulesh-database"
    assert default_output_name(["/x/hpctoolkit-a-measurements-17"], None) == "hpctoolkit-a-database-17"
    assert default_output_name(["/x/run.m"], "/bin/prog") == "hpctoolkit-prog-database"


def test_command_writes_the_default_database(hpctoolkit_data: Path, tmp_path: Path) -> None:
    proc = run_cli("prof", str(hpctoolkit_data / "meas" / "small.m"), "-j", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = proc.stderr.strip().splitlines()[-1]
    # 13 contexts: those of hpcprof's own database of this measurement (dbase/small.d), entry point included
    assert summary.startswith("hpcsa prof: 1 profiles, 13 contexts, 94 values, 13 trace elements -> ")
    assert summary.endswith(" s")
    db = tmp_path / "hpctoolkit-testmeas-small-database"
    assert sorted(p.name for p in db.iterdir()) == ["cct.db", "meta.db", "metrics", "profile.db", "trace.db"]
    no_traces = run_cli("prof", str(hpctoolkit_data / "meas" / "small.m"), "-o", "nt.d", "--no-traces", cwd=tmp_path)
    assert no_traces.returncode == 0 and not (tmp_path / "nt.d" / "trace.db").exists()
    doc = yaml.safe_load((db / "metrics" / "default.yaml").read_text())
    assert doc["version"] == 0


def _copy_measurement(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    for f in dst.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    return dst


@pytest.mark.parametrize("damage", ["truncated profile", "garbage profile", "truncated trace"])
def test_bad_input_is_one_line_and_leaves_nothing(hpctoolkit_data: Path, tmp_path: Path, damage: str) -> None:
    meas = _copy_measurement(hpctoolkit_data / "meas" / "loops-cputime-t.m", tmp_path / "m")
    victim = sorted(meas.glob("*-002-*.hpcrun"))[0]
    if damage == "truncated profile":
        victim.write_bytes(victim.read_bytes()[:3000])
    elif damage == "garbage profile":
        victim.write_bytes(b"not a profile at all" * 100)
    else:
        victim = victim.with_suffix(".hpctrace")
        victim.write_bytes(victim.read_bytes()[:-5])
    out = tmp_path / "out"
    out.mkdir()
    proc = run_cli("prof", str(meas), "-o", str(out / "db.d"), "-j", "2")
    assert_one_line_error(proc, victim.name)
    assert list(out.iterdir()) == []  # no database, no partial directory


def test_bad_arguments(hpctoolkit_data: Path, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("prof", str(tmp_path / "nowhere.m")), "nowhere.m")
    (tmp_path / "empty.m").mkdir()
    assert_one_line_error(run_cli("prof", str(tmp_path / "empty.m")), "empty.m")
    small = str(hpctoolkit_data / "meas" / "small.m")
    bad = run_cli("prof", small, "-M", "median", "-o", str(tmp_path / "x.d"))
    assert bad.returncode == 2 and "unknown statistic" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("prof", small, "-j", "0", "-o", str(tmp_path / "x.d"))
    assert bad.returncode == 2 and "at least 1" in bad.stderr
    assert_one_line_error(run_cli("prof", small, "-S", str(tmp_path / "no.hpcstruct")), "no.hpcstruct")


def test_an_interrupted_run_leaves_no_database(hpctoolkit_data: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcsa.aggregate.phase2 import values as phase2_values

    real = phase2_values.batch_points
    calls = []

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:  # phase 2 has started: blobs, traces and the output's partial files exist
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(phase2_values, "batch_points", failing)
    with pytest.raises(KeyboardInterrupt):
        build(hpctoolkit_data / "meas" / "loops-cputime-t.m", tmp_path / "db.d")
    assert list(tmp_path.iterdir()) == []
    assert isinstance(driver.Options(), driver.Options)


# -- binaries read in place of structure files ---------------------------------------------------------------


def test_binaries_are_read_only_when_they_can_be_trusted(hpctoolkit_data: Path, tmp_path: Path) -> None:
    from hpcsa.aggregate import lexical
    from hpcsa.formats.hpcstruct.reader import read_hpcstruct

    meas = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    vdso_name = next((meas / "vdso").glob("*.vdso")).name
    # Content-addressed: checked against the hash in the name.
    good = lexical.ModuleInfo(str(meas / "vdso" / vdso_name), f"vdso/{vdso_name}", str(meas))
    warnings: list[str] = []
    assert lexical.trusted_binary(good, warnings) == str(meas / "vdso" / vdso_name) and not warnings
    fake = tmp_path / "m"
    (fake / "vdso").mkdir(parents=True)
    raw = bytearray((meas / "vdso" / vdso_name).read_bytes())
    raw[100] ^= 0xFF
    (fake / "vdso" / vdso_name).write_bytes(bytes(raw))
    bad = lexical.ModuleInfo(str(fake / "vdso" / vdso_name), f"vdso/{vdso_name}", str(fake))
    assert lexical.trusted_binary(bad, warnings) is None and "does not match the hash" in warnings[-1]
    # A structure file of the measured binary vouches for it, or not.
    witness = read_hpcstruct(meas / "structs" / f"{vdso_name}.hpcstruct").modules[0]
    other = read_hpcstruct(meas / "structs" / "testmeas-loops.hpcstruct").modules[0]
    copy = tmp_path / "libx.so"
    copy.write_bytes((meas / "vdso" / vdso_name).read_bytes())
    info = lexical.ModuleInfo(str(copy), str(copy), str(tmp_path))
    warnings.clear()
    assert lexical.trusted_binary(info, warnings, witness) == str(copy) and not warnings
    assert lexical.trusted_binary(info, warnings, other) is None and "not the measured binary" in warnings[-1]
    # No identity recorded anywhere: used, with a warning.
    assert lexical.trusted_binary(info, warnings) == str(copy) and "may not be the measured build" in warnings[-1]


def test_ignore_structs_reads_the_measured_vdso_and_refuses_another_libgomp(hpctoolkit_data: Path,
                                                                          tmp_path: Path) -> None:
    result = build(hpctoolkit_data / "meas" / "loops-cputime-t.m", tmp_path / "db.d", ignore_structs=True)
    assert any(b.endswith(".vdso") for b in result.binaries)
    gomp = "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"
    if os.path.exists(gomp) and gomp not in result.binaries:
        assert any(w.startswith(gomp) and "not the measured binary" in w for w in result.warnings)
    names = open_database(tmp_path / "db.d").meta.functions.names
    assert "__vdso_clock_gettime" in names  # from the vdso's symbols, as hpcprof names it
