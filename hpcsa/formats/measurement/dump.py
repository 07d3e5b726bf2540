"""Readable renderings of ``.hpcrun`` and ``.hpctrace`` files for ``hpcsa dump``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from hpcsa.formats.measurement import hpcrun as fmt
from hpcsa.formats.measurement.hpctrace import (
    FLAG_CALL_TRACE,
    FLAG_DATA_CENTRIC,
    FLAG_LCA_RECORDED,
    read_hpctrace,
)


def _limit(n: int, max_values: int | None) -> int:
    return n if max_values is None else min(n, max_values)


def _address(lm_id: int, lm_ip: int) -> str:
    if lm_id == 0:
        text = fmt.placeholder_text(lm_ip)
        if text is not None:
            return f"placeholder {text!r}"
    return f"{lm_ip:#x}"


def dump_hpcrun(path: str, max_values: int | None = None) -> dict[str, Any]:
    prof = fmt.read_hpcrun(path)
    lm_paths = {lm.id: lm.path for lm in prof.loadmap}
    cct = prof.cct
    nodes = []
    for i in range(_limit(len(cct), max_values)):
        rec = cct[i]
        lm_id = int(rec["lm_id"])
        nodes.append({"id": int(rec["id"]), "parent": int(rec["parent"]), "module": lm_id,
                      "address": _address(lm_id, int(rec["lm_ip"])),
                      "unwound": bool(int(rec["flags"]) & fmt.UNWOUND)})
    floats = prof.value_floats()
    node_of = prof.value_nodes()
    values: dict[int, dict[str, float | int]] = {}
    for i in range(_limit(len(floats), max_values)):
        metric = prof.metrics[int(prof.values["metric"][i])]
        v = floats[i]
        values.setdefault(int(node_of[i]), {})[metric.name] = int(v) if metric.is_int else float(v)
    return {
        "file": os.path.abspath(path),
        "format": f".hpcrun {prof.version} (sparse)",
        "sections": {k: f"[{a:#x}, {b:#x})" for k, (a, b) in fmt.sections(path).items()},
        "header": dict(prof.header),
        "identifier_tuple": prof.id_tuple_text(),
        "load_modules": [{"id": lm.id, "path": lm.path, "flags": lm.flags} for lm in prof.loadmap],
        "metrics": [_metric(i, m) for i, m in enumerate(prof.metrics)],
        "identifier_kinds": {kind: name for kind, name in prof.id_names},
        "cct": {"nodes": len(cct), "shown": nodes,
                "modules_used": sorted({lm_paths.get(int(x), f"#{int(x)}") for x in np.unique(cct["lm_id"])})},
        "values": {"count": len(floats), "nodes_with_values": len(prof.index), "by_node": values},
    }


def _metric(i: int, m: fmt.MetricDesc) -> dict[str, Any]:
    return {"id": i, "name": m.name, "description": m.description,
            "type": fmt.METRIC_TYPE.get(m.type, m.type), "value_type": fmt.VAL_TYPE.get(m.val_type, m.val_type),
            "value_format": {1: "int", 2: "real"}.get(m.val_fmt, m.val_fmt), "move2proc": bool(m.move2proc),
            "partner": m.partner, "show": fmt.SHOW.get(m.show, m.show), "show_percent": bool(m.show_percent),
            "period": m.period, "formula": m.formula, "format": m.format, "is_frequency": m.is_frequency,
            "is_multiplexed": m.is_multiplexed, "threshold_mean": m.threshold_mean, "num_samples": m.num_samples}


def dump_hpctrace(path: str, max_values: int | None = None) -> dict[str, Any]:
    trace = read_hpctrace(path)
    recs = trace.records
    flags = [name for bit, name in ((FLAG_DATA_CENTRIC, "data-centric"), (FLAG_LCA_RECORDED, "lca-recorded"),
                                    (FLAG_CALL_TRACE, "call-trace")) if trace.flags & bit]
    shown = [{"time": int(recs["time"][i]), "ctx": int(recs["ctx"][i])}
             for i in range(_limit(len(recs), max_values))]
    out: dict[str, Any] = {"file": os.path.abspath(path), "format": f".hpctrace {trace.version}",
                           "flags": flags, "records": len(recs)}
    if len(recs):
        out["time_range_ns"] = [int(recs["time"].min()), int(recs["time"].max())]
    out["shown"] = shown
    return out


def dump_measurement_dir(path: str, max_values: int | None = None) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name.endswith(".hpcrun"):
            files[name] = dump_hpcrun(full, max_values)
        elif name.endswith(".hpctrace"):
            files[name] = dump_hpctrace(full, max_values)
    subdirs = {d: sorted(os.listdir(os.path.join(path, d)))
               for d in ("structs", "gpubins", "vdso", "kernel_symbols") if os.path.isdir(os.path.join(path, d))}
    return {"measurement_directory": os.path.abspath(path), "subdirectories": subdirs, "files": files}
