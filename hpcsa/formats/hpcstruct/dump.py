"""Readable rendering of ``.hpcstruct`` files for ``hpcsa dump``."""

from __future__ import annotations

import os
from typing import Any

from hpcsa.formats.hpcstruct.model import (
    GUARD_NAME,
    INNER_ALIEN,
    KIND_TAGS,
    OUTER_ALIEN,
    A,
    C,
    F,
    L,
    Module,
    P,
    S,
    StructureFile,
)
from hpcsa.formats.hpcstruct.stream import iter_modules


def _vset(ranges: list[tuple[int, int]]) -> str:
    return " ".join(f"[{lo:#x}, {hi:#x})" for lo, hi in ranges)


def _label(m: Module, row: int) -> str:
    rec = m.scopes[row]
    kind = int(rec["kind"])
    text = m.text
    line = int(rec["line"])
    ranges = m.ranges_of(row)
    if kind == F:
        return f"file {text(int(rec['file']))}"
    if kind == P:
        label = f"procedure {text(int(rec['name']))}"
        link = text(int(rec["link"]))
        if link is not None:
            label += f" (link name {link})"
        if ranges:
            label += f" at {ranges[0][0]:#x}"
        if line >= 0:
            label += f", line {line}"
        if int(rec["sym"]) >= 0:
            label += f", symbol {int(rec['sym'])}"
        return label
    if kind == A:
        role = int(m.alien_role[row])
        name = text(int(rec["name"]))
        where = f"{text(int(rec['file']))}:{line}"
        if role == INNER_ALIEN:
            return f"inlined {name} from {where}"
        if role == OUTER_ALIEN and name == GUARD_NAME:
            return f"guard (code from {where})"
        return f"inlined call at {where}"
    if kind == L:
        head = f" header {ranges[0][0]:#x}" if ranges else ""
        file = text(int(rec["file"]))
        return f"loop at {file + ':' if file else 'line '}{line}{head}"
    label = f"{'call' if kind == C else 'line'} {line}: {_vset(ranges)}"
    if kind == C:
        target = int(rec["target"])
        label += f" -> {target:#x}" if target >= 0 else " -> (unknown target)"
        device = text(int(rec["device"]))
        if device:
            label += f" on {device}"
    return label


def _tree(m: Module, limit: int | None) -> list[Any]:
    """Nested lists: a scope with children is ``{label: [children]}``, a leaf is its label."""
    children = m.children()
    shown = 0

    def build(rows: list[int]) -> list[Any]:
        nonlocal shown
        out: list[Any] = []
        for row in rows:
            if limit is not None and shown >= limit:
                break
            shown += 1
            label = _label(m, row)
            kids = children[row]
            if not kids:
                out.append(label)
            elif len(label) <= 120:
                out.append({label: build(kids)})
            else:  # YAML would turn a long key into a '? ' complex key
                out.append({"scope": label, "contains": build(kids)})
        return out

    return build(children[len(m.scopes)])


def summarize(m: Module) -> dict[str, int]:
    role = m.alien_role
    kinds = m.scopes["kind"]
    names = m.scopes["name"]
    guard = m.strings.index(GUARD_NAME) if GUARD_NAME in m.strings else -2
    return {
        "files": m.count(F), "procedures": m.count(P),
        "inlined_calls": int((role == INNER_ALIEN).sum()),
        "guards": int(((kinds == A) & (role == OUTER_ALIEN) & (names == guard)).sum()),
        "loops": m.count(L), "statements": m.count(S), "call_sites": m.count(C),
        "address_ranges": len(m.ranges),
    }


def dump_hpcstruct(path: str, max_values: int | None = None) -> dict[str, Any]:
    header = StructureFile()
    modules = []
    for m in iter_modules(path, header=header):
        modules.append({"path": m.path, "id": m.id,
                        "has_calls": m.has_calls if m.has_calls is not None else "absent (format 4.7)",
                        "counts": summarize(m), "tree": _tree(m, max_values)})
    return {"file": os.path.abspath(path), "format": f".hpcstruct {header.version} (XML)",
            "root": {"id": header.id, "name": header.name}, "load_modules": modules,
            "legend": {tag: desc for tag, desc in zip(KIND_TAGS[1:], (
                "file", "procedure", "alien (inlined call / inlined function / guard)", "loop", "statement",
                "call site"), strict=True)}}
