"""The newer inputs keep ingest's guarantees (issue 45): mutated thread-trace CSVs, rocprofv3 JSON, graph traces,
nsys 3.25 exports, archives and OTF2 archives end in a measurement or one error line; what the command prints
stays strict UTF-8 with status 0 or 2; a multi-rank ingest killed at random points leaves nothing that reads
as complete; and the committed fixtures are what their script builds."""

from __future__ import annotations

import filecmp
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hpcsa.ingest.inputs import UNPACK_PREFIX
from hpcsa.ingest.sources import read_sources
from tests.conftest import FIXTURES
from tests.core.test_textout import run_to
from tests.fuzzing import EXAMPLES, fuzz_reader, mutate
from tests.ingest.test_ingest_killed import _check

INGEST = FIXTURES / "ingest"
NEWER = ["tiny-kineto-2ranks.tar.gz", "tiny-kineto-hipgraph", "tiny-nsys-3.25.sqlite", "tiny-rocprofv3-att",
         "tiny-rocprofv3-json"]


def _read(path: str) -> None:
    read_sources([path])


def _into_folder_with(companions: list[Path]) -> object:
    """Materialize a mutated file in a folder of its own, beside unmutated companions (code objects)."""

    def make(folder: Path, data: bytes, name: str) -> Path:
        folder.mkdir(parents=True)
        for c in companions:
            shutil.copy(c, folder / c.name)
        target = folder / name
        target.write_bytes(data)
        return target

    return make


def test_fuzz_thread_trace_and_json(tmp_path: Path) -> None:
    att = INGEST / "tiny-rocprofv3-att"
    js = INGEST / "tiny-rocprofv3-json"
    for folder, pattern in ((att, "stats_*.csv"), (js, "*_results.json")):
        [seed] = sorted(folder.glob(pattern))
        companions = [p for p in folder.iterdir() if p != seed]
        make = _into_folder_with(companions)
        counts = fuzz_reader(_read, [seed], tmp_path / folder.name, "",
                             materialize=lambda f, d, make=make, name=seed.name: make(f, d, name))
        assert counts["error"] > 0


def test_fuzz_graph_traces_nsys_325_and_archives(tmp_path: Path) -> None:
    sources = [*sorted((INGEST / "tiny-kineto-hipgraph").glob("*.json")), INGEST / "tiny-nsys-3.25.sqlite",
               INGEST / "tiny-kineto-2ranks.tar.gz"]
    counts = fuzz_reader(_read, sources, tmp_path, "")
    assert counts["error"] > 0 and counts["ok"] > 0


def test_fuzz_otf2_archives(shared_data: Path, tmp_path: Path) -> None:
    """The OTF2 library is C: each mutated archive is read by a command of its own, which must end with status 0
    or one error line (status 2), never a crash."""
    pytest.importorskip("otf2")
    src = shared_data / "gpu-records" / "interchange" / "otf2-scorep-hip-mi300a"
    files = ["traces.def", "traces/0.evt", "traces/128849018880.evt", "traces.otf2"]
    for i in range(max(EXAMPLES // 4, 8)):
        case = tmp_path / f"case{i}"
        shutil.copytree(src, case)
        target = case / files[i % len(files)]
        target.write_bytes(mutate(target.read_bytes(), seed=i))
        proc = subprocess.run([sys.executable, "-m", "hpcsa", "ingest", str(case / "traces.otf2"), "-o",
                               str(tmp_path / f"m{i}")], capture_output=True, text=True, timeout=120)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode in (0, 2) and len(lines) == 1 and "Traceback" not in proc.stderr, \
            (i, proc.returncode, proc.stderr[-400:])


@pytest.mark.parametrize("kind", ["pipe", "file"])
def test_fuzz_what_ingest_prints(tmp_path: Path, kind: str) -> None:
    """``hpcsa ingest`` on mutated newer inputs, stdout and stderr as a shell gives them: status 0 or 2,
    strictly UTF-8, never an exception."""
    seeds = [*sorted((INGEST / "tiny-kineto-hipgraph").glob("*.json")),
             *sorted((INGEST / "tiny-rocprofv3-att").glob("*.csv")),
             *sorted((INGEST / "tiny-rocprofv3-json").glob("*.json")), INGEST / "tiny-nsys-3.25.sqlite",
             INGEST / "tiny-kineto-2ranks.tar.gz"]
    outcomes = {0: 0, 2: 0}
    for i in range(max(EXAMPLES // 3, 8)):
        src = seeds[i % len(seeds)]
        case = tmp_path / f"case{i}"
        case.mkdir()
        target = case / src.name
        target.write_bytes(mutate(src.read_bytes(), seed=i))
        args = ["ingest", str(target), "-o", str(case / "out.m")]
        try:
            status, out, err = run_to(kind, args, tmp_path)
        except Exception as exc:  # noqa: BLE001 - this is the point of the fuzzer
            raise AssertionError(f"{args}: {type(exc).__name__}: {exc}\n  reproduce: mutate({src}, seed={i})") from exc
        assert status in (0, 2), (args, status)
        out.decode("utf-8")
        err.decode("utf-8")
        outcomes[status] += 1
    assert outcomes[0] and outcomes[2]


def test_sigkill_during_a_multi_rank_ingest(shared_data: Path, tmp_path: Path) -> None:
    """Eight ranks from an archive, their clocks aligned: a killed run leaves no measurement that reads as
    complete, and the unpacked archive is not left in the output's folder."""
    src = shared_data / "gpu-records" / "nvidia" / "kineto-dlrm-8rank-v100" / "dlrm_kineto.tar.gz"
    _check(["ingest", str(src)], tmp_path, runs=10, seed=5)
    # What the killed runs unpacked is gone once the next run unpacked its own (the final run above did).
    stale = [n for n in os.listdir(tempfile.gettempdir()) if (m := re.match(rf"^{UNPACK_PREFIX}(\d+)-", n))
             and not Path(f"/proc/{m.group(1)}").exists()]
    assert stale == []


def test_newer_fixtures_are_what_their_script_builds(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_newer_fixtures", INGEST / "make_newer_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_all(str(tmp_path))
    for name in NEWER:
        built, committed = tmp_path / name, INGEST / name
        if committed.is_dir():
            names = sorted(p.name for p in committed.iterdir())
            assert names == sorted(p.name for p in built.iterdir())
            _, mismatch, errors = filecmp.cmpfiles(committed, built, names, shallow=False)
            assert mismatch == [] and errors == [], name
        else:
            assert built.read_bytes() == committed.read_bytes(), name
