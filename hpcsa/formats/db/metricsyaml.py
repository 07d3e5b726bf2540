"""``metrics/default.yaml``: the database's metric taxonomy, read and written the way hpcprof does.

The file has ``version: 0``, ``inputs:`` (one anchored mapping per metric,
propagation scope and summary partial: ``metric``, ``scope``, ``formula``,
``combine``) and ``roots:`` (the presentation tree: ``name``, ``description``,
``variants`` such as ``Sum`` with ``render`` and ``formula`` whose leaves are
aliases of inputs, numbers, or operator maps like ``{/: [*a, *b]}``).

Reading (:func:`.metricsyaml_read.read_metrics_yaml`) keeps the document as plain data in which
every input is an :class:`.Input` object and every alias is that same object,
so the structure survives a round trip; :func:`.dumps` writes a document in
hpcprof's (yaml-cpp's) layout: block style, flow style for ``render`` lists and
formula expressions, anchors named as hpcprof names them, no final newline.

:func:`.standard_taxonomy` builds hpcprof's "standard" taxonomy from metric
descriptions (:class:`.MetricSpec`, :class:`.ExtraStatSpec`);
:func:`.specs_from_hpcrun` derives those from an ``.hpcrun`` metric table,
parsing hpcrun's derived-metric formulas (``100*(#76/#77)``).

The one name the rest of hpcsa imports (``from hpcsa.formats.db import
metricsyaml``); the work is done by :mod:`.metricsyaml_model` (vocabularies and
model), :mod:`.metricsyaml_read`, :mod:`.metricsyaml_write`,
:mod:`.metricsyaml_taxonomy` and :mod:`.hpcrun_formula`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hpcsa.formats.db.hpcrun_formula import parse_hpcrun_formula
from hpcsa.formats.db.metricsyaml_model import (
    COMBINES,
    MAX_NODES,
    OPERATORS,
    SCOPES,
    STATISTICS,
    VERSION,
    Input,
    MetricRef,
    MetricsTaxonomy,
)
from hpcsa.formats.db.metricsyaml_taxonomy import (
    ExtraStatSpec,
    MetricSpec,
    specs_from_hpcrun,
    standard_taxonomy,
)

if TYPE_CHECKING:
    from hpcsa.formats.db.metricsyaml_read import load_tolerant, parse_metrics_yaml, read_metrics_yaml
    from hpcsa.formats.db.metricsyaml_write import anchor_name, dumps, sanitize, write_metrics_yaml

#: Names served by the modules that need PyYAML, imported on first use (PEP 562): ``hpcsa prof`` needs the
#: taxonomy at start-up on every MPI rank and process, but the YAML only where rank 0 writes the file.
_LAZY = {name: "hpcsa.formats.db.metricsyaml_read" for name in ("load_tolerant", "parse_metrics_yaml",
                                                                 "read_metrics_yaml")}
_LAZY.update({name: "hpcsa.formats.db.metricsyaml_write" for name in ("anchor_name", "dumps", "sanitize",
                                                                        "write_metrics_yaml")})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "COMBINES", "ExtraStatSpec", "Input", "MAX_NODES", "MetricRef", "MetricSpec", "MetricsTaxonomy",
    "OPERATORS", "SCOPES", "STATISTICS", "VERSION", "anchor_name", "dumps", "load_tolerant",
    "parse_hpcrun_formula", "parse_metrics_yaml", "read_metrics_yaml", "sanitize", "specs_from_hpcrun",
    "standard_taxonomy", "write_metrics_yaml",
]
