"""The tidy table (CSV, Parquet, pandas), JSON, and the command's text."""

from __future__ import annotations

import csv
import json

import pytest

from hpcsa.views.compare import compare
from tests.conftest import run_cli
from tests.views.compare.builders import METRIC, write_run


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("two")
    return [str(write_run(d / "a.d", loop=10, tail=2, own=1, io=3)),
            str(write_run(d / "b.d", loop=12, tail=2, own=1, io=None))]


def _expected_rows(cmp):
    """Every (run, path, scope) a run has, from the matrices, written out one by one."""
    out = {}
    for run, r in enumerate(cmp.runs):
        for node, path in enumerate(cmp.paths):
            if cmp.present[node, run]:
                for side in ("inclusive", "exclusive"):
                    out[(r.label, path, METRIC, side)] = float(cmp.matrix(METRIC, side)[node, run])
    return out


def test_tidy_csv(two, tmp_path):
    cmp = compare(two)
    out = tmp_path / "t.csv"
    proc = run_cli("compare", *two, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["run", "path", "metric", "scope", "value"]
    got = {(r["run"], r["path"], r["metric"], r["scope"]): float(r["value"]) for r in rows}
    assert got == _expected_rows(cmp)
    assert ("a", "main thread / main / a.c:14 / → io", METRIC, "inclusive") in got
    assert ("b", "main thread / main / a.c:14 / → io", METRIC, "inclusive") not in got  # missing: no row
    assert got[("b", "main thread / main", METRIC, "inclusive")] == 15


def test_tidy_parquet_and_pandas(two, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    cmp = compare(two)
    out = tmp_path / "t.parquet"
    assert run_cli("compare", *two, "-o", str(out)).returncode == 0
    table = pq.read_table(out).to_pandas()
    df = cmp.to_pandas()
    assert list(table.columns) == list(df.columns) == ["run", "path", "metric", "scope", "value"]
    key = ["run", "path", "metric", "scope"]
    a = {tuple(map(str, k)): v for *k, v in table[key + ["value"]].itertuples(index=False)}
    b = {tuple(map(str, k)): v for *k, v in df[key + ["value"]].itertuples(index=False)}
    assert a == b == _expected_rows(cmp)


def test_json(two):
    proc = run_cli("compare", *two, "--format", "json")
    doc = json.loads(proc.stdout)
    assert [r["label"] for r in doc["runs"]] == ["a", "b"] and doc["baseline"] == "a"
    io = next(n for n in doc["nodes"] if n["path"] == "main thread / main / a.c:14 / → io")
    assert io["present"] == [True, False]
    inc = io["values"][METRIC]["inclusive"]
    assert inc["runs"] == [3, None] and inc["mean"] == 3 and inc["count"] == 1


def test_text_shows_missing_and_change(two):
    proc = run_cli("compare", *two, "--depth", "6")
    assert proc.returncode == 0, proc.stderr
    io = next(ln for ln in proc.stdout.splitlines() if ln.endswith("a.c:14 → io"))
    assert "—" in io
    main = next(ln for ln in proc.stdout.splitlines() if ln.endswith("  main"))
    assert "-6.2%" in main  # 16 -> 15
    hot = run_cli("compare", *two, "--hot-path", "--sort", "b")
    assert "hot path" in hot.stdout and "» " in hot.stdout


def test_bad_input_is_one_line(two, tmp_path):
    from tests.conftest import assert_one_line_error

    assert_one_line_error(run_cli("compare", two[0], str(tmp_path / "nope.d")), "nope.d")
    assert_one_line_error(run_cli("compare", *two, "-o", str(tmp_path / "x.xlsx")), "x.xlsx")


def test_parquet_without_pyarrow_is_one_clear_error(two, tmp_path, monkeypatch):
    import sys

    from hpcsa.core.errors import HpcsaError
    from hpcsa.views.compare.tidy import write_parquet

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(HpcsaError, match=r"Parquet needs pyarrow: pip install 'hpcsa\[parquet\]'"):
        write_parquet(compare(two), tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists()


def test_the_python_api_from_the_package(two):
    import hpcsa

    cmp = hpcsa.compare(two)
    assert type(cmp).__module__ == "hpcsa.views.compare.comparison"
    df = cmp.to_pandas()
    assert set(df["run"]) == {"a", "b"} and list(cmp.catalog_frame().index) == ["a", "b"]


def test_the_scaling_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    dbs = [str(write_run(tmp_path / f"p{p}.d", loop=10 * p ** 0.5, tail=2, own=1, io=3)) for p in (1, 2, 4, 8)]
    png = tmp_path / "s.png"
    proc = run_cli("compare", *dbs, *(f"--meta=units={p}" for p in (1, 2, 4, 8)), "--group-by", "units",
                   "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"plot: {png}" in proc.stdout
    assert "scaling series over units = 1, 2, 4, 8" in proc.stdout
    bad = run_cli("compare", *dbs[:2], "--plot", str(png))  # no numeric --group-by
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
