"""hpcrun's derived-metric formulas (``100*(#76/#77)``) parsed to a taxonomy expression tree."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hpcsa.formats.db.metricsyaml_model import MetricRef


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
