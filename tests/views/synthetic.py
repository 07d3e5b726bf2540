"""Databases built from a tree and point costs: the views' fixtures, tests and benchmarks.

A test oracle: it propagates the scopes by its own, deliberately simple code, independent of
hpcsa prof's propagation, so that tests comparing the two can fail.

:class:`DatabaseBuilder` collects load modules, files, functions and
contexts (rows; a context with ``parent=None`` hangs under an entry point),
then :meth:`DatabaseBuilder.write` takes, per profile, the cost measured *at*
each context (the ``point`` scope, rows x metrics) and writes a real v4
database whose other scopes are propagated as hpcprof defines them
(HPCToolkit's format specification, ``doc/FORMATS.md``):

- execution: the whole subtree;
- function: the subtree without crossing call or inlined-call edges;
- lex_aware: as function, except that a loop leaves out nested loops.

Context ids are ``row + 2`` (id 1 is the first entry point, 0 the global
root). Each metric gets the four scopes in hpcprof's order and a Sum summary
over each; ``metrics/default.yaml`` is hpcprof's standard taxonomy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hpcsa.formats.db import metadb, metricsyaml
from hpcsa.formats.db.profiledb import ProfileValues, id_tuple
from hpcsa.views.dbwrite import Profile, write_from_profiles

SCOPES = ("point", "function", "lex_aware", "execution")
ENTRY_NAMES = {0: "unknown entry", 1: "main thread", 2: "application thread"}


def prop_id(metric: int, scope: str) -> int:
    """The metric id of (metric, scope) in thread profiles, and of its Sum in the summary."""
    return 4 * metric + SCOPES.index(scope)


def propagate(parent: np.ndarray, depth: np.ndarray, relation: np.ndarray, lexical_type: np.ndarray,
              point: np.ndarray) -> dict[str, np.ndarray]:
    """The four scopes of point costs (rows x metrics) over a tree in any row order (parent -1 = top)."""
    point = np.asarray(point, np.float64).reshape(len(parent), -1)
    execution, function, noloops = point.copy(), point.copy(), point.copy()
    lexical = relation == metadb.LEXICAL
    not_loop = lexical & (lexical_type != metadb.LOOP)
    for d in range(int(depth.max(initial=0)), 0, -1):
        rows = np.flatnonzero(depth == d)
        par = parent[rows]
        np.add.at(execution, par, execution[rows])
        np.add.at(function, par[lexical[rows]], function[rows[lexical[rows]]])
        np.add.at(noloops, par[not_loop[rows]], noloops[rows[not_loop[rows]]])
    lex_aware = np.where((lexical_type == metadb.LOOP)[:, None], noloops, function)
    return {"point": point, "function": function, "lex_aware": lex_aware, "execution": execution}


@dataclass
class DatabaseBuilder:
    """A context tree and its tables, to be written with per-profile point costs."""

    title: str = "synthetic"
    modules: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    functions: list[tuple[str | None, int, int, int, int]] = field(default_factory=list)
    rows: list[tuple[int, int, int, int, int, int, int, int, int]] = field(default_factory=list)
    entries: list[int] = field(default_factory=lambda: [1])

    def module(self, path: str) -> int:
        if path not in self.modules:
            self.modules.append(path)
        return self.modules.index(path)

    def file(self, path: str) -> int:
        if path not in self.files:
            self.files.append(path)
        return self.files.index(path)

    def function(self, name: str | None, module: int = -1, file: int = -1, line: int = 0, offset: int = 0) -> int:
        self.functions.append((name, module, offset, file, line))
        return len(self.functions) - 1

    def context(self, parent: int | None, lexical_type: int, relation: int, *, function: int = -1,
                file: int = -1, line: int = 0, module: int = -1, offset: int = 0, entry: int = 0) -> int:
        """A context row under ``parent`` (a row) or, with ``parent=None``, under entry point ``entry``."""
        self.rows.append((-1 if parent is None else parent, entry, lexical_type, relation, function, file, line,
                          module, offset))
        return len(self.rows) - 1

    def call(self, parent: int | None, function: int, **kw: int) -> int:
        return self.context(parent, metadb.FUNCTION, metadb.CALL, function=function, **kw)

    def inlined(self, parent: int, function: int) -> int:
        return self.context(parent, metadb.FUNCTION, metadb.INLINED_CALL, function=function)

    def loop(self, parent: int, file: int, line: int) -> int:
        return self.context(parent, metadb.LOOP, metadb.LEXICAL, file=file, line=line)

    def line(self, parent: int, file: int, line: int) -> int:
        return self.context(parent, metadb.LINE, metadb.LEXICAL, file=file, line=line)

    # -- output --

    def columns(self) -> dict[str, np.ndarray]:
        cols = np.array(self.rows, dtype=np.int64).reshape(-1, 9)
        names = ("parent", "entry", "lexical_type", "relation", "function", "file", "line", "module", "offset")
        return {n: cols[:, i] for i, n in enumerate(names)}

    def meta(self, metrics: Sequence[str]) -> metadb.MetaDB:
        cols = self.columns()
        n = len(self.rows)
        entry_points = [metadb.EntryPoint(1 + i if i == 0 else n + 1 + i, kind, ENTRY_NAMES[kind])
                        for i, kind in enumerate(self.entries)]
        tree = metadb.ContextTree.from_columns(entry_points, ctx_id=np.arange(n) + 2, **cols)
        fn = self.functions
        return metadb.MetaDB(
            title=self.title, modules=list(self.modules), module_flags=np.zeros(len(self.modules), np.uint32),
            files=list(self.files), file_flags=np.zeros(len(self.files), np.uint32),
            functions=metadb.Functions([f[0] for f in fn], np.array([f[1] for f in fn], np.int32),
                                       np.array([f[2] for f in fn], np.uint64), np.array([f[3] for f in fn], np.int32),
                                       np.array([f[4] for f in fn], np.uint32), np.zeros(len(fn), np.uint32)),
            metrics=[metadb.Metric(name, [metadb.ScopeInstance(s, prop_id(m, sc)) for s, sc in enumerate(SCOPES)],
                                   [metadb.Summary(s, "$$", 0, prop_id(m, sc)) for s, sc in enumerate(SCOPES)])
                     for m, name in enumerate(metrics)],
            contexts=tree)

    def profile_values(self, point: np.ndarray) -> ProfileValues:
        """One profile's values (every scope) from its point costs (rows x metrics)."""
        cols = self.columns()
        n = len(self.rows)
        depth = _depth(cols["parent"])
        scopes = propagate(cols["parent"], depth, cols["relation"], cols["lexical_type"], point)
        n_metrics = scopes["point"].shape[1]
        ctx, met, val = [], [], []
        ids = np.arange(n) + 2
        for m in range(n_metrics):
            for sc in SCOPES:
                ctx.append(ids)
                met.append(np.full(n, prop_id(m, sc)))
                val.append(scopes[sc][:, m])
            # the global root and the entry points: execution only, as hpcprof writes them
            tops = cols["parent"] == -1
            for e in range(len(self.entries)):
                total = scopes["execution"][tops & (cols["entry"] == e), m].sum()
                ctx.append(np.array([1 if e == 0 else n + 1 + e]))
                met.append(np.array([prop_id(m, "execution")]))
                val.append(np.array([total]))
            ctx.append(np.array([0]))
            met.append(np.array([prop_id(m, "execution")]))
            val.append(np.array([scopes["execution"][tops, m].sum()]))
        return ProfileValues.from_triples(np.concatenate(ctx), np.concatenate(met), np.concatenate(val))

    def write(self, path: str | os.PathLike[str], metrics: Sequence[str],
              profiles: Sequence[tuple[Sequence[tuple[int, int, int, int]], np.ndarray]],
              traces: Sequence[tuple[int, np.ndarray]] = ()) -> None:
        """Write the database: ``profiles`` are (id tuple items, point costs rows x metrics)."""
        meta = self.meta(metrics)
        profs = [Profile(id_tuple(t), self.profile_values(p)) for t, p in profiles]
        taxonomy = metricsyaml.standard_taxonomy([metricsyaml.MetricSpec(m, m, order_id=i + 1)
                                                  for i, m in enumerate(metrics)])
        write_from_profiles(path, meta, profs, n_ctx_ids=len(self.rows) + 1 + len(self.entries), taxonomy=taxonomy,
                       traces=traces)


def _depth(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), np.int64)
    up = parent.copy()
    while (up >= 0).any():
        live = up >= 0
        depth[live] += 1
        up[live] = parent[up[live]]
    return depth


def thread_tuple(node: int, rank: int | None, thread: int) -> list[tuple[int, int, int, int]]:
    """An id tuple NODE / RANK / THREAD (logical ids) as hpcprof writes it for a CPU thread."""
    items = [(1, 1, 0, node)]
    if rank is not None:
        items.append((2, 0, rank, rank))
    items.append((3, 0, thread, thread))
    return items


def stream_tuple(node: int, rank: int | None, context: int, stream: int) -> list[tuple[int, int, int, int]]:
    """An id tuple NODE / RANK / GPUCONTEXT / GPUSTREAM for a GPU stream."""
    items = [(1, 1, 0, node)]
    if rank is not None:
        items.append((2, 0, rank, rank))
    items += [(5, 0, context, context), (6, 0, stream, stream)]
    return items
