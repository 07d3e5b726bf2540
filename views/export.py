"""pandas and LLNL hatchet exports of the top-down tree.

Columns, for every metric column with data (or those asked for):

- ``M (inc)``: inclusive (the ``execution`` scope);
- ``M``: exclusive as hpcviewer and ``hpcsa view`` show it (``lex_aware``, else ``function``);
- ``M (function)``: hpcprof's ``function`` scope -- what LLNL hatchet's own reader calls ``M``;
- ``M (self)``: inclusive minus the children's inclusive: the only exclusive value under which hatchet's
  tree operations (``squash``, ``update_inclusive_columns``) give back the inclusive values.

Derived columns (formulas) get ``M (inc)`` and ``M``. Every context is kept -- all entry points
("main thread", "application thread", "unknown entry"), every metric, full names (C++ templates,
non-ASCII), functions without a name -- and nodes are created iteratively, so any depth works. A node's
``_hatchet_nid`` is its context id, as in hatchet's reader, so the two can be compared node by node.

hatchet is optional (``pip install hpcsa[hatchet]``); it is imported only by :func:`to_hatchet`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import tree as T
from hpcsa.views.metrics import Column, Partial

if TYPE_CHECKING:
    import pandas as pd

    from hpcsa.views.data import ExperimentData


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise HpcsaError(None, "the DataFrame export needs pandas: pip install 'hpcsa[hatchet]' (or pandas)") from None
    return pandas


def select_columns(exp: ExperimentData, metrics: list[str] | None) -> list[Column]:
    if metrics:
        try:
            return [exp.catalog.find(m) for m in metrics]
        except KeyError as exc:
            raise HpcsaError(exp.path, exc.args[0]) from None
    out = []
    for col in exp.catalog:
        total = exp.total(col)
        if np.isfinite(total) and total != 0 or (col.inclusive is None and col.exclusive is not None):
            out.append(col)
    return out


def metric_columns(exp: ExperimentData, columns: list[Column], rows: np.ndarray) -> dict[str, np.ndarray]:
    """Name -> values over ``rows`` for the export columns of each metric column."""
    out: dict[str, np.ndarray] = {}
    for col in columns:
        if col.inclusive is not None:
            out[f"{col.name} (inc)"] = exp.inclusive(col)[rows]
        if col.exclusive is not None:
            out[col.name] = exp.exclusive(col)[rows]
        if col.derived or not isinstance(col.inclusive, Input):
            continue
        inp = col.inclusive
        try:
            exp.meta.stat_metric_id(inp.metric, "function", inp.formula, inp.combine)
            out[f"{col.name} (function)"] = exp.input_column(Input(inp.metric, "function", inp.formula,
                                                                   inp.combine))[rows]
        except KeyError:
            pass
        if Partial.of(inp).additive:
            out[f"{col.name} (self)"] = exp.self_column(Partial.of(inp))[rows]
    return out


def node_table(exp: ExperimentData) -> dict[str, Any]:
    """The identity columns of every row but the global root (one Python step per row, for names)."""
    c = exp.cct
    rows = np.arange(1, len(c))
    meta = exp.meta
    files = np.array([None, *meta.files], dtype=object)
    modules = np.array([None, *meta.modules], dtype=object)
    kind = np.array([T.KIND_NAME.get(k, "?") for k in range(max(T.KIND_NAME) + 1)], dtype=object)[c.kind[rows]]
    relation = np.array(list(T.RELATION_NAME.values()), dtype=object)[np.minimum(c.relation[rows], 2)]
    relation[(c.kind[rows] == T.ENTRY)] = None
    return {
        "ctx_id": c.ctx_id[rows], "parent_ctx_id": c.ctx_id[np.maximum(c.parent[rows], 0)],
        "name": np.array([exp.scope_name(int(r)) for r in rows], dtype=object), "type": kind,
        "relation": relation, "depth": c.depth[rows] - 1,
        "file": files[c.file[rows] + 1], "line": c.line[rows], "module": modules[c.module[rows] + 1],
        "offset": c.offset[rows],
    }


def to_dataframe(exp: ExperimentData, metrics: list[str] | None = None, profiles: bool = False) -> pd.DataFrame:
    """One row per context (index ``ctx_id``), identity columns then metric columns (summary values).

    With ``profiles=True``: one row per (context, profile) with a non-zero value, index
    (``ctx_id``, ``profile``), the per-profile inclusive and exclusive values of every measured metric
    (from cct.db, vectorized) and the profile's identity (rank, thread, GPU stream, ...).
    """
    pd = _pandas()
    cols = select_columns(exp, metrics)
    table = node_table(exp)
    rows = np.arange(1, len(exp.cct))
    if not profiles:
        data = dict(table)
        data.update(metric_columns(exp, cols, rows))
        return pd.DataFrame(data).set_index("ctx_id")
    return _profile_frame(exp, cols, table, pd)


def _profile_frame(exp: ExperimentData, cols: list[Column], table: dict[str, Any], pd: Any) -> pd.DataFrame:
    metric_names = sorted({i.metric for c in cols for i in c.inputs()})
    frames = []
    for name in metric_names:
        for scope, suffix in (("execution", " (inc)"), ("lex_aware", ""), ("function", "")):
            try:
                rows, prof, vals = exp.metric_matrix(name, scope)
            except HpcsaError:
                continue
            frames.append(pd.DataFrame({"row": rows, "profile": prof, f"{name}{suffix}": vals})
                          .set_index(["row", "profile"]))
            if scope == "lex_aware":
                break  # the exclusive value: lex_aware when the metric has it, else function
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, axis=1).fillna(0.0).reset_index()
    c = exp.cct
    names = np.concatenate([np.array([T.ROOT_LABEL], dtype=object), table["name"]])
    df.insert(0, "ctx_id", c.ctx_id[df["row"].to_numpy()])
    df.insert(2, "name", names[df["row"].to_numpy()])
    info = exp.profiles
    kinds = sorted({k for p in info for k in p.ids})
    lookup = {p.index: p for p in info}
    for k in kinds:
        df[k.lower()] = [lookup[i].ids.get(k) if i in lookup else None for i in df["profile"].tolist()]
    df["gpu"] = [lookup[i].gpu if i in lookup else False for i in df["profile"].tolist()]
    return df.drop(columns="row").set_index(["ctx_id", "profile"]).sort_index()


def to_hatchet(exp: ExperimentData, metrics: list[str] | None = None, profiles: bool = False) -> Any:
    """An LLNL hatchet GraphFrame of the whole top-down tree (see the module docstring)."""
    try:
        import hatchet as ht
        from hatchet.frame import Frame
        from hatchet.graph import Graph
        from hatchet.node import Node
    except ImportError:
        raise HpcsaError(None, "the hatchet export needs LLNL hatchet: pip install 'hpcsa[hatchet]'") from None
    pd = _pandas()
    c = exp.cct
    table = node_table(exp)
    n = len(c) - 1
    nodes: list[Any] = [None] * len(c)
    roots = []
    keys = ("name", "type", "file", "line", "module", "relation")
    cols = [table[k] for k in keys]
    for i in range(n):  # rows are in pre-order: parents exist before their children
        row = i + 1
        attrs = {k: (v[i].item() if isinstance(v[i], np.generic) else v[i]) for k, v in zip(keys, cols, strict=True)}
        attrs = {k: v for k, v in attrs.items() if v is not None and not (k == "line" and v == 0)}
        par = int(c.parent[row])
        parent = nodes[par] if par > 0 else None
        node = Node(Frame(attrs), parent, hnid=int(c.ctx_id[row]), depth=int(c.depth[row]) - 1)
        if parent is None:
            roots.append(node)
        else:
            parent.add_child(node)
        nodes[row] = node
    graph = Graph(roots)
    cols_sel = select_columns(exp, metrics)
    rows = np.arange(1, len(c))
    index_nodes = nodes[1:]
    if profiles:
        df = _profile_frame(exp, cols_sel, table, pd).reset_index()
        df = df[df["ctx_id"] != 0]  # the global root is not a node (the entry points are the roots)
        df["node"] = [nodes[int(r)] for r in c.row_of(df["ctx_id"].to_numpy())]
        df = df.drop(columns=["ctx_id"]).set_index(["node", "profile"]).sort_index()
        metric_names = [k for k in df.columns if k not in ("name", "gpu") and df[k].dtype.kind == "f"]
    else:
        data = {"name": table["name"], "type": table["type"], "ctx_id": table["ctx_id"]}
        data.update(metric_columns(exp, cols_sel, rows))
        df = pd.DataFrame(data, index=pd.Index(index_nodes, name="node"))
        metric_names = [k for k in data if k not in ("name", "type", "ctx_id")]
    inc = [k for k in metric_names if k.endswith(" (inc)")]
    exc = [k for k in metric_names if not k.endswith(" (inc)")]
    default = inc[0] if inc else (exc[0] if exc else "name")
    return ht.GraphFrame(graph, df, exc_metrics=exc, inc_metrics=inc, default_metric=default,
                         metadata={"hpcsa_database": exp.path, "title": exp.title})
