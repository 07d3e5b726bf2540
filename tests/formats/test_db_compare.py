"""The database comparator (the judge of the aggregation tests) and ``hpcsa diff``.

It must see a value changed by more than 16 ULP (and tolerate less), a
context that is missing, a context moved under another parent, a profile
that is missing, and a different trace; ids and layout must not matter.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db import metadb, profiledb, tracedb
from hpcsa.formats.db.compare import compare_databases, ulp_distance
from tests.conftest import assert_one_line_error, run_cli


@pytest.fixture()
def small(shared_data: Path, tmp_path: Path) -> tuple[Path, Path]:
    ref = shared_data / "hpctoolkit" / "dbase" / "small.d"
    copy = tmp_path / "copy.d"
    shutil.copytree(ref, copy)
    for f in copy.rglob("*"):
        f.chmod(0o644 if f.is_file() else 0o755)
    return ref, copy


def _bump_first_value(db: Path, profile: int, ulps: int) -> tuple[float, float]:
    """Change the first value of a profile in profile.db by ``ulps`` units in the last place, in place."""
    pdb = profiledb.ProfileDB(db / "profile.db")
    at = int(pdb.p_values[profile]) + 2  # {Val}: u16 metricId, then the f64
    raw = bytearray((db / "profile.db").read_bytes())
    old = struct.unpack_from("<d", raw, at)[0]
    new = float(np.frombuffer(struct.pack("<q", struct.unpack("<q", struct.pack("<d", old))[0] + ulps), "<f8")[0])
    struct.pack_into("<d", raw, at, new)
    (db / "profile.db").write_bytes(bytes(raw))
    return old, new


def test_ulp_distance() -> None:
    a = np.array([1.0, -1.0, 0.0, 1e300])
    assert ulp_distance(a, a).tolist() == [0, 0, 0, 0]
    assert ulp_distance(np.array([1.0]), np.array([np.nextafter(1.0, 2)]))[0] == 1
    assert ulp_distance(np.array([0.0]), np.array([-0.0]))[0] == 0
    assert ulp_distance(np.array([np.nextafter(0.0, 1)]), np.array([np.nextafter(0.0, -1)]))[0] == 2


def test_a_database_equals_itself_and_its_rewrite(small: tuple[Path, Path]) -> None:
    ref, copy = small
    cmp = compare_databases(ref, copy)
    assert cmp.same and cmp.matched_contexts == 13 and cmp.compared_trace_elements == 13


def test_changed_value_beyond_16_ulp_is_seen(small: tuple[Path, Path]) -> None:
    ref, copy = small
    _bump_first_value(copy, 1, 16)
    assert compare_databases(ref, copy).same  # within the grace
    _bump_first_value(copy, 1, 1)  # now 17 ULP away
    cmp = compare_databases(ref, copy)
    assert not cmp.same and set(cmp.counts) == {"value"} and cmp.counts["value"] == 1
    assert "17 ULP" in cmp.differences[0].what


def test_changed_summary_value_is_seen(small: tuple[Path, Path]) -> None:
    ref, copy = small
    _bump_first_value(copy, 0, 1000)
    cmp = compare_databases(ref, copy)
    assert cmp.counts == {"value": 1} and "summary" in cmp.differences[0].what


def _rewrite_tree(db: Path, edit) -> metadb.MetaDB:  # type: ignore[no-untyped-def]
    meta = metadb.read_metadb(db / "meta.db")
    t = meta.contexts
    assert t is not None
    cols = {name: getattr(t, name).copy() for name in metadb.CONTEXT_COLUMNS}
    cols = edit(meta, cols)
    meta.contexts = metadb.ContextTree.from_columns(t.entry_points, **cols)
    (db / "meta.db").unlink()
    metadb.write_metadb(db / "meta.db", meta)
    return meta


def _row(meta: metadb.MetaDB, what: str) -> int:
    t = meta.contexts
    assert t is not None
    return next(r for r in range(len(t)) if metadb.describe_context(meta, r) == what)


def test_missing_context_is_seen(small: tuple[Path, Path]) -> None:
    ref, copy = small

    def drop_caller(meta, cols):  # type: ignore[no-untyped-def]
        r = _row(meta, "-call> [function] caller")
        sub = np.arange(r, r + int(meta.contexts.subtree_size[r]))
        keep = np.setdiff1d(np.arange(len(cols["ctx_id"])), sub)
        new_row = np.cumsum(np.isin(np.arange(len(cols["ctx_id"])), keep)) - 1
        out = {k: v[keep] for k, v in cols.items()}
        out["parent"] = np.where(out["parent"] >= 0, new_row[np.maximum(out["parent"], 0)], -1)
        return out

    _rewrite_tree(copy, drop_caller)
    cmp = compare_databases(ref, copy)
    ctx = [d for d in cmp.differences if d.kind == "context"]
    assert len(ctx) == 1 and "missing from the second" in ctx[0].what and ctx[0].path[-1].endswith("caller")
    assert "with 5 descendants" in ctx[0].what  # line 7, spinsleep, its line, loop and line


def test_moved_context_is_seen(small: tuple[Path, Path]) -> None:
    ref, copy = small

    def move_loop(meta, cols):  # type: ignore[no-untyped-def]
        loop = _row(meta, "-lexical> [loop] small.c:3 testmeas-small+0x1169")
        line = next(r for r in range(len(cols["ctx_id"])) if cols["parent"][r] == cols["parent"][loop]
                    and r != loop)  # the sibling line context of the same function
        out = dict(cols)
        out["parent"] = cols["parent"].copy()
        out["parent"][loop] = line
        return out

    _rewrite_tree(copy, move_loop)
    cmp = compare_databases(ref, copy)
    moved = [d for d in cmp.differences if d.kind == "context"]
    assert {("missing" in d.what, d.path[-1]) for d in moved} == {
        (True, "-lexical> [loop] small.c:3 testmeas-small+0x1169"),
        (False, "-lexical> [loop] small.c:3 testmeas-small+0x1169")}
    assert len(moved[0].path) != len(moved[1].path)


def test_different_trace_is_seen(small: tuple[Path, Path]) -> None:
    ref, copy = small
    tdb = tracedb.TraceDB(copy / "trace.db")
    line = tdb.trace(0).copy()
    line["ctxId"][3] = line["ctxId"][4] if line["ctxId"][3] != line["ctxId"][4] else 0
    reserve = tdb.n_elements().tolist()
    (copy / "trace.db").unlink()
    with tracedb.TraceDBWriter(copy / "trace.db", tdb.prof_index.tolist(), reserve=reserve,
                               time_range=(tdb.min_timestamp, tdb.max_timestamp)) as w:
        w.write_trace(0, line)
    cmp = compare_databases(ref, copy)
    assert cmp.counts == {"trace": 1}


def test_diff_command(small: tuple[Path, Path], tmp_path: Path) -> None:
    ref, copy = small
    same = run_cli("diff", str(ref), str(copy))
    assert same.returncode == 0 and same.stdout.startswith("same: 13 contexts")
    _bump_first_value(copy, 1, 100)
    diff = run_cli("diff", str(ref), str(copy))
    assert diff.returncode == 1
    assert diff.stdout.splitlines()[-1] == "different: 1 value"
    assert "100 ULP" in diff.stdout
    bad = run_cli("diff", str(ref), str(tmp_path / "nowhere.d"))
    assert_one_line_error(bad, "nowhere.d")


def test_runs_sharing_identifiers_pair_by_trace_start_and_copied_sources_name_their_originals(
        shared_data: Path, tmp_path: Path) -> None:
    """64 runs written into one measurement directory give 64 profiles per identifier tuple; hpcprof
    copied the sources (``src/<path>``, flagged copied), hpcsa finds none here. Real hpcprof's database
    and hpcsa's must still compare equal, profile by profile, trace by trace."""
    from tests.aggregate.profcheck import build

    extra = shared_data / "hpctoolkit-extra"
    if not (extra / "meas-cxx1024").is_dir():
        pytest.skip("hpctoolkit-extra/meas-cxx1024 is not available")
    ref = extra / "db-cxx1024"
    assert compare_databases(ref, ref).same
    ours = tmp_path / "cxx.d"
    build(extra / "meas-cxx1024", ours, jobs=2)
    cmp = compare_databases(ref, ours, limit=20)
    assert cmp.same, [str(d) for d in cmp.differences]
    assert cmp.compared_trace_elements == 31_000 and cmp.matched_contexts >= 590
