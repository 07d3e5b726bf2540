"""Readable renderings of database files for ``hpcsa dump`` (plain data, rendered as YAML).

Names replace pointers everywhere: metric ids are explained by a legend built
from the meta.db beside the file (when there is one), contexts get a one-line
description such as ``-call> [function] main`` and profiles their identifier
tuple. The context tree is a flat pre-order list with ``parent`` and
``depth``, so arbitrarily deep trees render without recursion.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db import cctdb, database, metadb, metricsyaml, profiledb, tracedb

T = TypeVar("T")


def _limit(n: int, max_values: int | None) -> int:
    return n if max_values is None else min(n, max_values)


def _sibling(path: str, name: str, read: Callable[[str], T]) -> T | None:
    """The database file ``name`` next to a profile.db/cct.db/trace.db, if it reads cleanly (used for
    names and identities only)."""
    sib = os.path.join(os.path.dirname(os.path.abspath(path)), name)
    if not os.path.isfile(sib):
        return None
    try:
        return read(sib)
    except HpcsaError:
        return None


def _sibling_meta(path: str) -> metadb.MetaDB | None:
    return _sibling(path, database.META, metadb.read_metadb)


def _sibling_profiles(path: str) -> profiledb.ProfileDB | None:
    return _sibling(path, database.PROFILE, profiledb.ProfileDB)


def _head(path: str, fmt: str, version: str, notes: tuple[str, ...] | list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"file": os.path.abspath(path), "format": f"{fmt} version {version}"}
    if notes:
        out["notes"] = list(notes)
    return out


def _flag_names(value: int, names: dict[int, str]) -> list[str]:
    out = [name for bit, name in names.items() if value & bit]
    rest = value & ~sum(names)
    if rest:
        out.append(f"{rest:#x}")
    return out


# -- meta.db -------------------------------------------------------------------------------------------


def metadb_data(meta: metadb.MetaDB, max_values: int | None = None) -> dict[str, Any]:
    scopes = [s.name for s in meta.scopes]
    fn = meta.functions

    def function(i: int) -> dict[str, Any]:
        out: dict[str, Any] = {"name": fn.names[i]}
        if fn.module[i] >= 0:
            out["module"] = meta.modules[fn.module[i]]
            out["offset"] = f"{int(fn.offset[i]):#x}"
        if fn.file[i] >= 0:
            out["file"] = meta.files[fn.file[i]]
            out["line"] = int(fn.line[i])
        if fn.flags[i]:
            out["flags"] = int(fn.flags[i])
        return out

    data: dict[str, Any] = {
        "general": {"title": meta.title, "description": meta.description},
        "id_names": list(meta.id_names),
        "scopes": [{"name": s.name, "type": metadb.SCOPE_TYPE.get(s.type, s.type),
                    "propagation_index": s.propagation_index} for s in meta.scopes],
        "metrics": [{
            "name": m.name,
            "scope_instances": [{"scope": scopes[i.scope], "prop_metric_id": i.prop_metric_id}
                                for i in m.scope_insts],
            "summaries": [{"scope": scopes[s.scope], "formula": s.formula,
                           "combine": metadb.COMBINE.get(s.combine, s.combine), "stat_metric_id": s.stat_metric_id}
                          for s in m.summaries]} for m in meta.metrics],
        "modules": [{"path": p, "flags": int(f)} for p, f in zip(meta.modules, meta.module_flags, strict=True)],
        "files": [{"path": p, "flags": _flag_names(int(f), {1: "copied"})}
                  for p, f in zip(meta.files, meta.file_flags, strict=True)],
        "functions": [function(i) for i in range(len(fn))],
    }
    tree = meta.contexts
    assert tree is not None
    entries = [{"ctx_id": e.ctx_id, "entry_point": metadb.ENTRY_POINT.get(e.kind, e.kind),
                "pretty_name": e.pretty_name} for e in tree.entry_points]
    rows = []
    for r in range(_limit(len(tree), max_values)):
        parent = int(tree.parent[r])
        ctx: dict[str, Any] = {
            "ctx_id": int(tree.ctx_id[r]),
            "parent": int(tree.ctx_id[parent]) if parent >= 0 else tree.entry_points[int(tree.entry[r])].ctx_id,
            "depth": int(tree.depth[r]) + 1,
            "what": metadb.describe_context(meta, r),
            "relation": metadb.RELATION.get(int(tree.relation[r]), int(tree.relation[r])),
            "lexical_type": metadb.LEXICAL_TYPE.get(int(tree.lexical_type[r]), int(tree.lexical_type[r])),
            "flags": _flag_names(int(tree.flags[r]), {1: "has_function", 2: "has_srcloc", 4: "has_point"}),
            "propagation": int(tree.propagation[r]),
        }
        flags = int(tree.flags[r])
        if flags & metadb.HAS_FUNCTION:
            ctx["function"] = fn.names[int(tree.function[r])]
        if flags & metadb.HAS_SRCLOC:
            ctx["file"] = meta.files[int(tree.file[r])]
            ctx["line"] = int(tree.line[r])
        if flags & metadb.HAS_POINT:
            ctx["module"] = meta.modules[int(tree.module[r])]
            ctx["offset"] = f"{int(tree.offset[r]):#x}"
        rows.append(ctx)
    data["context_tree"] = {"entry_points": entries, "contexts": rows}
    if len(rows) < len(tree):
        data["context_tree"]["omitted"] = len(tree) - len(rows)
    return data


def dump_metadb(path: str, max_values: int | None = None) -> dict[str, Any]:
    meta = metadb.read_metadb(path)
    return {**_head(path, "meta.db", meta.version, meta.notes), **metadb_data(meta, max_values)}


# -- profile.db ----------------------------------------------------------------------------------------


def _context_names(meta: metadb.MetaDB | None) -> dict[int, str]:
    if meta is None or meta.contexts is None:
        return {}
    t = meta.contexts
    names = {0: "<global>"}
    names.update({e.ctx_id: f"entry: {e.pretty_name}" for e in t.entry_points})
    names.update({int(t.ctx_id[r]): metadb.describe_context(meta, r) for r in range(len(t))})
    return names


def _metric_legend(meta: metadb.MetaDB | None, summary: bool) -> dict[int, str]:
    if meta is None:
        return {}
    if summary:
        return {k: f"{m} / {s} / {c}({f})" for k, (m, s, f, c) in sorted(meta.stat_metric_names().items())}
    return {k: f"{m} / {s}" for k, (m, s) in sorted(meta.prop_metric_names().items())}


def _profile_values(values: profiledb.ProfileValues, max_values: int | None) -> dict[int, dict[int, float]]:
    n = _limit(len(values), max_values)
    ctx = values.value_ctx_ids()[:n].tolist()
    out: dict[int, dict[int, float]] = {}
    for c, m, v in zip(ctx, values.metric_ids[:n].tolist(), values.values[:n].tolist(), strict=True):
        out.setdefault(c, {})[m] = v
    return out


def profiledb_data(pdb: profiledb.ProfileDB, meta: metadb.MetaDB | None,
                   max_values: int | None = None) -> dict[str, Any]:
    id_names = meta.id_names if meta is not None else metadb.DEFAULT_ID_NAMES
    profiles = []
    for i in range(len(pdb)):
        ids = pdb.id_tuple(i)
        values = pdb.profile(i)
        entry: dict[str, Any] = {
            "index": i,
            "identifier": profiledb.id_tuple_text(ids, id_names),
            "flags": _flag_names(int(pdb.flags[i]), {1: "is_summary"}),
        }
        if ids is not None:
            entry["id_tuple"] = [{
                "kind": id_names[k] if k < len(id_names) else k,
                "flags": _flag_names(f, {1: "is_physical"}), "logical_id": lid, "physical_id": pid}
                for k, f, lid, pid in ids[["kind", "flags", "logicalId", "physicalId"]].tolist()]
        entry["n_contexts"] = len(values.ctx_ids)
        entry["n_values"] = len(values)
        entry["values"] = _profile_values(values, max_values)
        profiles.append(entry)
    out: dict[str, Any] = {}
    if meta is not None:
        out["summary_metric_ids"] = _metric_legend(meta, True)
        out["metric_ids"] = _metric_legend(meta, False)
    out["profiles"] = profiles
    return out


def dump_profiledb(path: str, max_values: int | None = None) -> dict[str, Any]:
    pdb = profiledb.ProfileDB(path)
    return {**_head(path, "profile.db", pdb.version, pdb.notes),
            **profiledb_data(pdb, _sibling_meta(path), max_values)}


# -- cct.db --------------------------------------------------------------------------------------------


def cctdb_data(cdb: cctdb.CctDB, meta: metadb.MetaDB | None, max_values: int | None = None) -> dict[str, Any]:
    names = _context_names(meta)
    rv = cdb.range_values()
    n = _limit(len(rv), max_values)
    contexts: dict[int, dict[str, Any]] = {}
    for c, m, p, v in zip(rv.ctx_ids[:n].tolist(), rv.metric_ids[:n].tolist(), rv.prof_indices[:n].tolist(),
                          rv.values[:n].tolist(), strict=True):
        entry = contexts.setdefault(c, {"what": names.get(c, "(no meta.db context: elided or unknown)"),
                                        "values": {}} if names else {"values": {}})
        entry["values"].setdefault(m, {})[p] = v
    out: dict[str, Any] = {"n_context_ids": len(cdb),
                           "n_contexts_with_values": int(np.count_nonzero(cdb.n_values)),
                           "n_values": len(rv)}
    if meta is not None:
        out["metric_ids"] = _metric_legend(meta, False)
    out["contexts"] = contexts
    if n < len(rv):
        out["omitted_values"] = len(rv) - n
    return out


def dump_cctdb(path: str, max_values: int | None = None) -> dict[str, Any]:
    cdb = cctdb.CctDB(path)
    return {**_head(path, "cct.db", cdb.version, cdb.notes), **cctdb_data(cdb, _sibling_meta(path), max_values)}


# -- trace.db ------------------------------------------------------------------------------------------


def tracedb_data(tdb: tracedb.TraceDB, meta: metadb.MetaDB | None, pdb: profiledb.ProfileDB | None,
                 max_values: int | None = None) -> dict[str, Any]:
    names = _context_names(meta)
    id_names = meta.id_names if meta is not None else metadb.DEFAULT_ID_NAMES
    traces = []
    for i in range(len(tdb)):
        line = tdb.trace(i)
        prof = int(tdb.prof_index[i])
        entry: dict[str, Any] = {"slot": i, "prof_index": prof}
        if pdb is not None and prof < len(pdb):
            entry["identifier"] = profiledb.id_tuple_text(pdb.id_tuple(prof), id_names)
        entry["n_elements"] = len(line)
        n = _limit(len(line), max_values)
        elements = []
        for t, c in zip(line["timestamp"][:n].tolist(), line["ctxId"][:n].tolist(), strict=True):
            el: dict[str, Any] = {"timestamp": t, "ctx_id": c}
            if names:
                el["what"] = names.get(c, "(unknown context)")
            elements.append(el)
        entry["elements"] = elements
        traces.append(entry)
    return {"time_range": {"min": tdb.min_timestamp, "max": tdb.max_timestamp}, "traces": traces}


def dump_tracedb(path: str, max_values: int | None = None) -> dict[str, Any]:
    tdb = tracedb.TraceDB(path)
    return {**_head(path, "trace.db", tdb.version, tdb.notes),
            **tracedb_data(tdb, _sibling_meta(path), _sibling_profiles(path), max_values)}


# -- metrics/default.yaml ------------------------------------------------------------------------------


def metrics_yaml_data(tax: metricsyaml.MetricsTaxonomy) -> dict[str, Any]:
    index = {id(inp): i for i, inp in enumerate(tax.inputs)}

    def plain(value: Any) -> Any:
        if isinstance(value, metricsyaml.Input):
            return (f"input #{index.get(id(value), '?')}: {value.metric} / {value.scope} / "
                    f"{value.combine}({value.formula})")
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return {
        "version": tax.version,
        "inputs": [{"index": i, "metric": x.metric, "scope": x.scope, "formula": x.formula, "combine": x.combine,
                    **({"anchor": x.anchor} if x.anchor else {})} for i, x in enumerate(tax.inputs)],
        "roots": plain(tax.roots),
    }


def dump_metrics_yaml(path: str, max_values: int | None = None) -> dict[str, Any]:
    tax = metricsyaml.read_metrics_yaml(path)
    return {"file": os.path.abspath(path), "format": f"metrics taxonomy version {tax.version}",
            **metrics_yaml_data(tax)}


# -- a whole database ----------------------------------------------------------------------------------


def dump_database(path: str, max_values: int | None = None) -> dict[str, Any]:
    db = database.open_database(path)
    out: dict[str, Any] = {"database": os.path.abspath(path)}
    if db.notes:
        out["notes"] = db.notes
    out["meta.db"] = {"format": f"meta.db version {db.meta.version}", **metadb_data(db.meta, max_values)}
    out["profile.db"] = {"format": f"profile.db version {db.profiles.version}",
                         **profiledb_data(db.profiles, db.meta, max_values)}
    if db.cct is not None:
        out["cct.db"] = {"format": f"cct.db version {db.cct.version}", **cctdb_data(db.cct, db.meta, max_values)}
    if db.trace is not None:
        out["trace.db"] = {"format": f"trace.db version {db.trace.version}",
                           **tracedb_data(db.trace, db.meta, db.profiles, max_values)}
    if db.metrics is not None:
        out["metrics/default.yaml"] = metrics_yaml_data(db.metrics)
    return out
