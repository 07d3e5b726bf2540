"""Scaling series: efficiency by hand, and growth models recovered from costs that follow known laws."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.views.compare import compare
from hpcsa.views.compare.models import EXPONENTS, fit
from hpcsa.views.compare.series import scaling_series
from tests.views.compare.builders import METRIC, write_run

P = np.array([1.0, 2, 4, 8, 16, 32])


def test_known_laws_are_recovered():
    y = np.stack([3 + 0.5 * np.sqrt(P) * np.log2(P),  # c0 + c1 p^(1/2) log2(p)
                  2 + 0.25 * P,                        # linear
                  np.full(len(P), 7.0),                # constant
                  1 + 0.1 * P ** 2])                    # quadratic
    fits = fit(P, y)
    assert EXPONENTS[int(fits.hypothesis[0])] == (1, 2, 1)
    assert fits.c0[0] == pytest.approx(3) and fits.c1[0] == pytest.approx(0.5)
    assert EXPONENTS[int(fits.hypothesis[1])] == (1, 1, 0)
    assert fits.hypothesis[2] == -1 and fits.c0[2] == 7
    assert EXPONENTS[int(fits.hypothesis[3])] == (2, 1, 0)
    assert fits.formula(0) == "3 + 0.5 * p^(1/2) * log2(p)"
    assert fits.growth(3) == "O(p^2)" and fits.growth(2) == "O(1)"
    assert np.allclose(fits.evaluate(P), y)


def test_a_noisy_constant_stays_constant():
    rng = np.random.default_rng(3)
    y = 5 * (1 + 0.01 * rng.standard_normal((50, len(P))))
    assert (fit(P, y).hypothesis == -1).mean() > 0.8


def test_efficiency_of_a_strong_scaling_series(tmp_path):
    # per unit, a.c:21 costs 10 on 1 unit, 6 on 2, 4 on 4 (sums 10, 12, 16); the rest stays the same in sum
    dbs = [str(write_run(tmp_path / f"p{p}.d", loop=loop, tail=2, own=1, io=3))
           for p, loop in ((1, 10), (2, 12), (4, 16))]
    cmp = compare(dbs, meta=[{"units": "1"}, {"units": "2"}, {"units": "4"}], group_by="units")
    s = scaling_series(cmp, METRIC, mode="strong")
    leaf = cmp.paths.index("main thread / main / a.c:10 / → solve / loop at a.c:20 / a.c:21")
    assert s.p.tolist() == [1, 2, 4]
    assert s.efficiency[leaf].tolist() == pytest.approx([1, 10 / 12, 10 / 16])
    own = cmp.paths.index("main thread / main / a.c:12")
    assert s.efficiency[own].tolist() == [1, 1, 1]
    weak = scaling_series(cmp, METRIC, mode="weak")  # per unit: 10, 6, 4 -> efficiency 1, 10/6, 10/4
    assert weak.efficiency[leaf].tolist() == pytest.approx([1, 10 / 6, 10 / 4])
    assert s.fits is not None and "3 points" in s.note


def test_a_series_needs_numbers(tmp_path):
    dbs = [str(write_run(tmp_path / f"{c}.d", loop=10, tail=2, own=1)) for c in ("gcc", "clang")]
    cmp = compare(dbs, meta=[{"compiler": "gcc"}, {"compiler": "clang"}], group_by="compiler")
    assert [g.value for g in cmp.groups or []] == ["gcc", "clang"]
    with pytest.raises(HpcsaError):
        scaling_series(cmp)
