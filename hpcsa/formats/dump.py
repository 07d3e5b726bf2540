"""Any HPCToolkit file or directory as plain data a person can read, and that data as YAML (``hpcsa dump``):
the file is recognised by its content (:mod:`hpcsa.formats.sniff`) and rendered by its format's own dumper."""

from __future__ import annotations

import importlib
from typing import Any

import yaml

from hpcsa.core.errors import HpcsaError
from hpcsa.core.textout import escape
from hpcsa.formats.sniff import identify

# kind -> "module:function" returning plain data (dicts, lists, numbers, strings) for YAML.
DUMPERS: dict[str, str] = {
    "hpcrun": "hpcsa.formats.measurement.dump:dump_hpcrun",
    "hpctrace": "hpcsa.formats.measurement.dump:dump_hpctrace",
    "measurement-dir": "hpcsa.formats.measurement.dump:dump_measurement_dir",
    "meta.db": "hpcsa.formats.db.dump:dump_metadb",
    "profile.db": "hpcsa.formats.db.dump:dump_profiledb",
    "cct.db": "hpcsa.formats.db.dump:dump_cctdb",
    "trace.db": "hpcsa.formats.db.dump:dump_tracedb",
    "database-dir": "hpcsa.formats.db.dump:dump_database",
    "metrics-yaml": "hpcsa.formats.db.dump:dump_metrics_yaml",
    "hpcstruct": "hpcsa.formats.hpcstruct.dump:dump_hpcstruct",
}


def dump_data(path: str, max_values: int | None = None) -> Any:
    kind = identify(path)
    target = DUMPERS[kind]
    module_name, func = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        raise HpcsaError(path, f"dumping {kind} files is not available in this build") from None
    return getattr(module, func)(path, max_values=max_values)


_BASE = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter is ~3.5x faster on big dumps


class _Dumper(_BASE):  # type: ignore[misc,valid-type]  # a run-time base
    """Block style, no anchors, long strings kept on one line."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    if not data.isascii():
        data = escape(data)  # libyaml encodes by itself: a byte that was not UTF-8 would raise there
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def to_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1 << 16,
                     allow_unicode=True)
