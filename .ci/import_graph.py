"""Lay out the ``hpcsa`` package as installed, so that ``lint-imports`` can see all of it.

The pipeline's packages sit beside ``hpcsa/`` in the repository and join the ``hpcsa`` namespace through
``[tool.setuptools] package-dir`` (``hpcsa.ingest`` is ``ingest/``). import-linter's graph builder
(grimp) walks the directories of a top-level package only, so this script builds, under the directory
given, an ``hpcsa/`` of symbolic links: the modules and subpackages of ``hpcsa/`` and one link per mapped
subpackage.
Run ``lint-imports --config ../../pyproject.toml`` in that directory (lint-imports puts its working
directory first on ``sys.path``). Usage: ``python .ci/import_graph.py build/import-graph``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib


def main(argv: list[str]) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(root, "build", "import-graph"))
    with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
        package_dir: dict[str, str] = tomllib.load(fh)["tool"]["setuptools"]["package-dir"]
    top = os.path.join(out, "hpcsa")
    shutil.rmtree(top, ignore_errors=True)
    os.makedirs(top)
    for name in os.listdir(os.path.join(root, package_dir["hpcsa"])):
        path = os.path.join(root, package_dir["hpcsa"], name)
        if name.endswith(".py") or os.path.isfile(os.path.join(path, "__init__.py")):
            os.symlink(path, os.path.join(top, name))
    for package, directory in sorted(package_dir.items()):
        parts = package.split(".")
        if len(parts) == 2:  # hpcsa.X; deeper subpackages come with their parent's directory
            os.symlink(os.path.join(root, directory), os.path.join(top, parts[1]))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
