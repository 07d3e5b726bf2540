"""Writing ``metrics/default.yaml`` in hpcprof's (yaml-cpp's) layout: block style, flow style for
``render`` lists and formula expressions, anchors named as hpcprof names them, no final newline."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable
from typing import Any

from hpcsa.core.outputs import write_file
from hpcsa.formats.db.metricsyaml_model import OPERATORS, Input, MetricsTaxonomy


def sanitize(text: str) -> str:
    """hpcprof's anchor spelling: keep ``[A-Za-z0-9_-]``, write other bytes as ``x<hex>_``."""
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


#: The plain scalars starting with a letter that YAML 1.1's implicit resolvers (PyYAML's ``Resolver``) read as
#: something other than a string: booleans and null. The other implicit types (numbers, ``.inf``, ``~``,
#: timestamps, ``<<``, ``=``) start with one of ``_NUMBER_FIRST`` (``!``, ``&`` and ``*`` are quoted anyway).
_NUMBER_FIRST = frozenset("-+.0123456789~<=")
_LETTER_NON_STRINGS = frozenset(w for base in ("yes", "no", "true", "false", "on", "off", "null")
                                for w in (base, base.capitalize(), base.upper()))
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
    # A plain scalar that YAML would read back as something else (true, null, 12, 1.5...). Words are looked
    # up here; what may be a number asks PyYAML's resolver, imported only then: most taxonomies (metric
    # names, scopes, render words, $$) never need it, and importing yaml costs a run about 15 ms.
    if s[0] in _NUMBER_FIRST:
        return _resolves_to_non_string(s)
    return s in _LETTER_NON_STRINGS


def _resolves_to_non_string(s: str) -> bool:
    import yaml

    return yaml.resolver.Resolver().resolve(yaml.ScalarNode, s, (True, False)) != "tag:yaml.org,2002:str"


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
