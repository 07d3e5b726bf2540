"""The run catalog: one record per database -- what it and its measurement record -- plus the user's metadata.

Recorded in the database (HPCToolkit's FORMATS.md): the title (hpcprof's: the program's name), the load
modules, the profiles' identifier tuples (ranks, threads, GPU streams, hosts), trace.db's time range (the
run's start and duration, where it has traces), the metrics with values, and the format's version. A
database does not record which hpcprof or hpcsa wrote it; hpcprof copies its ``FORMATS.md`` into every
database it writes, which is the one sign kept (``writer``).

User metadata comes as ``KEY=VALUE`` per run (:func:`parse_meta_options`) or from a CSV or JSON file keyed by
database (:func:`read_meta_file`); :func:`group_runs` groups the runs by one key, numerically where every value
is a number (a scaling series: nodes, ranks, threads), else by text (compiler, branch).
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import (
    ID_GPUCONTEXT,
    ID_GPUDEVICE,
    ID_GPUSTREAM,
    ID_KIND_MASK,
    ID_NODE,
    ID_RANK,
)

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

_GPU_KINDS = (ID_GPUDEVICE, ID_GPUCONTEXT, ID_GPUSTREAM)
#: Trace time stamps are nanoseconds since the epoch (hpcrun's); earlier than this, they are not (synthetic).
_EPOCH_FLOOR_NS = 10**18


@dataclass
class RunRecord:
    """One run of the catalog (``meta`` is the user's metadata)."""

    index: int
    label: str
    path: str
    title: str
    program: str
    ranks: int
    threads: int
    gpu_streams: int
    hosts: int
    profiles: int
    contexts: int
    start: str | None
    duration_s: float | None
    metrics: list[str]
    format: str
    writer: str
    meta: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in FIELDS}
        out.update({f"meta.{k}": v for k, v in self.meta.items()})
        return out


#: The recorded fields, in the catalog's column order.
FIELDS = ("index", "label", "path", "title", "program", "ranks", "threads", "gpu_streams", "hosts", "profiles",
          "contexts", "start", "duration_s", "metrics", "format", "writer")


def run_labels(paths: Sequence[str]) -> list[str]:
    """A short unique name per run: the database directory's name without ``.d``, made unique with its
    parent folders' names where two databases share it, and numbered (``#1``, ``#2``) where one database is
    given twice."""
    full = [os.path.normpath(os.path.abspath(p)) for p in paths]
    distinct = list(dict.fromkeys(full))
    parts = {f: f.split(os.sep) for f in distinct}

    def name(f: str, k: int) -> str:
        tail = parts[f][-k:]
        tail[-1] = tail[-1][:-2] if tail[-1].endswith(".d") and len(tail[-1]) > 2 else tail[-1]
        return "/".join(tail)

    label = {f: name(f, 1) for f in distinct}
    for k in range(2, 8):
        taken = list(label.values())
        dup = {x for x in taken if taken.count(x) > 1}
        if not dup:
            break
        label = {f: name(f, k) if lbl in dup else lbl for f, lbl in label.items()}
    count = {f: full.count(f) for f in distinct}
    seen: dict[str, int] = {}
    out = []
    for f in full:
        seen[f] = seen.get(f, 0) + 1
        out.append(label[f] if count[f] == 1 else f"{label[f]}#{seen[f]}")
    return out


def describe(exp: Experiment, index: int, label: str, metrics: Sequence[str]) -> RunRecord:
    """The catalog record of an open run (``metrics``: its metric columns with values)."""
    pdb = exp.db.profiles
    kind = (pdb.ids["kind"].astype(np.int64) & ID_KIND_MASK) if len(pdb.ids) else np.zeros(0, np.int64)
    owner = np.repeat(np.arange(len(pdb)), np.diff(pdb.id_offsets))
    gpu_profile = np.zeros(len(pdb), bool)
    gpu_profile[owner[np.isin(kind, _GPU_KINDS)]] = True
    real = np.ones(len(pdb), bool)
    real[0] = False  # the summary profile
    real &= pdb.has_id_tuple
    ranks = np.unique(pdb.ids["logicalId"][kind == ID_RANK]) if len(kind) else np.zeros(0)
    hosts = np.unique(pdb.ids["physicalId"][kind == ID_NODE]) if len(kind) else np.zeros(0)
    start = duration = None
    trace = exp.db.trace
    if trace is not None and len(trace) and trace.max_timestamp >= trace.min_timestamp:
        duration = (trace.max_timestamp - trace.min_timestamp) / 1e9
        if trace.min_timestamp >= _EPOCH_FLOOR_NS:
            start = _dt.datetime.fromtimestamp(trace.min_timestamp / 1e9, _dt.UTC).isoformat(timespec="seconds")
    return RunRecord(index=index, label=label, path=exp.path, title=exp.title, program=_program(exp),
                     ranks=max(len(ranks), 1), threads=int((real & ~gpu_profile).sum()),
                     gpu_streams=int((real & gpu_profile).sum()), hosts=len(hosts), profiles=int(real.sum()),
                     contexts=exp.db.n_contexts(), start=start, duration_s=duration, metrics=list(metrics),
                     format=exp.meta.version,
                     writer="hpcprof" if os.path.isfile(os.path.join(exp.path, "FORMATS.md")) else "not recorded")


def _program(exp: Experiment) -> str:
    """The program's file name: the load module of ``main``, else the first module that is not a library."""
    fn, mods = exp.meta.functions, exp.meta.modules
    for i, name in enumerate(fn.names):
        if name == "main" and 0 <= int(fn.module[i]) < len(mods):
            return os.path.basename(mods[int(fn.module[i])])
    for m in mods:
        base = os.path.basename(m)
        if ".so" not in base and not base.startswith("["):
            return base
    return exp.title


# -- user metadata -------------------------------------------------------------------------------------------


def _split(option: str) -> tuple[str, str]:
    key, sep, value = option.partition("=")
    if not sep or not key.strip():
        raise HpcsaError(None, f"--meta {option!r}: write KEY=VALUE (or RUN:KEY=VALUE)")
    return key.strip(), value.strip()


def parse_meta_options(options: Sequence[str], runs: Sequence[str], labels: Sequence[str]) -> list[dict[str, str]]:
    """Each run's metadata from ``--meta`` options: ``RUN:KEY=VALUE`` names the run (a database as given, or
    its label); a plain ``KEY=VALUE`` given once is every run's, and given once per run, in order, is each
    run's own (``--meta nodes=1 --meta nodes=2 --meta nodes=4`` for three runs)."""
    out: list[dict[str, str]] = [{} for _ in runs]
    plain: dict[str, list[str]] = {}
    names = {**{r: i for i, r in enumerate(runs)}, **{lbl: i for i, lbl in enumerate(labels)}}
    for opt in options:
        head, colon, rest = opt.partition(":")
        if colon and head in names and "=" in rest:
            key, value = _split(rest)
            out[names[head]][key] = value
            continue
        key, value = _split(opt)
        plain.setdefault(key, []).append(value)
    for key, values in plain.items():
        if len(values) == 1:
            for d in out:
                d.setdefault(key, values[0])
        elif len(values) == len(runs):
            for d, v in zip(out, values, strict=True):
                d[key] = v
        else:
            raise HpcsaError(None, f"--meta {key}=... is given {len(values)} times for {len(runs)} runs: give it "
                             f"once (every run's), once per run (in their order), or as RUN:{key}=VALUE")
    return out


def read_meta_file(path: str, runs: Sequence[str], labels: Sequence[str]) -> list[dict[str, str]]:
    """Each run's metadata from a CSV file (a column ``database`` naming the run as given, by its directory's
    name or by its label; the other columns are keys) or a JSON file (an object keyed by run, or a list of
    objects each with a ``database``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise HpcsaError(path, f"cannot read the metadata file: {exc.strerror}") from None
    rows: list[dict[str, Any]]
    if path.lower().endswith(".json"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HpcsaError(path, f"not JSON: {exc}") from None
        if isinstance(doc, dict):
            rows = [{"database": k, **(v if isinstance(v, dict) else {"value": v})} for k, v in doc.items()]
        elif isinstance(doc, list) and all(isinstance(x, dict) for x in doc):
            rows = doc
        else:
            raise HpcsaError(path, "the JSON must be an object keyed by database or a list of objects")
    else:
        rows = list(csv.DictReader(text.splitlines()))
    index = _run_index(runs, labels)
    out: list[dict[str, str]] = [{} for _ in runs]
    for row in rows:
        name = str(row.get("database", row.get("run", "")))
        i = index.get(name, index.get(os.path.normpath(os.path.abspath(name))))
        if i is None:
            continue  # a row for a run not compared today
        out[i].update({str(k): str(v) for k, v in row.items() if k not in ("database", "run") and v is not None})
    return out


def _run_index(runs: Sequence[str], labels: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, (r, lbl) in enumerate(zip(runs, labels, strict=True)):
        base = os.path.basename(os.path.normpath(r))
        for name in (base, base[:-2] if base.endswith(".d") else base, lbl, r,
                     os.path.normpath(os.path.abspath(r))):
            out.setdefault(name, i)
    return out


# -- groups --------------------------------------------------------------------------------------------------


@dataclass
class Group:
    """Runs sharing one value of a metadata key; ``x`` is that value as a number for a numeric key."""

    value: str
    runs: list[int]
    x: float | None = None


def group_runs(records: Sequence[RunRecord], key: str) -> list[Group]:
    """The runs grouped by ``meta[key]`` (or a recorded field: ``ranks``, ``threads``, ``hosts``...), ordered
    by number where every value is one, else by first appearance. A run without the key is an error."""
    values = []
    for r in records:
        v = r.meta.get(key)
        if v is None and key in FIELDS:
            v = str(getattr(r, key))
        if v is None:
            raise HpcsaError(r.path, f"--group-by {key}: this run has no {key!r} (give it with --meta "
                             f"{r.label}:{key}=VALUE or --meta-file)")
        values.append(v)
    order: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        order.setdefault(v, []).append(i)
    groups = [Group(v, idx) for v, idx in order.items()]
    try:
        for g in groups:
            g.x = float(g.value)
    except ValueError:
        for g in groups:
            g.x = None
        return groups
    return sorted(groups, key=lambda g: g.x if g.x is not None else 0.0)
