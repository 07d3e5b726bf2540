"""One number notation per metric column in every text view (as hpcviewer writes each metric in one format):
the rule (:func:`hpcsa.views.render.notation`) and the commands' text on a real database."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hpcsa.views.render import notation
from tests.conftest import run_cli

SCIENTIFIC = re.compile(r"-?\d\.\d\de[+-]\d\d\d?")
FIXED = re.compile(r"-?\d+(\.\d+)?")


def kind(text: str) -> tuple[str, int]:
    """("scientific", 2) or ("fixed", decimals) of one written value."""
    if SCIENTIFIC.fullmatch(text):
        return ("scientific", 2)
    assert FIXED.fullmatch(text), text
    return ("fixed", len(text.partition(".")[2]))


def assert_one_notation(texts: list[str], what: str) -> None:
    kinds = {kind(t) for t in texts if t and t != "0"}
    assert len(kinds) <= 1, (what, sorted(kinds), texts)


def test_the_rule() -> None:
    # the column of the issue: 135, 0.0218 and 7.97e-03 once; below 0.01 somewhere: scientific throughout
    write = notation([135.0, 0.0218, 0.00797, 0.0, float("nan")])
    assert [write(v) for v in (135.0, 0.0218, 0.00797, 0.0, float("nan"))] == \
        ["1.35e+02", "2.18e-02", "7.97e-03", "", ""]
    assert notation([2.87e8, 7.58e5])(7.58e5) == "7.58e+05"  # counts past a million
    assert [notation([20.0, 6.0, 2.0])(v) for v in (20.0, 6.0)] == ["20", "6"]  # counts
    assert [notation([18.7, 1.38, 0.27])(v) for v in (18.7, 0.27)] == ["18.700", "0.270"]  # within 100x
    assert notation([135.0, 0.27])(135.0) == "1.35e+02"  # many orders of magnitude: scientific
    assert notation([-3.5, 12.0])(-3.5) == "-3.50"
    assert notation(np.zeros(3))(0.0, "0") == "0" and notation([])(0.0) == ""
    assert notation([0.0113, 0.00773])(0.0113) == "1.13e-02"


@pytest.fixture(scope="module")
def cxx_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hpcsa prof`` of the real 1,024-thread C++ measurement (the issue's database)."""
    meas = shared_data / "hpctoolkit-extra" / "meas-cxx1024"
    if not meas.is_dir():
        pytest.skip(f"{meas} is absent")
    db = tmp_path_factory.mktemp("notation") / "cxx.d"
    run_cli("prof", str(meas), "-o", str(db), check=True)
    return db


def columns_of(text: str) -> dict[str, list[str]]:
    """The values written in each column of a tree-table of ``hpcsa view`` (cells right-aligned under their
    headers, two spaces apart), by header."""
    lines = text.splitlines()
    head_at = next(i for i, ln in enumerate(lines) if ln.rstrip().endswith("Scope"))
    head = lines[head_at]
    ends = [m.end() for m in re.finditer(r"\((?:I|E)\)", head)]
    starts = [0] + [e + 2 for e in ends[:-1]]
    names = [head[s:e].strip() for s, e in zip(starts, ends, strict=True)]
    out: dict[str, list[str]] = {n: [] for n in names}
    for line in lines[head_at + 1:]:
        if not line.strip() or line.startswith("hot path"):
            continue
        for name, s, e in zip(names, starts, ends, strict=True):
            cell = line[s:e].split()
            if cell:
                out[name].append(cell[0])
                assert len(cell) == 1 or cell[1].endswith("%"), line
    return out


@pytest.mark.parametrize("args", [(), ("--view", "flat", "--depth", "3"), ("--view", "bottom-up"),
                                  ("--hot-path",), ("--top", "0", "--depth", "12")])
def test_view_writes_each_metric_in_one_notation(cxx_db: Path, args: tuple[str, ...]) -> None:
    text = run_cli("view", str(cxx_db), *args, check=True).stdout
    cols = columns_of(text)
    assert cols and all(cols.values())
    metrics: dict[str, list[str]] = {}
    for name, texts in cols.items():
        metrics.setdefault(name.rsplit(" (", 1)[0], []).extend(texts)  # (I) and (E) of a metric alike
    for name, texts in metrics.items():
        assert_one_notation(texts, name)
    if not args:  # the column: 135, 0.0218 and 7.97e-03 before
        assert cols["CPUTIME (sec) (I)"][:2] == ["1.35e+02", "1.16e+02"]
    lines = text.splitlines()
    pcts = {ln.index("%") for ln in lines[2:] if "%" in ln[:20]}
    assert len(pcts) == 1, "the first column's percentages are aligned"


def test_blame_report_writes_each_column_in_one_notation(cxx_db: Path, tmp_path: Path) -> None:
    text = run_cli("blame", str(cxx_db), "-o", str(tmp_path / "blamed.d"), check=True).stdout
    lines = text.splitlines()
    # 64 processes: min / median / max, then the five least efficient (every one: --format json)
    at = lines.index(next(ln for ln in lines if ln.lstrip().startswith("process ") and "efficiency" in ln))
    rows = []
    for line in lines[at + 1:]:
        if not line.strip():
            break
        rows.append(line.split()[-6:-1])  # span, work, idleness, overhead, wait (seconds)
    assert len(rows) == 5
    assert any(ln.strip().startswith("efficiency") and ln.count("/") == 2 for ln in lines)
    for k, column in enumerate(zip(*rows, strict=True)):
        assert_one_notation(list(column), f"process column {k}")
    sections = [i for i, ln in enumerate(lines) if ln.startswith("Top ")]
    assert sections
    for i in sections:
        seconds = []
        for line in lines[i + 1:]:
            if not line.startswith("  "):
                break
            seconds.append(line.split()[0])
        assert_one_notation(seconds, lines[i])


def test_imbalance_writes_each_column_in_one_notation(cxx_db: Path) -> None:
    lines = run_cli("imbalance", str(cxx_db), "--top", "12", check=True).stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["imbalance", "max"])
    rows = []
    for line in lines[at + 1:]:
        if not line.strip():
            break
        rows.append(line.split()[:5])
    assert len(rows) == 12
    for k, column in enumerate(zip(*rows, strict=True)):
        assert_one_notation(list(column), ("imbalance", "max", "mean", "min", "stddev")[k])
    edges = [t.strip("[,)") for ln in lines if ln.startswith("  [") for t in ln.split()[:2]]
    assert len(edges) >= 4
    assert_one_notation(edges, "histogram edges")


def test_scaling_writes_each_column_in_one_notation(cxx_db: Path, shared_data: Path) -> None:
    theirs = shared_data / "hpctoolkit-extra" / "db-cxx1024"  # hpcprof's database of the same run
    lines = run_cli("scaling", str(cxx_db), str(theirs), "-p", "512", "-q", "1024", "--mode", "strong",
                    "--top", "15", check=True).stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("loss (I)"))
    head = lines[at]
    ends = [head.index(h) + len(h) for h in ("loss (I)", "loss (E)", "at p", "at q", "expected")]
    widths = (9, 9, 8, 8, 9)
    columns: list[list[str]] = [[] for _ in ends]
    for line in lines[at + 1:]:
        for k, (e, w) in enumerate(zip(ends, widths, strict=True)):
            columns[k].append(line[e - w:e].strip())
    for k, column in enumerate(columns):
        assert_one_notation(column, ("loss (I)", "loss (E)", "at p", "at q", "expected")[k])
