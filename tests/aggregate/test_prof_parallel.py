"""The database does not depend on how the work is split: byte-identical for any ``-j``.

Inputs: a real measurement (GPU reconstruction, traces), and a generated one
with dozens of profiles made from real ones (CPU threads of an OpenMP run and
a CUDA run with PC sampling, each copied under other host ids with values
scaled and thinned, traces shifted), given as two measurement directories.
"""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db.compare import compare_databases
from hpcsa.formats.measurement.hpcrun import ID_ELEMENT
from hpcsa.ingest.synth.replicate import replicate
from tests.aggregate.profcheck import class_two, phase1, read_sums, root_execution
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def generated(hpctoolkit_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    root = tmp_path_factory.mktemp("gen")
    a, b = root / "omp.m", root / "cuda.m"
    n = replicate(hpctoolkit_data / "meas" / "loops-cputime-t.m", a, 10, 1)
    n += replicate(hpctoolkit_data / "meas" / "loops-cuda-nvidiapc-t.m", b, 12, 2)
    return a, b, n


def _identical(x: Path, y: Path) -> None:
    names = sorted(p.relative_to(x).as_posix() for p in x.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(y).as_posix() for p in y.rglob("*") if p.is_file())
    assert {"meta.db", "profile.db", "cct.db", "trace.db", "metrics/default.yaml"} <= set(names)
    for n in names:
        assert filecmp.cmp(x / n, y / n, shallow=False), n


def test_generated_measurement_is_identical_for_any_jobs(generated: tuple[Path, Path, int], tmp_path: Path) -> None:
    a, b, n = generated
    assert n >= 64
    outs = []
    for jobs in (1, 2, 3):
        out = tmp_path / f"j{jobs}.d"
        proc = run_cli("prof", str(a), str(b), "-o", str(out), "-j", str(jobs))
        assert proc.returncode == 0, proc.stderr
        assert f"{n} profiles" in proc.stderr
        outs.append(out)
    _identical(outs[0], outs[1])
    _identical(outs[0], outs[2])
    # Nothing lost: every profile's values arrive at its root.
    read = read_sums(a) | read_sums(b)
    written = root_execution(outs[0])
    assert set(read) == set(written)
    for key, sums in read.items():
        for metric, total in sums.items():
            assert written[key].get(metric, 0.0) == pytest.approx(total, rel=1e-12), (key, metric)


def test_real_gpu_measurement_is_identical_for_any_jobs(hpctoolkit_data: Path, tmp_path: Path) -> None:
    meas = hpctoolkit_data / "meas" / "recursion-cuda-nvidiapc-t.m"
    for jobs in (1, 2):
        proc = run_cli("prof", str(meas), "-o", str(tmp_path / f"j{jobs}.d"), "-j", str(jobs))
        assert proc.returncode == 0, proc.stderr
    _identical(tmp_path / "j1.d", tmp_path / "j2.d")
    assert compare_databases(tmp_path / "j1.d", tmp_path / "j2.d").same


def test_reductions_do_not_depend_on_grouping(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """Phase-1 reports and phase-2 states merge to the same result in any grouping (what lets workers,
    and later MPI ranks, reduce them up any tree)."""
    import numpy as np

    from hpcsa.aggregate.handoff import Phase2State, Phase2Targets
    from hpcsa.aggregate.phase1 import survey as phase1_survey
    from hpcsa.aggregate.phase2 import values as phase2_values
    from hpcsa.core.workers import SharedCounter

    meas = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    inputs, _, env = phase1(meas)
    reports = [phase1_survey.survey_profile(p, env) for p in inputs.profiles]
    flat = phase1_survey.merge(reports)
    nested = phase1_survey.merge([phase1_survey.merge(reports[2:]), phase1_survey.merge(reports[:2])])
    assert np.array_equal(flat.raw.nodes, nested.raw.nodes)
    assert sorted(f.input.path for f in flat.profiles) == sorted(f.input.path for f in nested.profiles)
    assert flat.programs == nested.programs == {"testmeas-loops"}

    c2 = class_two(meas, found=flat)
    for name in ("p", "r", "a"):
        (tmp_path / name).write_bytes(b"")
    targets = Phase2Targets(str(tmp_path / "p"), str(tmp_path / "r"), str(tmp_path / "a"), None, None,
                            SharedCounter(phase2_values.SCRATCH_KINDS))
    n = len(c2.profiles)
    whole = Phase2State.empty(c2, np.array([0, n]))
    whole.add(phase2_values.process_batch(c2, 0, 0, n, targets, traces=False))
    parts = [Phase2State.empty(c2, np.arange(n + 1)) for _ in range(2)]
    for i in range(n):  # one batch per profile, in two states
        parts[i % 2].add(phase2_values.process_batch(c2, i, i, i + 1, targets, traces=False))
    parts[1].merge(parts[0])
    for name in ("n_values", "n_ctxs", "pms_size"):
        assert np.array_equal(getattr(whole.place, name), getattr(parts[1].place, name)), name
    assert whole.place.n_aside.sum() == parts[1].place.n_aside.sum()
    assert whole.place.run_values.sum() == parts[1].place.run_values.sum() == whole.place.n_values.sum()
    for name in ("ctx_values", "ctx_bits", "trace_count"):
        assert np.array_equal(getattr(whole, name), getattr(parts[1], name)), name
    assert np.array_equal(whole.cct_layout().offsets, parts[1].cct_layout().offsets)


@pytest.mark.parametrize("workers", [1, 2, 6])
def test_phase2_batches_are_runs_of_consecutive_profiles(workers: int) -> None:
    """Phase-2 batches: runs of consecutive profiles covering each exactly once, each at most about 1/12 of a
    worker's share (and BATCH_BYTES) unless a single profile is larger, and enough batches to balance; a
    small run's batches hold up to MIN_BATCH_BYTES, two or so per worker."""
    from hpcsa.aggregate.handoff import BATCH_BYTES, MIN_BATCH_BYTES, batch_bounds

    rng = np.random.default_rng(workers)
    for scale in (1, 1000):  # a small run (300 KB) and a large one (300 MB)
        costs = np.array([int(c) for c in rng.integers(1, 1000, 500)] + [50_000] + [7] * 30) * scale  # one giant
        bounds = batch_bounds(costs, workers)
        assert bounds[0] == 0 and bounds[-1] == len(costs) and (np.diff(bounds) > 0).all()
        total = int(costs.sum())
        share = total // (12 * workers)
        target = min(BATCH_BYTES, share if share >= MIN_BATCH_BYTES else min(MIN_BATCH_BYTES, total // (2 * workers)))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            assert b - a == 1 or costs[a:b - 1].sum() < target  # through the profile that reaches the target
        if scale > 1:
            assert len(bounds) - 1 >= min(len(costs), 12 * workers) // 2
        else:  # fewer, larger batches, but two or so per worker
            assert len(bounds) - 1 < 12 * workers
            assert len(bounds) - 1 >= min(len(costs), 2 * workers) - 1
    assert batch_bounds(np.zeros(0, np.int64), workers).tolist() == [0]


def test_phase2_costs_are_what_phase1_kept(tmp_path: Path) -> None:
    """A profile costs phase 2 what phase 1 kept of it plus its trace, not its files' section alignment (the
    real 1,024-thread run: 6 KB files of a few hundred bytes of tree and values); its files' bytes where
    nothing was kept."""
    from hpcsa.aggregate.phase2.share import phase2_costs
    from hpcsa.aggregate.profile_table import ProfileFacts, ProfileInput, ProfileTable

    def facts(size: int, trace_size: int, kept: tuple[str, int, int] | None) -> ProfileFacts:
        inp = ProfileInput(str(tmp_path / "p.hpcrun"), None, size, trace_size, str(tmp_path))
        return ProfileFacts(inp, np.zeros(0, ID_ELEMENT), 0, 0, 0, 0, kept)

    table = ProfileTable.of([facts(6144, 400, ("k", 0, 350)), facts(6144, 0, None), facts(9000, 12, ("k", 350, 900))])
    assert phase2_costs(table).tolist() == [350 + 400, 6144, 900 + 12]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_phase1_batches_shrink_toward_the_end(workers: int) -> None:
    """Phase-1 batches (guided self-scheduling): every profile once, largest first; no batch over the cap
    unless one profile is; with several workers the last batches are small (the idle time at the end of the
    phase is at most one of them), with one worker a quarter of the bytes each; a bounded number of them."""
    from hpcsa.aggregate.phase1.share import DISCOVER_BATCH_BYTES, _batches
    from hpcsa.aggregate.profile_table import ProfileInputs

    rng = np.random.default_rng(workers)
    sizes = rng.integers(20_000, 60_000, 3000).tolist() + [9 << 20]  # and one profile over the cap
    profiles = ProfileInputs.from_columns(["/m/"] * len(sizes), ["/m"] * len(sizes),
                                          [f"p{i:05d}.hpcrun" for i in range(len(sizes))], sizes,
                                          [0] * len(sizes), [False] * len(sizes))
    batches = _batches(profiles, workers)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(sizes)))
    cost = profiles.cost
    assert (np.diff(cost[flat]) <= 0).all()  # largest first
    totals = [int(cost[b].sum()) for b in batches]
    assert totals[0] == 9 << 20 and len(batches[0]) == 1
    assert all(t <= DISCOVER_BATCH_BYTES + 60_000 for t in totals[1:])
    total = int(cost.sum())
    if workers > 1:
        assert totals[-1] <= total // (64 * workers) + 60_000 and max(totals[-workers:]) < totals[1] / 4
        assert len(batches) <= 40 * workers
    else:
        assert len(batches) <= total // min(DISCOVER_BATCH_BYTES, total // 4) + 2
    assert _batches(ProfileInputs.of([]), workers) == []


@pytest.mark.parametrize(("positions", "window", "wide"), [(8, 1, False), (4 << 20, 5000, False),
                                                       (4 << 20, 1, False), (8, 5000, True), (4 << 20, 1 << 30, False)])
def test_transpose_in_many_small_passes_gives_the_same_database(positions: int, window: int, wide: bool,
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """cct.db and the summary do not depend on how the contexts are cut into ranges, nor on how many ranges
    are read from the scratch files at once (windows of one, a few, or all ranges, their inner bounds found
    in the window's entries), nor on how many passes over the profiles' indexes find the windows' bounds (one
    window per pass, each pass reading every index only from where the last one ended; or one pass), nor on
    a first guess of how far to read that is far too short."""
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.handoff import Placement
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase3 import transpose as phase3_transpose
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp_path / "app.m"
    generate(meas, SynthSpec.preset("gpu", 24, contexts=600, samples=20, seed=5), jobs=1)
    ref = tmp_path / "ref.d"
    driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(ref), jobs=1, progress=False))
    monkeypatch.setattr(phase3_transpose, "RANGE_BYTES", 2048)
    monkeypatch.setattr(phase3_transpose, "POSITIONS_BYTES", positions)
    monkeypatch.setattr(phase3_transpose, "WINDOW_BYTES", window)
    monkeypatch.setattr(phase3_transpose, "MIN_READ", 1)
    if wide:  # the 32-bit positions of profiles with 65,536 contexts or more
        monkeypatch.setattr(phase3_transpose, "position_type", lambda place: np.dtype(np.uint32))
    else:
        assert phase3_transpose.position_type(Placement(*([np.array([1, 65535])] * 9))) == np.uint16
        assert phase3_transpose.position_type(Placement(*([np.array([65536])] * 9))) == np.uint32
    real = phase3_transpose.bound_positions
    real_window = phase3_transpose.read_window
    windows = []

    def counted(*args: object) -> phase3_transpose.Window:
        windows.append(1)
        return real_window(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(phase3_transpose, "read_window", counted)
    real_gather = phase3_transpose.gather
    ranges = []

    def gathered(*args: object) -> object:
        ranges.append(1)
        return real_gather(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(phase3_transpose, "gather", gathered)
    passes = []

    def short_guess(*args: object) -> np.ndarray:
        passes.append(1)
        return real(*args[:7], 0.0, *args[8:])  # type: ignore[arg-type]

    monkeypatch.setattr(phase3_transpose, "bound_positions", short_guess)
    small = tmp_path / "small.d"
    driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(small), jobs=1, progress=False))
    assert len(ranges) > 10
    # a pass searches the PMS and the aside blobs: one window per pass, or one pass
    assert len(passes) == (2 * len(windows) if positions == 8 else 2)
    if window == 1:
        assert len(windows) == len(ranges)
    elif window == 5000:  # a few ranges per window
        assert 1 < len(windows) < len(ranges)
    else:
        assert len(windows) == 1
    for name in ("meta.db", "profile.db", "cct.db", "trace.db"):
        assert filecmp.cmp(ref / name, small / name, shallow=False), name


@pytest.mark.parametrize("jobs", [1, 2])
def test_contexts_taken_a_slice_of_profiles_at_a_time_give_the_same_database(
        generated: tuple[Path, Path, int], jobs: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A context with more than SLICE_VALUES values has its cct.db block and summary made a slice of batches
    at a time, its sums from parts of numpy's pairwise summation (SUM_PART): the same bytes as all its values
    at once, for every statistic (sums, sums of squares, counts, extrema), with the set-aside loop-free sums
    and presences of the CPU and GPU profiles merged in slice by slice."""
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.metrictable import parse_statistics
    from hpcsa.aggregate.phase3 import summary as phase3_summary
    from hpcsa.aggregate.phase3 import transpose as phase3_transpose

    a, b, _ = generated
    stats = parse_statistics(["stats"])

    def run(out: Path) -> None:
        driver.aggregate(find_inputs([str(a), str(b)]), driver.Options(output=str(out), jobs=jobs, progress=False,
                                                                         statistics=stats))

    run(tmp_path / "ref.d")
    real_context = phase3_transpose.transpose_context
    real_lengths = phase3_transpose.series_lengths
    sliced: list[int] = []
    merged: list[int] = []

    def counted(*args: object) -> object:
        sliced.append(1)
        return real_context(*args)  # type: ignore[arg-type]

    def lengths(*args: object) -> np.ndarray:
        merged.append(1)
        return real_lengths(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(phase3_transpose, "SLICE_VALUES", 5)
    monkeypatch.setattr(phase3_summary, "SUM_PART", 1)
    monkeypatch.setattr(phase3_transpose, "transpose_context", counted)
    monkeypatch.setattr(phase3_transpose, "series_lengths", lengths)
    run(tmp_path / "sliced.d")
    if jobs == 1:  # (a forked worker's calls are not counted here)
        assert len(sliced) > 10 and merged
    _identical(tmp_path / "ref.d", tmp_path / "sliced.d")


def test_profile_db_begun_a_block_of_profiles_at_a_time_is_the_same(generated: tuple[Path, Path, int],
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """profile.db's identifier tuples and thread profile infos, written when the file is begun a block of
    profiles at a time (the summary's info at the end), are the same bytes in blocks of any size, and from
    class 2's narrowed tuples as from profile.db's records; and read back as every profile's own."""
    from hpcsa.aggregate import driver, sinks
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase1 import id_tuples
    from hpcsa.formats.db import profiledb
    from hpcsa.formats.db.profiledb import ProfileDB

    a, b, n = generated
    for name, block in (("one.d", 1 << 15), ("small.d", 7), ("wide.d", 7)):
        monkeypatch.setattr(sinks._ProfileDBWriter, "BLOCK", block)
        if name == "wide.d":  # class 2's tuples as profile.db's own records, not narrowed
            monkeypatch.setattr(id_tuples, "finalized_rows", lambda physical: profiledb.IDENTIFIER)
        driver.aggregate(find_inputs([str(a), str(b)]), driver.Options(output=str(tmp_path / name), jobs=1,
                                                                         progress=False))
    for name in ("small.d", "wide.d"):
        assert filecmp.cmp(tmp_path / "one.d" / "profile.db", tmp_path / name / "profile.db", shallow=False)
    pdb = ProfileDB(tmp_path / "small.d" / "profile.db")
    assert len(pdb) == n + 1
    ids = {pdb.id_tuple(i).tobytes() for i in range(1, n + 1)}  # type: ignore[union-attr]
    assert len(ids) == n  # every thread profile has its own identifier tuple


def test_trace_lines_of_a_batch_are_each_profiles_own(hpctoolkit_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace lines of a batch, mapped together, are those of each profile mapped alone by the rules
    written out here: records of unknown nodes dropped, contexts through the node's context (the call
    context for call traces), elided instructions to their line, sorted by time (stably) only where the
    measurement announced disorder, a blank after a blank dropped (never across two profiles)."""
    from hpcsa.aggregate.phase2 import points as phase2_points
    from hpcsa.aggregate.phase2 import traces as phase2_traces
    from hpcsa.formats.measurement import hpctrace

    c2 = class_two(hpctoolkit_data / "meas" / "loops-cputime-t.m")
    n = len(c2.profiles)
    assert n >= 3 and all(f.trace_records for f in c2.profiles)
    real_read = hpctrace.read_hpctrace
    points = [phase2_points.profile_points(c2, i) for i in range(n)]
    root_node = {c2.profiles[i].input.trace: int(pt.ids[np.flatnonzero(c2.trace_id[np.maximum(pt.full, 0)] == 0)[0]])
                 for i, pt in enumerate(points)}  # a node traced as blank (the root's context)

    def shuffled(path):  # type: ignore[no-untyped-def]
        tr = real_read(path)
        recs = tr.records[::-1].copy()  # out of order, and blanks at both ends
        recs["ctx"][:2] = root_node[path]
        recs["ctx"][-2:] = root_node[path]
        recs["ctx"][len(recs) // 2] = 10 ** 6  # a node the profile does not have
        return hpctrace.HpctraceFile(tr.flags, recs, tr.version, tr.path)

    monkeypatch.setattr(phase2_traces, "read_hpctrace", shuffled)
    for i, f in enumerate(c2.profiles):
        f.trace_disorder = i % 2
    got = phase2_traces.trace_lines(c2, list(range(n)), phase2_points.BatchPoints.of(points))
    for i, pt in enumerate(points):
        tr = shuffled(c2.profiles[i].input.trace)
        ctx_of = dict(zip(pt.ids.tolist(), (pt.rel if tr.flags & hpctrace.FLAG_CALL_TRACE else pt.full).tolist(),
                          strict=True))
        line = [(int(t), ctx_of.get(int(c), -1)) for t, c in zip(tr.records["time"], tr.records["ctx"], strict=True)]
        line = [(t, c) for t, c in line if c >= 0]
        assert len(line) == len(tr.records) - 1
        lo, hi = min(t for t, _ in line), max(t for t, _ in line)
        if c2.profiles[i].trace_disorder:
            line.sort(key=lambda tc: tc[0])
        want = []
        for t, c in line:
            tid = int(c2.trace_id[c])
            if not (tid == 0 and want and want[-1][1] == 0):
                want.append((t, tid))
        index, elem, glo, ghi = got[i]
        assert index == i and (glo, ghi) == (lo, hi)
        assert list(zip(elem["timestamp"].tolist(), elem["ctxId"].tolist(), strict=True)) == want, i
        assert sum(tid == 0 for _, tid in want) < sum(tid == 0 for _, tid in line)  # blanks dropped


def _logged(fn, tag: str, log: Path):
    """``fn``, writing ``tag`` and the process id to ``log`` on each call (forked workers inherit it)."""
    def run(*args, **kwargs):
        with open(log, "a") as f:
            f.write(f"{tag} {os.getpid()}\n")
        return fn(*args, **kwargs)
    return run


def test_with_workers_the_main_process_propagates_too(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Phase 2 at -j 2 is two busy processes, not two workers and a parent handing them batches of a few
    milliseconds: the main process propagates batches beside one forked worker; the database is -j 1's."""
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase2 import values as phase2_values
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp_path / "app.m"
    generate(meas, SynthSpec.preset("cpu", 64, contexts=800, seed=2))
    ref = tmp_path / "j1.d"
    driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(ref), jobs=1, progress=False))
    log = tmp_path / "pids"
    monkeypatch.setattr(phase2_values, "process_batch", _logged(phase2_values.process_batch, "2", log))
    out = tmp_path / "j2.d"
    driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(out), jobs=2, progress=False))
    by_phase: dict[str, set[str]] = {}
    for line in log.read_text().split("\n")[:-1]:
        phase, pid = line.split()
        by_phase.setdefault(phase, set()).add(pid)
    assert str(os.getpid()) in by_phase["2"] and len(by_phase["2"]) == 2, by_phase
    for name in ("meta.db", "profile.db", "cct.db", "trace.db"):
        assert filecmp.cmp(ref / name, out / name, shallow=False), name


def test_small_inputs_run_each_phase_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below HPCSA_POOL_MIN_BYTES of profiles (phase 1) or of cct.db (phase 3), -j 2 starts no workers once the
    structure files are cached: a pool would cost more than it takes off. A first run, with structure files to
    parse, still starts its worker (which this process works beside); a bound of 0 always starts it. The
    database is the same each way."""
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase1 import structs as phase1_structs
    from hpcsa.aggregate.phase1 import survey as phase1_survey
    from hpcsa.aggregate.phase3 import transpose as phase3_transpose
    from hpcsa.core.workers import POOL_MIN_BYTES
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp_path / "app.m"
    generate(meas, SynthSpec.preset("cpu", 64, contexts=800, seed=3))
    inputs = find_inputs([str(meas)])
    assert inputs.total_bytes < POOL_MIN_BYTES and inputs.structs
    log = tmp_path / "pids"
    monkeypatch.setattr(phase1_structs, "store_structure", _logged(phase1_structs.store_structure, "struct", log))
    monkeypatch.setattr(phase1_survey, "survey_profiles", _logged(phase1_survey.survey_profiles, "profiles", log))
    monkeypatch.setattr(phase3_transpose, "transpose_ranges", _logged(phase3_transpose.transpose_ranges, "cct", log))
    monkeypatch.setenv("HPCSA_CACHE_DIR", str(tmp_path / "cache"))

    def run(name: str, bound: str | None) -> dict[str, set[bool]]:
        """Which processes ran each phase's tasks (True: this one) in a -j 2 run with the given bound."""
        if bound is None:
            monkeypatch.delenv("HPCSA_POOL_MIN_BYTES", raising=False)
        else:
            monkeypatch.setenv("HPCSA_POOL_MIN_BYTES", bound)
        log.unlink(missing_ok=True)
        driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(tmp_path / name), jobs=2,
                                                                      progress=False))
        here: dict[str, set[bool]] = {}
        for line in log.read_text().split("\n")[:-1]:
            task, pid = line.split()
            here.setdefault(task, set()).add(pid == str(os.getpid()))
        return here

    first = run("first.d", None)  # nothing cached: a worker reads profiles and parses beside this process
    assert first["struct"] and first["profiles"] == {True, False}, first
    assert run("second.d", None) == {"profiles": {True}, "cct": {True}}  # cached and small: no workers
    forced = run("forced.d", "0")
    assert False in forced["profiles"] and False in forced["cct"], forced
    assert False in run("bound.d", "1")["profiles"]  # a bound below the input's bytes
    for name in ("second.d", "forced.d", "bound.d"):
        _identical(tmp_path / "first.d", tmp_path / name)


def test_remembered_structure_files_are_checked_beside_the_profiles(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A second small -j 2 run whose structure files are unchanged since they were hashed finds their entries
    without reading the files (no blocking check of every entry first), reads the profiles in this process,
    and checks the entries on the lookup thread meanwhile; an entry damaged since is parsed again, here. The
    database is the same each way."""
    import threading
    import time

    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase1 import cache_lookups
    from hpcsa.aggregate.phase1 import share as phase1_share
    from hpcsa.aggregate.phase1 import structs as phase1_structs
    from hpcsa.formats.hpcstruct import known_digests, parsedcache
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp_path / "app.m"
    generate(meas, SynthSpec.preset("cpu", 64, contexts=800, seed=4))
    cache = tmp_path / "cache"
    monkeypatch.setenv("HPCSA_CACHE_DIR", str(cache))
    monkeypatch.delenv("HPCSA_POOL_MIN_BYTES", raising=False)  # (the tests' default, 0, always starts workers)
    # the structure files as if written long before (a file written within RACY_NS is hashed every time)
    monkeypatch.setattr(known_digests, "clock_ns", lambda: time.time_ns() + 10 * known_digests.RACY_NS)

    def run(name: str) -> None:
        driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(tmp_path / name), jobs=2,
                                                                      progress=False))

    run("first.d")  # parses the structure files, stores their entries, remembers their hashes
    for s in find_inputs([str(meas)]).cpu_structs:  # (one no profile samples is never parsed: left out)
        if not parsedcache.remembered(s.path):
            os.unlink(s.path)
            run("first.d")
    calls: list[tuple[str, int, bool]] = []
    real_lookup, real_store = cache_lookups.read_cached, phase1_structs.store_structure

    def lookup(path: str) -> object:
        calls.append(("lookup", os.getpid(), threading.current_thread() is threading.main_thread()))
        return real_lookup(path)

    def store(path: str) -> object:
        calls.append(("parse", os.getpid(), threading.current_thread() is threading.main_thread()))
        return real_store(path)

    def no_blocking_check(*args: object) -> None:
        raise AssertionError("every entry checked before the profiles")

    monkeypatch.setattr(cache_lookups, "read_cached", lookup)
    monkeypatch.setattr(phase1_structs, "store_structure", store)
    monkeypatch.setattr(phase1_share, "mapped_if_small", no_blocking_check)
    run("second.d")
    n = len(find_inputs([str(meas)]).cpu_structs)
    assert n and calls == [("lookup", os.getpid(), False)] * n, calls
    for entry in (cache / parsedcache.SUBDIR).glob("*.bin"):  # damaged since: a byte of the payload flipped
        data = bytearray(entry.read_bytes())
        data[-5] ^= 0x40
        entry.write_bytes(bytes(data))
    calls.clear()
    run("third.d")
    assert ("parse", os.getpid(), True) in calls and all(pid == os.getpid() for _, pid, _ in calls), calls
    for name in ("second.d", "third.d"):
        _identical(tmp_path / "first.d", tmp_path / name)


@pytest.mark.parametrize("how", ["error", "killed"])
def test_phase2_worker_failure_is_one_error_and_no_database(how: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """At -j 2 a forked phase-2 worker takes batches by itself: an input error it meets reaches the user as
    that error, a worker killed (out of memory, a signal) as one error naming the command; neither hangs the
    run nor leaves a database or a partial directory behind."""
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase2 import values as phase2_values
    from hpcsa.core.errors import HpcsaError
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp_path / "app.m"
    generate(meas, SynthSpec.preset("cpu", 48, contexts=300, seed=4))
    parent = os.getpid()
    real = phase2_values.process_batch

    def failing(c2, batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:
            if how == "killed":
                os._exit(9)
            raise HpcsaError("some.hpcrun", "the profile changed between the two readings")
        return real(c2, batch, *args, **kwargs)

    monkeypatch.setattr(phase2_values, "process_batch", failing)
    out = tmp_path / "out.d"
    with pytest.raises(HpcsaError) as info:
        driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(out), jobs=2, progress=False))
    text = str(info.value)
    assert ("changed between the two readings" in text) if how == "error" else ("ended without its result" in text)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.m"]
