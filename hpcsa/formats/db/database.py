"""A whole HPCToolkit database directory: open it cheaply, write one atomically.

:func:`open_database` parses meta.db completely and opens the other files
lazily (their headers are checked at once, their values read on request).
:func:`write_database` writes every file of a :class:`Database` into a new
directory that appears under its final name only when complete; the per-file
writers (:mod:`.metadb`, :mod:`.profiledb`, :mod:`.cctdb`, :mod:`.tracedb`,
:mod:`.metricsyaml`) also write into a directory the caller holds, which is what
the streaming aggregation does.
"""

from __future__ import annotations

import os
import shlex
from typing import Literal

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

    def n_contexts(self) -> int:
        """The database's number of calling contexts, as every command prints it (:func:`context_count`)."""
        return context_count(self.meta)

    def n_ctx_ids(self) -> int:
        """Number of context ids (max id + 1), elided instruction ids included."""
        if self.cct is not None:
            return len(self.cct)
        return max(self.meta.contexts.max_ctx_id if self.meta.contexts else 0,
                   max_profile_ctx_id(self.profiles)) + 1


def context_count(meta: metadb.MetaDB) -> int:
    """The number of calling contexts of a database: the one count of "contexts" every command prints
    (``hpcsa prof``'s summary, ``hpcsa stats``, ``hpcsa serve``).

    It is what meta.db's Context Tree section holds, counted as hpcviewer shows them: the entry points ("main
    thread", "application thread", ...) and every context below them, each a node of hpcviewer's calling
    context tree with its own ``ctxId`` (HPCToolkit's FORMATS.md, "meta.db Context Tree section"). Left out:

    - the global context, ``ctxId`` 0: implicit, not held by meta.db; hpcviewer shows it as the aggregate row
      above the tree ("Experiment Aggregate Metrics"), not as a context of the program;
    - the instruction contexts hpcprof elides from meta.db (an instruction nested lexically in its parent,
      :func:`hpcsa.formats.db.metadb_write.elided`): their ids have values in profile.db and cct.db, which every view
      shows in the line or function above them, and no node. :meth:`Database.n_ctx_ids` counts the ids,
      these included (the extent of cct.db, what ``hpcsa stats`` gives beside this count).

    ``meta`` may be read from a database (nothing elided is left in it) or about to be written (its elided
    instructions are not counted, as meta.db will not hold them).
    """
    tree = meta.contexts
    if tree is None:
        return 0
    return len(tree.entry_points) + len(tree) - int(np.count_nonzero(metadb.elided(tree)))


def max_profile_ctx_id(pdb: profiledb.ProfileDB) -> int:
    best = 0
    for i in range(len(pdb)):
        ctx, _ = pdb.ctx_index(i)
        if len(ctx):
            best = max(best, int(ctx[-1]))
    return best


#: What a database is, for the messages about paths that are not one.
DATABASE_HOLDS = ("a database is the directory that hpcprof 2022.10 or newer, or `hpcsa prof`, writes: meta.db and "
                  "profile.db, with cct.db, trace.db and metrics/")

#: The file every database of HPCToolkit's earlier formats holds (hpcprof before 2022: experiment.xml beside
#: ``*.metric-db``, experiment.mdb, or the profile.db of 2020's hpcprof-mpi), none of which hpcsa reads.
LEGACY_EXPERIMENT = "experiment.xml"

DirectoryKind = Literal["database", "incomplete-database", "measurement", "legacy-database", "other"]


def directory_kind(path: str | os.PathLike[str]) -> DirectoryKind:
    """What a directory is by the names of the files it holds: the one rule behind :func:`open_database`'s
    messages and :func:`hpcsa.formats.sniff.identify`.

    ``database``: it holds meta.db (the v4 formats); ``measurement``: hpcrun's ``*.hpcrun`` profiles;
    ``legacy-database``: an ``experiment.xml`` and no meta.db (HPCToolkit's formats before 2022);
    ``incomplete-database``: profile.db, cct.db or trace.db without meta.db; ``other``: none of these.
    """
    names = os.listdir(path)
    if META in names:
        return "database"
    if any(n.endswith(".hpcrun") for n in names):
        return "measurement"
    if LEGACY_EXPERIMENT in names:
        return "legacy-database"
    if any(n in (PROFILE, CCT, TRACE) for n in names):
        return "incomplete-database"
    return "other"


def not_a_database(path: str | os.PathLike[str]) -> HpcsaError:
    """The one line for a path given as a database that is not one: what it is, and the step that makes one."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return HpcsaError(path, "no such database directory")
    if not os.path.isdir(path):
        parent = os.path.dirname(os.path.abspath(path))
        if os.path.basename(path) in (META, PROFILE, CCT, TRACE) and directory_kind(parent) == "database":
            return HpcsaError(path, f"a file of a database, not the database: give its directory, "
                              f"{shlex.quote(parent)}")
        return HpcsaError(path, f"not a directory ({DATABASE_HOLDS})")
    kind = directory_kind(path)
    if kind == "measurement":
        return HpcsaError(path, "this is a measurement directory (hpcrun's *.hpcrun files), not a database: "
                          f"run `hpcsa prof {shlex.quote(path)} -o DB` on it first, then give DB")
    if kind == "legacy-database":
        return HpcsaError(path, f"this is a database of HPCToolkit's old format ({LEGACY_EXPERIMENT}, hpcprof "
                          "before 2022), which hpcsa does not read: re-run hpcprof 2022.10 or newer on its "
                          "measurements, or `hpcsa prof MEASDIR` on them")
    missing = [name for name in (META, PROFILE) if not os.path.isfile(os.path.join(path, name))]
    if kind == "other":
        return HpcsaError(path, f"not an HPCToolkit database (no {META}): {DATABASE_HOLDS}")
    return HpcsaError(path, f"not a complete HPCToolkit database: {' and '.join(missing)} "
                      f"{'is' if len(missing) == 1 else 'are'} missing ({DATABASE_HOLDS})")


def open_database(path: str | os.PathLike[str]) -> Database:
    """Open a database directory: meta.db and profile.db are required, the rest optional. A path that is not a
    database gets one line saying what it is and what to do (:func:`not_a_database`)."""
    path = os.fspath(path)
    if not os.path.isdir(path) or any(not os.path.isfile(os.path.join(path, f)) for f in (META, PROFILE)):
        raise not_a_database(path)
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
