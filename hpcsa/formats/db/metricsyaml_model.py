"""``metrics/default.yaml``: the version, the vocabularies (scopes, combine functions, operators,
statistics) and the model (:class:`Input`, :class:`MetricsTaxonomy`, :class:`MetricRef`)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.db.metadb_model import COMBINE, standard_scopes

VERSION = 0
SCOPES = tuple(s.name for s in standard_scopes())  # the propagation scopes hpcprof writes, in its order
COMBINES = tuple(COMBINE.values())  # as meta.db spells them
OPERATORS = ("+", "-", "*", "/", "^", "sqrt", "log", "ln", "min", "max", "floor", "ceil")
STATISTICS = ("Sum", "Mean", "StdDev", "CfVar", "Min", "Max")
MAX_NODES = 1_000_000  # aliases can make a small file a huge tree; refuse past this


@dataclass(eq=True)
class Input:
    """One summary value column of the database: a metric's partial over one propagation scope."""

    metric: str
    scope: str
    formula: str = "$$"
    combine: str = "sum"
    anchor: str | None = field(default=None, compare=False)
    extra: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)


@dataclass
class MetricsTaxonomy:
    """A whole ``default.yaml``: the document with :class:`Input` objects in place of anchors."""

    document: dict[str, Any]
    path: str | None = None

    @property
    def version(self) -> int:
        return int(self.document.get("version", VERSION))

    @property
    def inputs(self) -> list[Input]:
        return self.document.get("inputs") or []

    @property
    def roots(self) -> list[Any]:
        return self.document.get("roots") or []


@dataclass(frozen=True)
class MetricRef:
    """A metric referred to by name in a formula (of metrics/default.yaml, or one hpcrun recorded)."""

    name: str
