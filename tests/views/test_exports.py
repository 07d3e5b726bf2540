"""pandas and hatchet exports, checked against LLNL hatchet's own reading of the same databases.

Where hatchet loads a database (hatchet's HPCToolkit v4 reader), every node it builds must be in our GraphFrame under the same
context id and parent, with the same inclusive value and the same (function-scope) exclusive value; ours
also has the contexts hatchet drops (application threads, unknown entries) and every metric. Where hatchet
fails (GPU-only and perf databases, derived metrics, ...), ours loads.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hpcsa.views import open_experiment
from tests.conftest import SHARED_DATA
from tests.formats.dbcheck import HATCHET_LOADS
from tests.views.helpers import SEED003, v4_databases

ALL = v4_databases(SHARED_DATA) if SHARED_DATA.is_dir() else {}
NOT_LOADED_BY_HATCHET = sorted(set(ALL) - HATCHET_LOADS) or ["(no data)"]


def _path(shared: Path, name: str) -> Path:
    dbs = v4_databases(shared)
    if name not in dbs:
        pytest.fail(f"database {name} not found under {shared}")
    return dbs[name]


def _hatchet_time_name(metric: str) -> bool:
    """The metrics hatchet's reader renames to ``time`` (lower-cased, unit dropped)."""
    base = re.sub(r"\s*\([^)]*\)\s*$", "", metric.strip().lower())
    return base in ("cputime", "realtime", "cycles")


def test_dataframe_of_the_seed_example() -> None:
    exp = open_experiment(SEED003)
    df = exp.to_dataframe()
    assert df.index.name == "ctx_id" and len(df) == len(exp.cct) - 1
    g = df[(df["name"] == "g") & (df["relation"] == "call")]
    assert sorted(g["CPUTIME (sec) (inc)"].tolist()) == [3.0, 3.0, 6.0]
    assert sorted(g["CPUTIME (sec)"].tolist()) == [0.0, 1.0, 1.0]
    loops = df[df["type"] == "loop"]
    # exclusive (lex_aware) leaves nested loops out, the function scope does not
    assert (loops["CPUTIME (sec) (function)"] >= loops["CPUTIME (sec)"]).all()
    assert (loops["CPUTIME (sec) (function)"] > loops["CPUTIME (sec)"]).any()
    assert df["CPUTIME (sec) (self)"].sum() == pytest.approx(9.0)
    assert set(df["file"].dropna()) == {"/src/file1.c", "/src/file2.c"}
    per = exp.to_dataframe(profiles=True)
    assert per.index.names == ["ctx_id", "profile"]
    assert per.loc[(0, 1), "CPUTIME (sec) (inc)"] == 9.0 and per.loc[(0, 1), "rank"] == 0


def test_hatchet_tree_operations_stay_right_with_self_values() -> None:
    ht = pytest.importorskip("hatchet")
    gf = open_experiment(SEED003).to_hatchet()
    assert isinstance(gf, ht.GraphFrame) and gf.default_metric == "CPUTIME (sec) (inc)"
    gf.subtree_sum(["CPUTIME (sec) (self)"], ["rebuilt"])
    assert np.allclose(gf.dataframe["rebuilt"], gf.dataframe["CPUTIME (sec) (inc)"])
    assert "g" in gf.tree()


@pytest.mark.parametrize("name", sorted(HATCHET_LOADS))
def test_hatchet_export_contains_what_hatchet_reads(shared_data: Path, name: str) -> None:
    ht = pytest.importorskip("hatchet")
    path = _path(shared_data, name)
    ref = ht.GraphFrame.from_hpctoolkit_latest(str(path))
    exp = open_experiment(path)
    ours = exp.to_hatchet()
    mine = {n._hatchet_nid: n for n in ours.graph.traverse()}
    assert len(mine) == len(exp.cct) - 1  # every entry point and context
    ref_nodes = list(ref.graph.traverse())
    assert len(ref_nodes) <= len(mine)
    for node in ref_nodes:
        o = mine[node._hatchet_nid]
        assert [p._hatchet_nid for p in node.parents] == [p._hatchet_nid for p in o.parents]
    ref_inc = np.nan_to_num(ref.dataframe.loc[ref_nodes, "time (inc)"].to_numpy(float))
    ref_exc = np.nan_to_num(ref.dataframe.loc[ref_nodes, "time"].to_numpy(float))
    ours_rows = [mine[n._hatchet_nid] for n in ref_nodes]
    matched = []
    for m in exp.meta.metrics:  # REALTIME and cycles collide on hatchet's "time": one of them must match
        if not _hatchet_time_name(m.name) or f"{m.name} (inc)" not in ours.dataframe:
            continue
        inc = ours.dataframe.loc[ours_rows, f"{m.name} (inc)"].to_numpy(float)
        exc = ours.dataframe.loc[ours_rows, f"{m.name} (function)"].to_numpy(float)
        if np.allclose(inc, ref_inc, rtol=1e-12, atol=0) and np.allclose(exc, ref_exc, rtol=1e-12, atol=0):
            matched.append(m.name)
    assert matched, "no metric of ours reproduces hatchet's time columns"
    assert len(ours.inc_metrics) >= 1 and len(ours.exc_metrics) >= 3


@pytest.mark.parametrize("name", NOT_LOADED_BY_HATCHET)
def test_hatchet_export_succeeds_where_hatchet_fails(shared_data: Path, name: str) -> None:
    ht = pytest.importorskip("hatchet")
    path = _path(shared_data, name)
    with pytest.raises(Exception):  # noqa: B017 - whatever hatchet raises (KeyError: None, KeyError: 'name')
        ht.GraphFrame.from_hpctoolkit_latest(str(path))
    exp = open_experiment(path)
    gf = exp.to_hatchet()
    assert len(list(gf.graph.traverse())) == len(exp.cct) - 1
    col = gf.default_metric
    roots = gf.graph.roots
    total = exp.total(col[: -len(" (inc)")])
    assert np.nansum(gf.dataframe.loc[roots, col].to_numpy(float)) == pytest.approx(total, rel=1e-9)


def test_missing_hatchet_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from hpcsa.core.errors import HpcsaError

    monkeypatch.setitem(sys.modules, "hatchet", None)  # as if not installed
    with pytest.raises(HpcsaError, match=r"pip install 'hpcsa\[hatchet\]'"):
        open_experiment(SEED003).to_hatchet()
