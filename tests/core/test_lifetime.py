"""hpcsa.core.lifetime: only a process that ends with its command keeps objects until it ends."""

from __future__ import annotations

import subprocess
import sys

from hpcsa.core import lifetime


def test_a_library_caller_keeps_nothing():
    # the test process goes on after each command: nothing is declared, so callers free as usual
    assert lifetime.keeper() is None


def test_the_hpcsa_command_declares_that_it_ends_with_its_command():
    script = ("import atexit, sys\n"
              "from hpcsa.core import lifetime\n"
              "from hpcsa.cli.main import entry\n"
              "before = lifetime.keeper()\n"
              "atexit.register(lambda: print(before, lifetime.keeper(), lifetime.keeper() is lifetime.keeper()))\n"
              "sys.argv = ['hpcsa', '--version']\n"
              "entry()\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "None [] True"
