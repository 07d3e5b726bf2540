"""Class 2 for metrics: the database's metrics, their ids, statistics and taxonomy.

Metrics are the union, by name, of the profiles' ``.hpcrun`` metric tables,
in hpcrun's order (its 1-based position is hpcprof's order id). A metric with
a formula is a derived metric: it gets no values, only a formula in
``metrics/default.yaml`` over the others' Sum partials
(:func:`.metricsyaml_taxonomy.specs_from_hpcrun` follows hpcprof). Ids follow hpcprof's
dense scheme: each metric gets a base id and a block of
``max(#partials, 1) * #scopes`` ids, ``propMetricId = base + scope`` and
``statMetricId = base + partial * #scopes + scope`` (scopes in the order point,
function, lex_aware, execution, restricted to the metric's own).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError, HpcsaError, UnsupportedError
from hpcsa.formats.db import metadb, metricsyaml
from hpcsa.formats.measurement.hpcrun import MetricDesc

SCOPE_ORDER = metricsyaml.SCOPES  # the propagation scopes, in the order meta.db lists them
STATISTICS = metricsyaml.STATISTICS  # Sum, Mean, StdDev, CfVar, Min, Max
#: ``-M`` words: a statistic, or a group of them.
STATISTIC_WORDS = {"sum": ("Sum",), "mean": ("Mean",), "stddev": ("StdDev",), "cfvar": ("CfVar",),
                   "min": ("Min",), "max": ("Max",), "normal": ("Sum", "Mean", "StdDev", "CfVar"),
                   "extrema": ("Min", "Max"), "stats": STATISTICS}


def parse_statistics(words: Sequence[str] | None) -> tuple[str, ...]:
    """``-M`` arguments (repeatable, comma-separated) to statistics in canonical order; default Sum."""
    chosen: set[str] = set()
    for w in words or ["sum"]:
        for part in w.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part not in STATISTIC_WORDS:
                raise HpcsaError(None, f"-M {part}: unknown statistic (choose from "
                                 f"{', '.join(STATISTIC_WORDS)})")
            chosen.update(STATISTIC_WORDS[part])
    return tuple(s for s in STATISTICS if s in chosen) or ("Sum",)


@dataclass(frozen=True)
class MetricInput:
    """What the aggregation needs of one profile's metric: global index, format, period, placement."""

    index: int      # global metric index, -1 for derived metrics (no values)
    is_int: bool
    period: float
    move2proc: bool


@dataclass
class MetricTable:
    """The database's metrics (canonical order) with their scopes, partials and ids."""

    specs: list[metricsyaml.MetricSpec]
    extra: list[metricsyaml.ExtraStatSpec]
    statistics: tuple[str, ...]
    base: list[int] = field(default_factory=list)

    @classmethod
    def from_descs(cls, tables: Sequence[Sequence[object]], statistics: tuple[str, ...] = ("Sum",),
                   source: Callable[[int], str] | None = None) -> MetricTable:
        """From the hpcrun metric tables of the profiles (lists of ``MetricDesc``), united by name. A table
        refused (a derived metric's formula that does not parse) is named by ``source(its index)``, a file
        that holds it."""
        specs: dict[str, metricsyaml.MetricSpec] = {}
        extra: dict[str, metricsyaml.ExtraStatSpec] = {}
        for k, descs in enumerate(tables):
            try:
                s, e = metricsyaml.specs_from_hpcrun(descs, statistics)
            except FormatError as exc:
                if source is None or exc.path is not None:
                    raise
                raise FormatError(source(k), exc.problem) from None
            for m in s:
                if m.name not in specs or (m.order_id or 0) < (specs[m.name].order_id or 0):
                    specs[m.name] = m
            for x in e:
                extra.setdefault(x.name, x)
        ordered = sorted(specs.values(), key=lambda m: (m.order_id or 0, m.name))
        table = cls(ordered, sorted(extra.values(), key=lambda x: (x.order_id or 0, x.name)), statistics)
        table._assign()
        return table

    def _assign(self) -> None:
        self.base = []
        at = 0
        for m in self.specs:
            self.base.append(at)
            at += max(len(self.partials(m)), 1) * len(self.scopes(m))
        if at > 0xFFFF:
            raise UnsupportedError(None, f"{len(self.specs)} metrics with these statistics need {at} metric ids; "
                                   "the database formats have 16-bit metric ids (choose fewer statistics)")
        self.n_ids = at

    def __len__(self) -> int:
        return len(self.specs)

    @staticmethod
    def scopes(m: metricsyaml.MetricSpec) -> tuple[str, ...]:
        return tuple(s for s in SCOPE_ORDER if s in m.scopes)

    @staticmethod
    def partials(m: metricsyaml.MetricSpec) -> list[tuple[str, str]]:
        return m.partials()

    def index_of(self) -> dict[str, int]:
        return {m.name: i for i, m in enumerate(self.specs)}

    def inputs_for(self, descs: Sequence[MetricDesc]) -> list[MetricInput]:
        """How to read each metric of one profile's table."""
        idx = self.index_of()
        out = []
        for d in descs:
            i = -1 if d.formula else idx.get(d.name, -1)
            out.append(MetricInput(i, bool(d.is_int), float(d.period), bool(d.move2proc)))
        return out

    def input_arrays(self, descs: Sequence[MetricDesc]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`inputs_for` as arrays indexed by the profile's metric id: global index (-1: derived),
        period, move2proc."""
        inputs = self.inputs_for(descs)
        return (np.array([mi.index for mi in inputs] or [-1], np.int64),
                np.array([mi.period for mi in inputs] or [1.0], np.float64),
                np.array([mi.move2proc for mi in inputs] or [False], bool))

    def prop_ids(self, m: int) -> dict[str, int]:
        """propMetricId of each scope of metric ``m``."""
        spec = self.specs[m]
        return {s: self.base[m] + i for i, s in enumerate(self.scopes(spec))}

    def stat_ids(self, m: int) -> dict[tuple[str, str, str], int]:
        """statMetricId of each (formula, combine, scope) of metric ``m``."""
        spec = self.specs[m]
        sc = self.scopes(spec)
        return {(f, c, s): self.base[m] + p * len(sc) + i
                for p, (f, c) in enumerate(self.partials(spec)) for i, s in enumerate(sc)}

    def metadb_metrics(self) -> list[metadb.Metric]:
        out = []
        for m, spec in enumerate(self.specs):
            scope_idx = {s: i for i, s in enumerate(SCOPE_ORDER)}
            insts = [metadb.ScopeInstance(scope_idx[s], pid) for s, pid in self.prop_ids(m).items()]
            stats = self.stat_ids(m)
            summaries = [metadb.Summary(scope_idx[s], f, metadb.COMBINE_CODE[c], stats[(f, c, s)])
                         for s in self.scopes(spec) for f, c in self.partials(spec)]
            out.append(metadb.Metric(spec.name, insts, summaries))
        return out

    def taxonomy(self) -> metricsyaml.MetricsTaxonomy:
        return metricsyaml.standard_taxonomy(self.specs, self.extra)
