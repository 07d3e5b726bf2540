"""Every real v4 database opens and every view renders; totals agree across views and with the data.

Independent expectations: the summary profile hpcprof wrote (root values), the sum of the thread profiles
(which the summary Sum must equal for the execution scope), and hpcprof's own ``function`` scope -- the
body cost of every procedure frame, which the views recompute from inclusive values alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import open_experiment
from hpcsa.views import tree as T
from hpcsa.views.metrics import Partial
from hpcsa.views.show import render_view
from tests.conftest import SHARED_DATA
from tests.views.helpers import v4_databases

ALL = v4_databases(SHARED_DATA) if SHARED_DATA.is_dir() else {}
NAMES = sorted(ALL) or ["(no data)"]


def _open(shared: Path, name: str):  # type: ignore[no-untyped-def]
    dbs = v4_databases(shared)
    if name not in dbs:
        pytest.fail(f"database {name} not found under {shared}")
    return open_experiment(dbs[name])


def test_every_v4_database_is_covered(shared_data: Path) -> None:
    assert len(v4_databases(shared_data)) == 26


@pytest.mark.parametrize("name", NAMES)
def test_every_view_renders(shared_data: Path, name: str) -> None:
    exp = _open(shared_data, name)
    for view in ("top-down", "bottom-up", "flat"):
        text = render_view(exp, view, all_metrics=True, hot_path=True)
        assert text.count("\n") >= 3 and "hot path" in text
        doc = json.loads(render_view(exp, view, fmt="json", depth=3))
        assert doc["rows"] and doc["view"] == view
        assert render_view(exp, view, fmt="csv").startswith("depth,label,")


@pytest.mark.parametrize("name", NAMES)
def test_root_values_are_the_summary_and_the_sum_of_threads(shared_data: Path, name: str) -> None:
    exp = _open(shared_data, name)
    pdb = exp.db.profiles
    summary_root = pdb.summary().get(0)
    threads = [pdb.profile(i).get(0) for i in range(1, len(pdb))]
    checked = 0
    for m in exp.meta.metrics:
        try:
            sid = exp.meta.stat_metric_id(m.name, "execution")
            pid = exp.meta.prop_metric_id(m.name, "execution")
        except KeyError:
            continue
        root = exp.input_column(Input(m.name, "execution"))[0]
        assert root == summary_root.get(sid, 0.0)
        assert root == pytest.approx(sum(t.get(pid, 0.0) for t in threads), rel=1e-9, abs=1e-12)
        checked += 1
    assert checked
    for col in exp.catalog:  # the top-down view's root row is the experiment's aggregate
        inc = exp.top_down().values(col)
        assert inc[0] == exp.total(col) or (np.isnan(inc[0]) and np.isnan(exp.total(col)))


@pytest.mark.parametrize("name", NAMES)
def test_callers_and_flat_totals_equal_top_down_totals(shared_data: Path, name: str) -> None:
    exp = _open(shared_data, name)
    flat, callers = exp.flat(), exp.bottom_up(depth=3)
    c = exp.cct
    frames = np.flatnonzero(c.is_frame & (c.kind != T.ROOT) & (c.kind != T.ENTRY))
    for col in exp.catalog:
        inputs = col.inputs()
        if col.derived or not inputs or not Partial.of(inputs[0]).additive or col.inclusive is None:
            continue
        total = exp.total(col)
        tol = 1e-9 * max(abs(total), 1e-300)
        for forest in (flat, callers):
            exc, inc = forest.values(col, "exclusive"), forest.values(col, "inclusive")
            top = forest.roots
            assert np.nansum(exc[top]) == pytest.approx(total, abs=tol), (forest.view, col.name)
            assert (np.nan_to_num(inc) <= total + tol).all()  # exposed instances never double count
            assert (np.nan_to_num(inc) >= np.nan_to_num(exc) - tol).all()
        # every procedure frame's body, recomputed from inclusive values, is hpcprof's function scope
        metric = inputs[0].metric
        try:
            fn = exp.input_column(Input(metric, "function"))
        except KeyError:
            continue
        body = np.bincount(c.frame_of, weights=np.nan_to_num(exp.self_column(Partial(metric))), minlength=len(c))
        assert np.allclose(body[frames], fn[frames], rtol=1e-9, atol=tol), col.name
