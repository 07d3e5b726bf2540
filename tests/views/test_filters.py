"""hpcviewer's filters over the calling context tree (:mod:`hpcsa.views.filters`): what they keep and move.

The hand-computed values of each mode in the callers and flat views are in tests/views/serve/test_server.py
(through ``hpcsa serve`` and ``hpcsa view --filter``); here the invariants on real databases: nothing is lost
(every context's inclusive value is its own cost plus its children's, in the filtered tree), the totals and
the shown contexts' inclusive values do not change, the callers and flat views' top levels still add up to
the total, hidden procedures have no rows, and a filter that matches nothing changes nothing.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.views import tree as T
from hpcsa.views.experiment import Experiment, open_experiment
from hpcsa.views.filters import MODES, Filter, FilteredExperiment, frame_functions
from hpcsa.views.flat import MODULE
from hpcsa.views.metrics import Partial
from hpcsa.views.serve.model import Model
from hpcsa.views.show import render_view
from tests.conftest import assert_one_line_error, run_cli
from tests.views.helpers import SEED003

REAL = ("loops-cputime-t.d", "loops-cuda-nvidia-t.d")


def busiest_procedure(exp: Experiment) -> str:
    """The named procedure with the most frames that has callees (so every mode hides something)."""
    c = exp.cct
    frames = (c.kind == T.FUNCTION) & (c.relation != T.LEXICAL) & (c.function >= 0)
    has_kids = np.bincount(c.parent[c.parent >= 0], minlength=len(c)) > 0
    counts = np.bincount(c.function[frames & has_kids], minlength=len(exp.meta.functions))
    return exp.meta.functions.names[int(np.argmax(counts))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", REAL)
def test_nothing_lost_totals_kept(hpctoolkit_data: Path, name: str, mode: str) -> None:
    db = hpctoolkit_data / "dbase" / name
    if not (db / "meta.db").is_file():
        pytest.skip(f"{db} is absent")
    exp = open_experiment(db)
    proc = busiest_procedure(exp)
    fx = FilteredExperiment(exp, [Filter(glob.escape(proc), mode)])
    c, fc = exp.cct, fx.cct
    assert 0 < len(fc) < len(c)
    assert np.array_equal(fx.rows, c.row_of(fc.ctx_id))  # same contexts, found by id
    assert (fc.parent[1:] < np.arange(1, len(fc))).all()  # still a pre-order tree
    hidden_fn = [i for i, n in enumerate(exp.meta.functions.names) if n == proc]
    shown_frames = (fc.kind == T.FUNCTION) & (fc.relation != T.LEXICAL) & np.isin(fc.function, hidden_fn)
    assert shown_frames.any() == (mode == "children")
    columns = [col for col in exp.catalog if col.visible and exp.total(col) != 0 and exp.total(col) == exp.total(col)]
    assert columns
    bu, flat = fx.bottom_up(4), fx.flat()
    for col in columns:
        assert fx.total(col) == exp.total(col)
        assert fx.top_down().values(col)[0] == exp.total(col)
        for inp in {i for i in col.inputs() if i.scope == "execution"}:
            inc = fx.input_column(inp)
            assert np.array_equal(inc, exp.input_column(inp)[fx.rows])  # shown contexts' inclusive kept
            own = fx.self_column(Partial.of(inp))
            assert np.allclose(own + T.children_sum(fc.parent, inc), inc, rtol=1e-9, atol=1e-9 * abs(inc[0]))
        total = exp.total(col)
        assert np.nansum(bu.values(col, "exclusive")[bu.roots]) == pytest.approx(total, rel=1e-9)
        tops = flat.roots[np.isin(flat.kind[flat.roots], (MODULE,)) | (flat.roots == flat.pseudo_node)]
        assert np.nansum(flat.values(col, "exclusive")[tops]) == pytest.approx(total, rel=1e-9)
    for forest in (bu, flat):
        has_hidden = np.isin(frame_functions(forest), hidden_fn) & (forest.parent != -2)
        assert has_hidden.any() == (mode == "children"), forest.view


@pytest.mark.parametrize("view", ("top-down", "bottom-up", "flat"))
def test_filter_matching_nothing_changes_nothing(view: str) -> None:
    exp = open_experiment(SEED003)
    plain = json.loads(render_view(exp, view, depth=20, top=0, fmt="json"))
    filtered = json.loads(render_view(exp, view, depth=20, top=0, fmt="json",
                                      filters=(Filter("no such procedure*", "both"),)))
    assert filtered["filters"] == ["both:no such procedure*"]
    assert filtered["rows"] == plain["rows"]


def test_per_profile_values_are_inclusive_only() -> None:
    exp = open_experiment(SEED003)
    fx = FilteredExperiment(exp, [Filter("g")])
    got = fx.profile_values(1, "CPUTIME (sec)")
    assert len(got) == len(fx.cct) < len(exp.cct) and got[0] == 9
    assert np.array_equal(got, exp.profile_values(1, "CPUTIME (sec)")[fx.rows])
    with pytest.raises(HpcsaError, match="not kept under filters"):
        fx.profile_values(1, "CPUTIME (sec)", "lex_aware")


def test_cli_filter_errors(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("view", str(SEED003), "--filter", "both:"), "empty pattern")
    assert_one_line_error(run_cli("view", str(SEED003), "--filter", "g", "--from", "g"), "no scope 'g'")


def test_frames_known_by_address_match_by_shown_name(shared_data: Path) -> None:
    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (db / "meta.db").is_file():
        pytest.skip(f"{db} is absent")
    exp = open_experiment(db)
    c = exp.cct
    addr = np.flatnonzero((c.kind == T.INSTRUCTION) & (c.relation == T.CALL))
    names = {exp.scope_name(int(r)) for r in addr}
    assert names and all(n.startswith("libgomp.so") and "+0x" in n for n in names)
    col = next(iter(exp.catalog))
    for mode in MODES:
        fx = FilteredExperiment(exp, [Filter("libgomp.so*+0x*", mode)])
        bu, td = fx.bottom_up(3), fx.top_down()
        labels = {bu.label(int(n)) for n in bu.roots}
        assert bool(labels & names) == (mode == "children"), mode
        assert (td.parent[addr] == -2).all() == (mode != "children") and (td.parent[addr] != -2).any() == (mode == "children")
        assert fx.total(col) == exp.total(col)
        assert np.nansum(bu.values(col, "exclusive")[bu.roots]) == pytest.approx(exp.total(col), rel=1e-9)
    # the serve page's search box finds them by the same name, in every view
    model = Model(exp)
    for view in ("top-down", "bottom-up", "flat"):
        forest = model.forest(view)
        hits = model.search(forest, "+0x", col)
        assert hits and {forest.label(n).split(" (at ")[0].split(" ")[-1] for n in hits} <= names, view
