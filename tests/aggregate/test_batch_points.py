"""Phase 2 works out the point values of a batch of profiles at once from what phase 1 kept
(:func:`profile_values.batch_points`): the same values, in the same order, as profile by profile
(:func:`profile_values.profile_points`), whatever the batch; a profile that changed between the readings is
refused naming it, as profile by profile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate.prof import pipeline_read, profile_values, survey, unified_tables
from hpcsa.aggregate.prof.inputs import find_inputs
from hpcsa.core.errors import HpcsaError

FIELDS = ("prof", "ctx", "metric", "value", "cut", "ids", "full", "rel")


def _class_two(meas: Path, scratch: Path) -> unified_tables.ClassTwo:
    inputs = find_inputs([str(meas)])
    env, gpu_structs = pipeline_read.gpu_env(inputs.structs, 0, scratch=str(scratch))
    disc = survey.survey_profiles(list(inputs.profiles), env)
    _, structs = pipeline_read.run_phase1(inputs, env, 1)
    classifier, _ = unified_tables.build_classifier(disc.raw, gpu_structs + structs)
    return unified_tables.assemble(disc, classifier, env, statistics=("Sum",), title="t")


def _same(got: profile_values.BatchPoints, want: profile_values.BatchPoints) -> None:
    for name in FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.astype(np.float64).tolist() == b.astype(np.float64).tolist(), name


@pytest.mark.parametrize("meas", ["loops-cputime-t.m", "loops-cuda-nvidiapc-t.m"])
def test_a_batch_gives_what_profile_by_profile_gives(hpctoolkit_data: Path, tmp_path: Path, meas: str) -> None:
    c2 = _class_two(hpctoolkit_data / "meas" / meas, tmp_path)
    n = len(c2.profiles)
    assert n >= 2 and (c2.profiles.kept_file >= 0).all()
    if "cuda" in meas:  # reconstructed GPU samples join the profile's own values
        gpus = [ga for _, ga in survey.kept_many(c2.profiles, list(range(n)))]
        assert any(len(g.point_nodes) for g in gpus)
    rng = np.random.default_rng(1)
    batches = [list(range(n)), list(range(n))[::-1], [n - 1], [], rng.permutation(n).tolist()[: max(1, n // 2)]]
    for indexes in batches:
        want = profile_values.BatchPoints.of([profile_values.profile_points(c2, i) for i in indexes])
        got = profile_values._batch_points(c2, indexes, survey.kept_many(c2.profiles, indexes))
        assert got is not None
        _same(got, want)
        for k, i in enumerate(indexes):
            one, whole = got.points(k), profile_values.profile_points(c2, i)
            assert one.value.tolist() == whole.value.tolist() and one.ids.tolist() == whole.ids.tolist()


def test_a_profile_changed_between_the_readings_is_named(hpctoolkit_data: Path, tmp_path: Path) -> None:
    c2 = _class_two(hpctoolkit_data / "meas" / "loops-cputime-t.m", tmp_path)
    n = len(c2.profiles)
    victim = n // 2
    # Phase 1 kept the victim's node hashes; change one, as if the file changed between the readings.
    path = c2.profiles.kept_files[int(c2.profiles.kept_file[victim])]
    offset = int(c2.profiles.kept_offset[victim])
    (cct, kept, *_), _ = survey.kept_many(c2.profiles, [victim])[0]
    at = offset + survey.KEPT_HEAD.itemsize + cct.nbytes  # the first kept node's h1
    with open(path, "r+b") as f:
        f.seek(at)
        f.write((int(kept["h1"][0]) ^ 0x5A5A).to_bytes(8, "little"))
    assert profile_values._batch_points(c2, list(range(n)), survey.kept_many(c2.profiles, list(range(n)))) is None
    with pytest.raises(HpcsaError) as one:
        profile_values.profile_points(c2, victim)
    with pytest.raises(HpcsaError) as batch:
        profile_values.batch_points(c2, list(range(n)))
    assert str(batch.value) == str(one.value) and c2.profiles.inputs.path(victim) in str(batch.value)
    assert "changed between its two readings" in str(batch.value)
