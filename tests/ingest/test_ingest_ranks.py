"""Many ranks, one measurement, one clock: inputs as published (directories, archives), ranks from the records,
the file names or the order given, clocks corrected from matched collectives (issue 45). Expectations come
from the raw files (read here with json/tarfile) and from offsets this test injects itself."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.measurement.hpcrun import RANK_ELEMENT
from hpcsa.ingest.inputs import Inputs
from hpcsa.ingest.ranks import ranks_from_names
from hpcsa.ingest.sources import read_sources
from hpcsa.ingest.timeline import one_run
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.ingest.measdir_check import load, total

DLRM = Path("gpu-records") / "nvidia" / "kineto-dlrm-8rank-v100" / "dlrm_kineto.tar.gz"
TINY_RANKS = FIXTURES / "ingest" / "tiny-kineto-2ranks.tar.gz"


def _members(archive: Path) -> dict[str, dict]:
    with tarfile.open(archive) as tf:
        return {m.name: json.load(tf.extractfile(m)) for m in tf if m.isreg() and m.name.endswith(".json")}


def _nccl_ends(doc: dict) -> list[float]:
    """End times (us) of the NCCL kernels of one rank's trace, in time order."""
    return sorted(float(e["ts"]) + float(e["dur"]) for e in doc["traceEvents"]
                  if e.get("cat") == "kernel" and "nccl" in e["name"].lower())


def _ranks_of(meas_dir: Path) -> dict[int, set[int]]:
    """pid -> ranks in the identifier tuples of its profiles."""
    out: dict[int, set[int]] = defaultdict(set)
    for prof in load(str(meas_dir)).profiles:
        ranks = [int(e["physical"]) for e in prof.id_tuple if int(e["kind"]) == RANK_ELEMENT]
        out[int(prof.header["process-id"])].update(ranks)
    return out


def test_dlrm_archive_is_eight_ranks_on_one_timeline(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / DLRM
    docs = _members(src)
    assert len(docs) == 8
    out = tmp_path / "dlrm.m"
    proc = run_cli("ingest", str(src.parent), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "8 rank(s) on 1 host(s), from the records" in proc.stderr
    ranks = _ranks_of(out)
    want = {}
    for doc in docs.values():
        pid = {e["pid"] for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"}.pop()
        want[pid] = {doc["distributedInfo"]["rank"]}
    assert dict(ranks) == want
    # Conservation: kernel time and count of all eight traces.
    kernels = [e for d in docs.values() for e in d["traceEvents"] if e.get("cat") == "kernel"]
    meas = load(str(out))
    assert total(meas, "GKER:COUNT") == len(kernels)
    assert total(meas, "GKER (sec)") == pytest.approx(sum(float(e["dur"]) for e in kernels) / 1e6, rel=1e-9)
    # The ranks ran on one host's clock: the NCCL kernels of each collective end within a few us, and that is
    # what the summary reports (no correction below the jitter).
    ends = np.array([_nccl_ends(d) for d in sorted(docs.values(), key=lambda d: d["distributedInfo"]["rank"])])
    spread = ends.max(axis=0) - ends.min(axis=0)
    assert f"collective skew max {spread.max():.1f} us" in proc.stderr
    assert "no correction" in proc.stderr


def test_injected_clock_offsets_are_recovered(shared_data: Path, tmp_path: Path) -> None:
    """Rank r's clock moved by a known offset: each is found again within the collectives' jitter."""
    docs = _members(shared_data / DLRM)
    shift_us = {r: 250 * r + 1300 * (r % 3) for r in range(8)}
    folder = tmp_path / "shifted"
    folder.mkdir()
    for name, doc in docs.items():
        rank = doc["distributedInfo"]["rank"]
        for e in doc["traceEvents"]:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] += shift_us[rank]
        (folder / Path(name).name).write_text(json.dumps(doc))
    traces = read_sources([str(folder)])
    before = {next(iter(t.processes.values())).rank: int(t.ops["end"].min()) for t in traces}
    summary = one_run(traces)
    after = {next(iter(t.processes.values())).rank: int(t.ops["end"].min()) for t in traces}
    moved = {r: (after[r] - before[r]) / 1000 for r in before}
    for r in range(8):  # corrected back, relative to rank 0, within 10 us (the NCCL ends' jitter is ~3 us)
        assert abs(moved[r] + shift_us[r] - shift_us[0]) < 10, (r, moved[r], shift_us[r])
    assert "7 of 8 rank(s) corrected" in summary
    after_skew = float(summary.split("collective skew max ")[1].split(" -> ")[1].split(" us")[0])
    assert after_skew < 10


def test_tiny_two_ranks_in_an_archive(tmp_path: Path) -> None:
    """The fixture's rank 1 runs 2 ms ahead; its three AllReduce kernels end with rank 0's."""
    docs = _members(TINY_RANKS)
    ends = {d["distributedInfo"]["rank"]: _nccl_ends(d) for d in docs.values()}
    offset_us = ends[1][0] - ends[0][0]
    assert offset_us == pytest.approx(2000)
    out = tmp_path / "m"
    proc = run_cli("ingest", str(TINY_RANKS), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "1 of 2 rank(s) corrected" in proc.stderr and f"largest {offset_us:.1f} us" in proc.stderr
    assert "skew max 2000.0 us -> 0.0 us" in proc.stderr
    assert {min(r) for r in _ranks_of(out).values()} == {0, 1}
    # The corrected stream traces of the two ranks start their AllReduce together.
    meas = load(str(out))
    starts = sorted(int(t.records["time"][0]) for t in meas.traces.values() if len(t.records))
    assert starts[-1] - starts[0] < 2_000_000
    db = tmp_path / "d"
    assert run_cli("prof", str(out), "-o", str(db)).returncode == 0
    for args in (["imbalance", str(db)], ["blame", str(db), "-o", str(tmp_path / "b")]):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("names", "ranks"), [
    (["report.0.sqlite", "report.1.sqlite", "report.2.sqlite"], [0, 1, 2]),
    (["a100_rank0_of16.json", "v100_rank1_of2.json"], [0, 1]),
    (["worker3_step_12.1694128201557.json", "worker0_step_12.1694128201545.json"], [3, 0]),
    (["run-n4-p007.sqlite", "run-n4-p003.sqlite"], [7, 3]),
    (["mfu_2gpu_after.sqlite", "mfu_2gpu_before.sqlite"], None),
    (["x.0.json", "x.0.json"], None),
])
def test_ranks_from_file_names(names: list[str], ranks: list[int] | None) -> None:
    assert ranks_from_names(names) == ranks


def test_files_without_ranks_are_numbered_in_order(tmp_path: Path) -> None:
    for name in ("b-first.sqlite", "a-second.sqlite"):
        shutil.copy(FIXTURES / "ingest" / "tiny-nsys.sqlite", tmp_path / name)
    out = tmp_path / "m"
    proc = run_cli("ingest", str(tmp_path / "b-first.sqlite"), str(tmp_path / "a-second.sqlite"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "2 rank(s) on 1 host(s), numbered in the order given" in proc.stderr
    names = sorted(p.name for p in out.glob("*-000-*.hpcrun"))
    assert [n.split("-")[1] for n in names] == ["000000", "000001"]


def test_one_export_of_two_processes_stays_two_unranked_processes(tmp_path: Path) -> None:
    src = FIXTURES / "ingest" / "tiny-nsys-3.25.sqlite"
    con = sqlite3.connect(src)
    pids = sorted(r[0] for r in con.execute("SELECT DISTINCT (globalPid >> 24) & 16777215 FROM "
                                            "CUPTI_ACTIVITY_KIND_KERNEL"))
    con.close()
    out = tmp_path / "m"
    proc = run_cli("ingest", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "rank" not in proc.stderr
    assert sorted(_ranks_of(out)) == pids and all(not r for r in _ranks_of(out).values())


def _tar_with(members: dict[str, bytes], links: dict[str, str]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return raw.getvalue()


def test_archives_unpack_only_plain_files_inside(tmp_path: Path) -> None:
    kineto = (FIXTURES / "ingest" / "tiny-kineto-cuda.json").read_bytes()
    archive = tmp_path / "run.tgz"
    archive.write_bytes(_tar_with({"run/rank0.json": kineto, "../escape.json": kineto, "/abs.json": kineto},
                                  {"run/link.json": "/etc/passwd"}))
    with Inputs([str(archive)]) as inputs:
        shown = [f.shown for f in inputs.files]
        paths = [f.path for f in inputs.files]
        assert shown == [f"{archive}:run/rank0.json"]
        assert all(Path(p).read_bytes() == kineto for p in paths)
    assert not any(Path(p).exists() for p in paths)  # the unpacked files are gone afterwards
    assert not (tmp_path.parent / "escape.json").exists()
    zipped = tmp_path / "run.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("a/trace.json", kineto)
        zf.writestr("../../evil.json", kineto)
    assert [len(t.ops) for t in read_sources([str(zipped)])] == [len(read_sources([str(FIXTURES / "ingest" /
                                                                                       "tiny-kineto-cuda.json")])[0].ops)]


def test_damaged_archive_is_one_line(tmp_path: Path) -> None:
    good = TINY_RANKS.read_bytes()
    bad = tmp_path / "cut.tar.gz"
    bad.write_bytes(good[: len(good) // 2])
    proc = run_cli("ingest", str(bad), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, "cut.tar.gz")
    assert not (tmp_path / "m").exists()


def test_error_inside_an_archive_names_the_member(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "ingest" / "tiny-kineto-cuda.json").read_text())
    doc["schemaVersion"] = 99
    archive = tmp_path / "bad.tar.gz"
    archive.write_bytes(_tar_with({"dir/rank0.json": json.dumps(doc).encode()}, {}))
    proc = run_cli("ingest", str(archive), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, f"{archive}:dir/rank0.json")


def test_launcher_ranks_from_recorded_environments(shared_data: Path, tmp_path: Path) -> None:
    """nsys (one process per report) and rocpd record the launcher's environment: its rank variable names the
    rank (nothing else of the environment is used)."""
    paths = []
    for rank in (3, 1):
        nsys = tmp_path / f"n{rank}.sqlite"
        shutil.copy(FIXTURES / "ingest" / "tiny-nsys.sqlite", nsys)
        con = sqlite3.connect(nsys)
        con.execute("CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT, name TEXT, "
                    "nameEnum INTEGER, value TEXT)")
        con.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (0, '', 'DeviceEnvironment', 0, ?)",
                    (f"HOME=/root;OMPI_COMM_WORLD_RANK={rank};OMPI_COMM_WORLD_SIZE=4;SECRET_TOKEN=x",))
        con.commit()
        con.close()
        paths.append(nsys)
        db = tmp_path / f"r{rank}.db"
        shutil.copy(shared_data / "gpu-records/amd/rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm/21_results.db", db)
        con = sqlite3.connect(db)
        [table] = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE "
                                             "'rocpd_info_process_%'")]
        con.execute(f"UPDATE {table} SET environment = ?", (json.dumps({"PMI_RANK": str(rank), "PMI_SIZE": "4"}),))
        con.commit()
        con.close()
        paths.append(db)
    for group in (paths[0::2], paths[1::2]):
        out = tmp_path / f"m-{group[0].suffix}"
        proc = run_cli("ingest", *map(str, group), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert "2 rank(s) on 1 host(s), from the records" in proc.stderr
        assert "SECRET" not in proc.stderr
        ranks = {int(e["physical"]) for prof in load(str(out)).profiles for e in prof.id_tuple
                 if int(e["kind"]) == RANK_ELEMENT}
        assert ranks == {1, 3}
