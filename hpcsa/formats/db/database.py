"""A whole HPCToolkit database directory: open it cheaply, write one atomically.

:func:`open_database` parses meta.db completely and opens the other files
lazily (their headers are checked at once, their values read on request).
:func:`write_database` writes every file of a :class:`Database` into a new
directory that appears under its final name only when complete; the per-file
writers (:mod:`metadb`, :mod:`profiledb`, :mod:`cctdb`, :mod:`tracedb`,
:mod:`metricsyaml`) also write into a directory the caller holds, which is what
the streaming aggregation does.
"""

from __future__ import annotations

import os

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.core.outputs import atomic_dir
from hpcsa.formats.db import cctdb, metadb, metricsyaml, profiledb, tracedb

META, PROFILE, CCT, TRACE = "meta.db", "profile.db", "cct.db", "trace.db"
METRICS_YAML = os.path.join("metrics", "default.yaml")
SOURCES = "src"  # the directory of the source files copied into a database


@dataclass
class Database:
    """A database directory's files, read; cct.db, trace.db and the taxonomy are optional."""

    path: str
    meta: metadb.MetaDB
    profiles: profiledb.ProfileDB
    cct: cctdb.CctDB | None = None
    trace: tracedb.TraceDB | None = None
    metrics: metricsyaml.MetricsTaxonomy | None = None

    @property
    def notes(self) -> list[str]:
        out: list[str] = []
        for name, part in ((META, self.meta), (PROFILE, self.profiles), (CCT, self.cct), (TRACE, self.trace)):
            if part is not None:
                out.extend(f"{name}: {n}" for n in part.notes)
        return out

    def n_ctx_ids(self) -> int:
        """Number of context ids (max id + 1), elided instruction ids included."""
        if self.cct is not None:
            return len(self.cct)
        return max(self.meta.contexts.max_ctx_id if self.meta.contexts else 0,
                   max_profile_ctx_id(self.profiles)) + 1


def max_profile_ctx_id(pdb: profiledb.ProfileDB) -> int:
    best = 0
    for i in range(len(pdb)):
        ctx, _ = pdb.ctx_index(i)
        if len(ctx):
            best = max(best, int(ctx[-1]))
    return best


def open_database(path: str | os.PathLike[str]) -> Database:
    """Open a database directory: meta.db and profile.db are required, the rest optional."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise HpcsaError(path, "not a directory (a database is a directory with meta.db and profile.db)")
    for required in (META, PROFILE):
        if not os.path.isfile(os.path.join(path, required)):
            raise HpcsaError(path, f"not an HPCToolkit database: {required} is missing")
    meta = metadb.read_metadb(os.path.join(path, META))
    profiles = profiledb.ProfileDB(os.path.join(path, PROFILE))
    db = Database(path, meta, profiles)
    if os.path.isfile(os.path.join(path, CCT)):
        db.cct = cctdb.CctDB(os.path.join(path, CCT))
    if os.path.isfile(os.path.join(path, TRACE)):
        db.trace = tracedb.TraceDB(os.path.join(path, TRACE))
    if os.path.isfile(os.path.join(path, METRICS_YAML)):
        db.metrics = metricsyaml.read_metrics_yaml(os.path.join(path, METRICS_YAML))
    _check_consistency(db)
    return db


def _check_consistency(db: Database) -> None:
    majors = {p.version.split(".")[0] for p in (db.meta, db.profiles, db.cct, db.trace) if p is not None}
    if len(majors) > 1:
        raise FormatError(db.path, f"the files of this database have different major versions {sorted(majors)}")
    if len(db.profiles) == 0 or not db.profiles.is_summary(0):
        raise FormatError(os.path.join(db.path, PROFILE), "profile 0 is not the summary profile")
    if db.trace is not None and len(db.trace):
        bad = db.trace.prof_index >= len(db.profiles)
        if bad.any():
            raise FormatError(os.path.join(db.path, TRACE), f"trace {int(np.flatnonzero(bad)[0])} belongs to "
                              f"profile {int(db.trace.prof_index[bad][0])}, but profile.db has "
                              f"{len(db.profiles)} profiles")
    if db.cct is not None and db.meta.contexts is not None and db.meta.contexts.max_ctx_id >= len(db.cct):
        raise FormatError(os.path.join(db.path, CCT), f"cct.db has {len(db.cct)} context ids but meta.db uses id "
                          f"{db.meta.contexts.max_ctx_id}")


def write_database(path: str | os.PathLike[str], db: Database, *, cct: str = "copy", workers: int = 1) -> None:
    """Write every file of ``db`` into a new database directory ``path`` (atomically).

    ``cct="copy"`` writes cct.db from the source's cct.db; ``"transpose"``
    builds it from the new profile.db (what the aggregation does).
    """
    if cct not in ("copy", "transpose"):
        raise ValueError(cct)
    with atomic_dir(path) as tmp:
        metadb.write_metadb(os.path.join(tmp, META), db.meta)
        profiledb.write_profiledb(os.path.join(tmp, PROFILE), db.profiles)
        if cct == "copy" and db.cct is not None:
            cctdb.write_cctdb(os.path.join(tmp, CCT), len(db.cct), db.cct.range_values())
        else:
            cctdb.write_cctdb_from_profiledb(os.path.join(tmp, PROFILE), os.path.join(tmp, CCT), db.n_ctx_ids(),
                                             workers=workers)
        if db.trace is not None:
            tracedb.write_tracedb(os.path.join(tmp, TRACE), db.trace)
        if db.metrics is not None:
            os.makedirs(os.path.join(tmp, "metrics"), exist_ok=True)
            metricsyaml.write_metrics_yaml(os.path.join(tmp, METRICS_YAML), db.metrics)
