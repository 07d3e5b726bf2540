"""The tree mode of ``hpcsa serve``'s API (``/api/...``): hpcviewer's top-down, bottom-up and flat views, their
hot path, search, source, per-profile distribution, derived metrics, thread view and CSV export, answered
by :class:`hpcsa.views.serve.model.Model`.

Every request names its view (``view``, ``flatten``), filters (``filters``, one ``mode:glob`` per line),
thread view (``threads``, an id-tuple pattern: :mod:`hpcsa.views.threadview`), metric columns
(``columns``: ``$n`` numbers) and sort column (``sort``: ``n:i`` or ``n:e``).
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from hpcsa.views.filters import parse_filters
from hpcsa.views.forest import DEFAULT_THRESHOLD
from hpcsa.views.imbalance import KINDS
from hpcsa.views.serve.params import integer

if TYPE_CHECKING:
    from hpcsa.views.forest import Forest
    from hpcsa.views.metrics import Column
    from hpcsa.views.serve.model import Model

#: The most rows one CSV export writes (what a view shows is far less).
MAX_CSV_ROWS = 20000


class TreeApi:
    """Answers ``/api/<name>`` for the tree views."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def forest(self, q: dict[str, str]) -> Forest:
        filters = parse_filters(q.get("filters", "").split("\n"))
        nodes = [int(x) for x in (q.get("nodes", "") + "," + q.get("node", "")).split(",") if x.strip()]
        return self.model.deepened(q.get("view", "top-down"), integer(q, "flatten", 0), filters,
                                   max(nodes, default=-1), q.get("threads", ""))

    def columns(self, q: dict[str, str]) -> list[Column]:
        specs = [s for s in q.get("columns", "").split(",") if s.strip()]
        m = self.model
        return [m.column(f"${s}" if s.isdigit() else s) for s in specs] or \
            [m.column(f"${i}") for i in m.info()["default_columns"]]

    def sort(self, q: dict[str, str], columns: list[Column]) -> tuple[Column, str]:
        spec = q.get("sort", "")
        if not spec:
            return columns[0], "inclusive"
        name, _, side = spec.partition(":")
        side = "exclusive" if side.startswith("e") else "inclusive"
        return self.model.column(f"${name}" if name.isdigit() else name), side

    def answer(self, name: str, q: dict[str, str]) -> Any:
        m = self.model
        if name == "info":
            return m.info()
        if name == "derive":
            col = m.derive(q.get("definition", ""))
            return {"column": next(c for c in m.info()["columns"] if c["index"] == col.index)}
        if name == "threads":
            from hpcsa.views.threadview import matching_profiles

            chosen = matching_profiles(m.exp, q.get("threads", ""))
            procs = m.exp.processes
            return {"pattern": q.get("threads", ""), "profiles": len(chosen), "of": len(m.exp.profiles),
                    "labels": [procs.label(i) for i in chosen[:50]]}
        forest = self.forest(q)
        columns = self.columns(q)
        if name == "children":
            return m.children(forest, integer(q, "node", -1), columns, self.sort(q, columns),
                              integer(q, "offset", 0), min(integer(q, "limit", 200), 2000))
        if name == "rows":
            nodes = [int(x) for x in q.get("nodes", "").split(",") if x.strip()]
            for n in nodes:
                m.path(forest, n)  # checks the node
            return {"rows": m.rows(forest, nodes, columns)}
        if name == "path":
            return {"path": m.path(forest, integer(q, "node"))}
        if name == "hotpath":
            threshold = float(q.get("threshold", DEFAULT_THRESHOLD))
            node = integer(q, "node", -1)
            return {"path": m.hot_path(forest, self.sort(q, columns)[0], None if node < 0 else node, threshold)}
        if name == "search":
            return {"nodes": m.search(forest, q.get("q", ""), columns[0])}
        if name == "source":
            return m.source(forest, integer(q, "node"))
        if name == "distribution":
            kind = q.get("profiles", "auto")
            if kind not in KINDS:
                raise ValueError(f"profiles must be one of {', '.join(KINDS)}")
            col, side = self.sort(q, columns)
            return m.distribution(forest, integer(q, "node"), col, side, kind, bins=integer(q, "bins", 20))
        if name == "csv":
            return self.csv(forest, columns, q)
        raise LookupError(f"no API {name!r}")

    def csv(self, forest: Forest, columns: list[Column], q: dict[str, str]) -> tuple[bytes, str, dict[str, str]]:
        """The rows a view shows (``nodes`` and their ``depths``, in order) as CSV: depth, label, every
        column side at full precision, the full name and the context id."""
        nodes = [int(x) for x in q.get("nodes", "").split(",") if x.strip()][:MAX_CSV_ROWS]
        depths = [int(x) for x in q.get("depths", "").split(",") if x.strip()]
        if len(depths) != len(nodes):
            depths = [0] * len(nodes)
        m = self.model
        for n in nodes:
            m.path(forest, n)  # checks the node
        recs = m.rows(forest, nodes, columns)
        heads = [f"{c.name} {'(I)' if s == 'inclusive' else '(E)'}" for c in columns
                 for s in ("inclusive", "exclusive") if c.formula(s) is not None]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["depth", "label", *heads, "full_name", "ctx_id"])
        for d, rec in zip(depths, recs, strict=True):
            w.writerow([d, rec["label"], *("" if v is None else repr(v) for v in rec["values"]),
                        rec.get("full_name", ""), rec.get("ctx_id", "")])
        view = q.get("view", "top-down")
        return (buf.getvalue().encode(), "text/csv; charset=utf-8",
                {"Content-Disposition": f'attachment; filename="hpcsa-{view}.csv"'})
