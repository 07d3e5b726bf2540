"""Phase 2 works out the point values of a batch of profiles at once from what phase 1 kept
(:func:`phase2.points.batch_points`): the same values, in the same order, as profile by profile
(:func:`phase2.points.profile_points`), whatever the batch; a profile that changed between the readings is
refused naming it, as profile by profile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate import kept
from hpcsa.aggregate.phase2 import points as phase2_points
from hpcsa.core.errors import HpcsaError
from tests.aggregate.profcheck import class_two

FIELDS = ("prof", "ctx", "metric", "value", "cut", "ids", "full", "rel")


def _same(got: phase2_points.BatchPoints, want: phase2_points.BatchPoints) -> None:
    for name in FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.astype(np.float64).tolist() == b.astype(np.float64).tolist(), name


@pytest.mark.parametrize("meas", ["loops-cputime-t.m", "loops-cuda-nvidiapc-t.m"])
def test_a_batch_gives_what_profile_by_profile_gives(hpctoolkit_data: Path, tmp_path: Path, meas: str) -> None:
    c2 = class_two(hpctoolkit_data / "meas" / meas, tmp_path)
    n = len(c2.profiles)
    assert n >= 2 and (c2.profiles.kept_file >= 0).all()
    if "cuda" in meas:  # reconstructed GPU samples join the profile's own values
        cols = kept.kept_batch(c2.profiles, list(range(n)))
        assert cols is not None and len(cols.arrays["gpu"])
    rng = np.random.default_rng(1)
    batches = [list(range(n)), list(range(n))[::-1], [n - 1], [], rng.permutation(n).tolist()[: max(1, n // 2)]]
    for indexes in batches:
        want = phase2_points.BatchPoints.of([phase2_points.profile_points(c2, i) for i in indexes])
        cols = kept.kept_batch(c2.profiles, indexes)
        assert cols is not None
        got = phase2_points._batch_points(c2, indexes, cols)
        assert got is not None
        _same(got, want)
        for k, i in enumerate(indexes):
            one, whole = got.points(k), phase2_points.profile_points(c2, i)
            assert one.value.tolist() == whole.value.tolist() and one.ids.tolist() == whole.ids.tolist()


def test_a_profile_changed_between_the_readings_is_named(hpctoolkit_data: Path, tmp_path: Path) -> None:
    c2 = class_two(hpctoolkit_data / "meas" / "loops-cputime-t.m", tmp_path)
    n = len(c2.profiles)
    victim = n // 2
    # Phase 1 kept the victim's node hashes; change one, as if the file changed between the readings.
    path = c2.profiles.kept_files[int(c2.profiles.kept_file[victim])]
    offset = int(c2.profiles.kept_offset[victim])
    one_kept = kept.kept_batch(c2.profiles, [victim])
    assert one_kept is not None
    ids, nodes = one_kept.arrays["ids"], one_kept.arrays["nodes"]
    at = offset + kept.KEPT_HEAD.itemsize + ids.nbytes  # the first kept node's h1
    with open(path, "r+b") as f:
        f.seek(at)
        f.write((int(nodes["h1"][0]) ^ 0x5A5A).to_bytes(8, "little"))
    cols = kept.kept_batch(c2.profiles, list(range(n)))
    assert cols is not None and phase2_points._batch_points(c2, list(range(n)), cols) is None
    with pytest.raises(HpcsaError) as one:
        phase2_points.profile_points(c2, victim)
    with pytest.raises(HpcsaError) as batch:
        phase2_points.batch_points(c2, list(range(n)))
    assert str(batch.value) == str(one.value) and c2.profiles.inputs.path(victim) in str(batch.value)
    assert "changed between its two readings" in str(batch.value)
