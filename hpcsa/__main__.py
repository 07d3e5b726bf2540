"""``python -m hpcsa`` is the same as the ``hpcsa`` command."""

from hpcsa.cli import entry

entry()
