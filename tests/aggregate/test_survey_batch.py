"""Phase 1 reads a group of profiles as one batch (:mod:`hpcsa.formats.measurement.hpcrun_batch`, one pass of the tree
rules over the group): the report is the one reading them one by one gives, and a group holding a bad profile
is refused as one by one, naming its first bad profile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate.handoff import Discovery, Phase1Env
from hpcsa.aggregate.inputs import find_inputs
from hpcsa.aggregate.phase0.gpu_graphs import read_gpu_structures
from hpcsa.aggregate.phase1 import survey as phase1_survey
from hpcsa.aggregate.profile_nodes import group_fields
from hpcsa.aggregate.profile_table import ProfileInput
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    pack_values,
    placeholder_code,
    write_hpcrun,
)
from hpcsa.formats.measurement.hpcrun_batch import read_hpcrun_group
from hpcsa.formats.measurement.placeholders import PRIMARY

MEASUREMENTS = ("loops-cputime-t.m", "loops-cuda-nvidiapc-t.m", "small.m")


def _report(disc: Discovery) -> tuple[object, ...]:
    facts = [(f.input, f.id_tuple.tobytes(), f.trace_disorder, f.metrics, f.trace_records, f.loadmap)
             for f in disc.profiles]
    return (disc.raw.nodes.tobytes(), sorted(disc.raw.modules.items()), facts, disc.metric_tables, disc.loadmaps,
            disc.id_names, disc.programs)


@pytest.mark.parametrize("meas", MEASUREMENTS)
def test_a_batch_reports_what_one_by_one_reports(hpctoolkit_data: Path, meas: str) -> None:
    inputs = find_inputs([str(hpctoolkit_data / "meas" / meas)], [])
    group = list(inputs.profiles)
    assert group
    env = read_gpu_structures(inputs.structs).env(0, None)  # the CUDA run's GPU calling contexts are reconstructed
    assert env.has_graphs == ("cuda" in meas)
    assert _report(phase1_survey._survey_batch(group, env)) == _report(phase1_survey._survey_one_by_one(group, env))


def _write(path: Path, lm_ids: list[int], root_ip: int = PRIMARY) -> ProfileInput:
    """A profile whose root's children name load modules ``lm_ids`` (only module 1 is in its load map)."""
    n = len(lm_ids) + 1
    cct = np.zeros(n, CCT_NODE)
    cct["id"] = np.arange(1, n + 1)
    cct["parent"] = [0] + [1] * (n - 1)
    cct["lm_id"] = [0, *lm_ids]
    cct["lm_ip"] = [root_ip] + [0x1000 + 16 * i for i in range(n - 1)]
    cct["flags"] = 1
    metrics = [MetricDesc("CPUTIME (sec)", period=1000)]
    vals, index = pack_values(np.array([2]), np.array([0]), np.ones(1), metrics, cct["id"])
    write_hpcrun(path, HpcrunProfile(header={"program-name": "x"}, loadmap=[LoadModule(1, "/bin/x", 1)], cct=cct,
                                     metrics=metrics, id_names=[(1, "NODE")],
                                     id_tuple=np.zeros(0, [("kind", ">u2"), ("physical", ">u8"), ("logical", ">u8")]),
                                     values=vals, index=index))
    return ProfileInput(str(path), None, path.stat().st_size, 0, str(path.parent))


@pytest.mark.parametrize("problem", ["unknown load module", "root not the primary root"])
def test_a_bad_profile_is_refused_as_one_by_one(tmp_path: Path, problem: str) -> None:
    good = [_write(tmp_path / f"good{i}.hpcrun", [1, 1]) for i in range(3)]
    if problem == "unknown load module":
        bad = _write(tmp_path / "bad.hpcrun", [1, 7])
    else:
        bad = _write(tmp_path / "bad.hpcrun", [1], root_ip=placeholder_code("NoActvty"))
    also_bad = _write(tmp_path / "later.hpcrun", [9])
    group = [good[0], bad, good[1], also_bad, good[2]]
    env = Phase1Env()
    with pytest.raises(HpcsaError) as one_by_one:
        phase1_survey._survey_one_by_one(group, env)
    with pytest.raises(HpcsaError) as batched:
        phase1_survey.survey_profiles(group, env)
    assert str(batched.value) == str(one_by_one.value)
    assert str(batched.value).startswith(str(tmp_path / "bad.hpcrun"))
    columns = read_hpcrun_group([g.path for g in group])
    assert columns is not None  # the files are well formed: the rule is the group's own check
    with pytest.raises(HpcsaError, match="load map|primary root"):
        group_fields(columns, [g.measdir for g in group])
    assert _report(phase1_survey.survey_profiles(good, env)) == _report(phase1_survey._survey_one_by_one(good, env))

