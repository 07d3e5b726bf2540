"""The three views on hand-built databases whose every value is computed by hand in the fixture's docstring.

seed003.d is the recursive program of Fig. 1 of "Effectively Presenting Call Path Profiles of Application Performance": g1 (called from f) costs 6 inclusive, and contains
the recursive g2 (3); g3 (called from m) costs 3. The paper's point: g's inclusive cost is the sum over its
*exposed* instances, 9, in both the callers and the flat view -- not 9 + g2's 3.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.views import open_experiment
from hpcsa.views import tree as T
from hpcsa.views.render import compact
from hpcsa.views.show import render_view
from tests.conftest import assert_one_line_error, run_cli
from tests.views.helpers import SEED003

CPU = "CPUTIME (sec)"


@pytest.fixture(scope="module")
def seed() -> object:
    return open_experiment(SEED003)


def by_label(forest, nodes=None) -> dict[str, int]:  # type: ignore[no-untyped-def]
    nodes = range(len(forest)) if nodes is None else nodes
    return {forest.label(int(n)): int(n) for n in nodes if forest.parent[n] != -2}


def test_top_down_inclusive_and_exclusive(seed) -> None:  # type: ignore[no-untyped-def]
    td = seed.top_down()
    inc, exc = td.values(CPU, "inclusive"), td.values(CPU, "exclusive")
    assert inc[0] == 9  # the experiment's aggregate
    rows = by_label(td)
    assert inc[rows["file1.c:9 → f"]] == 6 and inc[rows["file1.c:10 → g"]] == 3
    g1 = rows["file1.c:3 → g"]
    assert (inc[g1], exc[g1]) == (6, 1)  # g1's own statement costs 1
    # the call-site line (file1.c:3) is not a row of its own: its callee took its place
    assert td.parent[td.call_site[g1]] == -2
    # loops: exclusive (lex_aware) leaves nested loops out -- h under g3 has 1 in the outer loop itself
    loops = [n for n in range(len(td)) if td.label(n) == "loop at file2.c:8"]
    assert sorted((inc[n], exc[n]) for n in loops) == [(2, 0), (2, 1), (3, 0)]


def test_callers_view_counts_recursive_instances_once(seed) -> None:  # type: ignore[no-untyped-def]
    bu = seed.bottom_up(depth=3)
    inc, exc = bu.values(CPU, "inclusive"), bu.values(CPU, "exclusive")
    top = by_label(bu, bu.roots)
    g = top["g"]
    assert inc[g] == 9 and exc[g] == 2  # not 9 + 3
    callers = {bu.label(int(n)): (inc[n], exc[n]) for n in np.flatnonzero(bu.parent == g)}
    assert callers == {"f (at file1.c:3)": (6, 1), "m (at file1.c:10)": (3, 1), "g (at file2.c:3)": (3, 0)}
    assert (inc[top["h"]], exc[top["h"]]) == (7, 7)
    assert (inc[top["m"]], exc[top["m"]], inc[top["f"]]) == (9, 0, 6)
    # the exclusive values of the procedures add up to the total
    assert np.nansum(exc[bu.roots]) == 9


def test_flat_view_with_exposed_instances_and_call_sites(seed) -> None:  # type: ignore[no-untyped-def]
    fl = seed.flat()
    inc, exc = fl.values(CPU, "inclusive"), fl.values(CPU, "exclusive")
    nodes = by_label(fl)
    assert (inc[nodes["g"]], exc[nodes["g"]]) == (9, 2)
    assert (inc[nodes["h"]], exc[nodes["h"]]) == (7, 7)
    assert (inc[nodes["loop at file2.c:8"]], exc[nodes["loop at file2.c:8"]]) == (7, 1)
    assert (inc[nodes["loop at file2.c:9"]], exc[nodes["loop at file2.c:9"]]) == (6, 6)
    assert (inc[nodes["file2.c"]], exc[nodes["file2.c"]]) == (9, 9)
    assert (inc[nodes["file1.c"]], exc[nodes["file1.c"]]) == (9, 0)
    # call sites: inclusive = what the calls from there cost, no exclusive cost of their own
    sites = {(fl.label(int(fl.parent[n])), fl.label(n)): (inc[n], exc[n]) for n in range(len(fl))
             if fl.kind[n] == 17}
    assert sites[("file2.c:3", "→ g")] == (3, 0) and sites[("file2.c:4", "→ h")] == (7, 0)
    assert sites[("file1.c:3", "→ g")] == (6, 0) and sites[("file1.c:10", "→ g")] == (3, 0)
    assert np.nansum(exc[fl.roots]) == 9


def test_flattening_elides_levels(seed) -> None:  # type: ignore[no-untyped-def]
    fl = seed.flat()
    real = [n for n in fl.roots if n != fl.pseudo_node]  # <program root> holds what is above any procedure: 0
    assert sorted(fl.label(int(n)) for n in real) == ["app"]
    procs = fl.flattened(2)
    assert sorted(procs.label(int(n)) for n in procs.roots if n != fl.pseudo_node) == ["f", "g", "h", "m"]
    deeper = procs.flattened(3)  # procedures elided: their loops and lines become top scopes
    assert {"loop at file2.c:8", "file2.c:2", "file1.c:9"} <= {deeper.label(int(n)) for n in deeper.roots}
    loop = by_label(deeper, deeper.roots)["loop at file2.c:8"]
    assert (deeper.values(CPU)[loop], deeper.values(CPU, "exclusive")[loop]) == (7, 1)  # values do not change
    # a scope without children is not elided (flattening a leaf has no effect)
    leaf = by_label(fl)["file2.c:2"]
    assert fl.depth[leaf] == 3 and fl.flattened(4).parent[leaf] == -1


def test_hot_path_follows_eq3(seed) -> None:  # type: ignore[no-untyped-def]
    td = seed.top_down()
    path = [td.label(n) for n in td.hot_path(CPU)]
    # 9 -> 9 -> 9 -> f 6 (>= 4.5) -> g1 6 -> g2 3 (>= 3) -> h 3 -> loop 3 -> loop 3 -> line 3
    assert path == ["Experiment Aggregate Metrics", "main thread", "m", "file1.c:9 → f", "file1.c:3 → g",
                    "file2.c:3 → g", "file2.c:4 → h", "loop at file2.c:8", "loop at file2.c:9", "file2.c:9"]
    strict = [td.label(n) for n in td.hot_path(CPU, threshold=0.6)]
    assert strict[-1] == "file1.c:3 → g"  # 3 < 0.6 x 6: the path stops at g1
    # from any scope: g3 (3) -> h (2 >= 1.5) -> outer loop (2) -> its line 8 and inner loop tie at 1 (>= 1):
    # the first in tree order wins
    g3 = by_label(td)["file1.c:10 → g"]
    assert [td.label(n) for n in td.hot_path(CPU, start=g3)] == ["file1.c:10 → g", "file2.c:4 → h",
                                                                  "loop at file2.c:8", "file2.c:8"]
    with pytest.raises(ValueError):
        td.hot_path(CPU, threshold=0)


def test_derived_metrics_sort_and_compute(tmp_path) -> None:  # type: ignore[no-untyped-def]
    exp = open_experiment(SEED003)
    waste = exp.derive("waste=2*$0 - ${CPUTIME (sec)}")  # = CPUTIME, a linear formula
    ratio = exp.derive("share=$0/9")
    td = exp.top_down()
    assert np.allclose(td.values(waste), td.values(CPU))
    assert waste.percent and ratio.percent  # both linear in the columns: percentages mean something
    assert np.allclose(td.values(ratio, "inclusive")[0], 1.0)
    eff = exp.derive("eff=$0/($0-$0)")  # 0/0 everywhere: undefined, blank
    assert np.isnan(td.values(eff)).all() and not eff.percent
    fl = exp.flat()
    assert np.allclose(fl.values(waste, "exclusive"), fl.values(CPU, "exclusive"), equal_nan=True)
    text = render_view(exp, metrics=["waste"], sort="waste (E)")
    assert "waste (I)" in text and "waste (E)" in text
    for bad in ("$7", "${nope}", "__import__('os')", "$0 +", "$0 & 1"):
        with pytest.raises(HpcsaError):
            exp.derive(f"x={bad}")


def test_cct_structure(seed) -> None:  # type: ignore[no-untyped-def]
    c = seed.cct
    assert c.kind[0] == T.ROOT and c.kind[1] == T.ENTRY and c.parent[1] == 0
    assert (c.parent[1:] < np.arange(1, len(c))).all()  # pre-order: parents first
    assert c.end[0] == len(c) and (c.depth[1:] == c.depth[c.parent[1:]] + 1).all()
    assert np.array_equal(c.row_of(c.ctx_id), np.arange(len(c)))
    # exposed(): an instance is hidden iff an ancestor is in the same group
    g_rows = np.flatnonzero((c.kind == T.FUNCTION) & (c.function == 2))
    mask = T.exposed(np.zeros(len(g_rows), np.int64), g_rows, c.end)
    assert mask.tolist() == [True, False, True]


def test_compact_numbers() -> None:
    assert [compact(v) for v in (0, float("nan"), 1.2345, 12.345, 1234.5, 2.5e6, 1e15, 0.001234, -3.0)] == \
        ["", "", "1.23", "12.3", "1.23k", "2.5M", "1P", "1.23e-03", "-3"]


def test_cli_views_and_formats() -> None:
    proc = run_cli("view", str(SEED003), "--view", "flat", "--format", "json", "--depth", "9", check=True)
    doc = json.loads(proc.stdout)
    g = next(r for r in doc["rows"] if r.get("label") == "g")
    assert g["values"]["CPUTIME (sec) (I)"] == 9 and g["kind"] == "procedure"
    proc = run_cli("view", str(SEED003), "--view", "bottom-up", "--format", "csv", check=True)
    header, *lines = proc.stdout.splitlines()
    assert header.startswith("depth,label,CPUTIME (sec) (I),CPUTIME (sec) (E),hot")
    assert any(line.startswith("0,g,9.0,2.0") for line in lines)
    proc = run_cli("view", str(SEED003), "--hot-path", "--threshold", "60", check=True)
    assert "ends at file1.c:3 → g = 6 (66.7% of the total)" in proc.stdout
    proc = run_cli("view", str(SEED003), "--list-metrics", check=True)
    assert "$0" in proc.stdout and CPU in proc.stdout


def test_text_rendering_shape() -> None:
    text = render_view(open_experiment(SEED003), depth=3)
    lines = text.splitlines()
    assert lines[1].startswith("CPUTIME (sec) (I)  CPUTIME (sec) (E)  Scope")
    start = lines[1].index("Scope")
    # blank cells for zeros; indentation by depth; one row per scope
    assert lines[2][start:].strip() == "Experiment Aggregate Metrics" and "100.0%" in lines[2]
    assert lines[4][start:] == "      m" and lines[4].count("%") == 1  # m has no exclusive cost: blank


def test_bad_input_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert_one_line_error(run_cli("view", str(tmp_path / "nope.d")), "nope.d")
    (tmp_path / "x.d").mkdir()
    assert_one_line_error(run_cli("view", str(tmp_path / "x.d")), "x.d")
    assert_one_line_error(run_cli("view", str(SEED003), "-m", "NOPE"), "seed003.d")
    assert_one_line_error(run_cli("view", str(SEED003), "--derive", "x=$9"), "$9")
    assert_one_line_error(run_cli("view", str(SEED003), "--hot-path", "--from", "zz"), "zz")
    assert_one_line_error(run_cli("view", str(SEED003), "--threshold", "150"), "threshold")


def test_fp_waste_and_relative_efficiency_rank_loops(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Seed 001/003's derived metrics: FP waste = 2 x cycles - flops (peak 2 flops/cycle), efficiency =
    flops / (2 x cycles); sorting by waste ranks loops differently from sorting by cycles."""
    from tests.views.synthetic import DatabaseBuilder, thread_tuple

    b = DatabaseBuilder("fp")
    src = b.file("/src/flux.f90")
    main = b.call(None, b.function("main", -1, src, 1))
    loops = {name: b.line(b.loop(main, src, line), src, line + 1)
             for name, line in (("diffusion", 10), ("copy", 20), ("dense", 30))}
    point = np.zeros((len(b.rows), 2))
    # cycles, flops: diffusion streams data (6% efficient), copy computes nothing, dense runs at 80% of peak
    for name, (cyc, flops) in {"diffusion": (50.0, 6.0), "copy": (20.0, 0.0), "dense": (100.0, 160.0)}.items():
        point[loops[name]] = (cyc, flops)
    b.write(tmp_path / "fp.d", ["CYCLES", "FP_INS"], [(thread_tuple(0, 0, 0), point)])
    exp = open_experiment(tmp_path / "fp.d")
    waste = exp.derive("FPWASTE=2*$0-$1")
    eff = exp.derive("efficiency=${FP_INS}/(2*${CYCLES})")
    fl = exp.flat()
    loop_nodes = [n for n in range(len(fl)) if fl.label(n).startswith("loop at")]
    by_waste = sorted(loop_nodes, key=lambda n: -fl.values(waste)[n])
    by_cycles = sorted(loop_nodes, key=lambda n: -fl.values("CYCLES")[n])
    assert [fl.label(n) for n in by_cycles] == ["loop at flux.f90:30", "loop at flux.f90:10", "loop at flux.f90:20"]
    assert [fl.label(n) for n in by_waste] == ["loop at flux.f90:10", "loop at flux.f90:20", "loop at flux.f90:30"]
    assert [round(fl.values(eff)[n], 3) for n in by_waste] == [0.06, 0.0, 0.8]
    # at the program level the ratio is of the sums (166 / 340), not a sum of ratios
    assert exp.total(eff) == pytest.approx(166 / 340)
    text = render_view(exp, "flat", metrics=["FPWASTE", "efficiency"], sort="FPWASTE (I)", depth=3)
    assert text.index("flux.f90:10") < text.index("flux.f90:30")


def test_fixtures_are_what_the_script_builds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.views.helpers import FIXTURES, fixture_builder

    fixture_builder().main(str(tmp_path))
    for db in ("seed003.d", "scaling-p2.d", "scaling-q4.d", "threads.d"):
        for f in ("meta.db", "profile.db", "cct.db", "metrics/default.yaml"):
            assert (tmp_path / db / f).read_bytes() == (FIXTURES / db / f).read_bytes(), (db, f)


def test_profile_values_add_up_to_the_summary() -> None:
    exp = open_experiment(SEED003)
    total = sum(exp.profile_values(p.index, CPU) for p in exp.profiles)
    assert np.allclose(total, exp.inclusive(CPU))
    assert exp.context_values(0, CPU)[1:].tolist() == [9.0]
    assert [p.label for p in exp.profiles] == ["node 0 rank 0 thread 0"]


def test_corrupt_database_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    bad = tmp_path / "bad.d"
    shutil.copytree(SEED003, bad)
    data = (bad / "profile.db").read_bytes()
    (bad / "profile.db").write_bytes(data[: len(data) // 2])
    assert_one_line_error(run_cli("view", str(bad)), "profile.db")
    proc = run_cli("view", str(SEED003), "--view", "flat", "--flatten", "2", "--format", "csv", check=True)
    labels = [line.split(",")[1] for line in proc.stdout.splitlines()[1:] if line.startswith("0,")]
    assert set(labels) == {"g", "h", "m", "f"}
