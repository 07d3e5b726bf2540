"""``hpcsa serve DB1 DB2 ...``: a comparison in the browser, as one more mode of ``hpcsa serve``'s API.

:class:`CompareApi` answers the paths under ``/api/compare/`` (:meth:`hpcsa.views.serve.server.App.add_mode`):
``page`` (the page), ``compare.js`` and ``compare.css`` (its script and style, from ``static/`` beside this
module), ``info`` (the run catalog, the metrics, the baseline) and ``children?node=N&metric=M&side=S`` (a
node's children with each run's value, the statistics across runs and the change against the baseline,
costliest first, or by the size of their change with ``sort=change``). The page shows the catalog as a table
and the aligned tree with a column per run; a change beyond ``highlight`` (5 % by default) is coloured (red:
costlier than the baseline; green: cheaper). Everything is read from the :class:`.comparison.Comparison`
made once at start; nothing is written. The page's script and style are separate files, as the server's
content security policy (``default-src 'self'``) allows no inline script or style.
"""

from __future__ import annotations

import html
import math
from importlib import resources
from typing import Any

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.views.compare.comparison import SIDES, Comparison, node_record

#: The prefix of the compare mode's paths.
PREFIX = "/api/compare/"
FILES = {"compare.js": "text/javascript; charset=utf-8", "compare.css": "text/css; charset=utf-8"}
#: A relative change beyond this is highlighted.
HIGHLIGHT = 0.05


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


class CompareApi:
    """The compare mode of ``hpcsa serve``'s API (module docstring)."""

    def __init__(self, cmp: Comparison, highlight: float = HIGHLIGHT) -> None:
        self.cmp = cmp
        self.highlight = highlight
        parent = cmp.parent
        self._child_count = np.bincount(parent[parent >= 0], minlength=len(cmp))

    def answer(self, name: str, q: dict[str, str]) -> Any:
        if name in ("", "page"):
            return self._page(q.get("token", ""))
        if name in FILES:
            data = resources.files("hpcsa.views.compare").joinpath("static", name).read_bytes()
            return data, FILES[name], {}
        if name == "info":
            return self.info()
        if name == "children":
            try:
                node = int(q.get("node", "-1"))
            except ValueError:
                raise HpcsaError(None, f"node {q.get('node')!r}: a number") from None
            return self.children(node, q.get("metric") or None, q.get("side", "inclusive"),
                                 q.get("sort", "value"))
        raise LookupError("not found")

    def _page(self, token: str) -> tuple[bytes, str, dict[str, str]]:
        page = resources.files("hpcsa.views.compare").joinpath("static", "compare.html").read_text("utf-8")
        return page.replace("{token}", html.escape(token, quote=True)).encode(), "text/html; charset=utf-8", {}

    def info(self) -> dict[str, Any]:
        """The run catalog, the compared metrics, the baseline and the view."""
        cmp = self.cmp
        return {"view": cmp.view, "baseline": cmp.baseline, "highlight": self.highlight,
                "vendor_neutral": cmp.vendor_neutral, "contexts": len(cmp),
                "runs": [r.as_dict() for r in cmp.runs],
                "metrics": [{"name": m.name, "meaning": m.meaning} for m in cmp.metrics]}

    def children(self, node: int, metric: str | None = None, side: str = "inclusive", sort: str = "value"
                 ) -> dict[str, Any]:
        """A node's children (-1: the tree's roots), each with its values for one metric and side."""
        cmp = self.cmp
        if not -1 <= node < len(cmp):
            raise LookupError(f"no node {node}")
        if side not in SIDES:
            raise HpcsaError(None, f"side {side!r}: inclusive or exclusive")
        metric = cmp.metric(metric)
        kids = np.flatnonzero(cmp.parent < 0) if node < 0 else cmp.children(node)
        mat = cmp.matrix(metric, side)
        diff, ratio = cmp.change(metric, side)
        if sort == "change":
            order = np.argsort(-np.abs(np.nan_to_num(diff[kids])), kind="stable")
        else:
            order = np.argsort(-np.nan_to_num(np.nanmax(np.abs(mat[kids]), axis=1, initial=0.0)), kind="stable")
        st = cmp.stats(metric, side)
        rows = []
        for k in kids[order].tolist():
            rec = node_record(cmp, k) if cmp.aliases and k in cmp.aliases else {}
            rows.append({"id": k, "label": cmp.labels[k], "kind": cmp.kinds[k], "path": cmp.paths[k],
                         "children": int(self._child_count[k]), "present": cmp.present[k].tolist(),
                         "values": [_num(v) for v in mat[k].tolist()],
                         "mean": _num(st.mean[k]), "stddev": _num(st.stddev[k]), "cfvar": _num(st.cfvar[k]),
                         "change": _num(diff[k]), "ratio": _num(ratio[k]), "names": rec.get("names")})
        return {"node": node, "metric": metric, "side": side, "children": rows}
