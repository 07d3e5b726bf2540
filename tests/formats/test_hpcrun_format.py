"""The .hpcrun v04.00 and .hpctrace 01.01 readers and writers against real hpcrun output."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    encode_hpcrun,
    pack_values,
    placeholder_code,
    placeholder_text,
    read_hpcrun,
    write_hpcrun,
)
from hpcsa.formats.measurement.hpctrace import encode_hpctrace, read_hpctrace
from tests.conftest import assert_one_line_error, run_cli


def _files(root: Path, suffix: str) -> list[Path]:
    return sorted(p for p in root.rglob(f"*{suffix}") if p.is_file())


def test_every_real_hpcrun_round_trips_byte_identically(shared_data):
    files = [f for f in _files(shared_data, ".hpcrun") if b"04.00" in f.read_bytes()[18:23]]
    assert len(files) >= 17
    for f in files:
        prof = read_hpcrun(f)
        assert encode_hpcrun(prof) == f.read_bytes(), f
        # Structural invariants hpcprof relies on: parents precede children, ids are unique.
        ids = prof.cct["id"].astype(np.int64)
        assert len(np.unique(ids)) == len(ids)
        seen = {0}
        for node, parent in zip(ids, prof.cct["parent"], strict=True):
            assert int(parent) in seen, (f, node, parent)
            seen.add(int(node))


def test_every_real_hpctrace_round_trips(shared_data):
    files = _files(shared_data, ".hpctrace")
    assert len(files) >= 17
    for f in files:
        trace = read_hpctrace(f)
        assert encode_hpctrace(trace) == f.read_bytes(), f
        assert len(trace.records) == (f.stat().st_size - 32) // 12


def test_small_measurement_content(hpctoolkit_data):
    """Values checked by hand against the hex dump and upstream's small.yaml."""
    (f,) = (hpctoolkit_data / "meas" / "small.m").glob("*.hpcrun")
    prof = read_hpcrun(f)
    assert prof.header["program-name"] == "testmeas-small"
    assert prof.header["host-id"] == "11ac0300"
    assert prof.id_tuple_text() == "NODE 0 [0x11ac0300] / CORE 0 / THREAD 0"
    assert [m.name for m in prof.metrics] == ["CPUTIME (sec)"]
    assert len(prof.cct) == 13 and len(prof.values) == 5 and len(prof.index) == 5
    # hpcprof multiplies by the period; the five point values of small.d sum to the root's 1.210259 s.
    total = float((prof.value_floats() * prof.periods()[prof.values["metric"].astype(int)]).sum())
    assert total == pytest.approx(1.210259, abs=1e-6)
    (t,) = (hpctoolkit_data / "meas" / "small.m").glob("*.hpctrace")
    trace = read_hpctrace(t)
    assert len(trace.records) == 13 and not trace.call_trace
    assert int(trace.records["time"][0]) == int(prof.header["trace-min-time"])


def test_gpu_stream_trace_has_call_trace_flag(hpctoolkit_data):
    traces = _files(hpctoolkit_data / "meas" / "loops-cuda-nvidia-t.m", ".hpctrace")
    flags = {t.name.split("-")[-4]: read_hpctrace(t).call_trace for t in traces}
    assert flags == {"000": False, "500": True}


def test_placeholder_codes():
    assert placeholder_code("GPUKernl") == int.from_bytes(b"GPUKernl", "big")
    assert placeholder_text(placeholder_code("GPU Sync")) == "GPU Sync"
    assert placeholder_text(0x4011AB) is None


def _synthetic() -> HpcrunProfile:
    cct = np.zeros(4, CCT_NODE)
    cct["id"] = [1, 2, 5, 3]
    cct["parent"] = [0, 1, 2, 1]
    cct["lm_id"] = [0, 1, 1, 1]
    cct["lm_ip"] = [placeholder_code("| Main  "), 0x1000, 0x1010, 0x2000]
    cct["flags"] = 1
    metrics = [MetricDesc("CPUTIME (sec)", period=1000), MetricDesc("COUNT", val_fmt=1)]
    vals, index = pack_values(np.array([3, 5, 5, 3, 2]), np.array([0, 1, 0, 1, 1]),
                              np.array([0.5, 7, 0.25, 2, 0]), metrics, cct["id"])
    return HpcrunProfile(header={"program-name": "x"}, loadmap=[LoadModule(1, "/bin/x", 1)], cct=cct,
                         metrics=metrics, id_names=[(1, "NODE"), (3, "THREAD")],
                         id_tuple=np.zeros(0, dtype=[("kind", ">u2"), ("physical", ">u8"), ("logical", ">u8")]),
                         values=vals, index=index)


def test_pack_values_orders_by_cct_preorder_and_drops_zeros():
    prof = _synthetic()
    # CCT file order is 1, 2, 5, 3: node 5 comes before node 3; the zero for node 2 is dropped.
    assert prof.index["node"].tolist() == [5, 3]
    assert prof.index["start"].tolist() == [0, 2]
    assert prof.values["metric"].tolist() == [0, 1, 0, 1]
    assert prof.value_floats().tolist() == [0.25, 7.0, 0.5, 2.0]
    assert prof.value_nodes().tolist() == [5, 5, 3, 3]


def test_synthetic_file_round_trips(tmp_path):
    prof = _synthetic()
    out = tmp_path / "x.hpcrun"
    write_hpcrun(out, prof)
    back = read_hpcrun(out)
    assert back.header == prof.header and back.metrics == prof.metrics
    assert back.cct.tobytes() == prof.cct.tobytes()
    assert back.value_floats().tolist() == prof.value_floats().tolist()
    assert out.stat().st_size % 1024 == 112  # sections on 1024-byte boundaries, then the footer


def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    import hpcsa.formats.measurement.hpcrun as mod

    def boom(_prof):
        raise RuntimeError("disk full")

    monkeypatch.setattr(mod, "encode_hpcrun", boom)
    with pytest.raises(RuntimeError):
        write_hpcrun(tmp_path / "x.hpcrun", _synthetic())
    assert os.listdir(tmp_path) == []


def _corruptions(data: bytes) -> dict[str, bytes]:
    rng = np.random.default_rng(7)
    return {
        "truncated-half": data[: len(data) // 2],
        "truncated-footer": data[:-5],
        "truncated-header": data[:20],
        "flipped-magic": b"X" + data[1:],
        "wrong-version": data[:18] + b"09.99" + data[23:],
        "garbage": rng.integers(0, 256, len(data), dtype=np.uint8).tobytes(),
        "empty": b"",
    }


@pytest.mark.parametrize("suffix", [".hpcrun", ".hpctrace"])
def test_bad_input_gives_one_line_error(hpctoolkit_data, tmp_path, suffix):
    (src,) = (hpctoolkit_data / "meas" / "small.m").glob(f"*{suffix}")
    for name, data in _corruptions(src.read_bytes()).items():
        bad = tmp_path / f"{name}{suffix}"
        bad.write_bytes(data)
        if name != "garbage" and name != "empty":
            reader = read_hpcrun if suffix == ".hpcrun" else read_hpctrace
            with pytest.raises(HpcsaError):
                reader(bad)
        assert_one_line_error(run_cli("dump", str(bad)), bad.name)


def test_every_truncation_of_a_real_file_is_refused_cleanly(hpctoolkit_data, tmp_path):
    """Cutting the file anywhere must give an HpcsaError, never another exception."""
    (src,) = (hpctoolkit_data / "meas" / "small.m").glob("*.hpcrun")
    data = src.read_bytes()
    bad = tmp_path / "cut.hpcrun"
    for cut in range(0, len(data), 97):
        bad.write_bytes(data[:cut])
        with pytest.raises(HpcsaError):
            read_hpcrun(bad)


def test_corrupt_counts_do_not_allocate(hpctoolkit_data, tmp_path):
    """A section count of 2^40 is refused against the bytes present, not allocated."""
    (src,) = (hpctoolkit_data / "meas" / "small.m").glob("*.hpcrun")
    data = bytearray(src.read_bytes())
    cct_start = 0xC00  # from the footer of this file
    data[cct_start : cct_start + 8] = (1 << 40).to_bytes(8, "big")
    bad = tmp_path / "huge.hpcrun"
    bad.write_bytes(bytes(data))
    with pytest.raises(HpcsaError, match="CCT node count"):
        read_hpcrun(bad)


def test_old_v2_measurement_is_refused_with_version(shared_data):
    old = [f for f in _files(shared_data, ".hpcrun") if f.read_bytes()[18:23] != b"04.00"]
    assert old, "the hpctoolkit-tests v2.0 file is expected in shared data"
    proc = run_cli("dump", str(old[0]))
    assert_one_line_error(proc, old[0].name)
    assert "02.00" in proc.stderr
