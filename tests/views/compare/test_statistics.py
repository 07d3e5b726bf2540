"""Statistics across runs on small databases whose values are worked out by hand (builders.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcsa.views.compare import compare
from tests.views.compare.builders import METRIC, write_run


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("three")
    return [str(write_run(d / "a.d", loop=10, tail=2, own=1, io=3)),
            str(write_run(d / "b.d", loop=12, tail=2, own=1, io=3)),
            str(write_run(d / "c.d", loop=11, tail=2, own=1, io=None))]


def node(cmp, path: str) -> int:
    return cmp.paths.index(path)


def test_each_context_lines_up_and_a_missing_one_is_missing_not_zero(three):
    cmp = compare(three)
    assert [r.label for r in cmp.runs] == ["a", "b", "c"]
    leaf = node(cmp, "main thread / main / a.c:10 / → solve / loop at a.c:20 / a.c:21")
    assert cmp.matrix(METRIC)[leaf].tolist() == [10, 12, 11]
    io = node(cmp, "main thread / main / a.c:14 / → io")
    assert cmp.present[io].tolist() == [True, True, False]
    values = cmp.matrix(METRIC)[io]
    assert values[:2].tolist() == [3, 3] and math.isnan(values[2])


def test_hand_computed_statistics(three):
    cmp = compare(three)
    st = cmp.stats(METRIC)
    leaf = node(cmp, "main thread / main / a.c:10 / → solve / loop at a.c:20 / a.c:21")
    # 10, 12, 11: mean 11, population stddev sqrt(2/3), CfVar sqrt(2/3) / 11
    assert (st.count[leaf], st.mean[leaf], st.min[leaf], st.max[leaf]) == (3, 11, 10, 12)
    assert st.stddev[leaf] == pytest.approx(math.sqrt(2 / 3))
    assert st.cfvar[leaf] == pytest.approx(math.sqrt(2 / 3) / 11)
    main = node(cmp, "main thread / main")  # inclusive 10+2+1+3, 12+2+1+3, 11+2+1
    assert cmp.matrix(METRIC)[main].tolist() == [16, 18, 14]
    assert st.mean[main] == 16 and st.stddev[main] == pytest.approx(math.sqrt(8 / 3))
    io = node(cmp, "main thread / main / a.c:14 / → io")  # over the two runs that have it
    assert (st.count[io], st.mean[io], st.stddev[io]) == (2, 3, 0)


def test_ratio_and_difference_to_the_baseline(three):
    cmp = compare(three, baseline=three[1])  # b
    main = node(cmp, "main thread / main")
    assert cmp.difference(METRIC)[main].tolist() == [-2, 0, -4]
    assert cmp.ratio(METRIC)[main].tolist() == pytest.approx([16 / 18, 1, 14 / 18])
    diff, ratio = cmp.change(METRIC)  # the mean of a and c against b
    assert diff[main] == pytest.approx(15 - 18) and ratio[main] == pytest.approx(15 / 18)


def test_exclusive_values_are_the_views(three):
    cmp = compare(three)
    solve = node(cmp, "main thread / main / a.c:10 / → solve")
    main = node(cmp, "main thread / main")
    # lex_aware: a procedure's own body (its loops and lines, not its callees)
    assert cmp.matrix(METRIC, "exclusive")[solve].tolist() == [12, 14, 13]
    assert cmp.matrix(METRIC, "exclusive")[main].tolist() == [1, 1, 1]


def test_compare_a_with_itself_shows_no_change(three):
    cmp = compare([three[0], three[0]])
    assert [r.label for r in cmp.runs] == ["a#1", "a#2"]
    diff, ratio = cmp.change(METRIC)
    have = ~np.isnan(diff)
    assert have.sum() == len(cmp) and (diff[have] == 0).all()
    nonzero = cmp.baseline_values(METRIC) != 0
    assert (ratio[nonzero] == 1).all()
    assert cmp.present.all()


def test_statistics_do_not_depend_on_the_number_of_threads(tmp_path, three):
    split = write_run(tmp_path / "a4.d", loop=10, tail=2, own=1, io=3, threads=4)
    cmp = compare([three[0], str(split)])
    assert np.allclose(cmp.matrix(METRIC)[:, 0], cmp.matrix(METRIC)[:, 1], rtol=1e-12)
    assert cmp.runs[1].threads == 4 and cmp.runs[0].threads == 1


def test_the_views_line_up(three):
    flat = compare(three, view="flat")
    assert "prog / a.c / solve" in flat.paths
    solve = flat.paths.index("prog / a.c / solve")
    assert flat.matrix(METRIC)[solve].tolist() == [12, 14, 13]
    callers = compare(three, view="bottom-up")
    io = callers.paths.index("io")
    assert callers.present[io].tolist() == [True, True, False]
    assert callers.matrix(METRIC)[io][:2].tolist() == [3, 3]
