"""Conservation through the pipeline on generated measurements (issue 8): whatever the tree and values,
the point values read (x period) reappear at each profile's root, in the summary, and in every view."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcsa.cli.main import main as hpcsa_main
from hpcsa.formats.db.database import open_database
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    default_id_names,
    pack_values,
    placeholder_code,
    write_hpcrun,
)

EXE = "/nonexistent/hpcsa-generated/app"  # no binary, no structure: instruction-level contexts


@st.composite
def measurements(draw):
    n_metrics = draw(st.integers(1, 3))
    metrics = [MetricDesc(f"M{i}", val_type=0, val_fmt=draw(st.sampled_from([1, 2])),
                          period=draw(st.sampled_from([1, 3, 1000]))) for i in range(n_metrics)]
    profiles = []
    for _t in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 25))
        # Node k+3 hangs below an earlier node (a random tree under the main-thread fence).
        parents = [draw(st.integers(0, k)) for k in range(n)]
        addrs = [draw(st.integers(0x1000, 0x1040)) for _ in range(n)]
        values = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n_metrics - 1),
                                         st.integers(1, 50)), min_size=1, max_size=40))
        profiles.append((parents, addrs, values))
    return metrics, profiles


def _write(meas: Path, metrics, profiles) -> list[np.ndarray]:
    """Write the measurement; return per profile the expected root value of each metric."""
    meas.mkdir()
    expected = []
    for t, (parents, addrs, values) in enumerate(profiles):
        n = len(parents)
        cct = np.zeros(n + 3, CCT_NODE)
        cct[0] = (1, 0, 0, placeholder_code("^Primary"), 1)
        cct[1] = (2, 1, 0, placeholder_code("NoActvty"), 1)
        cct[2] = (3, 1, 0, placeholder_code("| Main  " if t == 0 else "| Thread"), 1)
        for k in range(n):
            cct[k + 3] = (k + 4, 3 if k == 0 else parents[k] + 4 if parents[k] < k else 3, 1, addrs[k], 1)
        # de-duplicate (node, metric) pairs by summing, as hpcrun accumulates into one cell
        cells: dict[tuple[int, int], float] = {}
        for node, metric, v in values:
            scale = 1 if metrics[metric].is_int else 0.25
            cells[(node + 4, metric)] = cells.get((node + 4, metric), 0.0) + v * scale
        nodes = np.array([k[0] for k in cells], np.uint32)
        mids = np.array([k[1] for k in cells], np.uint16)
        vals = np.array(list(cells.values()))
        packed, index = pack_values(nodes, mids, vals, metrics, cct["id"])
        root = np.zeros(len(metrics))
        np.add.at(root, mids, vals * np.array([m.period for m in metrics])[mids])
        expected.append(root)
        tup = np.zeros(2, ID_ELEMENT)
        tup[0] = (1, 0x7F000001, 0)
        tup[1] = (3 | (3 << 14), t, t)
        header = {"program-name": "app", "program-path": EXE, "env-path": "", "job-id": "", "mpi-rank": "0",
                  "thread-id": str(t), "host-id": "7f000001", "process-id": "99", "trace-min-time": "0",
                  "trace-max-time": "0", "trace-disorder": "0"}
        write_hpcrun(meas / f"app-000000-{t:03d}-7f000001-99-0.hpcrun",
                     HpcrunProfile(header=header, loadmap=[LoadModule(1, EXE, 1)], cct=cct, metrics=metrics,
                                   id_names=default_id_names(), id_tuple=tup, values=packed, index=index))
    return expected


@settings(max_examples=int(os.environ.get("HPCSA_PROPERTY_EXAMPLES", "40")), deadline=None)
@given(measurements())
def test_point_values_in_equal_root_values_out(tmp_path_factory, case):
    metrics, profiles = case
    base = tmp_path_factory.mktemp("prop")
    expected = _write(base / "m", metrics, profiles)
    assert hpcsa_main(["prof", str(base / "m"), "-j", "1", "-o", str(base / "db")]) == 0
    db = open_database(base / "db")
    meta = db.meta
    threads = {int(db.profiles.id_tuple(i)["logicalId"][-1]): i for i in range(1, len(db.profiles.flags))}
    assert sorted(threads) == list(range(len(profiles)))
    for t, want in enumerate(expected):
        got = db.profiles.profile(threads[t])
        for m, metric in enumerate(metrics):
            if want[m] == 0:
                continue
            pid = meta.prop_metric_id(metric.name, "execution")
            at_root = got.values[(got.ctx_ids[np.searchsorted(got.starts, np.arange(len(got.values)),
                                                              side="right") - 1] == 0)
                                 & (got.metric_ids == pid)]
            assert at_root.tolist() == pytest.approx([want[m]], rel=1e-12)
    # The summary's Sum and every view agree with the sum over profiles.
    from hpcsa.views import open_experiment

    exp = open_experiment(str(base / "db"))
    total = np.sum(expected, axis=0)
    names = [mt.name for mt in metrics]
    checked = set()
    for col in exp.catalog:
        if col.derived:
            continue
        if col.name not in names:
            continue
        m = names.index(col.name)
        checked.add(col.name)
        assert exp.total(col) == pytest.approx(total[m], rel=1e-12)
        for forest in (exp.flat(), exp.bottom_up(depth=2)):
            exc = forest.values(col, "exclusive")
            assert np.nansum(exc[forest.roots]) == pytest.approx(total[m], rel=1e-9)
    assert checked >= {n for n, t in zip(names, total, strict=True) if t}
