"""OTF2 archives (Score-P HIP) and Nsight Systems exports of schema 3.25 (issue 45). Expected values are read
here from the records themselves: the archive's events through the otf2 package, the exports with sqlite3."""

from __future__ import annotations

import builtins
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.ingest.sources import classify, read_sources
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.ingest.measdir_check import load, paths_above, total

SCOREP = Path("gpu-records") / "interchange" / "otf2-scorep-hip-mi300a"
CPU_ONLY = Path("gpu-records") / "interchange" / "otf2-scorep-mpi-pingpong-cpu-only"
NSYS = Path("gpu-records") / "nvidia" / "nsys-2026.2-2proc-nccl-h100"


def _scorep_expected(anchor: Path) -> dict[str, float]:
    otf2 = pytest.importorskip("otf2")
    want: dict[str, float] = defaultdict(float)
    with otf2.reader.open(str(anchor)) as r:
        res = r.definitions.clock_properties.timer_resolution
        open_at: dict[str, int] = {}
        for loc, ev in r.events:
            name = type(ev).__name__
            if name not in ("Enter", "Leave"):
                continue
            role = str(ev.region.region_role).rsplit(".", 1)[-1]
            if str(loc.type).endswith("GPU") and role == "KERNEL":
                if name == "Enter":
                    open_at[loc.name] = ev.time
                else:
                    want["GKER (sec)"] += (ev.time - open_at.pop(loc.name)) / res
                    want["GKER:COUNT"] += 1
            attrs = {a.name: v for a, v in (ev.attributes or {}).items()}
            for key in ("ALLOCATION_SIZE", "DEALLOCATION_SIZE"):
                if key in attrs:
                    want["GMEM:DEV (B)"] += int(attrs[key])
                    want["GMEM:COUNT"] += 1
    return dict(want)


def test_scorep_hip_archive(shared_data: Path, tmp_path: Path) -> None:
    anchor = shared_data / SCOREP / "traces.otf2"
    want = _scorep_expected(anchor)
    assert classify(str(anchor)) == "otf2"
    out = tmp_path / "m"
    proc = run_cli("ingest", str(shared_data / SCOREP), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"{int(want['GKER:COUNT'])} kernel" in proc.stderr
    meas = load(str(out))
    assert total(meas, "GKER:COUNT") == want["GKER:COUNT"]
    assert total(meas, "GKER (sec)") == pytest.approx(want["GKER (sec)"], rel=1e-9)
    assert total(meas, "GMEM:DEV (B)") == want["GMEM:DEV (B)"]
    assert total(meas, "GMEM:COUNT") == want["GMEM:COUNT"]
    main = [p for p in meas.profiles if p.header["thread-id"] == "0"][0]
    kernel_paths = paths_above(main, "GPUKernl")
    assert len(kernel_paths) == 2 and all(len(p) == 3 for p in kernel_paths)  # main, the device stub, the launch
    db = tmp_path / "d"
    assert run_cli("prof", str(out), "-o", str(db)).returncode == 0


def test_cpu_only_archive_is_refused_in_one_line(shared_data: Path, tmp_path: Path) -> None:
    pytest.importorskip("otf2")
    proc = run_cli("ingest", str(shared_data / CPU_ONLY / "traces.otf2"), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, "traces.otf2")
    assert "without GPU activity" in proc.stderr


def test_otf2_without_the_package_is_one_line(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_otf2(name: str, *args: object, **kwargs: object) -> object:
        if name == "otf2":
            raise ImportError("no otf2")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_otf2)
    with pytest.raises(HpcsaError, match="needs the otf2 package"):
        read_sources([str(shared_data / SCOREP / "traces.otf2")])


def test_damaged_otf2_archive_is_one_line(shared_data: Path, tmp_path: Path) -> None:
    pytest.importorskip("otf2")
    copy = tmp_path / "a"
    shutil.copytree(shared_data / SCOREP, copy)
    (copy / "traces.def").write_bytes((copy / "traces.def").read_bytes()[:100])
    proc = run_cli("ingest", str(copy / "traces.otf2"), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, "traces.otf2")


@pytest.mark.parametrize("name", ["mfu_2gpu_before.sqlite", "mfu_2gpu_after.sqlite", "h100_2gpu_1s.sqlite"])
def test_nsys_3_25_two_processes(shared_data: Path, tmp_path: Path, name: str) -> None:
    src = shared_data / NSYS / name
    con = sqlite3.connect(src)
    assert con.execute("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'").fetchone()[0] \
        == "3.25.0"
    per_pid = {int(p): (int(n), int(t)) for p, n, t in con.execute(
        "SELECT (globalPid >> 24) & 16777215, COUNT(*), SUM(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL "
        "GROUP BY 1")}
    copies = con.execute("SELECT COUNT(*), SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    con.close()
    assert len(per_pid) == 2
    out = tmp_path / "m"
    proc = run_cli("ingest", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    meas = load(str(out))
    got: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for prof in meas.profiles:
        if int(prof.header["thread-id"]) >= 500:
            continue
        vals = prof.value_floats()
        names = [prof.metrics[m].name for m in prof.values["metric"].tolist()]
        pid = int(prof.header["process-id"])
        got[pid][0] += sum(v for n, v in zip(names, vals, strict=True) if n == "GKER:COUNT")
        got[pid][1] += sum(v for n, v in zip(names, vals, strict=True) if n == "GKER (sec)")
    assert sorted(got) == sorted(per_pid)
    for pid, (n, t) in per_pid.items():
        assert got[pid][0] == n and got[pid][1] == pytest.approx(t / 1e9, rel=1e-9)
    assert total(meas, "GXCOPY:COUNT") == copies[0]


def test_nsys_newer_schema_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "future.sqlite"
    shutil.copy(FIXTURES / "ingest" / "tiny-nsys-3.25.sqlite", src)
    con = sqlite3.connect(src)
    con.execute("UPDATE META_DATA_EXPORT SET value = '3.26.0' WHERE name = 'EXPORT_SCHEMA_VERSION'")
    con.commit()
    con.close()
    proc = run_cli("ingest", str(src), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, "future.sqlite")
    assert "3.26.0 is not supported" in proc.stderr and "through 3.25.x" in proc.stderr


def test_rocprofv3_shaped_archive(tmp_path: Path) -> None:
    """As rocprofv3's OTF2 writer lays it out (generateOTF2.cpp): device work on ACCELERATOR_STREAM locations of
    an ACCELERATOR group, kernels as FUNCTION regions of the HIP paradigm, copies as DATA_TRANSFER regions, no
    correlation with the host calls; written here with the otf2 package's writer."""
    otf2 = pytest.importorskip("otf2")
    folder = tmp_path / "archive"
    with otf2.writer.open(str(folder), "traces", timer_resolution=1_000_000_000) as w:
        node = w.definitions.system_tree_node("node0")
        proc = w.definitions.location_group("Process", system_tree_parent=node)
        agent = w.definitions.location_group("GPU 2", location_group_type=otf2.LocationGroupType.ACCELERATOR,
                                             system_tree_parent=node)
        host = w.event_writer_from_location(w.definitions.location("thread 0", group=proc))
        queue = w.event_writer_from_location(w.definitions.location(
            "queue 0", type=otf2.LocationType.ACCELERATOR_STREAM, group=agent))
        launch = w.definitions.region("hipLaunchKernel", region_role=otf2.RegionRole.FUNCTION,
                                      paradigm=otf2.Paradigm.HIP)
        kernel = w.definitions.region("my_kernel", region_role=otf2.RegionRole.FUNCTION, paradigm=otf2.Paradigm.HIP)
        copy = w.definitions.region("MEMORY_COPY_HOST_TO_DEVICE", region_role=otf2.RegionRole.DATA_TRANSFER,
                                    paradigm=otf2.Paradigm.HIP)
        host.enter(100, launch)
        host.leave(200, launch)
        for start in (300, 2_000):
            queue.enter(start, kernel)
            queue.leave(start + 1_000, kernel)
        queue.enter(3_500, copy)
        queue.leave(3_600, copy)
    out = tmp_path / "m"
    proc_ = run_cli("ingest", str(folder), "-o", str(out))
    assert proc_.returncode == 0, proc_.stderr
    assert "2 kernel, 1 memcpy" in proc_.stderr
    meas = load(str(out))
    assert total(meas, "GKER:COUNT") == 2 and total(meas, "GKER (sec)") == pytest.approx(2e-6)
    assert total(meas, "GXCOPY:COUNT") == 1 and total(meas, "GXCOPY (sec)") == pytest.approx(1e-7)
