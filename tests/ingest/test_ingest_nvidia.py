"""hpcsa ingest on every real NVIDIA dataset: the written measurement's totals equal the sums computed
directly from the source with SQL, every operation sits under its launching API call, call stacks are
the source's frame by frame, and each stream's trace has the source's intervals."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import read_sources
from tests.ingest.measdir_check import load, paths_above, total

NSYS = ["nsys-2022.2-a100-uvm-vectoradd/report4.sqlite",
        "nsys-2022.2-saxpy-mpi-a100-cudabacktrace/saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
        "nsys-2023.1-a100-streams/report13.sqlite", "nsys-2023.1-rtx3060-23k-kernels/report1.sqlite",
        "nsys-2023.3-t4-openmp-offload/report3.sqlite", "nsys-2024.5-cloverleaf-4xa100/perlmutter-cloverleaf-cuda.sqlite",
        "nsys-2024.5-jetson-orin-memset-sync/report15.sqlite", "nsys-2026.1-rtx4060ti-osrt-sampling/report1.sqlite",
        "nsys-legacy-schema-rtx3080-openacc/report12.sqlite"]
DIRS = ["UNK", "H2D", "D2H", "H2A", "A2H", "A2A", "A2D", "D2A", "D2D", "H2H", "P2P"]
PROFILER = re.compile(r"libcupti|libcuda\.so|Nsight-Systems|target-linux", re.IGNORECASE)


def _sql(path: Path, query: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def _has(path: Path, table: str) -> bool:
    return bool(_sql(path, f"SELECT 1 FROM sqlite_master WHERE name = '{table}'"))


@pytest.fixture(scope="module")
def nvidia(shared_data: Path) -> Path:
    return shared_data / "gpu-records" / "nvidia"


def _ingest(src: Path, tmp_path: Path, ranges: bool = True):
    out = tmp_path / "m"
    out.mkdir()
    summary = write_measurement(read_sources([str(src)]), str(out), ranges=ranges)
    return summary, load(str(out)), out


@pytest.mark.parametrize("rel", NSYS)
def test_nsys_totals_match_sql(nvidia: Path, tmp_path: Path, rel: str) -> None:
    src = nvidia / rel
    summary, meas, _ = _ingest(src, tmp_path)
    k = _sql(src, 'SELECT count(*), coalesce(sum("end" - start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL')[0]
    assert total(meas, "GKER:COUNT") == k[0]
    assert total(meas, "GKER (sec)") == pytest.approx(k[1] / 1e9, rel=1e-12, abs=1e-15)
    if _has(src, "CUPTI_ACTIVITY_KIND_MEMCPY"):
        for kind, nbytes in _sql(src, "SELECT copyKind, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                                         "GROUP BY copyKind"):
            if kind <= 10:
                assert total(meas, f"GXCOPY:{DIRS[kind]} (B)") == nbytes, kind
            else:  # unified-memory migrations (11 HtoD, 12 DtoH, 13 DtoD)
                assert total(meas, f"GICOPY:{['H2D', 'D2H', 'D2D'][kind - 11]} (B)") == nbytes, kind
        n_x, n_i = _sql(src, "SELECT sum(copyKind <= 10), sum(copyKind > 10) FROM CUPTI_ACTIVITY_KIND_MEMCPY")[0]
        assert total(meas, "GXCOPY:COUNT") == (n_x or 0)
        assert total(meas, "GICOPY:COUNT") == (n_i or 0)
    if _has(src, "CUPTI_ACTIVITY_KIND_MEMSET"):
        nbytes, n = _sql(src, "SELECT coalesce(sum(bytes), 0), count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET")[0]
        assert sum(v for m, v in meas.totals.items() if m.startswith("GMSET:") and m.endswith("(B)")) == nbytes
        assert total(meas, "GMSET:COUNT") == n
    if _has(src, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        t, n = _sql(src, 'SELECT coalesce(sum("end" - start), 0), count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION')[0]
        assert total(meas, "GSYNC (sec)") == pytest.approx(t / 1e9, rel=1e-12, abs=1e-15)
        assert total(meas, "GSYNC:COUNT") == n
    # No orphans: every operation with a correlation id has its API call in the source and was placed under it.
    orphans = _sql(src, "SELECT count(*) FROM (SELECT correlationId c, globalPid g FROM CUPTI_ACTIVITY_KIND_KERNEL "
                        + "".join(f"UNION ALL SELECT correlationId, globalPid FROM {t} " for t in
                                  ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
                                  if _has(src, t)) +
                        ") o WHERE c != 0 AND (c, g >> 24) NOT IN (SELECT correlationId, globalTid >> 24 "
                        "FROM CUPTI_ACTIVITY_KIND_RUNTIME)")[0][0]
    assert orphans == 0
    assert summary.unattributed == 0
    # Only operations without an API call (correlation id 0: unified-memory migrations) sit at a thread root.
    no_call = _sql(src, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE correlationId = 0")[0][0] \
        if _has(src, "CUPTI_ACTIVITY_KIND_MEMCPY") else 0
    for prof in meas.profiles:
        for code in ("GPUKernl", "GPUCpH2D", "GPUCpD2H", "GPUCp?2?", "GPUMemst"):
            for path in paths_above(prof, code):
                assert path or (no_call and code.startswith("GPUCp")), f"{code} directly under the thread root"
    # Everything placed is exactly one of the source's calls (GPUOP = the sum of the parts).
    parts = sum(total(meas, m) for m in ("GKER (sec)", "GXCOPY (sec)", "GICOPY (sec)", "GMSET (sec)",
                                         "GSYNC (sec)", "GMEM (sec)"))
    assert total(meas, "GPUOP (sec)") == pytest.approx(parts, rel=1e-9)


@pytest.mark.parametrize("rel", NSYS)
def test_nsys_stream_traces_have_the_source_intervals(nvidia: Path, tmp_path: Path, rel: str) -> None:
    src = nvidia / rel
    _, meas, _ = _ingest(src, tmp_path)
    tables = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
              if _has(src, t)]
    union = " UNION ALL ".join(f'SELECT deviceId, contextId, streamId, start, "end" FROM {t}' for t in tables)
    rows = _sql(src, f"SELECT * FROM ({union}) ORDER BY deviceId, contextId, streamId, start, \"end\"")
    by_stream: dict[tuple, list] = {}
    for _dev, ctx, stream, s, e in rows:
        by_stream.setdefault((ctx, stream), []).append((s, e))
    epoch = _sql(src, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")[0][0] \
        if _has(src, "TARGET_INFO_SESSION_START_TIME") else 0
    written = {}
    for prof in meas.profiles:
        if int(prof.header["thread-id"]) < 500:
            continue
        stem = [k for k, t in meas.traces.items() if k.split("-")[-4] == prof.header["thread-id"]
                and k.split("-")[-2] == prof.header["process-id"]][0]
        tup = {int(e["kind"]) & 0x3FFF: int(e["logical"]) for e in prof.id_tuple}
        written[(tup[5], tup[6])] = meas.traces[stem]
    assert set(written) == set(by_stream)
    for key, intervals in by_stream.items():
        trace = written[key]
        assert trace.call_trace
        rec = trace.records
        assert len(rec) == 2 * len(intervals)
        starts = rec["time"][0::2].astype(np.int64)
        ends = rec["time"][1::2].astype(np.int64)
        src_s = np.array([s for s, _ in intervals], np.int64) + epoch
        src_e = np.array([e for _, e in intervals], np.int64) + epoch
        assert np.array_equal(ends, np.maximum(src_e, starts))
        # Starts equal the source's, except where an operation overlaps the previous one on its stream
        # (hpcrun then starts it at the previous end).
        prev_end = np.concatenate([[src_s[0]], np.maximum.accumulate(src_e)[:-1]])
        assert np.array_equal(starts, np.maximum(src_s, prev_end))
        assert len(set(rec["ctx"][1::2].tolist())) == 1  # every end is NoActvty


def test_cudabacktrace_launch_contexts_are_the_call_chains(nvidia: Path, tmp_path: Path) -> None:
    """Each operation's context is the CPU call path of its API call (CUDA_CALLCHAINS), frame by frame."""
    src = nvidia / NSYS[1]
    _, meas, _ = _ingest(src, tmp_path, ranges=False)  # NVTX ranges would add frames above the chains
    chains: dict[int, list[tuple[str, int, str]]] = {}
    for cid, _d, ip, sym, mod in _sql(src, "SELECT c.id, c.stackDepth, c.originalIP, s.value, m.value "
                                           "FROM CUDA_CALLCHAINS c JOIN StringIds s ON s.id = c.symbol "
                                           "JOIN StringIds m ON m.id = c.module ORDER BY c.id, c.stackDepth"):
        chains.setdefault(cid, []).append((mod, ip, sym))
    # The backtrace row (event class 67) of each call names its chain; in this export the chain ids are the
    # callchainId + 1 (each chain's libcudart frame is then the API's name — checked here).
    expected = {"GPUKernl": set(), "GPUCpH2D": set(), "GPUCpD2H": set()}
    q = ("SELECT r.callchainId, a.value, o.kind FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds a "
         "ON a.id = r.nameId JOIN (SELECT correlationId c, 'GPUKernl' kind FROM CUPTI_ACTIVITY_KIND_KERNEL UNION "
         "ALL SELECT correlationId, CASE copyKind WHEN 1 THEN 'GPUCpH2D' WHEN 2 THEN 'GPUCpD2H' END "
         "FROM CUPTI_ACTIVITY_KIND_MEMCPY) o ON o.c = r.correlationId WHERE r.eventClass = 67")
    for chain_id, api, kind in _sql(src, q):
        frames = [f for f in chains[chain_id + 1] if not PROFILER.search(f[0])]
        assert frames[0][2] == api  # the innermost kept frame is the API function itself
        expected[kind].add(tuple((mod, ip) for mod, ip, _ in reversed(frames)))
    assert sum(len(v) for v in expected.values()) > 0
    [prof] = [p for p in meas.profiles if p.header["thread-id"] == "0"]
    for code, paths in expected.items():
        assert set(paths_above(prof, code)) == paths, code


def test_cpu_sample_stacks_become_launch_contexts(nvidia: Path, tmp_path: Path) -> None:
    """Without CUDA backtraces, a CPU sample on the launching thread during the API call gives its stack."""
    src = nvidia / NSYS[5]
    _, meas, _ = _ingest(src, tmp_path)
    chains: dict[int, list[tuple[str, int, int]]] = {}
    for cid, ip, mod, kmode in _sql(src, "SELECT c.id, c.originalIP, m.value, c.kernelMode FROM SAMPLING_CALLCHAINS c "
                                         "JOIN StringIds m ON m.id = c.module ORDER BY c.id, c.stackDepth"):
        chains.setdefault(cid, []).append((mod, ip, kmode))
    q = ("SELECT (SELECT e.id FROM COMPOSITE_EVENTS e WHERE e.globalTid = r.globalTid AND e.start BETWEEN r.start "
         "AND r.\"end\" ORDER BY e.start LIMIT 1) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
         "ON k.correlationId = r.correlationId WHERE r.eventClass IN (0, 1)")
    expected = set()
    n_sampled = 0
    for (sample,) in _sql(src, q):
        if sample is None:
            continue
        n_sampled += 1
        frames = [(m, ip or 0) for m, ip, km in chains[sample] if not km and not PROFILER.search(m)]
        if frames:  # a sample inside the driver only says nothing about the caller
            expected.add(tuple(reversed(frames)))
    assert n_sampled > 0 and len(expected) > 1
    got = set(paths_above(meas.profiles[0], "GPUKernl"))
    assert expected <= got
    # The launches without a sample sit under their API call alone.
    assert all(len(p) == 1 and p[0][0] == "[CUDA API]" for p in got - expected)


def test_nvprof_timeline_totals(nvidia: Path, tmp_path: Path) -> None:
    src = nvidia / "nvprof-cupti-timeline-titanv/timeline.nvprof"
    summary, meas, _ = _ingest(src, tmp_path)
    n, t = _sql(src, 'SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL')[0]
    assert total(meas, "GKER:COUNT") == n
    assert total(meas, "GKER (sec)") == pytest.approx(t / 1e9, rel=1e-12)
    for kind, nbytes in _sql(src, "SELECT copyKind, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind"):
        assert total(meas, f"GXCOPY:{DIRS[kind]} (B)") == nbytes
    for kind, nbytes in _sql(src, "SELECT memoryKind, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET GROUP BY 1"):
        assert total(meas, f"GMSET:{['UNK', 'PAG', 'PIN', 'DEV', 'ARY', 'MAN', 'DST', 'MST'][kind]} (B)") == nbytes
    t, n = _sql(src, 'SELECT sum("end" - start), count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION')[0]
    assert total(meas, "GSYNC (sec)") == pytest.approx(t / 1e9, rel=1e-12)
    assert summary.unattributed == 0
    # Threads: one profile per CPU thread that called the CUDA API (CUPTI's truncated pthread ids): those
    # that issued GPU work, and those that only called it, whose CPU trace line blame reads (issue 43).
    threads = _sql(src, "SELECT count(DISTINCT threadId) FROM (SELECT threadId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                        "UNION ALL SELECT threadId FROM CUPTI_ACTIVITY_KIND_DRIVER)")[0][0]
    assert summary.threads == threads == 5


def test_nvprof_pc_samples(nvidia: Path, tmp_path: Path) -> None:
    src = nvidia / "nvprof-cupti-pcsampling-titanv/forward1_analysis.nvprof"
    _, meas, _ = _ingest(src, tmp_path)
    (period, tot), = _sql(src, "SELECT samplingPeriodInCycles, totalSamples FROM "
                               "CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO")
    samples, latency = _sql(src, "SELECT sum(samples), sum(latencySamples) FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING")[0]
    assert total(meas, "GINS") == samples * period
    assert total(meas, "GSAMP:TOT") == tot
    assert total(meas, "GSAMP:PER (cyc)") == period
    # hpcrun's classes: latency samples per CUPTI reason (1 none ... 12 sleeping).
    classes = {1: "NONE", 2: "IFET", 3: "IDEP", 4: "GMEM", 5: "TMEM", 6: "SYNC", 7: "CMEM", 8: "PIPE", 9: "MTHR",
               10: "NSEL", 11: "OTHR", 12: "SLP"}
    for reason, lat in _sql(src, "SELECT stallReason, sum(latencySamples) FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING "
                                 "GROUP BY 1"):
        assert total(meas, f"GINS:STL_{classes[reason]}") == lat * period, reason
    assert total(meas, "GINS:STL_ANY") == sum(
        lat for r, lat in _sql(src, "SELECT stallReason, sum(latencySamples) FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING "
                                    "GROUP BY 1") if r != 1) * period
    # One CCT node per sampled pc under <gpu kernel>, unwound = 0 except the kernel entry itself.
    prof = meas.profiles[0]
    kernel_ph = prof.cct["id"][prof.cct["lm_ip"] == np.uint64(int.from_bytes(b"GPUKernl", "big"))]
    kids = prof.cct[np.isin(prof.cct["parent"], kernel_ph)]
    pcs = _sql(src, "SELECT count(DISTINCT pcOffset), sum(pcOffset = 0) > 0 FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING")[0]
    assert len(kids) == pcs[0] + (0 if pcs[1] else 1)
    assert int((kids["flags"] & 1).sum()) == 1  # only the entry node is unwound


def test_cupti_util_file(shared_data: Path, tmp_path: Path) -> None:
    """The synthetic util file's known values: 2 buffers x 2 PCs, reasons 7 (long_scoreboard) and 9 (selected)."""
    src = shared_data / "gpu-records/synthetic/cupti-pcsampling-util-cuda13/pcsampling_util_2buffers.dat"
    _, meas, _ = _ingest(src, tmp_path)
    assert total(meas, "GINS") == 2 * (11 + 22 + 33 + 44)
    assert total(meas, "GINS:STL_GMEM") == 2 * (11 + 33)  # long_scoreboard
    assert total(meas, "GINS:STL_NONE") == 2 * (22 + 44)  # selected = issued
    assert total(meas, "GINS:STL_ANY") == 2 * (11 + 33)
    prof = meas.profiles[0]
    sample_nodes = prof.cct[(prof.cct["flags"] & 1) == 0]
    offs = sorted(int(x) & 0xFFFF for x in sample_nodes["lm_ip"])
    assert offs == [0x100, 0x110]


def test_environment_tables_are_not_copied(nvidia: Path, tmp_path: Path) -> None:
    """TARGET_INFO_SYSTEM_ENV holds the captured environment (possible secrets): no value reaches the output."""
    src = nvidia / NSYS[1]
    _, _, out = _ingest(src, tmp_path)
    values = [v for (v,) in _sql(src, "SELECT CAST(value AS BLOB) FROM TARGET_INFO_SYSTEM_ENV "
                                      "WHERE name != 'Hostname'") if v and len(v) >= 12]
    assert values
    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert not [v for v in values if bytes(v) in blob]
