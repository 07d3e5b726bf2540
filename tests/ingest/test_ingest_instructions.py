"""Instruction-level AMD records: rocprofv3 thread traces (``--att`` decoder statistics) and rocprofv3 JSON PC
samples become per-instruction metrics at code-object offsets in gpubins/, so prof attributes them to source
lines (issue 45). Expectations are the CSVs' and the JSON's own sums, computed here with csv/json; code objects
are matched by content (md5) and read with pyelftools, independently of hpcsa."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import defaultdict
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.conftest import FIXTURES, run_cli
from tests.ingest.measdir_check import PLACEHOLDERS, load, total

ATT = Path("gpu-records") / "amd" / "rocprofv3-att-mi355x"
ATT_FIXTURE = FIXTURES / "ingest" / "tiny-rocprofv3-att"
JSON_FIXTURE = FIXTURES / "ingest" / "tiny-rocprofv3-json"
COLUMNS = {"Hitcount": "GINS", "Latency": "GINS:LAT", "Stall": "GINS:STALL_CYC", "Idle": "GINS:IDLE_CYC"}


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if not r["Instruction"].startswith(";")]


def _values_by_address(meas_dir: Path) -> dict[tuple[str, int], dict[str, float]]:
    """(module path, address) of every instruction node under <gpu kernel> -> its metric values."""
    out: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for prof in load(str(meas_dir)).profiles:
        lm = {m.id: m.path for m in prof.loadmap}
        cct = prof.cct
        kernel_ph = {int(n) for n, m, ip in zip(cct["id"], cct["lm_id"], cct["lm_ip"], strict=True)
                     if int(m) == 0 and PLACEHOLDERS.get(int(ip)) == "GPUKernl"}
        where = {int(n): (lm.get(int(m), ""), int(ip)) for n, m, ip, p in
                 zip(cct["id"], cct["lm_id"], cct["lm_ip"], cct["parent"], strict=True) if int(p) in kernel_ph}
        vals = prof.value_floats()
        for node, metric, v in zip(prof.value_nodes().tolist(), prof.values["metric"].tolist(), vals.tolist(),
                                   strict=True):
            if node in where:
                out[where[node]][prof.metrics[metric].name] += v
    return out


def _gpubin_of(meas_dir: Path) -> dict[str, str]:
    """md5 of a code object's bytes -> its gpubins/ path in the measurement."""
    return {p.stem: f"gpubins/{p.name}" for p in (meas_dir / "gpubins").glob("*.gpubin")}


def test_thread_trace_totals_are_the_csvs(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / ATT
    out = tmp_path / "att.m"
    proc = run_cli("ingest", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    csvs = sorted((src / "trace").glob("stats_*.csv"))
    rows = [r for f in csvs for r in _csv_rows(f)]
    kept = [r for r in rows if any(int(r[c]) for c in COLUMNS)]
    assert f"{len(kept)} instruction-trace records" in proc.stderr
    meas = load(str(out))
    for column, metric in COLUMNS.items():
        assert total(meas, metric) == sum(int(r[column]) for r in rows), metric
    # Per instruction, at its address in the code object it came from (those saved beside the CSVs).
    saved = {int(p.name.split("_")[-1].split(".")[0]): hashlib.md5(p.read_bytes()).hexdigest()
             for p in (src / "trace").rglob("*_code_object_id_*.out")}
    bins = _gpubin_of(out)
    assert set(bins) == set(saved.values())
    by_address = _values_by_address(out)
    checked = 0
    for r in kept:
        code = int(r["CodeObj"])
        if code not in saved:
            continue
        got = by_address[(bins[saved[code]], int(r["Vaddr"]))]
        assert {m: got[m] for m in COLUMNS.values()} == {m: float(r[c]) for c, m in COLUMNS.items()}, r
        checked += 1
    assert checked == sum(1 for r in kept if int(r["CodeObj"]) in saved)
    # Dispatch 7's code object is missing: its kernel is named after the dispatch, totals kept.
    d7 = _csv_rows(src / "trace" / "stats_ui_output_agent_26423_dispatch_7.csv")
    synthetic = {k: v for k, v in by_address.items() if not k[0].startswith("gpubins/")}
    assert sum(v["GINS:LAT"] for v in synthetic.values()) == sum(int(r["Latency"]) for r in d7)
    db = tmp_path / "att.d"
    done = run_cli("prof", str(out), "-o", str(db))
    assert done.returncode == 0, done.stderr


def test_hottest_instruction_is_on_its_source_line(tmp_path: Path) -> None:
    [stats] = sorted(ATT_FIXTURE.glob("stats_*.csv"))
    rows = _csv_rows(stats)
    hottest = max(rows, key=lambda r: int(r["Latency"]))
    by_line: dict[int, float] = defaultdict(float)
    for r in rows:
        by_line[int(r["Source"].rsplit(":", 1)[1]) if r["Source"] else 0] += int(r["Latency"])
    out, db = tmp_path / "m", tmp_path / "d"
    assert run_cli("ingest", str(ATT_FIXTURE), "-o", str(out)).returncode == 0
    assert run_cli("prof", str(out), "-o", str(db)).returncode == 0
    flat = run_cli("view", str(db), "--view", "flat", "-m", "GINS:LAT", "--depth", "6", "--format", "csv", "--top", "0")
    assert flat.returncode == 0, flat.stderr
    lines = {int(r["line"]): float(r["GINS:LAT (E)"]) for r in csv.DictReader(io.StringIO(flat.stdout))
             if r["kind"] == "line" and r["file"].endswith("callgraph.cl")}
    assert lines == dict(by_line)
    assert max(lines, key=lambda k: lines[k]) == int(hottest["Source"].rsplit(":", 1)[1])


def _json_samples(path: Path) -> list[dict]:
    proc = json.loads(path.read_text())["rocprofiler-sdk-tool"][0]
    records = proc["buffer_records"]
    return [s["record"] for kind in ("pc_sample_host_trap", "pc_sample_stochastic") for s in records.get(kind, [])]


def _entry(code_object: Path, name: str) -> int:
    with open(code_object, "rb") as fh:
        elf = ELFFile(fh)
        return next(int(s["st_value"]) for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == name)


def test_rocprofv3_json_pc_samples(tmp_path: Path) -> None:
    [doc] = sorted(JSON_FIXTURE.glob("*_results.json"))
    samples = _json_samples(doc)
    proc_doc = json.loads(doc.read_text())["rocprofiler-sdk-tool"][0]
    kernels = proc_doc["buffer_records"]["kernel_dispatch"]
    code_object = JSON_FIXTURE / proc_doc["strings"]["code_object_snapshot_filenames"][1]
    out = tmp_path / "m"
    proc = run_cli("ingest", str(JSON_FIXTURE), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    meas = load(str(out))
    assert total(meas, "GINS") == len(samples)
    assert total(meas, "GKER:COUNT") == len(kernels)
    assert total(meas, "GKER (sec)") == pytest.approx(sum(k["end_timestamp"] - k["start_timestamp"]
                                                          for k in kernels) / 1e9)
    stalled = [s for s in samples if "snapshot" in s and not s["wave_issued"]]
    assert total(meas, "GINS:STL_ANY") == len(stalled)
    # Every sample at its code object offset in the saved code object (its kernel's entry + offset).
    gpubin = _gpubin_of(out)[hashlib.md5(code_object.read_bytes()).hexdigest()]
    by_address = _values_by_address(out)
    want: dict[int, int] = defaultdict(int)
    for s in samples:
        want[s["pc"]["code_object_offset"]] += 1
    assert {a: v["GINS"] for (m, a), v in by_address.items() if m == gpubin and v["GINS"]} == dict(want)
    entry = _entry(code_object, "kernel_loops")
    assert min(want) >= entry


@pytest.mark.parametrize("damage", ["truncate", "not-an-object", "bad-offset"])
def test_rocprofv3_json_damage_is_one_line(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    [doc] = sorted(JSON_FIXTURE.glob("*_results.json"))
    text = doc.read_text()
    if damage == "truncate":
        text = text[: len(text) // 2]
    elif damage == "not-an-object":
        text = '{"rocprofiler-sdk-tool": [1, 2]}'
    else:
        data = json.loads(text)
        data["rocprofiler-sdk-tool"][0]["buffer_records"]["pc_sample_host_trap"][0]["record"]["pc"][
            "code_object_offset"] = 4
        text = json.dumps(data)
    (folder / doc.name).write_text(text)
    for f in JSON_FIXTURE.glob("*.hsaco"):
        (folder / f.name).write_bytes(f.read_bytes())
    proc = run_cli("ingest", str(folder / doc.name), "-o", str(tmp_path / "m"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert doc.name in proc.stderr and "Traceback" not in proc.stderr
