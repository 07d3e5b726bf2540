"""Reading ``metrics/default.yaml`` into a :class:`~hpcsa.formats.db.metricsyaml_model.MetricsTaxonomy`.

The document is kept as plain data in which every input is an ``Input``
object and every alias is that same object, so the structure survives a round
trip.
"""

from __future__ import annotations

import os
import re
from typing import Any, cast

import yaml

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.core.fileio import read_input
from hpcsa.formats.db.metricsyaml_model import COMBINES, MAX_NODES, VERSION, Input, MetricsTaxonomy


class _Loader(yaml.SafeLoader):
    """A safe loader that records anchor names and ignores unknown tags."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.anchor_names: dict[int, str] = {}  # id(node) -> anchor
        self.object_anchors: dict[int, str] = {}  # id(constructed object) -> anchor

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        anchor = None if isinstance(event, yaml.AliasEvent) else getattr(event, "anchor", None)
        node = super().compose_node(parent, index)
        if anchor is not None:
            self.anchor_names[id(node)] = anchor
        return node

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        obj = super().construct_object(node, deep)
        name = self.anchor_names.get(id(node))
        if name is not None:
            self.object_anchors[id(obj)] = name
        return obj


def _unknown_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(cast(yaml.ScalarNode, node))  # the one kind of node left


_Loader.add_multi_constructor("!", _unknown_tag)
_Loader.add_multi_constructor("tag:", _unknown_tag)


def load_tolerant(text: str | bytes) -> Any:
    """YAML with custom tags (as in hpctesttool dumps) loaded as plain data."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def _yaml_error(path: str | None, exc: yaml.YAMLError) -> FormatError:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return FormatError(path, f"not valid YAML: {problem}{where}")


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # a run-time base
    """libyaml's parser (10x faster); it cannot report anchor names, see parse_metrics_yaml."""


_FastLoader.add_multi_constructor("!", _unknown_tag)
_FastLoader.add_multi_constructor("tag:", _unknown_tag)
_ANCHOR = re.compile(r"&([^\s,\[\]{}]+)")


def _load(text: str | bytes, path: str | None) -> tuple[Any, dict[int, str]]:
    """The document and, for anchored objects, their anchor names."""
    try:
        data = yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a SafeLoader subclass
        inputs = data.get("inputs") if isinstance(data, dict) else None
        anchors = _ANCHOR.findall(text if isinstance(text, str) else text.decode("utf-8", "replace"))
        # hpcprof anchors exactly the inputs, in order: then the names are known without a slow parse.
        if isinstance(inputs, list) and len(anchors) == len(inputs) and len(set(anchors)) == len(anchors):
            return data, {id(obj): name for obj, name in zip(inputs, anchors, strict=True)}
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
            return data, loader.object_anchors
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None


def parse_metrics_yaml(text: str | bytes, path: str | None = None) -> MetricsTaxonomy:
    data, names = _load(text, path)
    if data is None:
        raise FormatError(path, "empty file, expected a metrics taxonomy (version, inputs, roots)")
    if not isinstance(data, dict) or "version" not in data:
        raise FormatError(path, "not a metrics taxonomy: expected a mapping with 'version', 'inputs' and "
                          "'roots'")
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise FormatError(path, f"the taxonomy version {version!r} is not an integer")
    if version != VERSION:
        raise UnsupportedError(path, f"metrics taxonomy version {version} is not supported (hpcsa reads "
                               f"version {VERSION})")
    raw_inputs = data.get("inputs")
    if not isinstance(raw_inputs, list):
        raise FormatError(path, "'inputs' is missing or is not a list")
    if not isinstance(data.get("roots"), list):
        raise FormatError(path, "'roots' is missing or is not a list")
    replaced: dict[int, Input] = {}
    inputs = []
    for i, item in enumerate(raw_inputs):
        if not isinstance(item, dict) or not isinstance(item.get("metric"), str) or \
                not isinstance(item.get("scope"), str):
            raise FormatError(path, f"input {i} is not a mapping with a 'metric' and a 'scope'")
        combine = item.get("combine", "sum")
        if combine not in COMBINES:
            raise FormatError(path, f"input {i} ({item['metric']}) has unknown combine {combine!r}")
        extra = {k: v for k, v in item.items() if k not in ("metric", "scope", "formula", "combine")}
        inp = Input(item["metric"], item["scope"], str(item.get("formula", "$$")), combine,
                    names.get(id(item)), extra)
        replaced[id(item)] = inp
        inputs.append(inp)
    counter = [0]
    document = {k: _replace(v, replaced, path, counter) for k, v in data.items()}
    document["inputs"] = inputs
    _check_roots(document["roots"], path, "roots")
    return MetricsTaxonomy(document, path)


def _replace(value: Any, inputs: dict[int, Input], path: str | None, counter: list[int]) -> Any:
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise FormatError(path, f"the document expands to more than {MAX_NODES} nodes (alias bomb?)")
    if id(value) in inputs:
        return inputs[id(value)]
    if isinstance(value, dict):
        return {k: _replace(v, inputs, path, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, inputs, path, counter) for v in value]
    return value


def _check_roots(items: Any, path: str | None, where: str) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise FormatError(path, f"{where}[{i}] is not a metric entry with a 'name'")
        variants = item.get("variants")
        if not isinstance(variants, dict) or not all(isinstance(v, dict) for v in variants.values()):
            raise FormatError(path, f"{where}[{i}] ({item['name']}) has no 'variants' mapping")
        children = item.get("children")
        if children is not None:
            if not isinstance(children, list):
                raise FormatError(path, f"{where}[{i}] ({item['name']}): 'children' is not a list")
            _check_roots(children, path, f"{where}[{i}].children")


def read_metrics_yaml(path: str | os.PathLike[str]) -> MetricsTaxonomy:
    """A database's ``metrics/default.yaml``, as plain data that writes back byte for byte."""
    path = os.fspath(path)
    raw = read_input(path, expected="a metrics YAML file", error=FormatError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(path, f"not UTF-8 text (byte {exc.start})") from None
    return parse_metrics_yaml(text, path)
