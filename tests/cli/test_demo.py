"""``hpcsa demo`` end to end on the bundled particles application, and its records rebuilt from their script.

Expected values are computed by hand from the design in fixtures/demo/make_records.py (samples over the
whole run, period 2^12 cycles), not read from the outputs:

* compute_forces calls pair_force from the loop at line 50 (call at line 51, 2,400 samples on the call
  instruction) and from the loop at line 53 (call at line 54, 600 samples): a 4:1 split;
* pair_force's own samples are 14,000 plus 2,000 on its call to soften, soften has 20,000: pair_force's
  inclusive 36,000 samples go 28,800 / 7,200 to the two call sites, soften's 20,000 go 16,000 / 4,000;
* compute_forces holds 48,000 of the run's 70,000 samples, so the GINS hot path goes through it, the loop
  at line 50 and its call site into pair_force and soften.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

from hpcsa.cli import demo as demo_module
from hpcsa.structure.gpu import nvdisasm
from hpcsa.views import open_experiment
from hpcsa.views import tree as T
from tests.conftest import FIXTURES, assert_one_line_error, run_cli

DEMO = FIXTURES / "demo"  # the scripts that build the demo's inputs
DATA = Path(demo_module.DATA)  # the inputs: package data, what a wheel installs
RECORDS = DATA / "particles.nvprof"
PERIOD = 4096
PAIR_FORCE = "$_Z14compute_forcesPfPKfS1_i$_Z10pair_forcefff"
SOFTEN = "$_Z14compute_forcesPfPKfS1_i$_Z6softenf"
HAS_NVDISASM = nvdisasm.find_nvdisasm() is not None
# Without nvdisasm the cubin's structure has no call sites: every sample stays under the kernel.
needs_nvdisasm = pytest.mark.skipif(not HAS_NVDISASM, reason="nvdisasm not installed (pip install nvidia-cuda-nvdisasm)")


def _sql(query: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{RECORDS}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One demo run (from a working directory of its own): its output folder and its stdout."""
    where = tmp_path_factory.mktemp("demo")
    proc = run_cli("demo", "-o", "out", cwd=where)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    if HAS_NVDISASM:
        assert "warning" not in proc.stderr, proc.stderr
    return where / "out", proc.stdout + proc.stderr


@needs_nvdisasm
def test_every_step_runs_and_reports(demo: tuple[Path, str]) -> None:
    out, text = demo
    for step in range(1, 8):
        assert f"[{step}/7] " in text
    for summary in ("hpcsa ingest: out/app.m: 1 CPU thread(s), 2 GPU stream(s): 20 kernel, 10 memcpy, 6 memset, "
                    "6 sync, ", "hpcsa struct: ", "hpcsa prof: 3 profiles", "hot path (GINS (I), threshold 50%)",
                    "hot path (GKER (sec) (I), threshold 50%)", "(0 under <unknown caller>)",
                    "hpcsa struct: out/sample.hpcstruct: ", "inlined: square_sum", "hpcsa demo: done in "):
        assert summary in text, summary
    assert f"{PAIR_FORCE}: 80.0% via particles.cu:51, 20.0% via particles.cu:54" in text
    for name in ("app.m", "app.d/meta.db", "app.d/profile.db", "app.d/cct.db", "app.d/trace.db", "sample.hpcstruct"):
        assert (out / name).exists(), name
    [gpubin] = (out / "app.m" / "gpubins").iterdir()
    assert gpubin.read_bytes() == (DATA / "particles-sm75.cubin").read_bytes()


def test_database_conserves_the_records(demo: tuple[Path, str]) -> None:
    exp = open_experiment(demo[0] / "app.d")
    (samples,), = _sql("SELECT sum(samples) FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING")
    (periods, totals), = _sql("SELECT group_concat(DISTINCT samplingPeriodInCycles), sum(totalSamples) "
                              "FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING_RECORD_INFO")
    assert samples == totals == 70_000 and periods == str(PERIOD)
    assert exp.total("GINS") == samples * PERIOD
    (kernel_ns, launches), = _sql('SELECT sum("end" - start), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL')
    assert exp.total("GKER (sec)") == pytest.approx(kernel_ns / 1e9, rel=1e-12)
    assert exp.total("GKER:COUNT") == launches == 20


def _rows_named(exp, name: str) -> list[int]:
    c = exp.cct
    return [r for r in range(len(c)) if c.kind[r] == T.FUNCTION and exp.scope_name(r) == name
            and exp.inclusive("GINS")[r] > 0]


def _call_line(exp, row: int) -> str:
    return exp.scope_name(int(exp.cct.parent[row]))


@needs_nvdisasm
def test_pair_force_is_split_over_its_two_call_sites(demo: tuple[Path, str]) -> None:
    exp = open_experiment(demo[0] / "app.d")
    inc = exp.inclusive("GINS")
    by_site = {_call_line(exp, r): inc[r] / PERIOD for r in _rows_named(exp, PAIR_FORCE)}
    assert by_site == {"particles.cu:51": pytest.approx(28_800), "particles.cu:54": pytest.approx(7_200)}
    soften = sorted(inc[r] / PERIOD for r in _rows_named(exp, SOFTEN))
    assert soften == [pytest.approx(4_000), pytest.approx(16_000)]


@needs_nvdisasm
def test_hot_path_goes_through_the_hot_call_site(demo: tuple[Path, str]) -> None:
    exp = open_experiment(demo[0] / "app.d")
    forest = exp.top_down()
    labels = [forest.label(n) for n in forest.hot_path("GINS")]
    kernel = labels.index("→ compute_forces")  # the short name (views show C++ names without parameters)
    assert labels[kernel + 1:kernel + 4] == ["loop at particles.cu:50", f"particles.cu:51 → {PAIR_FORCE}",
                                             f"particles.cu:23 → {SOFTEN}"]
    assert labels[-1] == "particles.cu:18"  # soften's one statement


def test_output_folder_is_replaced_only_when_it_is_a_demo_output(demo: tuple[Path, str], tmp_path: Path) -> None:
    mine = tmp_path / "results"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert_one_line_error(run_cli("demo", "-o", str(mine)), "results")
    assert (mine / "notes.txt").read_text() == "keep me"
    older = tmp_path / "older"
    older.mkdir()
    (older / ".hpcsa-demo").write_text("")
    (older / "stale").write_text("from an older run")
    proc = run_cli("demo", "-o", str(older))
    assert proc.returncode == 0, proc.stderr
    assert not (older / "stale").exists() and (older / "app.d" / "meta.db").is_file()


def _load(script: Path):
    spec = importlib.util.spec_from_file_location(f"demo_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _content(path: Path) -> dict[str, tuple[str, list[tuple]]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
        return {name: (sql, con.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall()) for name, sql in tables}
    finally:
        con.close()


@needs_nvdisasm
def test_records_are_what_the_script_builds(tmp_path: Path) -> None:
    """Same tables, schemas and rows (SQLite's file bytes depend on the library version, the content does not)."""
    make_records = _load(DEMO / "make_records.py")
    rebuilt = tmp_path / "particles.nvprof"
    assert Path(make_records.OUTPUT) == RECORDS  # the script writes the package data
    make_records.build(str(DATA / "particles-sm75.cubin"), str(rebuilt))
    assert _content(rebuilt) == _content(RECORDS)
    # The design's totals are what the records hold, per kernel.
    design = {k: sum(row[-1] for row in rows) for k, rows in make_records.DESIGN.items()}
    got = dict(_sql("SELECT s.value, sum(p.samples) FROM CUPTI_ACTIVITY_KIND_PC_SAMPLING p JOIN "
                    "CUPTI_ACTIVITY_KIND_FUNCTION f ON f.id = p.functionId JOIN StringTable s ON s._id_ = f.name "
                    "GROUP BY 1"))
    assert got == design == {"_Z14compute_forcesPfPKfS1_i": 48_000, "_Z12total_energyPfPKfS1_i": 16_000,
                             "_Z9integratePfS_PKfS1_fi": 2_000, "_Z10build_treePiPKfi": 4_000}


def test_ends_with_serve_and_source_copy(demo: tuple[Path, str]) -> None:
    """The demo ends by printing how to browse its database, which holds a copy of particles.cu (src/)."""
    out, text = demo
    # stdout comes first in ``text``: its last line is the serve command
    assert text.index("hpcsa demo: done") < text.index("\n  hpcsa serve out/app.d\n")
    meta = open_experiment(out / "app.d").meta
    copied = [(f, int(flag)) for f, flag in zip(meta.files, meta.file_flags, strict=True) if f.endswith("particles.cu")]
    assert len(copied) == 1 and copied[0][0].startswith("src/") and copied[0][1] & 1
    assert (out / "app.d" / copied[0][0]).read_bytes() == (DATA / "particles.cu").read_bytes()
