"""hpcviewer's thread view (:mod:`hpcsa.views.threadview`): id-tuple patterns choose profiles, and the views
over the chosen profiles hold their own values -- checked on the real 1,024-thread run (64 processes run one
after another, 16 threads each) against the profiles' values read one by one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.views.experiment import Experiment, open_experiment
from hpcsa.views.threadview import matching_profiles, parse_pattern, thread_view

METRIC = "CPUTIME (sec)"


@pytest.fixture(scope="module")
def cxx(shared_data: Path) -> Experiment:
    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (db / "meta.db").is_file():
        pytest.skip(f"{db} is absent")
    return open_experiment(db)


def test_patterns_choose_profiles(cxx: Experiment) -> None:
    procs = cxx.processes
    run5 = matching_profiles(cxx, "run 5")
    assert len(run5) == 16 and {procs.process(i).run for i in run5} == {5}
    assert sorted(run5) == sorted(next(p for p in procs.processes if p.run == 5).profiles)
    mains = matching_profiles(cxx, "thread 0")
    assert len(mains) == 64 and {procs.thread_label(i) for i in mains} == {"core 0 thread 0"}
    assert len(matching_profiles(cxx, "run 1-3 thread 0,1")) == 6
    assert matching_profiles(cxx, "cpu") == [p.index for p in cxx.profiles]
    assert matching_profiles(cxx, "gpu") == matching_profiles(cxx, "stream *") == []
    assert len(matching_profiles(cxx, "node *")) == 1024


@pytest.mark.parametrize("bad", ["warp 3", "thread", "thread x", "rank 0-99999999"])
def test_bad_patterns_are_one_line_errors(bad: str) -> None:
    with pytest.raises(HpcsaError) as err:
        parse_pattern(bad)
    assert "\n" not in str(err.value) and "thread pattern" in str(err.value)


def test_thread_view_values_are_the_chosen_profiles_own(cxx: Experiment) -> None:
    chosen = matching_profiles(cxx, "run 5 thread 0-3")
    sub = thread_view(cxx, chosen)
    want = sum(cxx.profile_values(i, METRIC) for i in chosen)  # inclusive values, profile by profile
    got = sub.inclusive(METRIC)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert sub.total(METRIC) == pytest.approx(float(want[0])) and 0 < sub.total(METRIC) < cxx.total(METRIC)
    # the whole database is unchanged (the thread view shares the tree, not the values)
    assert cxx.total(METRIC) == pytest.approx(sum(float(cxx.profile_values(p.index, METRIC)[0])
                                                  for p in cxx.profiles), rel=1e-9)
    with pytest.raises(HpcsaError):
        thread_view(cxx, [])
