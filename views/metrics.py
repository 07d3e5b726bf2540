"""Metric columns as hpcviewer shows them, and derived metrics.

A column has an inclusive and an exclusive *formula*: an expression tree in
the shape of ``metrics/default.yaml`` (numbers, :class:`.Input` leaves naming a
summary partial of a metric over a propagation scope, and ``{op: [args]}``
nodes). With a default.yaml the columns are its ``roots`` (derived metrics
such as ``GSAMP:UTIL`` included); without one they come from meta.db (every
metric's Sum over ``execution`` and ``lex_aware``, falling back to
``function``/``point`` when a metric lacks ``lex_aware``).

Exclusive means what hpcviewer shows: the ``custom`` (``lex_aware``) formula
when there is one, else the ``standard`` (``function``) one.

User-defined derived metrics (§V.D of Adhianto et al.,
"Effectively Presenting Call Path Profiles of Application Performance", 2010) are spreadsheet
formulas over columns, in hpcviewer's syntax: ``$n`` is column ``n`` (as numbered by ``hpcsa view
--list-metrics``), ``@n`` its aggregate value (the experiment's total, a constant: ``100*$0/@0`` is a
percentage) and ``${NAME}`` the column called NAME; ``+ - * / ^ **``, ``min``, ``max``,
``sqrt``, ``log`` (base 10), ``ln``, ``abs``, ``floor``, ``ceil``. The
formula is applied to inclusive values for the inclusive column and to
exclusive values for the exclusive one, after any aggregation (so ratios are
ratios of sums in the flat and callers views).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import field
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.db import metadb
from hpcsa.formats.db.metricsyaml import Input, MetricsTaxonomy

Expr = Any  # number | Input | {op: [Expr, ...]}


@dataclass(frozen=True)
class Partial:
    """The quantity a summary partial accumulates for one metric (all scopes share it)."""

    metric: str
    formula: str = "$$"
    combine: str = "sum"

    @classmethod
    def of(cls, inp: Input) -> Partial:
        return cls(inp.metric, inp.formula, inp.combine)

    @property
    def additive(self) -> bool:
        """Sums of it over contexts mean something (flat and callers views aggregate these)."""
        return self.combine == "sum" and self.formula in ("$$", "1")


@dataclass
class Column:
    """One metric column: a name and its inclusive and exclusive formulas."""

    index: int
    name: str
    description: str = ""
    visible: bool = True
    percent: bool = True
    inclusive: Expr = None
    exclusive: Expr = None
    derived: bool = False

    def formula(self, side: str) -> Expr:
        return self.inclusive if side == "inclusive" else self.exclusive

    def inputs(self) -> list[Input]:
        out: list[Input] = []
        for e in (self.inclusive, self.exclusive):
            _collect(e, out)
        return out


def _collect(expr: Expr, out: list[Input]) -> None:
    if isinstance(expr, Input):
        out.append(expr)
    elif isinstance(expr, dict):
        for args in expr.values():
            for a in args:
                _collect(a, out)


@dataclass
class Catalog:
    """The columns of a database, in display order; ``$n`` numbers index this list."""

    columns: list[Column] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def find(self, spec: str) -> Column:
        """A column by number (``3`` or ``$3``), exact name, or unique case-insensitive prefix."""
        s = spec.strip()
        m = re.fullmatch(r"\$?(\d+)", s)
        if m:
            i = int(m.group(1))
            if i >= len(self.columns):
                raise KeyError(f"there is no metric ${i} (the database has {len(self.columns)} columns)")
            return self.columns[i]
        for c in self.columns:
            if c.name == s:
                return c
        low = s.lower()
        hits = [c for c in self.columns if c.name.lower() == low] or \
               [c for c in self.columns if c.name.lower().startswith(low)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise KeyError(f"no metric named {spec!r} (see --list-metrics)")
        raise KeyError(f"metric {spec!r} is ambiguous: {', '.join(c.name for c in hits[:5])}")

    def add(self, column: Column) -> Column:
        column.index = len(self.columns)
        self.columns.append(column)
        return column

    def add_derived(self, definition: str, totals: Callable[[int], float] | None = None) -> Column:
        """A user metric from ``NAME=FORMULA`` (or just ``FORMULA``, named after itself); ``totals(n)`` gives
        column n's aggregate value for ``@n``."""
        name, _, formula = definition.partition("=")
        if not formula:
            name, formula = definition, definition
        name, formula = name.strip(), formula.strip()
        refs, tree = parse_formula(formula, self, totals)
        inc = _substitute(tree, lambda k: self.columns[k].inclusive)
        exc = _substitute(tree, lambda k: self.columns[k].exclusive)
        percent = all(self.columns[k].percent for k in refs) and _is_linear(tree)
        return self.add(Column(0, name, f"derived: {formula}", True, percent, inc, exc, derived=True))


# -- building the catalog -------------------------------------------------------------------------------


def catalog_from_database(meta: metadb.MetaDB, taxonomy: MetricsTaxonomy | None) -> Catalog:
    """Columns from default.yaml when it resolves against meta.db, else from meta.db alone."""
    if taxonomy is not None:
        cat = Catalog()
        available = {(m.name, meta.scopes[s.scope].name, s.formula, metadb.COMBINE.get(s.combine, "?"))
                     for m in meta.metrics for s in m.summaries}
        _from_roots(taxonomy.roots, cat, available)
        if len(cat):
            return cat
    return _from_meta(meta)


def _from_roots(items: list[Any], cat: Catalog, available: set[tuple[str, str, str, str]]) -> None:
    for item in items:
        for col in _walk(item, available)[0]:
            cat.add(col)


def _walk(item: dict[str, Any], available: set[tuple[str, str, str, str]]
          ) -> tuple[list[Column], dict[str, tuple[Expr, Expr]]]:
    """Columns of one taxonomy entry and its children (display order), and its formulas by variant.

    A group entry's formula may be ``first`` (its first child's) or ``sum`` (its children's total)."""
    kids = [_walk(child, available) for child in item.get("children") or []]
    name = str(item.get("name", "?"))
    visible = bool(item.get("visible by default", True))
    forms: dict[str, tuple[Expr, Expr]] = {}
    cols: list[Column] = []
    for vname, variant in (item.get("variants") or {}).items():
        formula = variant.get("formula")
        if isinstance(formula, str):
            parts = [k[1][vname] for k in kids if vname in k[1]]
            if formula == "first" and parts:
                inc, exc = parts[0]
            elif formula == "sum" and parts:
                inc = None if any(p[0] is None for p in parts) else {"+": [p[0] for p in parts]}
                exc = None if any(p[1] is None for p in parts) else {"+": [p[1] for p in parts]}
            else:
                inc = exc = None
        else:
            formula = formula or {}
            inc = _resolvable(_pick(formula.get("inclusive"), ("standard",)), available)
            exc = _resolvable(_pick(formula.get("exclusive"), ("custom", "standard")), available)
        forms[vname] = (inc, exc)
        if inc is None and exc is None:
            continue
        render = variant.get("render") or ["number"]
        label = name if vname in ("", "Sum") else f"{name}:{vname}"
        derived = not (isinstance(inc, Input | type(None)) and isinstance(exc, Input | type(None)))
        cols.append(Column(0, label, str(item.get("description", "")), visible, "percent" in render, inc, exc,
                           derived))
    for k in kids:
        cols.extend(k[0])
    return cols, forms


def _pick(entry: Any, preference: tuple[str, ...]) -> Expr:
    """A formula from ``{standard: e, custom: e}``, or ``e`` itself (the 2022 layout has no variants)."""
    if isinstance(entry, dict) and entry and set(entry) <= {"standard", "custom"}:
        for key in preference:
            if key in entry:
                return entry[key]
        return None
    return entry


def _resolvable(expr: Expr, available: set[tuple[str, str, str, str]]) -> Expr:
    inputs: list[Input] = []
    _collect(expr, inputs)
    if expr is None or any((i.metric, i.scope, i.formula, i.combine) not in available for i in inputs):
        return None
    return expr


def _from_meta(meta: metadb.MetaDB) -> Catalog:
    cat = Catalog()
    for m in meta.metrics:
        scopes = {meta.scopes[s.scope].name for s in m.summaries if s.formula == "$$" and s.combine == 0}
        inc = Input(m.name, "execution") if "execution" in scopes else None
        exc_scope = next((s for s in ("lex_aware", "function", "point") if s in scopes), None)
        exc = Input(m.name, exc_scope) if exc_scope else None
        if inc is not None or exc is not None:
            cat.add(Column(0, m.name, m.name, True, True, inc, exc))
    return cat


# -- evaluation -----------------------------------------------------------------------------------------

_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sqrt": np.sqrt, "ln": np.log, "floor": np.floor, "ceil": np.ceil, "abs": np.abs,
}


def evaluate(expr: Expr, resolve: Callable[[Input], np.ndarray], n: int) -> np.ndarray:
    """Values of ``expr`` over ``n`` nodes; non-finite results (0/0, log 0) become NaN (blank)."""
    with np.errstate(all="ignore"):
        out = np.asarray(_eval(expr, resolve, n), np.float64)
        if out.ndim == 0:
            out = np.full(n, float(out))
        out = out.copy()
        out[~np.isfinite(out)] = np.nan
    return out


def _eval(expr: Expr, resolve: Callable[[Input], np.ndarray], n: int) -> Any:
    if isinstance(expr, Input):
        return resolve(expr)
    if isinstance(expr, bool):
        return float(expr)
    if isinstance(expr, int | float):
        return float(expr)
    if isinstance(expr, dict) and len(expr) == 1:
        (op, args), = expr.items()
        vals = [_eval(a, resolve, n) for a in args]
        if op == "+":
            return sum(vals[1:], vals[0])
        if op == "*":
            out = vals[0]
            for v in vals[1:]:
                out = out * v
            return out
        if op == "-":
            return -vals[0] if len(vals) == 1 else vals[0] - sum(vals[1:], 0.0)
        if op == "/":
            out = vals[0]
            for v in vals[1:]:
                out = out / v
            return out
        if op == "^":
            return np.power(vals[0], vals[1])
        if op == "min":
            return np.minimum.reduce(np.broadcast_arrays(*vals)) if len(vals) > 1 else vals[0]
        if op == "max":
            return np.maximum.reduce(np.broadcast_arrays(*vals)) if len(vals) > 1 else vals[0]
        if op == "log":
            return np.log10(vals[0]) if len(vals) == 1 else np.log(vals[0]) / np.log(vals[1])
        if op in _UNARY:
            return _UNARY[op](vals[0])
        raise ValueError(f"unknown operator {op!r} in a metric formula")
    raise ValueError(f"cannot evaluate {expr!r} as a metric formula")


# -- user formulas ($n, ${name}) ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    column: int


_FUNCS = {"min", "max", "sqrt", "log", "ln", "abs", "floor", "ceil"}


def parse_formula(text: str, catalog: Catalog, totals: Callable[[int], float] | None = None
                  ) -> tuple[list[int], Expr]:
    """(referenced column numbers, expression with ``_Ref`` leaves) of a ``$n`` formula (``@n``: the
    constant ``totals(n)``)."""
    refs: list[int] = []
    names: dict[str, int] = {}

    def aggregate(m: re.Match[str]) -> str:
        col = int(m.group(1))
        if col >= len(catalog):
            raise ValueError(f"formula {text!r}: there is no metric @{col} (the database has {len(catalog)})")
        if totals is None:
            raise ValueError(f"formula {text!r}: @{col} (an aggregate value) is not available here")
        value = float(totals(col))
        return f"({value!r})" if math.isfinite(value) else "(0.0)"

    def by_name(m: re.Match[str]) -> str:
        col = catalog.find(m.group(1)).index
        key = f"__c{col}"
        names[key] = col
        return key

    def by_number(m: re.Match[str]) -> str:
        col = int(m.group(1))
        if col >= len(catalog):
            raise ValueError(f"formula {text!r}: there is no metric ${col} (the database has {len(catalog)})")
        key = f"__c{col}"
        names[key] = col
        return key

    try:
        src = re.sub(r"\$\{([^}]*)\}", by_name, text)
    except KeyError as exc:
        raise ValueError(f"formula {text!r}: {exc.args[0]}") from None
    src = re.sub(r"\$(\d+)", by_number, src)
    src = re.sub(r"@(\d+)", aggregate, src)
    if "$" in src or "@" in src:
        raise ValueError(f"formula {text!r}: '$' must be followed by a metric number or {{name}}, '@' by a "
                         "metric number")
    try:
        tree = ast.parse(src, mode="eval").body
    except SyntaxError:
        raise ValueError(f"formula {text!r} is not a valid expression") from None

    def conv(node: ast.AST) -> Expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and \
                not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            refs.append(names[node.id])
            return _Ref(names[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            arg = conv(node.operand)
            return {"-": [arg]} if isinstance(node.op, ast.USub) else arg
        if isinstance(node, ast.BinOp):
            ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^", ast.BitXor: "^"}
            op = ops.get(type(node.op))
            if op is None:
                raise ValueError(f"formula {text!r}: operator {type(node.op).__name__} is not allowed")
            return {op: [conv(node.left), conv(node.right)]}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS \
                and not node.keywords and node.args:
            return {node.func.id: [conv(a) for a in node.args]}
        raise ValueError(f"formula {text!r}: {ast.unparse(node)!r} is not allowed (use $n, ${{name}}, numbers, "
                         f"+ - * / ^ and {', '.join(sorted(_FUNCS))})")

    return refs, conv(tree)


def _substitute(expr: Expr, column_formula: Callable[[int], Expr]) -> Expr:
    """``expr`` with each column reference replaced by that column's formula (None if one has none)."""
    if isinstance(expr, _Ref):
        return column_formula(expr.column)
    if isinstance(expr, dict):
        out = {k: [_substitute(a, column_formula) for a in v] for k, v in expr.items()}
        return None if any(a is None for args in out.values() for a in args) else out
    return expr


def _is_linear(expr: Expr) -> bool:
    """A percentage of the total means something only for linear combinations of columns (FP waste)."""
    if isinstance(expr, _Ref | int | float):
        return True
    if isinstance(expr, dict) and len(expr) == 1:
        (op, args), = expr.items()
        if op in ("+", "-"):
            return all(_is_linear(a) for a in args)
        if op == "*":
            consts = [a for a in args if isinstance(a, int | float)]
            return len(consts) >= len(args) - 1 and all(_is_linear(a) for a in args)
        if op == "/":
            return _is_linear(args[0]) and all(isinstance(a, int | float) for a in args[1:])
    return False
