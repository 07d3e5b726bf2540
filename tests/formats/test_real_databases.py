"""Every real v4 database parses, obeys the format's invariants, and survives read -> write -> read.

The databases are HPCToolkit's own test databases (data/hpctoolkit/dbase) and
every v4 database the peers research collected (hatchet's gamess, hpcviewer's
test sets, db2pprof's example). Independent expectations used here: the
invariants of FORMATS.md, the cct.db files hpcprof wrote (our transpose of
hpcprof's profile.db must reproduce them byte for byte), hpcprof's
metrics/default.yaml files, and LLNL hatchet's reading of the databases.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import UnsupportedError
from hpcsa.formats.db import cctdb, database, metadb, metricsyaml, profiledb
from tests.conftest import SHARED_DATA, assert_one_line_error, run_cli
from tests.formats.dbcheck import HATCHET_LOADS, PRE_RELEASE, database_dirs, same_cct, same_database

ALL = database_dirs(SHARED_DATA) if SHARED_DATA.is_dir() else {}
RELEASED = sorted(n for n in ALL if n not in PRE_RELEASE) or ["(no data)"]


def _db_path(shared: Path, name: str) -> Path:
    dirs = database_dirs(shared)
    if name not in dirs:
        pytest.fail(f"database {name} not found under {shared}")
    return dirs[name]


def test_the_collection_is_complete(shared_data: Path) -> None:
    names = set(database_dirs(shared_data))
    hpctoolkit = {n for n in names if "/" not in n and n != "db2pprof-example"}
    assert len(hpctoolkit) == 14
    assert PRE_RELEASE <= names
    assert {"hatchet-testdata/hpctoolkit-gamess", "db2pprof-example",
            "hpcviewer-testdata/metadb/issue-233"} <= names
    assert len(names - PRE_RELEASE) == 26


@pytest.mark.parametrize("name", sorted(PRE_RELEASE))
def test_pre_release_databases_are_refused(shared_data: Path, name: str) -> None:
    path = _db_path(shared_data, name)
    with pytest.raises(UnsupportedError, match="pre-release meta.db layout.*24/24/16"):
        database.open_database(path)
    with pytest.raises(UnsupportedError, match="pre-release profile.db layout.*40 bytes"):
        profiledb.ProfileDB(path / "profile.db")
    proc = run_cli("dump", str(path))
    assert_one_line_error(proc, f"{name}/meta.db")
    assert "pre-release" in proc.stderr


@pytest.mark.parametrize("name", RELEASED)
def test_database_parses_and_keeps_the_invariants(shared_data: Path, name: str) -> None:
    db = database.open_database(_db_path(shared_data, name))
    meta, pdb = db.meta, db.profiles
    tree = meta.contexts
    assert tree is not None and db.cct is not None
    n_ids = len(db.cct)
    assert tree.max_ctx_id < n_ids
    # Pre-order: every parent row comes before its children, subtrees are contiguous.
    rows = np.arange(len(tree))
    assert (tree.parent < rows).all()
    size = tree.subtree_size
    has_parent = tree.parent >= 0
    assert (rows[has_parent] < tree.parent[has_parent] + size[tree.parent[has_parent]]).all()
    prop_ids = {i.prop_metric_id for m in meta.metrics for i in m.scope_insts}
    stat_ids = {s.stat_metric_id for m in meta.metrics for s in m.summaries}

    assert pdb.is_summary(0) and pdb.id_tuple(0) is None
    thread_sum: dict[tuple[int, int], float] = {}
    for i in range(len(pdb)):
        prof = pdb.profile(i)
        assert (np.diff(prof.ctx_ids.astype(np.int64)) > 0).all()
        assert len(prof.ctx_ids) == 0 or int(prof.ctx_ids.max()) < n_ids
        ctx = prof.value_ctx_ids().astype(np.int64)
        key = (ctx << 16) | prof.metric_ids
        assert (np.diff(key) > 0).all(), "values sorted by metric within each context"
        assert (prof.values != 0).all(), "zeros are never stored"
        assert set(np.unique(prof.metric_ids).tolist()) <= (stat_ids if i == 0 else prop_ids)
        if i:
            assert not pdb.is_summary(i) and pdb.id_tuple(i) is not None
            for k, v in zip(key.tolist(), prof.values.tolist(), strict=True):
                thread_sum[k] = thread_sum.get(k, 0.0) + v

    # cct.db holds exactly the thread profiles' values (totals in = totals out), never the summary.
    rv = db.cct.range_values()
    assert (rv.prof_indices > 0).all() and (rv.prof_indices < len(pdb)).all()
    cct_keys = (rv.ctx_ids.astype(np.int64) << 16) | rv.metric_ids
    cct_sum: dict[int, float] = {}
    for k, v in zip(cct_keys.tolist(), rv.values.tolist(), strict=True):
        cct_sum[k] = cct_sum.get(k, 0.0) + v
    assert cct_sum.keys() == thread_sum.keys()
    assert np.allclose([cct_sum[k] for k in thread_sum], list(thread_sum.values()), rtol=1e-12, atol=0)

    # The summary profile's Sum partial is the sum over the thread profiles, for every scope but
    # lex_aware: hpcprof's summary lex_aware of some contexts in loops differs from the threads'
    # (seen in loops-cputime-t.d, loops-perf.d, gamess, acc_f3, db2pprof); the aggregator must decide.
    summary = pdb.summary()
    sctx = summary.value_ctx_ids().astype(np.int64)
    svals = dict(zip(((sctx << 16) | summary.metric_ids).tolist(), summary.values.tolist(), strict=True))
    checked = 0
    for m in meta.metrics:
        for s in m.summaries:
            if s.formula != "$$" or s.combine != 0 or meta.scopes[s.scope].name == "lex_aware":
                continue
            prop = next(i.prop_metric_id for i in m.scope_insts if i.scope == s.scope)
            for k, v in thread_sum.items():
                if k & 0xFFFF == prop:
                    got = svals.get((k & ~0xFFFF) | s.stat_metric_id, 0.0)
                    assert got == pytest.approx(v, rel=1e-9, abs=1e-300), (m.name, k >> 16)
                    checked += 1
    assert checked or not thread_sum

    if db.trace is not None:
        known = set(tree.ctx_id.tolist()) | {e.ctx_id for e in tree.entry_points} | {0}
        for i in range(len(db.trace)):
            line = db.trace.trace(i)
            assert (np.diff(line["timestamp"].astype(np.int64)) >= 0).all()
            assert set(np.unique(line["ctxId"]).tolist()) <= known, "trace ids are never elided ids"
            zero = line["ctxId"] == 0
            assert not (zero[1:] & zero[:-1]).any(), "no two consecutive 'not running' elements"


@pytest.mark.parametrize("name", RELEASED)
def test_round_trip(shared_data: Path, name: str, tmp_path: Path) -> None:
    original = database.open_database(_db_path(shared_data, name))
    out = tmp_path / "copy.d"
    database.write_database(out, original)
    rewritten = database.open_database(out)
    same_database(original, rewritten)
    # Writing the rewritten database again gives the same bytes (canonical layout).
    again = tmp_path / "again.d"
    database.write_database(again, rewritten)
    for f in ("meta.db", "profile.db", "cct.db", "trace.db", "metrics/default.yaml"):
        if (out / f).exists():
            assert (out / f).read_bytes() == (again / f).read_bytes(), f


@pytest.mark.parametrize("name", RELEASED)
def test_transpose_reproduces_hpcprofs_cctdb(shared_data: Path, name: str, tmp_path: Path) -> None:
    """cct.db made from hpcprof's profile.db equals hpcprof's cct.db byte for byte
    (except header bytes 0x20-0x2f, which hpcprof leaves uninitialized)."""
    path = _db_path(shared_data, name)
    n_ctxs = len(cctdb.CctDB(path / "cct.db"))
    out = tmp_path / "cct.db"
    cctdb.write_cctdb_from_profiledb(path / "profile.db", out, n_ctxs)
    ours, theirs = out.read_bytes(), (path / "cct.db").read_bytes()
    assert ours[:0x20] == theirs[:0x20]
    assert ours[0x30:] == theirs[0x30:]
    assert ours[0x20:0x30] == bytes(16)


def test_parallel_transpose_is_byte_identical(shared_data: Path, tmp_path: Path) -> None:
    path = _db_path(shared_data, "hatchet-testdata/hpctoolkit-gamess")
    n_ctxs = len(cctdb.CctDB(path / "cct.db"))
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    layout = cctdb.write_cctdb_from_profiledb(path / "profile.db", one, n_ctxs, range_bytes=1 << 16)
    assert len(layout.ranges(1 << 16)) > 5
    cctdb.write_cctdb_from_profiledb(path / "profile.db", two, n_ctxs, layout=layout, workers=2,
                                     range_bytes=1 << 16)
    assert one.read_bytes() == two.read_bytes()
    same_cct(cctdb.CctDB(one), cctdb.CctDB(path / "cct.db"))


@pytest.mark.parametrize("name", sorted(n for n in ALL if "/" not in n and n != "db2pprof-example")
                         or ["(no data)"])
def test_writer_layout_matches_hpcprof_sizes(shared_data: Path, name: str) -> None:
    """Our meta.db and profile.db layouts follow hpcprof's: same section table sizes and file sizes."""
    path = _db_path(shared_data, name)
    meta = metadb.read_metadb(path / "meta.db")
    ours = metadb.encode_metadb(meta)
    theirs = (path / "meta.db").read_bytes()
    assert len(ours) == len(theirs)
    sizes = np.frombuffer(ours[0x10:0x90], "<u8")[0::2], np.frombuffer(theirs[0x10:0x90], "<u8")[0::2]
    assert np.array_equal(*sizes)


@pytest.mark.parametrize("name", sorted(n for n in RELEASED if (ALL.get(n, Path("/")) / "metrics").is_dir())
                         or ["(no data)"])
def test_metrics_yaml_rewrites_byte_identical(shared_data: Path, name: str, tmp_path: Path) -> None:
    src = _db_path(shared_data, name) / "metrics" / "default.yaml"
    tax = metricsyaml.read_metrics_yaml(src)
    assert tax.inputs and tax.roots
    metricsyaml.write_metrics_yaml(tmp_path / "default.yaml", tax)
    assert (tmp_path / "default.yaml").read_bytes() == src.read_bytes()


HPCTOOLKIT_DBS = sorted(n for n in ALL if "/" not in n and n != "db2pprof-example") or ["(no data)"]


@pytest.mark.parametrize("name", HPCTOOLKIT_DBS)
def test_standard_taxonomy_reproduces_hpcprof(shared_data: Path, name: str) -> None:
    """default.yaml generated from the measurement's metric table and meta.db's metric order
    is the file hpcprof wrote, byte for byte."""
    from hpcsa.formats.measurement.hpcrun import read_hpcrun

    db = _db_path(shared_data, name)
    meas = shared_data / "hpctoolkit" / "meas" / (name.replace(".nostruct", "").removesuffix(".d") + ".m")
    first = sorted(glob.glob(os.path.join(meas, "*.hpcrun")))[0]
    specs, extra = metricsyaml.specs_from_hpcrun(read_hpcrun(first, values=False).metrics)
    by_name = {s.name: s for s in specs}
    meta = metadb.read_metadb(db / "meta.db")
    taxonomy = metricsyaml.standard_taxonomy([by_name[m.name] for m in meta.metrics], extra)
    assert metricsyaml.dumps(taxonomy) == (db / "metrics" / "default.yaml").read_text()


def _hatchet_summary(path: Path) -> tuple[int, dict[str, float | None]]:
    import hatchet

    gf = hatchet.GraphFrame.from_hpctoolkit_latest(str(path))
    df = gf.dataframe
    roots = gf.graph.roots
    cols = [c for c in df.columns if c != "name"]
    values = {f"{i}:{c}": float(df.loc[r, c]) for i, r in enumerate(roots) for c in cols}
    return len(gf.graph), {k: (None if np.isnan(v) else v) for k, v in values.items()}


@pytest.mark.parametrize("name", sorted(HATCHET_LOADS))
def test_rewritten_database_loads_in_hatchet(shared_data: Path, name: str, tmp_path: Path) -> None:
    pytest.importorskip("hatchet")
    path = _db_path(shared_data, name)
    nodes, roots = _hatchet_summary(path)
    out = tmp_path / "rewritten"
    database.write_database(out, database.open_database(path))
    nodes2, roots2 = _hatchet_summary(out)
    assert nodes2 == nodes
    assert roots2 == roots
    assert any(v is not None for v in roots.values()), "hatchet found root values"
