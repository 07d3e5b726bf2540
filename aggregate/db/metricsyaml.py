"""``metrics/default.yaml``: the database's metric taxonomy, read and written the way hpcprof does.

The file has ``version: 0``, ``inputs:`` (one anchored mapping per metric,
propagation scope and summary partial: ``metric``, ``scope``, ``formula``,
``combine``) and ``roots:`` (the presentation tree: ``name``, ``description``,
``variants`` such as ``Sum`` with ``render`` and ``formula`` whose leaves are
aliases of inputs, numbers, or operator maps like ``{/: [*a, *b]}``).

Reading (:func:`read_metrics_yaml`) keeps the document as plain data in which
every input is an :class:`Input` object and every alias is that same object,
so the structure survives a round trip; :func:`dumps` writes a document in
hpcprof's (yaml-cpp's) layout: block style, flow style for ``render`` lists and
formula expressions, anchors named as hpcprof names them, no final newline.

:func:`standard_taxonomy` builds hpcprof's "standard" taxonomy from metric
descriptions (:class:`MetricSpec`, :class:`ExtraStatSpec`);
:func:`specs_from_hpcrun` derives those from an ``.hpcrun`` metric table,
parsing hpcrun's derived-metric formulas (``100*(#76/#77)``).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from hpcsa.errors import FormatError, UnsupportedError
from hpcsa.fileio import write_file

VERSION = 0
SCOPES = ("point", "function", "lex_aware", "execution")
COMBINES = ("sum", "min", "max")
OPERATORS = ("+", "-", "*", "/", "^", "sqrt", "log", "ln", "min", "max", "floor", "ceil")
STATISTICS = ("Sum", "Mean", "StdDev", "CfVar", "Min", "Max")
MAX_NODES = 1_000_000  # aliases can make a small file a huge tree; refuse past this


@dataclass(eq=True)
class Input:
    """One summary value column of the database: a metric's partial over one propagation scope."""

    metric: str
    scope: str
    formula: str = "$$"
    combine: str = "sum"
    anchor: str | None = field(default=None, compare=False)
    extra: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)


@dataclass
class MetricsTaxonomy:
    """A whole ``default.yaml``: the document with :class:`Input` objects in place of anchors."""

    document: dict[str, Any]
    path: str | None = None

    @property
    def version(self) -> int:
        return int(self.document.get("version", VERSION))

    @property
    def inputs(self) -> list[Input]:
        return self.document.get("inputs") or []

    @property
    def roots(self) -> list[Any]:
        return self.document.get("roots") or []


# -- reading -------------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """A safe loader that records anchor names and ignores unknown tags."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.anchor_names: dict[int, str] = {}  # id(node) -> anchor
        self.object_anchors: dict[int, str] = {}  # id(constructed object) -> anchor

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        anchor = None if isinstance(event, yaml.AliasEvent) else getattr(event, "anchor", None)
        node = super().compose_node(parent, index)
        if anchor is not None:
            self.anchor_names[id(node)] = anchor
        return node

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        obj = super().construct_object(node, deep)
        name = self.anchor_names.get(id(node))
        if name is not None:
            self.object_anchors[id(obj)] = name
        return obj


def _unknown_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_Loader.add_multi_constructor("!", _unknown_tag)
_Loader.add_multi_constructor("tag:", _unknown_tag)


def load_tolerant(text: str | bytes) -> Any:
    """YAML with custom tags (as in hpctesttool dumps) loaded as plain data."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _yaml_error(path: str | None, exc: yaml.YAMLError) -> FormatError:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return FormatError(path, f"not valid YAML: {problem}{where}")


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser (10x faster); it cannot report anchor names, see parse_metrics_yaml."""


_FastLoader.add_multi_constructor("!", _unknown_tag)
_FastLoader.add_multi_constructor("tag:", _unknown_tag)
_ANCHOR = re.compile(r"&([^\s,\[\]{}]+)")


def _load(text: str | bytes, path: str | None) -> tuple[Any, dict[int, str]]:
    """The document and, for anchored objects, their anchor names."""
    try:
        data = yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a SafeLoader subclass
        inputs = data.get("inputs") if isinstance(data, dict) else None
        anchors = _ANCHOR.findall(text if isinstance(text, str) else text.decode("utf-8", "replace"))
        # hpcprof anchors exactly the inputs, in order: then the names are known without a slow parse.
        if isinstance(inputs, list) and len(anchors) == len(inputs) and len(set(anchors)) == len(anchors):
            return data, {id(obj): name for obj, name in zip(inputs, anchors, strict=True)}
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
            return data, loader.object_anchors
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None


def parse_metrics_yaml(text: str | bytes, path: str | None = None) -> MetricsTaxonomy:
    data, names = _load(text, path)
    if data is None:
        raise FormatError(path, "empty file, expected a metrics taxonomy (version, inputs, roots)")
    if not isinstance(data, dict) or "version" not in data:
        raise FormatError(path, "not a metrics taxonomy: expected a mapping with 'version', 'inputs' and "
                          "'roots'")
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise FormatError(path, f"the taxonomy version {version!r} is not an integer")
    if version != VERSION:
        raise UnsupportedError(path, f"metrics taxonomy version {version} is not supported (hpcsa reads "
                               f"version {VERSION})")
    raw_inputs = data.get("inputs")
    if not isinstance(raw_inputs, list):
        raise FormatError(path, "'inputs' is missing or is not a list")
    if not isinstance(data.get("roots"), list):
        raise FormatError(path, "'roots' is missing or is not a list")
    replaced: dict[int, Input] = {}
    inputs = []
    for i, item in enumerate(raw_inputs):
        if not isinstance(item, dict) or not isinstance(item.get("metric"), str) or \
                not isinstance(item.get("scope"), str):
            raise FormatError(path, f"input {i} is not a mapping with a 'metric' and a 'scope'")
        combine = item.get("combine", "sum")
        if combine not in COMBINES:
            raise FormatError(path, f"input {i} ({item['metric']}) has unknown combine {combine!r}")
        extra = {k: v for k, v in item.items() if k not in ("metric", "scope", "formula", "combine")}
        inp = Input(item["metric"], item["scope"], str(item.get("formula", "$$")), combine,
                    names.get(id(item)), extra)
        replaced[id(item)] = inp
        inputs.append(inp)
    counter = [0]
    document = {k: _replace(v, replaced, path, counter) for k, v in data.items()}
    document["inputs"] = inputs
    _check_roots(document["roots"], path, "roots")
    return MetricsTaxonomy(document, path)


def _replace(value: Any, inputs: dict[int, Input], path: str | None, counter: list[int]) -> Any:
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise FormatError(path, f"the document expands to more than {MAX_NODES} nodes (alias bomb?)")
    if id(value) in inputs:
        return inputs[id(value)]
    if isinstance(value, dict):
        return {k: _replace(v, inputs, path, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, inputs, path, counter) for v in value]
    return value


def _check_roots(items: Any, path: str | None, where: str) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise FormatError(path, f"{where}[{i}] is not a metric entry with a 'name'")
        variants = item.get("variants")
        if not isinstance(variants, dict) or not all(isinstance(v, dict) for v in variants.values()):
            raise FormatError(path, f"{where}[{i}] ({item['name']}) has no 'variants' mapping")
        children = item.get("children")
        if children is not None:
            if not isinstance(children, list):
                raise FormatError(path, f"{where}[{i}] ({item['name']}): 'children' is not a list")
            _check_roots(children, path, f"{where}[{i}].children")


def read_metrics_yaml(path: str | os.PathLike[str]) -> MetricsTaxonomy:
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(path, f"not UTF-8 text (byte {exc.start})") from None
    return parse_metrics_yaml(text, path)


# -- writing (yaml-cpp's layout) ----------------------------------------------------------------------


def sanitize(text: str) -> str:
    """hpcprof's anchor spelling: keep [A-Za-z0-9_-], write other bytes as ``x<hex>_``."""
    out = []
    for b in text.encode("utf-8", errors="surrogateescape"):
        c = chr(b)
        if c.isascii() and (c.isalnum() or c in "-_"):
            out.append(c)
        else:
            # A C++ char is signed: bytes >= 0x80 print as negative ints in hex.
            out.append(f"x{b:x}_" if b < 0x80 else f"x{(b - 256) & 0xFFFFFFFF:x}_")
    return "".join(out)


#: Partial formula (as in meta.db and inputs) -> hpcprof's printed expression, used in anchor names.
_ACCUMULATE_TEXT = {"$$": "[0x0]", "1": "1", "($$^2)": "[0x0] ^ 2"}


def anchor_name(inp: Input) -> str:
    accumulate = _ACCUMULATE_TEXT.get(inp.formula, inp.formula)
    return sanitize(f"{inp.metric}-{inp.combine}-{accumulate}-{inp.scope}")


_RESOLVER = yaml.resolver.Resolver()
_PLAIN_START_BAD = set(",[]{}#&*!|>'\"%@`")
_FLOW_BAD = set(",[]{}")


def _scalar(value: Any, flow: bool) -> str:
    if value is None:
        return "~"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return f"{value:.17g}"
    return _string(str(value), flow)


@functools.lru_cache(maxsize=4096)
def _needs_quotes(s: str, flow: bool) -> bool:
    if not s or s != s.strip() or s[0] in _PLAIN_START_BAD:
        return True
    if s[0] in "-?:" and (len(s) == 1 or s[1] in " \t"):
        return True
    if ": " in s or " #" in s or s.endswith(":") or "\n" in s or "\t" in s:
        return True
    if flow and (_FLOW_BAD & set(s) or ":" in s):
        return True
    if any(not c.isprintable() for c in s):
        return True
    # A plain scalar that YAML would read back as something else (true, null, 12, 1.5...).
    return _RESOLVER.resolve(yaml.ScalarNode, s, (True, False)) != "tag:yaml.org,2002:str"


def _string(s: str, flow: bool) -> str:
    if not _needs_quotes(s, flow):
        return s
    out = ['"']
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif not c.isprintable():
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


class _Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.seen: dict[int, str] = {}

    def is_flow(self, value: Any) -> bool:
        """Render lists and formula expressions go in flow style, everything else in block style.

        A collection that would define an anchor (an input seen for the first
        time) stays in block style, as hpcprof writes ``inputs``.
        """
        if isinstance(value, Input):
            return id(value) in self.seen
        if isinstance(value, list):
            return all(self.is_flow(v) if isinstance(v, (dict, list, Input)) else True for v in value)
        if isinstance(value, dict):
            if len(value) != 1:
                return False
            (key, args), = value.items()
            return key in OPERATORS and isinstance(args, list) and self.is_flow(args)
        return True

    def anchor_for(self, inp: Input) -> tuple[str, bool]:
        """(name, first time) for an input: anchor at its first appearance, alias afterwards."""
        if id(inp) in self.seen:
            return self.seen[id(inp)], False
        name = inp.anchor or anchor_name(inp)
        self.seen[id(inp)] = name
        return name, True

    def flow(self, value: Any) -> str:
        if isinstance(value, Input):
            name, first = self.anchor_for(value)
            if first:
                body = ", ".join(f"{k}: {self.flow(v)}" for k, v in _input_items(value))
                return f"&{name} {{{body}}}"
            return f"*{name}"
        if isinstance(value, list):
            return "[" + ", ".join(self.flow(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{_scalar(k, True)}: {self.flow(v)}" for k, v in value.items()) + "}"
        return _scalar(value, True)

    def inline(self, value: Any) -> str | None:
        """The text after ``key:`` when the value fits on the key's line, else None."""
        if isinstance(value, Input):
            name, first = self.anchor_for(value)
            if first:
                self.seen.pop(id(value))
                return None
            return f"*{name}"
        if isinstance(value, (dict, list)):
            if not value:
                return "{}" if isinstance(value, dict) else "[]"
            return self.flow(value) if self.is_flow(value) else None
        return _scalar(value, False)

    def mapping(self, items: Iterable[tuple[Any, Any]], indent: int, first_prefix: str | None = None) -> None:
        pad = " " * indent
        for i, (k, v) in enumerate(items):
            lead = first_prefix if (i == 0 and first_prefix is not None) else pad
            key = _scalar(k, False)
            if isinstance(v, (dict, list)) and not v:  # yaml-cpp puts an empty block value on its own line
                self.lines.append(f"{lead}{key}:")
                self.lines.append(f"{pad}  {'{}' if isinstance(v, dict) else '[]'}")
                continue
            text = self.inline(v)
            if text is not None:
                self.lines.append(f"{lead}{key}: {text}")
                continue
            if isinstance(v, Input):
                name, _ = self.anchor_for(v)
                self.lines.append(f"{lead}{key}: &{name}")
                self.mapping(_input_items(v), indent + 2)
            elif isinstance(v, dict):
                self.lines.append(f"{lead}{key}:")
                self.mapping(v.items(), indent + 2)
            else:
                self.lines.append(f"{lead}{key}:")
                self.sequence(v, indent + 2)

    def sequence(self, items: list[Any], indent: int) -> None:
        pad = " " * indent
        for v in items:
            if isinstance(v, Input):
                name, first = self.anchor_for(v)
                if first:
                    self.lines.append(f"{pad}- &{name}")
                    self.mapping(_input_items(v), indent + 2)
                else:
                    self.lines.append(f"{pad}- *{name}")
            elif isinstance(v, dict) and v and not self.is_flow(v):
                self.mapping(v.items(), indent + 2, first_prefix=f"{pad}- ")
            elif isinstance(v, list) and v and not self.is_flow(v):
                self.lines.append(f"{pad}-")
                self.sequence(v, indent + 2)
            else:
                text = self.inline(v)
                self.lines.append(f"{pad}- {text}")


def _input_items(inp: Input) -> list[tuple[str, Any]]:
    return [("metric", inp.metric), ("scope", inp.scope), ("formula", inp.formula), ("combine", inp.combine),
            *inp.extra.items()]


def dumps(taxonomy: MetricsTaxonomy | dict[str, Any]) -> str:
    """The document in hpcprof's layout (no trailing newline, as yaml-cpp leaves it)."""
    doc = taxonomy.document if isinstance(taxonomy, MetricsTaxonomy) else taxonomy
    em = _Emitter()
    em.mapping(doc.items(), 0)
    return "\n".join(em.lines)


def write_metrics_yaml(path: str | os.PathLike[str], taxonomy: MetricsTaxonomy | dict[str, Any]) -> None:
    """Write ``default.yaml`` (its directory must exist; a temporary name until complete)."""
    write_file(path, dumps(taxonomy))


# -- hpcprof's standard taxonomy ----------------------------------------------------------------------


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


@dataclass(frozen=True)
class MetricRef:
    name: str


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

        def formula_for(scope: str, e: ExtraStatSpec = e) -> Any:
            return _substitute(e.formula, lambda name: by_key[(name, scope, "$$", "sum")])
        leaf["variants"] = _variants(formula_for, e.scopes, "", e.show_percent)
        entries.append((_order_key(e.order_id, e.name), leaf))
    entries.sort(key=lambda t: t[0])
    return MetricsTaxonomy({"version": VERSION, "inputs": inputs, "roots": [leaf for _, leaf in entries]})


def _order_key(order_id: int | None, name: str) -> tuple[int, int, str]:
    # hpcprof compares order ids only when both have one; every hpcrun metric has one.
    return (0 if order_id is not None else 1, order_id or 0, name)


# -- hpcrun metric tables -----------------------------------------------------------------------------

_SHOW, _HIDE, _SHOW_INCLUSIVE, _SHOW_EXCLUSIVE, _INVISIBLE = 1, 0, 2, 3, 4


def parse_hpcrun_formula(text: str, names: Sequence[str]) -> Any:
    """hpcrun's derived-metric formula (``#N`` = metric N, 0-based) as an expression tree.

    Precedence climbing as in hpcprof: ``+ -`` < ``* /`` < ``^`` (right-assoc);
    unary minus; ``min(...)``/``max(...)``; every binary operator makes a
    two-argument node.
    """
    pos = 0

    def skip() -> None:
        nonlocal pos
        while pos < len(text) and text[pos].isspace():
            pos += 1

    def fail(what: str) -> ValueError:
        return ValueError(f"invalid metric formula {text!r}: {what} at offset {pos}")

    def peek_op() -> tuple[str, int, bool] | None:
        skip()
        if pos >= len(text) or text[pos] in "),":
            return None
        c = text[pos]
        table = {"+": (0, False), "-": (0, False), "*": (1, False), "/": (1, False), "^": (2, True)}
        if c not in table:
            raise fail(f"unexpected {c!r}")
        return c, *table[c]

    def primary() -> Any:
        nonlocal pos
        skip()
        if pos >= len(text):
            raise fail("unexpected end")
        c = text[pos]
        if c == "(":
            pos += 1
            e = expression()
            skip()
            if pos >= len(text) or text[pos] != ")":
                raise fail("unbalanced parentheses")
            pos += 1
            return e
        if c == "-":
            pos += 1
            return {"-": [primary()]}
        if c == "#":
            m = re.match(r"#\s*(\d+)", text[pos:])
            if not m:
                raise fail("bad metric reference")
            pos += m.end()
            idx = int(m.group(1))
            if idx >= len(names):
                raise fail(f"reference to metric #{idx}, there are {len(names)}")
            return MetricRef(names[idx])
        m = re.match(r"(min|max)\s*\(", text[pos:])
        if m:
            pos += m.end()
            args = []
            while True:
                args.append(expression())
                skip()
                if pos < len(text) and text[pos] == ",":
                    pos += 1
                    continue
                if pos < len(text) and text[pos] == ")":
                    pos += 1
                    return {m.group(1): args}
                raise fail("bad function call")
        m = re.match(r"[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?", text[pos:])
        if not m:
            raise fail("bad constant")
        pos += m.end()
        value = float(m.group(0))
        return int(value) if value.is_integer() else value

    def climb(lhs: Any, min_prec: int) -> Any:
        nonlocal pos
        look = peek_op()
        while look and look[1] >= min_prec:
            op, prec, _ = look
            pos += 1
            rhs = primary()
            look = peek_op()
            while look and (look[1] > prec or (look[2] and look[1] == prec)):
                rhs = climb(rhs, prec + (1 if look[1] > prec else 0))
                look = peek_op()
            lhs = {op: [lhs, rhs]}
        return lhs

    def expression() -> Any:
        return climb(primary(), 0)

    result = expression()
    skip()
    if pos != len(text):
        raise fail("trailing text")
    return result


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
        if m.show == _HIDE:
            visibility = "hidden"
        elif m.show == _SHOW_INCLUSIVE:
            scopes = ("execution", "point")
        elif m.show == _SHOW_EXCLUSIVE:
            scopes = ("lex_aware", "function", "point")
        elif m.show == _INVISIBLE:
            visibility = "invisible"
        if m.formula:
            extra.append(ExtraStatSpec(m.name, m.description, _checked_formula(m, metric_descs), scopes,
                                       bool(m.show_percent), m.format, visibility, i + 1))
        else:
            metrics.append(MetricSpec(m.name, m.description, scopes,
                                      () if visibility == "invisible" else statistics, visibility, i + 1))
    return metrics, extra
