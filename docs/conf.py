"""Sphinx configuration of hpcsa's documentation (``make docs``; ``make test`` builds it with ``-W -n``)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "hpcsa"
author = "the hpcsa developers"
copyright = "the hpcsa developers, BSD-3-Clause"  # noqa: A001 (Sphinx's name)

try:
    from hpcsa import __version__ as release
except ImportError:  # the docs of a checkout without the package installed still build their prose
    release = "unknown"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "hpcsa_apigen",    # docs/_ext: the API reference's pages, one per package
    "hpcsa_help",      # docs/_ext: ``hpcsa CMD --help`` as the command's option reference
    "hpcsa_refs",      # docs/_ext: references to other projects' objects, shown unlinked
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "README.md"]
templates_path: list[str] = []

# MyST: ``{directive}`` fences, ``$``-free text (metric formulas use ``$n``), heading anchors for links
# such as [](troubleshooting.md#binaries-moved).
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# The API reference (docs/api): every module of the package, its documented members, signatures with their
# types, in source order.
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
add_module_names = False
python_use_unqualified_type_names = True

html_theme = "furo"
html_title = f"hpcsa {release}"
html_static_path: list[str] = []
html_show_sourcelink = False

# `make docs` builds with -W -n --keep-going: every warning is an error, every cross-reference must resolve.
nitpicky = True

