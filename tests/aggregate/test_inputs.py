"""What ``hpcsa prof`` lists of its inputs: profiles, traces, sizes; shares measured by MPI ranks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate.inputs import find_inputs, measurement, merge_measurements, with_measurement
from hpcsa.core.errors import HpcsaError


def _measurement(tmp_path: Path) -> Path:
    """Five profiles of different sizes: three with a trace, one whose '.hpctrace' is a directory."""
    meas = tmp_path / "app.m"
    meas.mkdir()
    for i in range(5):
        stem = f"app-00000{i}-000-a8c0-{i}"
        (meas / f"{stem}.hpcrun").write_bytes(b"x" * (100 + 37 * i))
        if i in (0, 2, 4):
            (meas / f"{stem}.hpctrace").write_bytes(b"t" * (1000 + i))
    (meas / "app-000003-000-a8c0-3.hpctrace").mkdir()
    (meas / "notes.txt").write_text("not a profile")
    return meas


def test_profiles_traces_and_sizes_as_the_file_system_says(tmp_path: Path) -> None:
    meas = _measurement(tmp_path)
    inputs = find_inputs([str(meas)])
    p = inputs.profiles
    assert [os.path.basename(p.path(i)) for i in range(len(p))] == sorted(
        f.name for f in meas.iterdir() if f.name.endswith(".hpcrun"))
    assert p.size.tolist() == [os.stat(p.path(i)).st_size for i in range(len(p))]
    assert p.has_trace.tolist() == [True, False, True, False, True]  # a directory named .hpctrace is no trace
    assert p.trace_size.tolist() == [1000, 0, 1002, 0, 1004]
    assert [p.trace(i) for i in range(len(p))][0] == str(meas / "app-000000-000-a8c0-0.hpctrace")
    # A loose profile given again beside its directory is one profile.
    again = find_inputs([str(meas), str(meas / "app-000002-000-a8c0-2.hpcrun")])
    assert len(again.profiles) == 5


@pytest.mark.parametrize("ranks", [2, 3, 7])
def test_shares_measured_by_ranks_merge_into_the_whole(tmp_path: Path, ranks: int) -> None:
    meas = _measurement(tmp_path)
    whole = find_inputs([str(meas)])
    parts = [find_inputs([str(meas)], share=(r, ranks)) for r in range(ranks)]
    for r, part in enumerate(parts):  # each rank measured only its own profiles
        mine = np.arange(len(whole.profiles)) % ranks == r
        assert part.profiles.size[~mine].sum() == 0 and not part.profiles.has_trace[~mine].any()
        assert np.array_equal(part.profiles.size[mine], whole.profiles.size[mine])
    merged = merge_measurements([measurement(p) for p in parts])
    done = with_measurement(parts[-1], merged).profiles
    for column in ("size", "trace_size", "has_trace", "names", "folder", "measdir"):
        assert np.array_equal(getattr(done, column), getattr(whole.profiles, column)), column


def test_ranks_that_listed_different_files_stop_the_run(tmp_path: Path) -> None:
    meas = _measurement(tmp_path)
    first = measurement(find_inputs([str(meas)], share=(0, 2)))
    (meas / "app-000009-000-a8c0-9.hpcrun").write_bytes(b"late")  # written while the ranks listed
    second = measurement(find_inputs([str(meas)], share=(1, 2)))
    with pytest.raises(HpcsaError, match="listed different inputs"):
        merge_measurements([first, second])


def test_a_profile_that_vanishes_is_named(tmp_path: Path) -> None:
    meas = _measurement(tmp_path)
    link = meas / "app-000008-000-a8c0-8.hpcrun"
    link.symlink_to(meas / "gone.hpcrun")  # listed, but stat(2) fails
    with pytest.raises(HpcsaError, match="app-000008"):
        find_inputs([str(meas)])
