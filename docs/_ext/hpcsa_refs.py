"""References to other projects' objects (``int``, ``numpy.ndarray``, ``pathlib.Path``...), shown unlinked.

The build runs offline (no intersphinx inventories to fetch), so a reference to Python's or numpy's objects
cannot become a link. Such a reference is shown as its text; every other reference that does not resolve —
one into ``hpcsa`` above all — stays a warning, which ``-W`` makes an error.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import re
import sys
from typing import Any, TypeVar

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

# The names the package's annotations use for other projects' modules.
ALIASES = {"np", "npt", "nx", "numpy", "yaml", "networkx", "elftools", "capstone", "cxxfilt", "flatbuffers",
           "zstandard", "lz4", "blake3", "mpi4py", "MPI", "pd", "pandas", "hatchet", "ht", "selenium",
           "matplotlib", "plt", "docutils", "sphinx"}
TYPING = {"Any", "Callable", "Iterable", "Iterator", "Sequence", "Mapping", "MutableMapping", "Generator",
          "Optional", "Union", "Literal", "TypeVar", "Generic", "Protocol", "NamedTuple", "TypedDict", "Self",
          "ClassVar", "Final", "IO", "BinaryIO", "TextIO", "Hashable", "Collection", "Container", "NoReturn",
          "Never", "TypeAlias", "ParamSpec", "Concatenate", "Awaitable", "Coroutine", "AbstractSet",
          "MutableSequence", "MutableSet", "Sized", "Reversible", "KeysView", "ValuesView", "ItemsView",
          "SupportsIndex", "Buffer", "NDArray", "ArrayLike", "DTypeLike", "Path", "PathLike", "StrPath"}


def external(target: str) -> bool:
    """Whether ``target`` names an object of Python or another project, not one of ``hpcsa``'s."""
    head = target.lstrip("~.").split(".")[0]
    if head == "hpcsa":
        return False
    return (head in ALIASES or head in sys.stdlib_module_names or head in TYPING
            or hasattr(builtins, head) or head in {"None", "Ellipsis", "NotImplemented"})


def type_variable(target: str) -> bool:
    """Whether ``target`` (``hpcsa.core.binfmt.Aligned``) is a module's ``TypeVar``: a signature's placeholder,
    not an object of the API, so it has no entry to link to."""
    module, _, name = target.lstrip("~.").rpartition(".")
    if not module.startswith("hpcsa"):
        return False
    try:
        return isinstance(getattr(importlib.import_module(module), name, None), TypeVar)
    except ImportError:
        return False


def through_alias(node: pending_xref) -> str | None:
    """The full name of a target written with a module alias of the module it appears in: the annotation
    ``lx.Classifier`` in a module that did ``from hpcsa.aggregate import lexical as lx`` is
    ``hpcsa.aggregate.lexical.Classifier``."""
    head, dot, rest = node["reftarget"].lstrip("~.").partition(".")
    module = node.get("py:module")
    if not dot or not module:
        return None
    try:
        alias = getattr(importlib.import_module(module), head, None)
    except ImportError:
        return None
    if inspect.ismodule(alias) and alias.__name__.startswith("hpcsa."):
        return f"{alias.__name__}.{rest}"
    return None


def missing_reference(app: Sphinx, env: BuildEnvironment, node: pending_xref,
                      contnode: nodes.Element) -> nodes.Element | None:
    if node.get("refdomain") != "py":
        return None
    if external(node["reftarget"]) or type_variable(node["reftarget"]):
        return contnode
    full = through_alias(node)
    if full is not None:
        node["reftarget"] = full
        return env.domains["py"].resolve_xref(env, node["refdoc"], app.builder, node["reftype"], full, node,
                                              contnode)
    return None


FACTORY = re.compile(r"=\s*<factory>")


def signature(app: Sphinx, what: str, name: str, obj: Any, options: Any, sig: str | None,
              ret: str | None) -> tuple[str | None, str | None]:
    """A dataclass field made by ``field(default_factory=...)`` has the default ``<factory>`` in the
    signature, which is no Python expression: Sphinx would then split the signature at every comma, types
    included (``dict[str``). Written ``...``, the signature parses."""
    if sig is not None:
        sig = FACTORY.sub("=...", sig)
    return sig, ret


_documenting: list[str] = [""]  # the module whose members autodoc is choosing


def module_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what == "module":
        _documenting[0] = name


def skip_imported(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """Members of a module are what it defines, not what it imports (documented where they are defined):
    with ``ignore-module-all`` autodoc would weigh imported functions too, and fail on some of their
    signatures before dropping them."""
    if what == "module" and (inspect.isfunction(obj) or inspect.isclass(obj)):
        home = getattr(obj, "__module__", None)
        if home and home != _documenting[0]:
            return True
    return None


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("autodoc-process-docstring", module_docstring)
    app.connect("autodoc-skip-member", skip_imported)
    app.connect("missing-reference", missing_reference)
    app.connect("autodoc-process-signature", signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
