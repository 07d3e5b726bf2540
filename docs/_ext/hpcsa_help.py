"""The ``hpcsa-help`` directive: the text ``hpcsa CMD --help`` prints, run when the docs are built.

The guide's option tables would drift from the code; the command's own help cannot. ``COLUMNS`` is fixed so
that the text wraps the same on every machine.
"""

from __future__ import annotations

import os
import subprocess
import sys

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class HpcsaHelp(SphinxDirective):
    """``.. hpcsa-help:: view`` (MyST: ```` ```{hpcsa-help} view ````): a literal block of the help text."""

    required_arguments = 0
    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        args = [*self.arguments, "--help"]
        env = dict(os.environ, COLUMNS="100", HPCSA_NO_PROGRESS="1")
        proc = subprocess.run([sys.executable, "-m", "hpcsa", *args], capture_output=True, text=True, env=env,
                              timeout=60)
        if proc.returncode != 0:
            raise self.error(f"hpcsa {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        text = f"$ hpcsa {' '.join(args)}\n{proc.stdout.rstrip()}"
        block = nodes.literal_block(text, text, language="text")
        return [block]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("hpcsa-help", HpcsaHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
