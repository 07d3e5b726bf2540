"""Conservation through ingest on generated records (issue 8): for any mix of kernels, copies, memsets and
synchronizations, the measurement's totals equal the sums over the source records."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcsa.cli.main import main as hpcsa_main
from hpcsa.formats.measurement.hpcrun import read_hpcrun
from tests.conftest import FIXTURES

_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "ingest" / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)

COPY_METRIC = {1: "GXCOPY:H2D (B)", 2: "GXCOPY:D2H (B)", 8: "GXCOPY:D2D (B)"}
API_NAME = {"kernel": 0, "copy": 1, "memset": 2, "sync": 3}  # StringIds of the fixture's API names

op = st.tuples(st.sampled_from(["kernel", "copy", "memset", "sync"]), st.integers(1, 5000),
               st.integers(1, 1 << 20), st.sampled_from([1, 2, 8]), st.sampled_from([7, 8, 9]),
               st.sampled_from([make_fixtures.MAIN, make_fixtures.WORKER]))


def _export(path: Path, ops: list[tuple]) -> None:
    """The fixture's nsys export with its operations replaced by ``ops``."""
    make_fixtures.make_nsys(str(path))
    con = sqlite3.connect(path)
    for table in ("RUNTIME", "KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION"):
        con.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_{table}")
    con.execute("DELETE FROM CUDA_CALLCHAINS")
    gpid = make_fixtures.PID << 24
    t = 1000
    for corr, (kind, dur, size, copy_kind, stream, tid) in enumerate(ops, start=100):
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                    (t, t + 50, make_fixtures.gtid(tid), corr, API_NAME[kind]))
        start, end = t + 100, t + 100 + dur
        if kind == "kernel":
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, ?, ?, ?, 5, 6, 4, 1, 0, 32, 8, "
                        "1, 1, 256, 1, 1, 1024, 0, 0, 4096, 1, 0, 0, 0)", (start, end, stream, corr, gpid))
        elif kind == "copy":
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, NULL, 0, 2, 0, "
                        "1, 0, 1, 0, 0)", (start, end, stream, corr, gpid, size, copy_kind))
        elif kind == "memset":
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, 0, 1, ?, ?, ?, 0, ?, 0, 2)",
                        (start, end, stream, corr, gpid, size))
        else:
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, ?, ?, ?, 3, -1)",
                        (start, end, stream, corr, gpid))
        t = end + 10
    con.commit()
    con.close()


def _totals(meas: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in sorted(meas.glob("*.hpcrun")):
        prof = read_hpcrun(f)
        vals = prof.value_floats() * prof.periods()[prof.values["metric"].astype(int)]
        for mid, v in zip(prof.values["metric"].astype(int), vals, strict=True):
            name = prof.metrics[mid].name
            out[name] = out.get(name, 0.0) + float(v)
    return out


@settings(max_examples=int(os.environ.get("HPCSA_PROPERTY_EXAMPLES", "25")), deadline=None)
@given(st.lists(op, min_size=1, max_size=30))
def test_ingest_conserves_every_operation(tmp_path_factory, ops):
    base = tmp_path_factory.mktemp("ingest")
    _export(base / "run.sqlite", ops)
    assert hpcsa_main(["ingest", str(base / "run.sqlite"), "-o", str(base / "run.m")]) == 0
    got = _totals(base / "run.m")
    want: dict[str, float] = {}

    def add(name: str, value: float) -> None:
        want[name] = want.get(name, 0.0) + value

    for kind, dur, size, copy_kind, _stream, _tid in ops:
        if kind == "kernel":
            add("GKER (sec)", dur / 1e9)
            add("GKER:COUNT", 1)
        elif kind == "copy":
            add(COPY_METRIC[copy_kind], size)
            add("GXCOPY (sec)", dur / 1e9)
        elif kind == "memset":
            add("GMSET:DEV (B)", size)
            add("GMSET (sec)", dur / 1e9)
        else:
            add("GSYNC (sec)", dur / 1e9)
    for name, value in want.items():
        assert got.get(name, 0.0) == pytest.approx(value, rel=1e-9), name
    # GPU operation time is the sum of its parts.
    parts = sum(got.get(n, 0.0) for n in ("GKER (sec)", "GXCOPY (sec)", "GMSET (sec)", "GSYNC (sec)",
                                            "GMEM (sec)", "GICOPY (sec)"))
    assert got.get("GPUOP (sec)", 0.0) == pytest.approx(parts, rel=1e-9)
    assert np.isfinite(list(got.values())).all()
