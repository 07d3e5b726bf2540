"""Helpers for the database-format tests: where the real databases are, and content comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpcsa.formats.db import cctdb, metadb, profiledb, tracedb
from hpcsa.formats.db.database import Database

#: The early-2022 development databases that say "4.0" but use the older record sizes.
PRE_RELEASE = {"hpcviewer-testdata/metadb/loop-inline", "hpcviewer-testdata/metadb/multithread",
               "hpcviewer-testdata/metadb/quicksilver", "hpcviewer-testdata/prof2/loop-inline"}

#: Databases LLNL hatchet's reader of HPCToolkit v4 databases loads in its default (summary) mode.
HATCHET_LOADS = {"small.d", "small.nostruct.d", "loops-cputime-t.d", "loops-cputime-t.nostruct.d",
                 "db2pprof-example", "hatchet-testdata/hpctoolkit-gamess", "hpcviewer-testdata/metadb/acc_f3",
                 "hpcviewer-testdata/metadb/d.foo", "hpcviewer-testdata/metadb/d.x",
                 "hpcviewer-testdata/metadb/inline.meta.db", "hpcviewer-testdata/metadb/issue-233",
                 "hpcviewer-testdata/metadb/issue-328", "hpcviewer-testdata/metadb/lmp-openmp",
                 "hpcviewer-testdata/metadb/loop-fork-cycles", "hpcviewer-testdata/metadb/vectorAdd"}


def database_dirs(shared: Path) -> dict[str, Path]:
    """Every directory holding a meta.db under data/hpctoolkit/dbase and data/peers, by a short name."""
    out = {}
    for meta in sorted((shared / "hpctoolkit" / "dbase").glob("*/meta.db")):
        out[meta.parent.name] = meta.parent
    for meta in sorted((shared / "peers").rglob("meta.db")):
        if meta.is_file():
            out[str(meta.parent.relative_to(shared / "peers"))] = meta.parent
    return out


def same_meta(a: metadb.MetaDB, b: metadb.MetaDB) -> None:
    assert (a.title, a.description, a.id_names) == (b.title, b.description, b.id_names)
    assert a.scopes == b.scopes
    assert a.metrics == b.metrics
    assert a.modules == b.modules and np.array_equal(a.module_flags, b.module_flags)
    assert a.files == b.files and np.array_equal(a.file_flags, b.file_flags)
    assert a.functions.names == b.functions.names
    for col in ("module", "offset", "file", "line", "flags"):
        assert np.array_equal(getattr(a.functions, col), getattr(b.functions, col)), col
    ta, tb = a.contexts, b.contexts
    assert ta is not None and tb is not None
    assert ta.entry_points == tb.entry_points
    for col in metadb.CONTEXT_COLUMNS:
        assert np.array_equal(getattr(ta, col), getattr(tb, col)), col


def same_profiles(a: profiledb.ProfileDB, b: profiledb.ProfileDB) -> None:
    assert len(a) == len(b)
    assert np.array_equal(a.flags, b.flags)
    assert np.array_equal(a.id_offsets, b.id_offsets) and np.array_equal(a.ids, b.ids)
    assert np.array_equal(a.has_id_tuple, b.has_id_tuple)
    for i in range(len(a)):
        pa, pb = a.profile(i), b.profile(i)
        for col in ("ctx_ids", "starts", "metric_ids", "values"):
            assert np.array_equal(getattr(pa, col), getattr(pb, col)), (i, col)


def same_cct(a: cctdb.CctDB, b: cctdb.CctDB) -> None:
    assert len(a) == len(b)
    ra, rb = a.range_values(), b.range_values()
    for col in ("ctx_ids", "metric_ids", "prof_indices", "values"):
        assert np.array_equal(getattr(ra, col), getattr(rb, col)), col


def same_trace(a: tracedb.TraceDB, b: tracedb.TraceDB) -> None:
    assert len(a) == len(b)
    assert np.array_equal(a.prof_index, b.prof_index)
    assert (a.min_timestamp, a.max_timestamp) == (b.min_timestamp, b.max_timestamp)
    for i in range(len(a)):
        assert np.array_equal(a.trace(i), b.trace(i)), i


def same_database(a: Database, b: Database) -> None:
    same_meta(a.meta, b.meta)
    same_profiles(a.profiles, b.profiles)
    assert (a.cct is None) == (b.cct is None)
    if a.cct is not None and b.cct is not None:
        same_cct(a.cct, b.cct)
    assert (a.trace is None) == (b.trace is None)
    if a.trace is not None and b.trace is not None:
        same_trace(a.trace, b.trace)
    assert (a.metrics is None) == (b.metrics is None)
    if a.metrics is not None and b.metrics is not None:
        assert a.metrics.document == b.metrics.document
