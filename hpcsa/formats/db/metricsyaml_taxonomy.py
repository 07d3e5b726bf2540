"""hpcprof's "standard" metric taxonomy: :func:`standard_taxonomy` from metric descriptions
(:class:`MetricSpec`, :class:`ExtraStatSpec`), and :func:`specs_from_hpcrun` that derives those from an
``.hpcrun`` metric table as hpcprof does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.formats.db.hpcrun_formula import parse_hpcrun_formula
from hpcsa.formats.db.metricsyaml_model import SCOPES, VERSION, Input, MetricRef, MetricsTaxonomy
from hpcsa.formats.measurement.hpcrun import SHOW_EXCLUSIVE, SHOW_HIDE, SHOW_INCLUSIVE, SHOW_INVISIBLE


@dataclass
class MetricSpec:
    """A measured metric as the taxonomy needs it (hpcprof's Metric::Settings)."""

    name: str
    description: str = ""
    scopes: tuple[str, ...] = SCOPES
    statistics: tuple[str, ...] = ("Sum",)
    visibility: str = "shown"  # shown | hidden | invisible
    order_id: int | None = None

    def partials(self) -> list[tuple[str, str]]:
        """(formula, combine) of each summary partial, in hpcprof's order."""
        stats = set(self.statistics)
        out = []
        if stats & {"Mean", "StdDev", "CfVar"}:
            out.append(("1", "sum"))
        out.append(("$$", "sum"))
        if stats & {"StdDev", "CfVar"}:
            out.append(("($$^2)", "sum"))
        if "Min" in stats:
            out.append(("$$", "min"))
        if "Max" in stats:
            out.append(("$$", "max"))
        return out


@dataclass
class ExtraStatSpec:
    """A derived metric (hpcrun formula): an expression over other metrics' Sum partials."""

    name: str
    description: str
    formula: Any  # expression: number | MetricRef | {op: [args]}
    scopes: tuple[str, ...] = SCOPES
    show_percent: bool = True
    format: str = ""
    visibility: str = "shown"
    order_id: int | None = None


def _statistic_formula(stat: str, partial: dict[tuple[str, str], Input]) -> Any:
    s, c = partial[("$$", "sum")], partial.get(("1", "sum"))
    if stat == "Sum":
        return s
    if stat == "Mean":
        return {"/": [s, c]}
    variance = {"-": [{"/": [partial.get(("($$^2)", "sum")), c]}, {"^": [{"/": [s, c]}, 2]}]}
    if stat == "StdDev":
        return {"sqrt": [variance]}
    if stat == "CfVar":
        return {"/": [{"sqrt": [variance]}, {"/": [s, c]}]}
    if stat == "Min":
        return partial[("$$", "min")]
    if stat == "Max":
        return partial[("$$", "max")]
    raise ValueError(f"unknown statistic {stat!r}")


def _substitute(expr: Any, ref: Any) -> Any:
    if isinstance(expr, MetricRef):
        return ref(expr.name)
    if isinstance(expr, dict):
        return {k: [_substitute(a, ref) for a in v] for k, v in expr.items()}
    return expr


def _variants(formula_for: Any, scopes: Sequence[str], key: str, show_percent: bool) -> dict[str, Any]:
    formula: dict[str, Any] = {}
    if "execution" in scopes:
        formula["inclusive"] = {"standard": formula_for("execution")}
    if {"lex_aware", "function", "point"} & set(scopes):
        exclusive: dict[str, Any] = {}
        if "lex_aware" in scopes:
            exclusive["custom"] = formula_for("lex_aware")
        if "function" in scopes:
            exclusive["standard"] = formula_for("function")
        elif "point" in scopes:
            exclusive["standard"] = formula_for("point")
        formula["exclusive"] = exclusive
    return {key: {"render": ["number", "percent"] if show_percent else ["number"], "formula": formula}}


def standard_taxonomy(metrics: Sequence[MetricSpec], extra: Sequence[ExtraStatSpec] = ()) -> MetricsTaxonomy:
    """hpcprof's "standard" default.yaml: every metric flat under ``roots``, sorted by order id then name.

    ``metrics`` are in meta.db order (which is the order of ``inputs``).
    """
    inputs: list[Input] = []
    by_key: dict[tuple[str, str, str, str], Input] = {}
    for m in metrics:
        def emit(scope: str, m: MetricSpec = m) -> bool:
            if scope not in m.scopes:
                return False
            for formula, combine in m.partials():
                inp = Input(m.name, scope, formula, combine)
                by_key[(m.name, scope, formula, combine)] = inp
                inputs.append(inp)
            return True
        emit("execution")
        emit("lex_aware")
        if not emit("function"):
            emit("point")

    entries: list[tuple[tuple[int, int, str], dict[str, Any]]] = []
    for m in metrics:
        if m.visibility == "invisible":
            continue
        leaf: dict[str, Any] = {"name": m.name, "description": m.description}
        if m.visibility == "hidden":
            leaf["visible by default"] = False
        variants: dict[str, Any] = {}
        for stat in m.statistics:
            def formula_for(scope: str, stat: str = stat, m: MetricSpec = m) -> Any:
                partial = {(f, c): by_key[(m.name, scope, f, c)] for f, c in m.partials()}
                return _statistic_formula(stat, partial)
            variants.update(_variants(formula_for, m.scopes, stat, stat == "Sum"))
        leaf["variants"] = variants
        entries.append((_order_key(m.order_id, m.name), leaf))
    for e in extra:
        if e.visibility == "invisible":
            continue
        leaf = {"name": e.name, "description": e.description}
        if e.format:
            leaf["format"] = e.format

        def extra_formula_for(scope: str, e: ExtraStatSpec = e) -> Any:
            return _substitute(e.formula, lambda name: by_key[(name, scope, "$$", "sum")])
        leaf["variants"] = _variants(extra_formula_for, e.scopes, "", e.show_percent)
        entries.append((_order_key(e.order_id, e.name), leaf))
    entries.sort(key=lambda t: t[0])
    return MetricsTaxonomy({"version": VERSION, "inputs": inputs, "roots": [leaf for _, leaf in entries]})


def _order_key(order_id: int | None, name: str) -> tuple[int, int, str]:
    # hpcprof compares order ids only when both have one; every hpcrun metric has one.
    return (0 if order_id is not None else 1, order_id or 0, name)


def _metric_refs(expr: Any) -> Iterable[str]:
    if isinstance(expr, MetricRef):
        yield expr.name
    elif isinstance(expr, dict):
        for args in expr.values():
            for a in args:
                yield from _metric_refs(a)


def _checked_formula(m: Any, metric_descs: Sequence[Any]) -> Any:
    """A derived metric's formula, refused (one line) when it cannot be parsed or uses a derived metric: its
    terms are the Sum partials of measured metrics, which a derived metric does not have."""
    try:
        expr = parse_hpcrun_formula(m.formula, [d.name for d in metric_descs])
    except (ValueError, IndexError) as exc:
        raise FormatError(None, f"metric {m.name!r}: {exc}") from None
    derived = {d.name for d in metric_descs if d.formula}
    for name in _metric_refs(expr):
        if name in derived:
            raise FormatError(None, f"metric {m.name!r}: its formula {m.formula!r} uses {name!r}, itself a derived "
                              "metric (a formula's terms must be measured metrics)")
    return expr


def specs_from_hpcrun(metric_descs: Sequence[Any], statistics: tuple[str, ...] = ("Sum",),
                      ) -> tuple[list[MetricSpec], list[ExtraStatSpec]]:
    """MetricSpecs and ExtraStatSpecs from an ``.hpcrun`` metric table (ingest's MetricDesc list).

    Follows hpcprof: order id = 1-based position; ``show`` picks visibility and
    scopes; a metric with a formula becomes a derived metric over the others'
    Sum partials.
    """
    metrics, extra = [], []
    for i, m in enumerate(metric_descs):
        scopes: tuple[str, ...] = ("execution", "lex_aware", "function", "point")
        visibility = "shown"
        if m.show == SHOW_HIDE:
            visibility = "hidden"
        elif m.show == SHOW_INCLUSIVE:
            scopes = ("execution", "point")
        elif m.show == SHOW_EXCLUSIVE:
            scopes = ("lex_aware", "function", "point")
        elif m.show == SHOW_INVISIBLE:
            visibility = "invisible"
        if m.formula:
            extra.append(ExtraStatSpec(m.name, m.description, _checked_formula(m, metric_descs), scopes,
                                       bool(m.show_percent), m.format, visibility, i + 1))
        else:
            metrics.append(MetricSpec(m.name, m.description, scopes,
                                      () if visibility == "invisible" else statistics, visibility, i + 1))
    return metrics, extra
