"""Our dump of dbase/small.d and small.nostruct.d carries what upstream's hpctesttool dumps carry.

small.yaml / small.nostruct.yaml were written by HPCToolkit's own Python tool
from the same databases; they are loaded as plain data (their custom tags
ignored) and compared with ``hpcsa.formats.db.dump.dump_database`` field by
field: metrics, scopes, summaries, modules, files, functions, the whole context
tree (parent, order, every field), every profile value, every cct.db value and
the trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpcsa.formats.db.dump import dump_database
from hpcsa.formats.db.metricsyaml import load_tolerant


def _load(shared_data: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    base = shared_data / "hpctoolkit" / "dbase"
    upstream = load_tolerant((base / f"{name}.yaml").read_text())
    ours = dump_database(str(base / f"{name}.d"))
    return upstream, ours


NAMES = ["small", "small.nostruct"]


@pytest.mark.parametrize("name", NAMES)
def test_meta_tables(shared_data: Path, name: str) -> None:
    up, ours = _load(shared_data, name)
    um, om = up["meta"], ours["meta.db"]
    assert um["general"] == om["general"]
    assert um["id_names"]["names"] == om["id_names"]
    assert [(s["scope_name"], s["type"], s["propagation_index"]) for s in um["metrics"]["scopes"]] == \
           [(s["name"], s["type"], s["propagation_index"]) for s in om["scopes"]]
    up_metrics = [{
        "name": m["name"],
        "insts": [(i["scope"]["scope_name"], i["prop_metric_id"]) for i in m["scope_insts"]],
        "summaries": [(s["scope"]["scope_name"], s["formula"], s["combine"], s["stat_metric_id"])
                      for s in m["summaries"]],
    } for m in um["metrics"]["metrics"]]
    our_metrics = [{
        "name": m["name"],
        "insts": [(i["scope"], i["prop_metric_id"]) for i in m["scope_instances"]],
        "summaries": [(s["scope"], s["formula"], s["combine"], s["stat_metric_id"]) for s in m["summaries"]],
    } for m in om["metrics"]]
    assert up_metrics == our_metrics and our_metrics
    assert [(m["path"], m["flags"]) for m in um["modules"]["modules"]] == \
           [(m["path"], [] if m["flags"] == 0 else m["flags"]) for m in om["modules"]]
    assert [(f["path"], f["flags"]) for f in um["files"]["files"]] == [(f["path"], f["flags"]) for f in om["files"]]
    up_funcs = [(f["name"], (f["module"] or {}).get("path"), f["offset"] if f["module"] else None,
                 (f["file"] or {}).get("path"), f["line"] if f["file"] else None)
                for f in um["functions"]["functions"]]
    our_funcs = [(f["name"], f.get("module"), int(f["offset"], 16) if "offset" in f else None, f.get("file"),
                  f.get("line")) for f in om["functions"]]
    assert up_funcs == our_funcs


def _flatten_upstream(tree: dict[str, Any]) -> tuple[dict[int, tuple], dict[int, list[int]]]:
    fields: dict[int, tuple] = {}
    children: dict[int, list[int]] = {}
    stack = [(e["ctx_id"], e.get("children") or []) for e in reversed(tree["entry_points"])]
    while stack:
        parent, kids = stack.pop()
        children[parent] = [k["ctx_id"] for k in kids]
        for k in kids:
            fields[k["ctx_id"]] = (
                parent, k["relation"], k["lexical_type"], sorted(k["flags"]), k["propagation"],
                (k["function"] or {}).get("name"), (k["file"] or {}).get("path"), k["line"],
                (k["module"] or {}).get("path"), k["offset"])
            stack.append((k["ctx_id"], k.get("children") or []))
    return fields, children


def _flatten_ours(tree: dict[str, Any]) -> tuple[dict[int, tuple], dict[int, list[int]]]:
    fields: dict[int, tuple] = {}
    children: dict[int, list[int]] = {e["ctx_id"]: [] for e in tree["entry_points"]}
    for c in tree["contexts"]:
        children.setdefault(c["ctx_id"], [])
        children[c["parent"]].append(c["ctx_id"])
        fields[c["ctx_id"]] = (
            c["parent"], c["relation"], c["lexical_type"], sorted(c["flags"]), c["propagation"],
            c.get("function"), c.get("file"), c.get("line"), c.get("module"),
            int(c["offset"], 16) if "offset" in c else None)
    return fields, children


@pytest.mark.parametrize("name", NAMES)
def test_context_tree(shared_data: Path, name: str) -> None:
    up, ours = _load(shared_data, name)
    utree, otree = up["meta"]["context"], ours["meta.db"]["context_tree"]
    assert [(e["ctx_id"], e["entry_point"], e["pretty_name"]) for e in utree["entry_points"]] == \
           [(e["ctx_id"], e["entry_point"], e["pretty_name"]) for e in otree["entry_points"]]
    ufields, ukids = _flatten_upstream(utree)
    ofields, okids = _flatten_ours(otree)
    assert ufields == ofields and len(ufields) >= 10
    assert ukids == okids


@pytest.mark.parametrize("name", NAMES)
def test_profile_values(shared_data: Path, name: str) -> None:
    up, ours = _load(shared_data, name)
    uprofs = up["profile"]["profile_infos"]["profiles"]
    oprofs = ours["profile.db"]["profiles"]
    assert len(uprofs) == len(oprofs) == 2
    for u, o in zip(uprofs, oprofs, strict=True):
        assert u["flags"] == o["flags"]
        uids = [] if u["id_tuple"] is None else [
            (i["kind"], i["flags"], i["logical_id"], i["physical_id"]) for i in u["id_tuple"]["ids"]]
        kinds = ours["meta.db"]["id_names"]
        oids = [(kinds.index(i["kind"]), i["flags"], i["logical_id"], i["physical_id"])
                for i in o.get("id_tuple", [])]
        assert uids == oids
        assert u["values"] == o["values"]
        assert sum(len(v) for v in o["values"].values()) == o["n_values"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_cct_values(shared_data: Path, name: str) -> None:
    up, ours = _load(shared_data, name)
    ucontexts = up["context"]["ctx_infos"]["contexts"]
    occt = ours["cct.db"]
    assert len(ucontexts) == occt["n_context_ids"]
    for ctx_id, u in enumerate(ucontexts):
        o = occt["contexts"].get(ctx_id, {"values": {}})
        assert u["values"] == o["values"], ctx_id
    assert sum(1 for u in ucontexts if u["values"]) == occt["n_contexts_with_values"]


@pytest.mark.parametrize("name", NAMES)
def test_trace(shared_data: Path, name: str) -> None:
    up, ours = _load(shared_data, name)
    utr, otr = up["trace"]["ctx_traces"], ours["trace.db"]
    assert utr["timestamp_range"] == otr["time_range"]
    assert [t["prof_index"] for t in utr["traces"]] == [t["prof_index"] for t in otr["traces"]]
    for u, o in zip(utr["traces"], otr["traces"], strict=True):
        assert [(e["timestamp"], e["ctx_id"]) for e in u["line"]] == \
               [(e["timestamp"], e["ctx_id"]) for e in o["elements"]]
        assert len(o["elements"]) == o["n_elements"] == 13
