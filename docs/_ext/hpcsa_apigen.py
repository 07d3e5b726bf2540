"""Generate the API reference's pages: one page per package of ``hpcsa``, one ``automodule`` per module.

The package is laid out by ``[tool.setuptools] package-dir`` in pyproject.toml (``hpcsa.ingest`` is the
folder ``ingest/``), so the modules are found by walking those folders, not by importing: every ``.py`` file
of every package is documented, and a module added tomorrow appears without an edit here. The pages are
written under ``docs/api/generated/`` (not committed; so are the pages of ``docs/benchmarks/`` that include
``benchmarks/results/*.md``) when the build starts, and only rewritten when their
text changes, so an incremental build stays incremental.
"""

from __future__ import annotations

import importlib
import inspect
import os
import tomllib
from pathlib import Path

from sphinx.application import Sphinx

ROOT = Path(__file__).resolve().parents[2]


def package_dirs() -> dict[str, Path]:
    """Every package of ``hpcsa`` (dotted name -> folder), from pyproject.toml's mapping."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        tool = tomllib.load(fh)["tool"]["setuptools"]
    mapping: dict[str, str] = tool["package-dir"]
    found: dict[str, Path] = {}
    for top, folder in mapping.items():
        base = ROOT / folder
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
            if "__init__.py" not in filenames:
                dirnames[:] = []
                continue
            rel = Path(dirpath).relative_to(base)
            name = ".".join([top, *rel.parts]) if rel.parts else top
            # a folder mapped on its own (hpcsa.ingest) is reached from its mapping, not from hpcsa/
            if name.count(".") >= 1 and name.split(".")[1] in {k.split(".")[1] for k in mapping if "." in k} \
                    and top == "hpcsa":
                continue
            found[name] = Path(dirpath)
    return dict(sorted(found.items()))


def modules_of(package: str, folder: Path) -> list[str]:
    return [f"{package}.{p.stem}" for p in sorted(folder.glob("*.py")) if p.stem != "__init__"]


def reexports(package: str) -> list[str]:
    """The names a package's ``__all__`` takes from its modules, as references to where they are defined
    (documented there once: documented twice, a short reference to them would be ambiguous)."""
    module = importlib.import_module(package)
    refs = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name, None)
        home = getattr(obj, "__module__", None)
        if home is None or home == package or not (inspect.isclass(obj) or inspect.isfunction(obj)):
            if obj is not None and not inspect.ismodule(obj) and home != package:
                refs.append(f"``{name}``")
            continue
        role = "class" if inspect.isclass(obj) else "func"
        refs.append(f":{role}:`~{home}.{obj.__qualname__}`")
    return refs


def page(package: str, folder: Path, subpackages: list[str]) -> str:
    title = f"``{package}``"
    # :ignore-module-all: documents what the package defines itself; what its __all__ re-exports is
    # documented in its module and listed below
    lines = [title, "=" * len(title), "", f".. automodule:: {package}", "   :ignore-module-all:", ""]
    names = reexports(package)
    if names:
        lines += [f"Importable from ``{package}``: " + ", ".join(names) + ".", ""]
    if subpackages:
        lines += ["Subpackages: " + ", ".join(f":mod:`{s}`" for s in subpackages) + ".", ""]
    for module in modules_of(package, folder):
        heading = f"``{module}``"
        lines += [heading, "-" * len(heading), "", f".. automodule:: {module}", ""]
    return "\n".join(lines)


def generate(app: Sphinx) -> None:
    out = Path(app.srcdir) / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    packages = package_dirs()
    wanted = set()
    for package, folder in packages.items():
        subs = [p for p in packages if p.rpartition(".")[0] == package]
        text = page(package, folder, subs)
        target = out / f"{package}.rst"
        wanted.add(target.name)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for stale in out.glob("*.rst"):
        if stale.name not in wanted:
            stale.unlink()


def write_if_changed(target: Path, text: str) -> None:
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def benchmark_pages(app: Sphinx) -> None:
    """One page per recorded benchmark result (``benchmarks/results/NAME.md`` becomes ``benchmarks/NAME``),
    included as it is: the design notes link to them rather than restating their figures."""
    results = ROOT / "benchmarks" / "results"
    out = Path(app.srcdir) / "benchmarks"
    wanted = {"index.md"}
    for result in sorted(results.glob("*.md")):
        text = f"```{{include}} ../../benchmarks/results/{result.name}\n```\n"
        for image in sorted(results.glob(f"{result.stem.split('_')[0]}*.png")):
            text += f"\n```{{image}} ../../benchmarks/results/{image.name}\n:alt: {image.stem}\n```\n"
        write_if_changed(out / result.name, text)
        wanted.add(result.name)
    for stale in out.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("builder-inited", generate)
    app.connect("builder-inited", benchmark_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
