"""CUDA/HIP graphs keep the code that built them: a graph's operations sit under the launch, a ``<graph>`` frame
and the context of the call that created their node; nothing is counted twice (issue 45). Expected counts and
times are computed here from the raw records (json/gzip, sqlite3)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from tests.conftest import FIXTURES, run_cli
from tests.ingest.measdir_check import load, total

VLLM = Path("gpu-records") / "amd" / "kineto-vllm-hipgraph-mi300x"
CUDAGRAPH = Path("gpu-records") / "nvidia" / "kineto-cudagraph-a100-v100"
HIPGRAPH = FIXTURES / "ingest" / "tiny-kineto-hipgraph"
NSYS325 = FIXTURES / "ingest" / "tiny-nsys-3.25.sqlite"


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)["traceEvents"]


def _graph_ops(events: list[dict]) -> list[dict]:
    """The device operations correlated with a graph launch call."""
    launches = {e["args"]["correlation"] for e in events
                if e.get("cat") == "cuda_runtime" and e["name"] in ("hipGraphLaunch", "cudaGraphLaunch")}
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in launches]


def _names(meas_dir: Path) -> dict[str, object]:
    """Module path -> its structure module (the names hpcsa wrote for its synthetic modules)."""
    out = {}
    for f in sorted((meas_dir / "structs").glob("*.hpcstruct")):
        for m in read_hpcstruct(str(f)).modules:
            out[m.path] = m
    return out


def _name(module: object | None, ip: int) -> str:
    if module is None:
        return ""
    scope = int(module.lookup([ip])[0])  # type: ignore[attr-defined]
    proc = int(module.procedure_of[scope]) if scope >= 0 else -1  # type: ignore[attr-defined]
    return (module.text(int(module.scopes["name"][proc])) or "") if proc >= 0 else ""  # type: ignore[attr-defined]


def _context_names(meas_dir: Path) -> list[list[str]]:
    """For every kernel node: the names of the frames above it, root first (via the structs' procedures)."""
    names = _names(meas_dir)
    paths = []
    for prof in load(str(meas_dir)).profiles:
        lm = {m.id: m.path for m in prof.loadmap}
        cct = prof.cct
        parent = dict(zip(cct["id"].tolist(), cct["parent"].tolist(), strict=True))
        where = {int(n): (lm.get(int(m), ""), int(ip)) for n, m, ip in zip(cct["id"], cct["lm_id"], cct["lm_ip"],
                                                                             strict=True)}
        for nid, (module, _ip) in where.items():
            if "GPU kernels" not in module:
                continue
            chain, p = [], parent[nid]
            while p:
                mod, ip = where[p]
                chain.append(_name(names.get(mod), ip))
                p = parent[p]
            paths.append(list(reversed(chain)))
    return paths


def test_hip_graph_capture_and_replay_fixture(tmp_path: Path) -> None:
    replay = _events(HIPGRAPH / "replay.pt.trace.json")
    capture = _events(HIPGRAPH / "capture.pt.trace.json")
    graph_ops = _graph_ops(replay)
    kernels = [e for e in replay + capture if e.get("cat") == "kernel"]
    out = tmp_path / "m"
    proc = run_cli("ingest", str(HIPGRAPH), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"{len(graph_ops)} graph operation(s) under <graph> frames ({len(graph_ops)} with the context" in proc.stderr
    meas = load(str(out))
    # Nothing counted twice: kernel count and time are the traces' own.
    assert total(meas, "GKER:COUNT") == len(kernels)
    assert total(meas, "GKER (sec)") == pytest.approx(sum(float(e["dur"]) for e in kernels) / 1e6)
    paths = [p for p in _context_names(out) if "<graph> capture 1" in p]
    assert paths, _context_names(out)
    for path in paths:  # launch context, the graph, then the capture-time Python frames and the captured call
        i = path.index("<graph> capture 1")
        assert path[i - 1] == "hipGraphLaunch" and "serve.py(5): step" in path[:i]
        assert path[i + 1:i + 3] == ["model.py(10): capture", "model.py(20): forward"]
        assert path[i + 3] in ("hipLaunchKernel", "hipMemsetAsync")


def test_vllm_hip_graphs_keep_their_capture_context(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / VLLM
    events = {p: _events(p) for p in sorted(src.rglob("*.json.gz"))}
    graph_ops = sum(len(_graph_ops(ev)) for ev in events.values())
    kernels = [e for ev in events.values() for e in ev if e.get("cat") == "kernel"]
    out = tmp_path / "m"
    proc = run_cli("ingest", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"{graph_ops} graph operation(s) under <graph> frames ({graph_ops} with the context" in proc.stderr
    meas = load(str(out))
    assert total(meas, "GKER:COUNT") == len(kernels)
    assert total(meas, "GKER (sec)") == pytest.approx(sum(float(e["dur"]) for e in kernels) / 1e6, rel=1e-9)
    db = tmp_path / "d"
    assert run_cli("prof", str(out), "-o", str(db)).returncode == 0


def test_cuda_graphs_without_a_capture_get_the_graph_frame(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / CUDAGRAPH
    graph_ops = sum(len(_graph_ops(_events(p))) for p in sorted(src.glob("*.json.gz")))
    out = tmp_path / "m"
    proc = run_cli("ingest", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"{graph_ops} graph operation(s) under <graph> frames (0 with the context" in proc.stderr


def test_nsys_graph_nodes_lead_to_their_creating_call(tmp_path: Path) -> None:
    con = sqlite3.connect(NSYS325)
    graph_kernels = con.execute("SELECT COUNT(*), SUM(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                "WHERE graphNodeId > 0").fetchone()
    every = con.execute("SELECT COUNT(*), SUM(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    graph_ids = {r[0] for r in con.execute("SELECT DISTINCT graphId FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                           "WHERE graphNodeId > 0")}
    con.close()
    out = tmp_path / "m"
    proc = run_cli("ingest", str(NSYS325), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"{graph_kernels[0]} graph operation(s) under <graph> frames ({graph_kernels[0]} with" in proc.stderr
    meas = load(str(out))
    assert total(meas, "GKER:COUNT") == every[0]
    assert total(meas, "GKER (sec)") == pytest.approx(every[1] / 1e9)
    graphs = [p for p in _context_names(out) if any(n.startswith("<graph>") for n in p)]
    assert graphs  # (each kernel node appears under <gpu kernel>, the trace placeholder and its stream's profile)
    for path in graphs:
        i = next(k for k, n in enumerate(path) if n.startswith("<graph>"))
        assert path[i] in {f"<graph> {g}" for g in graph_ids}
        assert path[i - 1] == "cudaGraphLaunch_v10000" and path[i + 1] == "cudaLaunchKernel_v7000"
