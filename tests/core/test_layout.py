"""The installed package is the source tree: every package folder is listed in pyproject.toml (so a wheel
carries it), every listed package exists, and the tests mirror the packages."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.conftest import ROOT


def _setuptools() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["setuptools"]


def _package_folders() -> dict[str, Path]:
    """Every package of the source tree (a folder with ``__init__.py``) by its import name."""
    found = {}
    for name, folder in _setuptools()["package-dir"].items():
        top = ROOT / folder
        for init in top.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            rel = init.parent.relative_to(top)
            found[".".join((name, *rel.parts)) if rel.parts else name] = init.parent
    return found


def test_every_package_folder_is_listed_and_every_listed_package_exists():
    listed = set(_setuptools()["packages"])
    folders = _package_folders()
    assert sorted(set(folders) - listed) == [], "package folders missing from pyproject.toml's packages"
    assert sorted(listed - set(folders)) == [], "packages listed in pyproject.toml that have no folder"


def test_no_module_outside_a_package():
    """A ``.py`` file in a folder without ``__init__.py`` would be left out of the wheel."""
    for folder in _setuptools()["package-dir"].values():
        for module in (ROOT / folder).rglob("*.py"):
            assert (module.parent / "__init__.py").exists(), f"{module.relative_to(ROOT)} is in no package"


def test_the_tests_mirror_the_packages():
    """Every test folder names a package of hpcsa (``tests/structure/gpu`` tests ``hpcsa.structure.gpu``)."""
    packages = {name.split(".", 1)[1] if "." in name else "" for name in _package_folders()}
    for init in (ROOT / "tests").rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT / "tests")
        if not rel.parts:
            continue
        assert ".".join(rel.parts) in packages, f"tests/{rel} mirrors no package of hpcsa"
