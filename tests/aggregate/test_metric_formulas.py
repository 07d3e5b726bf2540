"""Derived metrics of an .hpcrun metric table: a formula that cannot be used is refused in one line.

hpcrun's formulas name metrics by position (``#N``) in the file's own table, and their terms are Sum
partials of measured metrics. A table whose positions were shifted (a metric inserted before hpcrun's GPU
block) makes ``GKER:BLKS = #N/#M`` point at derived metrics; a damaged formula does not parse.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hpcsa.formats.measurement.hpcrun import write_hpcrun
from hpcsa.ingest.synth.profiles import thread_profile
from hpcsa.ingest.synth.program import CPUTIME, SynthSpec, build_program
from tests.conftest import assert_one_line_error, run_cli


def _measurement(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    prog = build_program(SynthSpec.preset("gpu", 2, contexts=300, samples=20))
    prof, _ = thread_profile(prog, 0, 0)
    edit(prof)
    meas = tmp_path / "m.m"
    meas.mkdir()
    write_hpcrun(meas / "synthapp-000000-000-5e000000-1000-0.hpcrun", prof)
    return meas


def test_formula_using_a_derived_metric(tmp_path: Path) -> None:
    def shift(prof) -> None:  # type: ignore[no-untyped-def]
        gpu = [m for m in prof.metrics if m.name != CPUTIME.name]
        prof.metrics = [CPUTIME, *gpu]  # the GPU block's #N now point one metric too early
        prof.values["metric"] = 0  # keep every value on a measured metric

    proc = run_cli("prof", str(_measurement(tmp_path, shift)), "-o", str(tmp_path / "x.d"))
    assert_one_line_error(proc, "metric 'GKER:")
    assert "itself a derived metric" in proc.stderr
    assert not (tmp_path / "x.d").exists()


@pytest.mark.parametrize("formula", ["#3 +", "#9999/#1", "max(#1"])
def test_formula_that_does_not_parse(tmp_path: Path, formula: str) -> None:
    def damage(prof) -> None:  # type: ignore[no-untyped-def]
        at = [m.name for m in prof.metrics].index("GKER:OCC_THR")
        prof.metrics[at] = replace(prof.metrics[at], formula=formula)

    proc = run_cli("prof", str(_measurement(tmp_path, damage)), "-o", str(tmp_path / "x.d"))
    assert_one_line_error(proc, "metric 'GKER:OCC_THR'")
    assert "invalid metric formula" in proc.stderr
