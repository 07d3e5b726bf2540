"""Semantic comparison of two databases, as HPCToolkit's own accuracy test judges them.

Ids, profile order and file layout are free choices of a writer, so nothing
is compared by id. Contexts are matched by their path of (relation, scope)
from the root, where a scope names its function (name, module, offset, file,
line), its source line and its instruction or loop address by content; two
siblings with the same (relation, scope) — hpcprof can produce them when an
elided instruction hands its children up to its line — are told apart by the
shape of their subtrees and then by their summary values. Profiles are
matched by identifier tuple, metric ids by (metric, scope) or (metric,
scope, formula, combine). Every value of every profile (summary included) and
of cct.db must agree within 16 ULP; trace lines must have the same
timestamps and, through the matched trees, the same contexts.

Instruction contexts that meta.db elides have values but no place in the
tree; per profile, the multiset of their value vectors is compared.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import field
from typing import Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import blake2b
from hpcsa.formats.db import metadb
from hpcsa.formats.db.database import SOURCES, Database, open_database

ULP_GRACE = 16

#: Kinds of difference, in report order.
KINDS = ("files", "metadata", "context", "profile", "value", "elided", "trace")


@dataclass(frozen=True)
class Difference:
    """One difference: its kind, where (a readable context path, or ''), and what."""

    kind: str
    where: str
    what: str
    path: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}: {self.where + ': ' if self.where else ''}{self.what}"


@dataclass
class Comparison:
    """The outcome: every difference found (capped per kind) and what was compared."""

    differences: list[Difference] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    matched_contexts: int = 0
    matched_profiles: int = 0
    compared_values: int = 0
    compared_trace_elements: int = 0
    max_ulps: int = 0
    limit: int = 50

    @property
    def same(self) -> bool:
        return not self.counts

    def add(self, kind: str, where: str, what: str, path: tuple[str, ...] = ()) -> None:
        self.counts[kind] += 1
        if self.counts[kind] <= self.limit:
            self.differences.append(Difference(kind, where, what, path))

    def summary(self) -> str:
        if self.same:
            return (f"same: {self.matched_contexts} contexts, {self.matched_profiles} profiles, "
                    f"{self.compared_values} values (max {self.max_ulps} ULP), "
                    f"{self.compared_trace_elements} trace elements")
        parts = ", ".join(f"{self.counts[k]} {k}" for k in KINDS if self.counts.get(k))
        return f"different: {parts}"


# -- floating point -----------------------------------------------------------------------------------


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Number of representable doubles between ``a`` and ``b`` (element-wise, as float64; NaN vs a number
    is infinitely far, two NaNs are equal)."""
    a = np.ascontiguousarray(a, np.float64)
    b = np.ascontiguousarray(b, np.float64)
    ia, ib = a.view(np.int64), b.view(np.int64)
    lowest = np.int64(np.iinfo(np.int64).min)
    with np.errstate(over="ignore"):
        oa = np.where(ia < 0, lowest - ia, ia)  # monotonic in the value; -0.0 and 0.0 meet at 0
        ob = np.where(ib < 0, lowest - ib, ib)
        ua, ub = oa.view(np.uint64), ob.view(np.uint64)
        dist = np.where(oa >= ob, ua - ub, ub - ua).astype(np.float64)  # exact modulo 2**64
    na, nb = np.isnan(a), np.isnan(b)
    return np.where(na | nb, np.where(na & nb, 0.0, np.inf), dist)


# -- naming contexts by content -----------------------------------------------------------------------


class ContextNames:
    """The content key of every meta.db context and a readable description of it."""

    def __init__(self, meta: metadb.MetaDB) -> None:
        self.meta = meta
        tree = meta.contexts
        assert tree is not None
        fn = meta.functions
        mods, files = meta.modules, [_original_path(meta, i) for i in range(len(meta.files))]

        def function_key(i: int) -> tuple[Any, ...] | None:
            if i < 0:
                return None
            m, f = int(fn.module[i]), int(fn.file[i])
            return (fn.names[i], mods[m] if m >= 0 else None, int(fn.offset[i]) if m >= 0 else None,
                    files[f] if f >= 0 else None, int(fn.line[i]) if f >= 0 else None)

        funcs = [function_key(i) for i in range(len(fn))]
        flags = tree.flags.astype(np.int64)
        rel = tree.relation.tolist()
        lex = tree.lexical_type.tolist()
        fidx, filx, line = tree.function.tolist(), tree.file.tolist(), tree.line.tolist()
        modx, off = tree.module.tolist(), tree.offset.tolist()
        keys = []
        for r in range(len(tree)):
            fl = int(flags[r])
            keys.append((
                metadb.RELATION.get(rel[r], str(rel[r])), metadb.LEXICAL_TYPE.get(lex[r], str(lex[r])),
                funcs[fidx[r]] if fl & metadb.HAS_FUNCTION else None,
                files[filx[r]] if fl & metadb.HAS_SRCLOC else None,
                line[r] if fl & metadb.HAS_SRCLOC else None,
                mods[modx[r]] if fl & metadb.HAS_POINT else None,
                off[r] if fl & metadb.HAS_POINT else None))
        self.keys = keys
        self.entry_keys = [("entry", metadb.ENTRY_POINT.get(e.kind, str(e.kind))) for e in tree.entry_points]

    @staticmethod
    def describe(key: tuple[Any, ...]) -> str:
        if key[0] == "entry":
            return f"<{key[1].replace('_', ' ')}>"
        rel, lex, func, file, line, module, offset = key
        parts = []
        if func is not None:
            parts.append(func[0] if func[0] is not None else "<unnamed>")
        elif lex == "function":
            parts.append("(unknown)")
        if file is not None:
            parts.append(f"{os.path.basename(file) or file}:{line}")
        if module is not None:
            parts.append(f"{os.path.basename(module) or module}+{offset:#x}")
        return f"-{rel}> [{lex}] {' '.join(parts)}"


def _original_path(meta: metadb.MetaDB, i: int) -> str:
    """A source file's own path: a copy in the database (``src/<path>``, flagged copied) names its original."""
    path = meta.files[i]
    flags = getattr(meta, "file_flags", None)
    if flags is not None and i < len(flags) and int(flags[i]) & metadb.FILE_COPIED and \
            path.startswith(SOURCES + "/"):
        return path[len(SOURCES):]
    return path


@dataclass
class _Side:
    """One database's tree as nodes: node -1 is the root, entry points and contexts follow."""

    db: Database
    names: ContextNames
    node_of_id: dict[int, int]
    children: list[list[int]]  # index node + 1 (so the root, -1, is at 0)
    key: list[tuple[Any, ...]]
    id_of_node: list[int]

    @classmethod
    def build(cls, db: Database) -> _Side:
        names = ContextNames(db.meta)
        tree = db.meta.contexts
        assert tree is not None
        n_entry = len(tree.entry_points)
        # Nodes 0..n_entry-1 are the entry points, then the meta.db rows.
        key = list(names.entry_keys) + names.keys
        id_of_node = [e.ctx_id for e in tree.entry_points] + tree.ctx_id.astype(np.int64).tolist()
        children: list[list[int]] = [[] for _ in range(len(key) + 1)]
        for e in range(n_entry):
            children[0].append(e)
        parent = tree.parent.tolist()
        entry = tree.entry.tolist()
        for r in range(len(tree)):
            p = parent[r]
            children[1 + (entry[r] if p < 0 else n_entry + p)].append(n_entry + r)
        node_of_id = {cid: i for i, cid in enumerate(id_of_node)}
        return cls(db, names, node_of_id, children, key, id_of_node)


def _subtree_signatures(side: _Side) -> list[tuple[int, str]]:
    """Per node, (subtree size, digest of its sorted child keys): tells equal siblings apart the same way in
    both databases (by shape first, so a small trace-only subtree never pairs with a big one)."""
    n = len(side.key)
    sig: list[tuple[int, str]] = [(0, "")] * n
    order: list[int] = []
    stack = [-1]
    while stack:  # pre-order, then reversed for children-before-parents
        node = stack.pop()
        order.append(node)
        stack.extend(side.children[node + 1])
    for node in reversed(order):
        if node < 0:
            continue
        kids = side.children[node + 1]
        size = 1 + sum(sig[c][0] for c in kids)
        text = "\n".join(sorted(repr(side.key[c]) for c in kids))
        sig[node] = (size, blake2b(text.encode(), digest_size=8).hexdigest())
    return sig


def _summary_vector(side: _Side, summary: dict[int, dict[int, float]], node: int) -> tuple[float, ...]:
    vals = summary.get(side.id_of_node[node], {})
    return tuple(v for _, v in sorted(vals.items()))


# -- the comparison -----------------------------------------------------------------------------------


def compare_databases(a: str | os.PathLike[str] | Database, b: str | os.PathLike[str] | Database, *,
                      limit: int = 50, traces: bool = True) -> Comparison:
    """Compare database ``a`` (e.g. the reference) with ``b``; see the module docstring."""
    dba = a if isinstance(a, Database) else open_database(a)
    dbb = b if isinstance(b, Database) else open_database(b)
    out = Comparison(limit=limit)
    _compare_files(dba, dbb, out)
    _compare_metadata(dba, dbb, out)
    sa, sb = _Side.build(dba), _Side.build(dbb)
    match = _match_trees(sa, sb, out)
    out.matched_contexts = len(match)
    prof_match = _match_profiles(dba, dbb, out)
    out.matched_profiles = len(prof_match)
    _compare_values(sa, sb, match, prof_match, out)
    if traces and dba.trace is not None and dbb.trace is not None:
        _compare_traces(sa, sb, match, prof_match, out)
    return out


def _compare_files(a: Database, b: Database, out: Comparison) -> None:
    for name, x, y in (("cct.db", a.cct, b.cct), ("trace.db", a.trace, b.trace),
                       ("metrics/default.yaml", a.metrics, b.metrics)):
        if (x is None) != (y is None):
            out.add("files", "", f"{name} exists in {'the second' if x is None else 'the first'} database only")


def _compare_metadata(a: Database, b: Database, out: Comparison) -> None:
    ma, mb = a.meta, b.meta
    if ma.title != mb.title:
        out.add("metadata", "", f"title {ma.title!r} != {mb.title!r}")
    if ma.id_names != mb.id_names:
        out.add("metadata", "", f"identifier names {ma.id_names} != {mb.id_names}")
    if [(s.name, s.type, s.propagation_index) for s in ma.scopes] != \
            [(s.name, s.type, s.propagation_index) for s in mb.scopes]:
        out.add("metadata", "", "propagation scopes differ")
    ka, kb = _metric_layout(ma), _metric_layout(mb)
    for name in sorted(set(ka) | set(kb)):
        if ka.get(name) != kb.get(name):
            out.add("metadata", "", f"metric {name!r}: scopes/partials {ka.get(name)} != {kb.get(name)}")
    if a.metrics is not None and b.metrics is not None:
        # The order of ``inputs`` follows the writer's metric order (hpcprof's is a hash order): compare them
        # as a set; everything else (the presentation tree) in order.
        da, db_ = _plain(a.metrics.document), _plain(b.metrics.document)
        ia, ib = sorted(map(repr, da.pop("inputs", []) or [])), sorted(map(repr, db_.pop("inputs", []) or []))
        if ia != ib:
            out.add("metadata", "", f"metrics/default.yaml: {len(set(ia) ^ set(ib))} inputs differ")
        if da != db_:
            out.add("metadata", "", "metrics/default.yaml: the presentation trees differ")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "metric") and hasattr(value, "scope"):
        return ("input", value.metric, value.scope, value.formula, value.combine)
    return value


def _metric_layout(meta: metadb.MetaDB) -> dict[str, tuple[Any, ...]]:
    return {m.name: (tuple(sorted(meta.scopes[i.scope].name for i in m.scope_insts)),
                     tuple(sorted((meta.scopes[s.scope].name, s.formula, s.combine) for s in m.summaries)))
            for m in meta.metrics}


def _match_trees(sa: _Side, sb: _Side, out: Comparison) -> dict[int, int]:
    """Nodes of ``sa`` -> nodes of ``sb`` with the same path; differences for the rest."""
    sig_a, sig_b = _subtree_signatures(sa), _subtree_signatures(sb)
    sum_a = _summary_map(sa.db)
    sum_b = _summary_map(sb.db)
    match: dict[int, int] = {}
    work: list[tuple[int, int, tuple[str, ...]]] = [(-1, -1, ())]
    while work:
        na, nb, path = work.pop()
        ga = _group(sa, na, sig_a, sum_a)
        gb = _group(sb, nb, sig_b, sum_b)
        for k in sorted(set(ga) | set(gb), key=repr):
            xa, xb = ga.get(k, []), gb.get(k, [])
            desc = ContextNames.describe(k)
            for i in range(max(len(xa), len(xb))):
                here = path + (desc,)
                if i < len(xa) and i < len(xb):
                    match[xa[i]] = xb[i]
                    work.append((xa[i], xb[i], here))
                elif i < len(xa):
                    n = _count(sa, xa[i])
                    out.add("context", " / ".join(here), f"missing from the second database "
                            f"(with {n - 1} descendants)", here)
                else:
                    n = _count(sb, xb[i])
                    out.add("context", " / ".join(here), f"only in the second database "
                            f"(with {n - 1} descendants)", here)
    return match


def _summary_map(db: Database) -> dict[int, dict[int, float]]:
    s = db.profiles.summary()
    ctx = s.value_ctx_ids().tolist()
    out: dict[int, dict[int, float]] = defaultdict(dict)
    for c, m, v in zip(ctx, s.metric_ids.tolist(), s.values.tolist(), strict=True):
        out[c][m] = v
    return out


def _group(side: _Side, node: int, sig: list[tuple[int, str]], summary: dict[int, dict[int, float]]
           ) -> dict[tuple[Any, ...], list[int]]:
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for c in side.children[node + 1]:
        groups[side.key[c]].append(c)
    for nodes in groups.values():
        if len(nodes) > 1:
            nodes.sort(key=lambda c: (sig[c], _summary_vector(side, summary, c)))
    return groups


def _count(side: _Side, node: int) -> int:
    n, stack = 0, [node]
    while stack:
        x = stack.pop()
        n += 1
        stack.extend(side.children[x + 1])
    return n


def _id_tuple_key(db: Database, i: int) -> tuple[Any, ...] | None:
    t = db.profiles.id_tuple(i)
    if t is None:
        return None
    return tuple((int(k), int(f) & 1, int(lg), int(ph))
                 for k, f, lg, ph in t[["kind", "flags", "logicalId", "physicalId"]].tolist())


def _match_profiles(a: Database, b: Database, out: Comparison) -> dict[int, int]:
    """Pair profiles by identifier tuple.

    Several runs written into one measurement directory (no MPI rank) give
    profiles with the same identifier tuple; within such a group, profiles are
    paired by the start of their traces, then by their values (the sum of each
    metric, to 12 significant digits),
    so equal databases compare equal whatever their profile order.
    """
    def index(db: Database) -> dict[Any, list[int]]:
        got: dict[Any, list[int]] = defaultdict(list)
        for i in range(len(db.profiles)):
            got["summary" if db.profiles.is_summary(i) else _id_tuple_key(db, i)].append(i)
        return got

    ia, ib = index(a), index(b)
    pairs: dict[int, int] = {}
    for key in sorted(set(ia) | set(ib), key=repr):
        la, lb = ia.get(key, []), ib.get(key, [])
        if len(la) != len(lb):
            out.add("profile", "", f"{len(la)} profile(s) with identifier {key} in the first database, "
                                   f"{len(lb)} in the second")
        if len(la) > 1 and len(lb) > 1:
            la = sorted(la, key=lambda i: (_fingerprint(a, i), i))
            lb = sorted(lb, key=lambda i: (_fingerprint(b, i), i))
        pairs.update(zip(la, lb, strict=False))
    return pairs


def _fingerprint(db: Database, i: int) -> tuple[Any, ...]:
    """What tells apart profiles of one identifier: when their trace starts, then their values."""
    start = -1
    if db.trace is not None:
        slots = np.flatnonzero(db.trace.prof_index == i)
        if len(slots):
            line = db.trace.trace(int(slots[0]))
            start = int(line["timestamp"][0]) if len(line) else -1
    keys = _metric_keys(db.meta, db.profiles.is_summary(i))
    p = db.profiles.profile(i)
    sums: dict[str, list[float]] = defaultdict(list)
    for m, v in zip(p.metric_ids.tolist(), p.values.tolist(), strict=True):
        sums[repr(keys.get(m, ("metric id", m)))].append(v)
    return (start, tuple(sorted((k, float(f"{math.fsum(v):.12g}")) for k, v in sums.items())))


def _metric_keys(meta: metadb.MetaDB, summary: bool) -> dict[int, tuple[Any, ...]]:
    if summary:
        return {k: v for k, v in meta.stat_metric_names().items()}
    return {k: v for k, v in meta.prop_metric_names().items()}


def _path_of(side: _Side, node: int, parent_of: dict[int, int]) -> tuple[str, ...]:
    out: list[str] = []
    while node >= 0:
        out.append(ContextNames.describe(side.key[node]))
        node = parent_of.get(node, -1)
    return tuple(reversed(out))


def _parents(side: _Side) -> dict[int, int]:
    par: dict[int, int] = {}
    for p, kids in enumerate(side.children):
        for c in kids:
            par[c] = p - 1
    return par


def _compare_values(sa: _Side, sb: _Side, match: dict[int, int], prof_match: dict[int, int],
                    out: Comparison) -> None:
    pa, pb = sa.db.profiles, sb.db.profiles
    par_a = _parents(sa)
    # Context ids of a mapped to ids of b (-1: a context of a with no match; root 0 -> 0).
    id_map = {0: 0}
    for na, nb in match.items():
        id_map[sa.id_of_node[na]] = sb.id_of_node[nb]
    for ia, ib in sorted(prof_match.items()):
        summary = pa.is_summary(ia)
        ka, kb = _metric_keys(sa.db.meta, summary), _metric_keys(sb.db.meta, summary)
        who = "summary" if summary else " / ".join(f"{k}:{lg}" for k, _, lg, _ in (_id_tuple_key(sa.db, ia) or ()))
        va, vb = _values(pa, ia, ka), _values(pb, ib, kb)
        ea, eb = [], []
        seen_b: set[tuple[int, Any]] = set()
        diffs_here = 0
        for (cid, mkey), x in sorted(va.items(), key=lambda t: (t[0][0], repr(t[0][1]))):
            if cid not in sa.node_of_id and cid != 0:
                ea.append((cid, mkey, x))
                continue
            cb = id_map.get(cid)
            if cb is None:
                continue  # the context itself was reported
            seen_b.add((cb, mkey))
            y = vb.get((cb, mkey))
            where = "<root>" if cid == 0 else " / ".join(_path_of(sa, sa.node_of_id[cid], par_a))
            out.compared_values += 1
            if y is None:
                diffs_here += 1
                out.add("value", where, f"{who}: {mkey} = {x!r} is missing from the second database")
                continue
            d = float(ulp_distance(np.array([x]), np.array([y]))[0])
            out.max_ulps = max(out.max_ulps, int(min(d, 2**62)))
            if d > ULP_GRACE:
                diffs_here += 1
                out.add("value", where, f"{who}: {mkey} = {x!r} != {y!r} ({d:.0f} ULP)")
        matched_b_ids = set(id_map.values())
        for (cid, mkey), y in vb.items():
            if cid not in sb.node_of_id and cid != 0:
                eb.append((cid, mkey, y))
            elif (cid, mkey) not in seen_b and cid in matched_b_ids:
                out.add("value", f"context id {cid} of the second database",
                        f"{who}: {mkey} = {y!r} only in the second database")
        _compare_elided(ea, eb, who, out)


def _values(pdb: Any, i: int, keys: dict[int, tuple[Any, ...]]) -> dict[tuple[int, Any], float]:
    p = pdb.profile(i)
    ctx = p.value_ctx_ids().tolist()
    return {(c, keys.get(m, ("metric id", m))): v
            for c, m, v in zip(ctx, p.metric_ids.tolist(), p.values.tolist(), strict=True)}


def _compare_elided(ea: list[tuple[int, Any, float]], eb: list[tuple[int, Any, float]], who: str,
                    out: Comparison) -> None:
    def vectors(items: list[tuple[int, Any, float]]) -> list[tuple[tuple[Any, float], ...]]:
        by: dict[int, list[tuple[Any, float]]] = defaultdict(list)
        for cid, mkey, v in items:
            by[cid].append((repr(mkey), v))
        return sorted(tuple(sorted(v)) for v in by.values())

    xa, xb = vectors(ea), vectors(eb)
    if len(xa) != len(xb):
        out.add("elided", "", f"{who}: {len(xa)} elided instruction contexts with values != {len(xb)}")
        return
    for u, v in zip(xa, xb, strict=True):
        if [k for k, _ in u] != [k for k, _ in v]:
            out.add("elided", "", f"{who}: elided instruction values {u} != {v}")
            continue
        d = ulp_distance(np.array([x for _, x in u]), np.array([y for _, y in v]))
        out.compared_values += len(u)
        if len(d) and float(d.max()) > ULP_GRACE:
            out.add("elided", "", f"{who}: elided instruction values {u} != {v}")


def _compare_traces(sa: _Side, sb: _Side, match: dict[int, int], prof_match: dict[int, int],
                    out: Comparison) -> None:
    ta, tb = sa.db.trace, sb.db.trace
    assert ta is not None and tb is not None
    slot_a = {int(p): s for s, p in enumerate(ta.prof_index.tolist())}
    slot_b = {int(p): s for s, p in enumerate(tb.prof_index.tolist())}
    id_map = {0: 0}
    for na, nb in match.items():
        id_map[sa.id_of_node[na]] = sb.id_of_node[nb]
    for ia, ib in sorted(prof_match.items()):
        if sa.db.profiles.is_summary(ia):
            continue
        who = " / ".join(f"{k}:{lg}" for k, _, lg, _ in (_id_tuple_key(sa.db, ia) or ()))
        la = ta.trace(slot_a[ia]) if ia in slot_a else None
        lb = tb.trace(slot_b[ib]) if ib in slot_b else None
        if la is None or lb is None:
            present = la if la is not None else lb  # not None where exactly one is
            if present is not None and len(present):
                out.add("trace", "", f"{who}: a trace line exists in one database only")
            continue
        if len(la) != len(lb):
            out.add("trace", "", f"{who}: {len(la)} trace elements != {len(lb)}")
            continue
        out.compared_trace_elements += len(la)
        if not np.array_equal(la["timestamp"], lb["timestamp"]):
            k = int(np.flatnonzero(la["timestamp"] != lb["timestamp"])[0])
            out.add("trace", "", f"{who}: element {k}: timestamp {int(la['timestamp'][k])} != "
                    f"{int(lb['timestamp'][k])}")
            continue
        mapped = np.array([id_map.get(int(c), -1) for c in la["ctxId"].tolist()], np.int64)
        bad = np.flatnonzero(mapped != lb["ctxId"].astype(np.int64))
        if len(bad):
            k = int(bad[0])
            out.add("trace", "", f"{who}: {len(bad)} elements name other contexts (first: element {k}, "
                    f"context {int(la['ctxId'][k])} vs {int(lb['ctxId'][k])})")


def iter_report(cmp: Comparison) -> Iterator[str]:
    for d in cmp.differences:
        yield str(d)
    for kind in KINDS:
        extra = cmp.counts.get(kind, 0) - cmp.limit
        if extra > 0:
            yield f"{kind}: ... and {extra} more"
