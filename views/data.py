"""What the views read of a database: its tree, metric columns and per-profile values, opened lazily.

Values come from the summary profile (profile 0) when first asked for, and
from one thread profile (:meth:`ExperimentData.profile_values`) or one context
across all profiles (:meth:`ExperimentData.context_values`, via cct.db) only on
request. Rows are those of :class:`~hpcsa.views.tree.CCT`. The views themselves
(:mod:`.topdown`, :mod:`.bottomup`, :mod:`.flat`) take this; the Python API's
:class:`~hpcsa.views.experiment.Experiment` adds them as methods.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Self

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db.database import Database, open_database
from hpcsa.formats.db.metricsyaml import Input
from hpcsa.formats.db.profiledb import ProfileValues
from hpcsa.views import tree as T
from hpcsa.views.metrics import Catalog, Column, Partial, catalog_from_database, evaluate
from hpcsa.views.names import FULL_NAMES, ShortNames
from hpcsa.views.processes import (  # noqa: F401 -- the id kinds and ProfileInfo are also read from here
    GPU_KINDS,
    KIND_CORE,
    KIND_GPUCONTEXT,
    KIND_GPUDEVICE,
    KIND_GPUSTREAM,
    KIND_THREAD,
    THREAD_KINDS,
    Processes,
    ProfileInfo,
)


class ExperimentData:
    """An open database seen as hpcviewer sees it (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.meta = db.meta
        self.cct = T.CCT.from_meta(db.meta)
        self.catalog: Catalog = catalog_from_database(db.meta, db.metrics)
        self._stat: dict[int, np.ndarray] = {}
        self._self: dict[Partial, np.ndarray] = {}
        self._summary: ProfileValues | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Self:
        return cls(open_database(path))

    @property
    def path(self) -> str:
        return self.db.path

    @property
    def title(self) -> str:
        return self.meta.title

    def __repr__(self) -> str:
        return (f"<Experiment {self.path!r}: {len(self.cct)} rows, {len(self.catalog)} metric columns, "
                f"{len(self.db.profiles) - 1} profiles>")

    # -- summary values --------------------------------------------------------------------------------

    @property
    def summary(self) -> ProfileValues:
        if self._summary is None:
            self._summary = self.db.profiles.summary()
        return self._summary

    def stat_column(self, stat_metric_id: int) -> np.ndarray:
        """One summary-profile value column (statMetricId) over the rows; zeros where absent."""
        col = self._stat.get(stat_metric_id)
        if col is None:
            s = self.summary
            sel = s.metric_ids == stat_metric_id
            col = np.zeros(len(self.cct))
            if sel.any():
                rows = self.cct.row_of(s.value_ctx_ids()[sel])
                ok = rows >= 0  # values of elided instruction ids are already in their parents' scopes
                col[rows[ok]] = s.values[sel][ok]
            self._stat[stat_metric_id] = col
        return col

    def input_column(self, inp: Input) -> np.ndarray:
        """The summary column of one default.yaml input (metric, scope, partial)."""
        try:
            sid = self.meta.stat_metric_id(inp.metric, inp.scope, inp.formula, inp.combine)
        except KeyError:
            return np.full(len(self.cct), np.nan)
        return self.stat_column(sid)

    def self_column(self, partial: Partial) -> np.ndarray:
        """Each row's own cost for one partial: inclusive minus the children's inclusive.

        From the ``execution`` scope; a metric without it uses ``function``
        (own = function minus the lexical children's function values).
        """
        out = self._self.get(partial)
        if out is None:
            base = Input(partial.metric, "execution", partial.formula, partial.combine)
            try:
                self.meta.stat_metric_id(base.metric, base.scope, base.formula, base.combine)
                inc = self.input_column(base)
                out = T.self_values(self.cct.parent, inc)
                out[np.abs(out) <= 1e-12 * np.abs(inc)] = 0.0  # rounding noise of inclusive sums, not a cost
            except KeyError:
                fn = self.input_column(Input(partial.metric, "function", partial.formula, partial.combine))
                lexical = self.cct.relation == T.LEXICAL
                par = np.where(lexical, self.cct.parent, -1)
                out = fn - T.children_sum(par, np.nan_to_num(fn))
                out[np.abs(out) <= 1e-12 * np.abs(fn)] = 0.0
            self._self[partial] = out
        return out

    def column(self, spec: str | Column, side: str = "inclusive") -> np.ndarray:
        """A metric column (name, ``$n`` or Column) over the rows, as the top-down view shows it."""
        col = spec if isinstance(spec, Column) else self.catalog.find(spec)
        expr = col.formula(side)
        if expr is None:
            return np.full(len(self.cct), np.nan)
        return evaluate(expr, self.input_column, len(self.cct))

    def inclusive(self, spec: str | Column) -> np.ndarray:
        return self.column(spec, "inclusive")

    def exclusive(self, spec: str | Column) -> np.ndarray:
        return self.column(spec, "exclusive")

    def total(self, spec: str | Column) -> float:
        """The experiment's aggregate value of a column (its inclusive value at the root)."""
        return float(self.column(spec, "inclusive")[0])

    def derive(self, definition: str) -> Column:
        """Add a derived metric (``NAME=FORMULA`` over ``$n`` / ``@n`` / ``${name}``, hpcviewer's syntax); see
        :mod:`hpcsa.views.metrics`."""
        try:
            return self.catalog.add_derived(definition, lambda k: self.total(self.catalog.columns[k]))
        except ValueError as exc:
            raise HpcsaError(None, str(exc)) from None

    # -- profiles ----------------------------------------------------------------------------------------

    @cached_property
    def profiles(self) -> list[ProfileInfo]:
        """Every non-summary profile with its identity (index = profile.db index)."""
        names = self.meta.id_names
        out = []
        pdb = self.db.profiles
        for i in range(1, len(pdb)):
            tup = pdb.id_tuple(i)
            ids: dict[str, int] = {}
            if tup is not None:
                for kind, logical in zip(tup["kind"].tolist(), tup["logicalId"].tolist(), strict=True):
                    ids[names[kind] if kind < len(names) else f"KIND{kind}"] = logical
            out.append(ProfileInfo(i, ids, any(k in ids for k in GPU_KINDS)))
        return out

    @cached_property
    def processes(self) -> Processes:
        """The processes of the profiles (rank, or run where processes share an identity) and the labels the
        views give profiles (:mod:`hpcsa.views.processes`); runs are told apart by the trace lines' starts."""
        tdb = self.db.trace
        starts: dict[int, int] = {}
        if tdb is not None and len(tdb):
            first, _ = tdb.line_bounds()
            starts = {int(p): int(t) for p, t in zip(tdb.prof_index.tolist(), first.tolist(), strict=True) if t >= 0}
        return Processes(self.profiles, starts)

    def profile_label(self, index: int) -> str:
        """What the views call a profile: its process (rank or run) and its thread or GPU stream."""
        return self.processes.label(index)

    def prop_metric_id(self, metric: str, scope: str) -> int:
        try:
            return self.meta.prop_metric_id(metric, scope)
        except KeyError:
            raise HpcsaError(self.path, f"metric {metric!r} has no {scope!r} scope in thread profiles") from None

    def profile_values(self, index: int, metric: str, scope: str = "execution") -> np.ndarray:
        """One profile's values of one metric and scope over the rows (profile.db, read on request)."""
        mid = self.prop_metric_id(self.measured_metric(metric), scope)
        pv = self.db.profiles.profile(index)
        sel = pv.metric_ids == mid
        out = np.zeros(len(self.cct))
        rows = self.cct.row_of(pv.value_ctx_ids()[sel])
        ok = rows >= 0
        out[rows[ok]] = pv.values[sel][ok]
        return out

    def context_values(self, row: int, metric: str, scope: str = "execution") -> np.ndarray:
        """One context's values of one metric and scope in every profile (index 0 unused: the summary)."""
        mid = self.prop_metric_id(self.measured_metric(metric), scope)
        out = np.zeros(len(self.db.profiles))
        ctx = int(self.cct.ctx_id[row])
        if self.db.cct is not None:
            if ctx < len(self.db.cct):
                for prof, value in self.db.cct.context(ctx).get(mid).items():
                    out[prof] = value
            return out
        for i in range(1, len(self.db.profiles)):
            out[i] = self.db.profiles.profile(i).get(ctx).get(mid, 0.0)
        return out

    def metric_matrix(self, metric: str, scope: str = "execution") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, profile indices, values) of every non-zero value of one metric and scope (cct.db)."""
        mid = self.prop_metric_id(self.measured_metric(metric), scope)
        if self.db.cct is not None:
            rv = self.db.cct.range_values()
            sel = rv.metric_ids == mid
            rows = self.cct.row_of(rv.ctx_ids[sel])
            ok = rows >= 0
            return rows[ok], rv.prof_indices[sel][ok].astype(np.int64), rv.values[sel][ok]
        parts = []
        for i in range(1, len(self.db.profiles)):
            pv = self.db.profiles.profile(i)
            sel = pv.metric_ids == mid
            rows = self.cct.row_of(pv.value_ctx_ids()[sel])
            ok = rows >= 0
            parts.append((rows[ok], np.full(int(ok.sum()), i), pv.values[sel][ok]))
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        all_rows, all_profiles, all_values = (np.concatenate(p) for p in zip(*parts, strict=True))
        return all_rows, all_profiles, all_values

    def measured_metric(self, spec: str) -> str:
        """The measured metric behind a metric name or column (a derived column: its first input)."""
        names = [m.name for m in self.meta.metrics]
        if spec in names:
            return spec
        try:
            col = self.catalog.find(spec)
        except KeyError as exc:
            raise HpcsaError(self.path, exc.args[0]) from None
        inputs = col.inputs()
        if not inputs:
            raise HpcsaError(self.path, f"metric column {col.name!r} has no measured metric behind it")
        return inputs[0].metric

    # -- names ---------------------------------------------------------------------------------------------

    #: The profiles a thread view chose (:func:`hpcsa.views.threadview.thread_view`); None: all of them.
    chosen_profiles: np.ndarray | None = None

    #: Show procedures by their full names (``--full-names``) rather than the short ones of
    #: :mod:`hpcsa.views.names`.
    full_names = False

    @cached_property
    def short_names(self) -> ShortNames:
        """The short form of every procedure name of meta.db, distinct where the full names are."""
        return ShortNames([n or "" for n in self.meta.functions.names])

    def function_name(self, f: int, full: bool | None = None) -> str:
        """A procedure's name as the views show it: short (:mod:`hpcsa.views.names`) unless ``full``, the
        experiment's ``full_names`` or the request's switch (:data:`hpcsa.views.names.FULL_NAMES`) asks for
        the full one."""
        fn = self.meta.functions
        if f < 0 or f >= len(fn):
            return "<unknown function>"
        name = fn.names[f]
        if name:
            if full is None:
                full = self.full_names or FULL_NAMES.get()
            return name if full else self.short_names[f]
        m = int(fn.module[f])
        if m >= 0:
            return f"{short_path(self.meta.modules[m])}+{int(fn.offset[f]):#x}"
        return "<unknown function>"

    def file_name(self, f: int, full: bool = False) -> str:
        if f < 0 or f >= len(self.meta.files):
            return "<unknown file>"
        return self.meta.files[f] if full else short_path(self.meta.files[f])

    def module_name(self, m: int, full: bool = False) -> str:
        if m < 0 or m >= len(self.meta.modules):
            return "<unknown module>"
        return self.meta.modules[m] if full else short_path(self.meta.modules[m])

    def scope_name(self, row: int) -> str:
        """What a row is, in a few words: ``main``, ``loop at a.c:12``, ``a.c:14``, ``app+0x40``."""
        c = self.cct
        kind = int(c.kind[row])
        if kind == T.ROOT:
            return T.ROOT_LABEL
        if kind == T.ENTRY:
            contexts = self.meta.contexts
            if contexts is None:  # entry rows are made from the context tree (CCT.from_meta)
                raise HpcsaError(self.path, "the database has entry points but no context tree")
            return contexts.entry_points[int(c.entry[row])].pretty_name
        if kind == T.FUNCTION:
            return self.function_name(int(c.function[row]))
        if kind == T.LOOP:
            return f"loop at {self.file_name(int(c.file[row]))}:{int(c.line[row])}"
        if kind == T.LINE:
            return f"{self.file_name(int(c.file[row]))}:{int(c.line[row])}"
        return f"{self.module_name(int(c.module[row]))}+{int(c.offset[row]):#x}"

    def full_name_of(self, row: int) -> str | None:
        """The full name of a procedure row whose shown name is its short form (None for any other row)."""
        c = self.cct
        if c.kind[row] != T.FUNCTION or c.function[row] < 0:
            return None
        f = int(c.function[row])
        short, full = self.function_name(f), self.function_name(f, True)
        return full if full != short else None

    def names(self) -> np.ndarray:
        """Every row's :meth:`scope_name` (object array); one Python step per row, for exports."""
        return np.array([self.scope_name(r) for r in range(len(self.cct))], dtype=object)

    def find_rows(self, spec: str) -> np.ndarray:
        """Rows matching a context id (``#123``/``123``) or a scope name (exact, else substring)."""
        s = spec.strip()
        if s.lstrip("#").isdigit():
            rows = self.cct.row_of(np.array([int(s.lstrip("#"))]))
            return rows[rows >= 0]
        fn = self.meta.functions
        short = self.short_names
        hits = [i for i, n in enumerate(fn.names) if s in (n, short[i])] or \
               [i for i, n in enumerate(fn.names) if n and s in n]
        return np.flatnonzero(np.isin(self.cct.function, hits) & (self.cct.kind == T.FUNCTION))


def short_path(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path
