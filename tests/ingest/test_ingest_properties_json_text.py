"""Conservation through ingest for the PyTorch profiler (Kineto) and rocprofv2 readers: for any mix of
kernels, copies, memsets and synchronizations, with or without user ranges around the calls, the
measurement's totals equal the sums over the generated records, and ranges never change a total."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcsa.cli.main import main as hpcsa_main
from hpcsa.formats.measurement.hpcrun import read_hpcrun

KIND_WORD = {1: "HtoD", 2: "DtoH", 8: "DtoD"}
COPY_METRIC = {1: "GXCOPY:H2D (B)", 2: "GXCOPY:D2H (B)", 8: "GXCOPY:D2D (B)"}

op = st.tuples(st.sampled_from(["kernel", "copy", "memset", "sync"]), st.integers(1, 5000),
               st.integers(1, 1 << 20), st.sampled_from([1, 2, 8]), st.sampled_from([7, 8]),
               st.sampled_from([100, 101]), st.booleans())


def _totals(meas: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in sorted(meas.glob("*.hpcrun")):
        prof = read_hpcrun(f)
        vals = prof.value_floats() * prof.periods()[prof.values["metric"].astype(int)]
        for mid, v in zip(prof.values["metric"].astype(int), vals, strict=True):
            out[prof.metrics[mid].name] = out.get(prof.metrics[mid].name, 0.0) + float(v)
    return out


def _schedule(ops: list[tuple]) -> list[tuple]:
    """(corr, kind, call start, call end, op start, op end, ...) with every time an integer number of ns."""
    out, t = [], 1000
    for corr, (kind, dur, size, copy_kind, stream, tid, in_range) in enumerate(ops, start=10):
        out.append((corr, kind, t, t + 50, t + 100, t + 100 + dur, size, copy_kind, stream, tid, in_range))
        t += 200 + dur
    return out


def _kineto(path: Path, ops: list[tuple]) -> None:
    def x(cat: str, name: str, pid: int, tid: int, s: int, e: int, **args: object) -> dict:
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": s / 1000, "dur": (e - s) / 1000,
                "args": args}

    ev = []
    for corr, kind, cs, ce, s, e, size, ck, stream, tid, in_range in _schedule(ops):
        api = {"kernel": "cudaLaunchKernel", "copy": "cudaMemcpyAsync", "memset": "cudaMemsetAsync",
               "sync": "cudaStreamSynchronize"}[kind]
        ev.append(x("cuda_runtime", api, 42, tid, cs, ce, correlation=corr))
        if in_range:
            ev.append(x("user_annotation", f"range {corr % 3}", 42, tid, cs - 1, ce + 1))
        g = {"device": 0, "stream": stream, "correlation": corr}
        if kind == "kernel":
            ev.append(x("kernel", "k", 0, stream, s, e, grid=[1, 1, 1], block=[32, 1, 1], **g))
        elif kind == "copy":
            ev.append(x("gpu_memcpy", f"Memcpy {KIND_WORD[ck]} (x -> y)", 0, stream, s, e, bytes=size, **g))
        elif kind == "memset":
            ev.append(x("gpu_memset", "Memset (Device)", 0, stream, s, e, bytes=size, **g))
        else:
            ev.append(x("cuda_sync", "Stream Sync", 0, stream, s, e, cuda_sync_kind="Stream Sync", **g))
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))


def _want(ops: list[tuple], copy_bytes: bool = True, memsets: bool = True, call_syncs: bool = False
          ) -> dict[str, float]:
    """Expected totals; ``call_syncs``: a synchronization is its waiting call (50 ns here), as AMD tools time it."""
    want: dict[str, float] = {}

    def add(name: str, value: float) -> None:
        want[name] = want.get(name, 0.0) + value

    for kind, dur, size, copy_kind, *_ in ops:
        if kind == "kernel":
            add("GKER (sec)", dur / 1e9)
            add("GKER:COUNT", 1)
        elif kind == "copy":
            if copy_bytes:
                add(COPY_METRIC[copy_kind], size)
            add("GXCOPY (sec)", dur / 1e9)
            add("GXCOPY:COUNT", 1)
        elif kind == "memset" and memsets:
            add("GMSET:DEV (B)", size)
            add("GMSET (sec)", dur / 1e9)
        elif kind == "sync":
            add("GSYNC (sec)", (50 if call_syncs else dur) / 1e9)
    return want


def _check(got: dict[str, float], want: dict[str, float]) -> None:
    for name, value in want.items():
        assert got.get(name, 0.0) == pytest.approx(value, rel=1e-9), name
    parts = sum(got.get(n, 0.0) for n in ("GKER (sec)", "GXCOPY (sec)", "GMSET (sec)", "GSYNC (sec)"))
    assert got.get("GPUOP (sec)", 0.0) == pytest.approx(parts, rel=1e-9)
    assert np.isfinite(list(got.values())).all()


EXAMPLES = int(os.environ.get("HPCSA_PROPERTY_EXAMPLES", "25"))


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(op, min_size=1, max_size=30))
def test_kineto_ingest_conserves_every_operation(tmp_path_factory, ops):
    base = tmp_path_factory.mktemp("kineto")
    _kineto(base / "trace.json", ops)
    assert hpcsa_main(["ingest", str(base / "trace.json"), "-o", str(base / "r.m")]) == 0
    assert hpcsa_main(["ingest", str(base / "trace.json"), "--no-ranges", "-o", str(base / "n.m")]) == 0
    got = _totals(base / "r.m")
    _check(got, _want(ops))
    assert _totals(base / "n.m") == pytest.approx(got, rel=1e-12)


def _rocprofv2(path: Path, ops: list[tuple]) -> None:
    lines = ["ROCProfilerV2: Collecting the following counters:", "Enabling API Tracing"]
    for corr, kind, cs, ce, s, e, _size, _ck, stream, _tid, in_range in _schedule(ops):
        if kind == "memset":
            continue  # rocprofv2 records no memsets
        if in_range:
            lines.append(f"Domain(ROCTX_DOMAIN), Timestamp({cs - 1}), ROCTX_ID(0), ROCTX_Message(range {corr % 3})")
        api = {"kernel": "hipLaunchKernel", "copy": "hsa_amd_memory_async_copy", "sync": "hipStreamSynchronize"}
        lines.append(f"Domain(HIP_API_DOMAIN), Function({api[kind]}), Start_Timestamp({cs}), End_Timestamp({ce}), "
                     f"Correlation_ID({corr})")
        if in_range:
            lines.append(f"Domain(ROCTX_DOMAIN), Timestamp({ce + 1}), ROCTX_ID(0)")
        if kind == "kernel":
            lines.append(f"Dispatch_ID({corr}), GPU_ID(1), Queue_ID({stream}), Process_ID(42), Thread_ID(42), "
                         f'Grid_Size(64), Workgroup_Size(64), LDS(0), Scratch_Size(0), Arch_VGPR(8), '
                         f'Kernel_Name("k(int, float*)"), Begin_Timestamp({s}), End_Timestamp({e}), '
                         f"Correlation_ID({corr})")
        elif kind == "copy":
            lines.append(f"Domain(HSA_OPS_DOMAIN), Operation_Name(COPY), Start_Timestamp({s}), End_Timestamp({e}), "
                         f"Correlation_ID({corr})")
        lines.append("Max error: 0.000000")
    path.write_text("\n".join(lines) + "\n")


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(op, min_size=1, max_size=30))
def test_rocprofv2_ingest_conserves_every_operation(tmp_path_factory, ops):
    base = tmp_path_factory.mktemp("rocprofv2")
    _rocprofv2(base / "trace.txt", ops)
    with_ops = [o for o in ops if o[0] != "memset"]
    if not with_ops:
        return
    assert hpcsa_main(["ingest", str(base / "trace.txt"), "-o", str(base / "r.m")]) == 0
    assert hpcsa_main(["ingest", str(base / "trace.txt"), "--no-ranges", "-o", str(base / "n.m")]) == 0
    got = _totals(base / "r.m")
    want = _want(with_ops, copy_bytes=False, memsets=False, call_syncs=True)
    want["GXCOPY:UNK (B)"] = 0.0  # the text gives no copy sizes
    _check(got, want)
    assert _totals(base / "n.m") == pytest.approx(got, rel=1e-12)
