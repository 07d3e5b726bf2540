"""``hpcsa prof`` against the databases HPCToolkit's hpcprof made from the same measurements.

For each of the 7 measurement directories, with its structure files and with
``--ignore-structs``, the database must equal ``dbase/<name>.d`` /
``dbase/<name>.nostruct.d`` as judged by :mod:`hpcsa.formats.db.compare`
(contexts by path, profiles by identifier tuple, every value within 16 ULP,
trace lines). The recursive GPU kernel is the one place where hpcsa differs by
design; the test pins exactly what differs there. Independent checks: the
point values read from every ``.hpcrun`` (x period) equal the root's
execution value written (conservation), and LLNL hatchet reads our CPU
databases like the references.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db.compare import compare_databases, iter_report
from hpcsa.formats.db.database import open_database
from tests.aggregate.profcheck import MEASUREMENTS, build, measurement, read_sums, reference, root_execution
from tests.formats.dbcheck import HATCHET_LOADS

VARIANTS = [(m, v) for m in MEASUREMENTS for v in ("", ".nostruct")]
RECURSION = "recursion-cuda-nvidiapc-t"
PREFIX = "$_Z8kernmainv$_ZN39_INTERNAL_453c3326_12_recursion_cu_main"
HEART = f"{PREFIX}5heartEv"
MEMBERS = {f"{PREFIX}4top1EPVdi", f"{PREFIX}4top2EPVdi", f"{PREFIX}7common1EPVdi", f"{PREFIX}7common2EPVdi"}


#: Binaries hpcsa may read in place of structure files and still reproduce the references: the
#: measurements' own content-addressed copies (hpcprof read them too).
MEASURED_COPIES = ("/vdso/", "/gpubins/")
#: Databases whose reference was made where no other binary of the measurement existed; if one exists here
#: and is the measured build (hpcsa checks), hpcsa reads it, as hpcprof would, and the reference no longer
#: applies.
LOCAL_BINARIES: dict[str, list[str]] = {}


@pytest.fixture(scope="module")
def built(hpctoolkit_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every database, made once for the module."""
    out = tmp_path_factory.mktemp("prof")
    dbs = {}
    for name, variant in VARIANTS:
        path = out / f"{name}{variant}.d"
        result = build(hpctoolkit_data / "meas" / f"{name}.m", path, ignore_structs=bool(variant))
        LOCAL_BINARIES[name + variant] = [b for b in result.binaries if not any(c in b for c in MEASURED_COPIES)]
        dbs[name + variant] = path
    return dbs


def _skip_if_local_binaries(name: str) -> None:
    if LOCAL_BINARIES.get(name):
        pytest.skip(f"{LOCAL_BINARIES[name]} exist here and are the measured builds; hpcprof made the reference "
                    "where they did not exist")


def _report(cmp) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(list(iter_report(cmp))[:30]) + "\n" + cmp.summary()


@pytest.mark.parametrize("name", [m + v for m, v in VARIANTS if m != RECURSION])
def test_database_equals_hpcprofs(shared_data: Path, built: dict[str, Path], name: str) -> None:
    _skip_if_local_binaries(name)
    cmp = compare_databases(reference(shared_data, name), built[name])
    assert cmp.same, _report(cmp)
    assert cmp.matched_contexts > 0 and cmp.compared_values > 0
    if name.startswith("loops-perf"):
        assert cmp.compared_trace_elements == 0  # measured without traces: neither database has trace.db
    else:
        assert cmp.compared_trace_elements > 0


def test_recursion_without_structure_equals_hpcprofs(shared_data: Path, built: dict[str, Path]) -> None:
    cmp = compare_databases(reference(shared_data, RECURSION + ".nostruct"), built[RECURSION + ".nostruct"])
    assert cmp.same, _report(cmp)


def test_recursive_gpu_functions_differ_by_design_and_only_there(shared_data: Path, built: dict[str, Path]) -> None:
    """hpcprof fans the call into the recursive component's root out to every member (``heart`` line 44
    calls top1, top2, common1 and common2) and leaves the other call (line 45 -> top2) alone; hpcsa puts
    one ``<recursion: ...>`` frame below each call into the component, its members below it. Everything
    outside those calls is the same: the heart function itself, the kernel, the CPU side, the totals."""
    cmp = compare_databases(reference(shared_data, RECURSION), built[RECURSION], limit=10_000)
    assert not cmp.same
    assert set(cmp.counts) <= {"context", "value", "elided"}, _report(cmp)
    call_lines = ("recursion.cu:44", "recursion.cu:45")
    for d in cmp.differences:
        if d.kind == "elided":
            continue  # instruction values below the calls into the component (no place in the tree)
        if d.where.startswith("context id"):
            assert d.kind == "value"  # a value of ours at a line whose counterpart lacks that metric
            continue
        steps = d.path or tuple(d.where.split(" / "))
        heart = next(i for i, s in enumerate(steps) if HEART in s)
        assert any(line in steps[heart + 1] for line in call_lines), d
        if d.kind == "value":  # the inclusive values of the two call lines into the component
            assert len(steps) == heart + 2 and "execution" in d.what, d
    missing = {d.path[-1] for d in cmp.differences if d.kind == "context" and "missing" in d.what}
    extra = {d.path[-1] for d in cmp.differences if d.kind == "context" and "only in" in d.what}
    # hpcprof: members directly below the call lines; hpcsa: a recursion frame there instead.
    assert {s.split("] ", 1)[1] for s in missing} == MEMBERS
    assert len(extra) == 1 and "<recursion: " in next(iter(extra))
    assert cmp.matched_contexts >= 26  # the CPU side, the kernel, heart and its lines


@pytest.mark.parametrize("name,variant", VARIANTS)
def test_conservation(shared_data: Path, built: dict[str, Path], name: str, variant: str) -> None:
    """Per profile and metric: the values read (x period) sum to the root's execution value written."""
    read = read_sums(measurement(shared_data, name))
    written = root_execution(built[name + variant])
    assert set(read) == set(written)
    n = 0
    for key, sums in read.items():
        for metric, total in sums.items():
            got = written[key].get(metric, 0.0)
            assert got == pytest.approx(total, rel=1e-12), (key, metric)
            n += 1
    assert n > 0


def _hatchet_summary(path: Path) -> tuple[int, dict[str, float | None]]:
    import hatchet

    gf = hatchet.GraphFrame.from_hpctoolkit_latest(str(path))
    df = gf.dataframe
    cols = [c for c in df.columns if c != "name"]
    values = {f"{i}:{c}": float(df.loc[r, c]) for i, r in enumerate(gf.graph.roots) for c in cols}
    return len(gf.graph), {k: (None if np.isnan(v) else v) for k, v in values.items()}


@pytest.mark.parametrize("name", sorted(n.removesuffix(".d") for n in HATCHET_LOADS if "/" not in n
                                        and n.removesuffix(".d").removesuffix(".nostruct") in MEASUREMENTS))
def test_hatchet_reads_ours_like_the_reference(shared_data: Path, built: dict[str, Path], name: str) -> None:
    pytest.importorskip("hatchet")
    nodes, roots = _hatchet_summary(reference(shared_data, name))
    nodes2, roots2 = _hatchet_summary(built[name])
    assert nodes2 == nodes
    assert roots2.keys() == roots.keys()
    for k, v in roots.items():
        assert (roots2[k] is None) == (v is None) and (v is None or roots2[k] == pytest.approx(v, rel=1e-12)), k
    assert any(v for v in roots.values())


def test_database_layout_is_complete(built: dict[str, Path]) -> None:
    """Every database opens with all its files; the summary is profile 0; cct.db covers every context id."""
    for path in built.values():
        db = open_database(path)
        assert db.cct is not None and db.metrics is not None
        assert db.profiles.is_summary(0)
        assert len(db.cct) == db.n_ctx_ids()
        assert not any(p.name.startswith(".") for p in path.iterdir())  # no scratch left behind
