"""The command line: help with examples, ``python -m hpcsa``, the error contract."""

from __future__ import annotations

import pytest

from hpcsa.cli.main import SUBCOMMANDS
from tests.conftest import assert_one_line_error, run_cli


def test_help_lists_every_subcommand_with_an_example():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for name, (_module, _summary, example) in SUBCOMMANDS.items():
        assert name in proc.stdout
        assert example in proc.stdout


def test_each_subcommand_has_help():
    for name in SUBCOMMANDS:
        proc = run_cli(name, "--help")
        assert proc.returncode == 0, (name, proc.stderr)
        assert "example" in proc.stdout


def test_a_command_builds_its_own_parser_alone_and_help_before_it_lists_every_command():
    from hpcsa.cli.main import build_parser

    _, parsers = build_parser("prof")
    assert list(parsers) == ["prof"]
    assert list(build_parser()[1]) == list(SUBCOMMANDS)
    before = run_cli("-h", "prof")  # the top-level help, whatever follows
    assert before.returncode == 0 and all(name in before.stdout for name in SUBCOMMANDS)
    wrong = run_cli("prfo", "x")
    assert wrong.returncode == 2 and "invalid choice: 'prfo'" in wrong.stderr and "'serve'" in wrong.stderr


def test_no_command_prints_usage_and_fails():
    proc = run_cli()
    assert proc.returncode == 2
    assert "usage" in proc.stdout


def test_missing_input_is_one_line(tmp_path):
    missing = tmp_path / "nope.hpcrun"
    assert_one_line_error(run_cli("dump", str(missing)), "nope.hpcrun")


def test_unrecognised_file_is_one_line(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("hello world\n")
    assert_one_line_error(run_cli("dump", str(junk)), "junk.txt")


def test_legacy_formats_are_named(shared_data):
    legacy = shared_data / "peers" / "hpcviewer-testdata" / "prof2" / "empty-trace"
    for name in ("profile.db", "cct.db", "trace.db", "experiment.xml"):
        proc = run_cli("dump", str(legacy / name))
        assert_one_line_error(proc, name)
        assert "legacy" in proc.stderr and "v4" in proc.stderr


def test_a_command_process_settles_the_collector_and_a_caller_of_main_keeps_its_own(capsys):
    """The ``hpcsa`` process imports its subcommand with the collector off, freezes what the imports made and
    collects young objects less often; a program calling main() keeps its collector as it was."""
    import gc
    import subprocess
    import sys

    from hpcsa.cli import main as cli

    code = ("import gc, sys\n"
            "from hpcsa.cli import main as cli\n"
            "sys.argv = ['hpcsa', 'stats', '--help']\n"
            "try:\n"
            "    cli.main(settle_gc=True)\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(gc.get_threshold()[0], gc.get_freeze_count() > 1000, gc.isenabled(),\n"
            "      'hpcsa.cli.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1].split() == [str(cli.GC_YOUNG_THRESHOLD), "True", "True", "True"]
    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    try:
        cli.main(["stats", "--help"])
    except SystemExit:
        pass
    capsys.readouterr()
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before


_CTRL_C_WHILE_LOADING = """
import importlib, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever ran this test
real = importlib.import_module

def loading(name, *args):
    if name == "hpcsa.cli.prof":  # Ctrl-C while the subcommand's modules load
        os.kill(os.getpid(), signal.SIGINT)
    return real(name, *args)

importlib.import_module = loading
sys.argv = ["hpcsa", "prof", "nowhere.m"]
from hpcsa.cli.main import entry
entry()
"""


def test_ctrl_c_while_the_subcommand_loads_is_one_line() -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_LOADING], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (130, "hpcsa: interrupted\n")


_CTRL_C_WHILE_THE_COMMAND_LOADS = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever ran this test

class CtrlC:  # Ctrl-C when the command's first module of its own is imported
    def find_spec(self, name, path=None, target=None):
        if name == "hpcsa.cli.main":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["hpcsa", "--version"]
from hpcsa.__main__ import main  # the console script's entry point
main()
"""


def test_ctrl_c_while_the_command_itself_loads_is_one_line() -> None:
    """Before the command's own modules are loaded (argparse and hpcsa.cli.main, where the handler of Ctrl-C lives),
    the entry point itself gives the one line and exit status 130."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_THE_COMMAND_LOADS], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (130, "hpcsa: interrupted\n")


_LEAVE = """
import atexit, sys, threading, time
from hpcsa.cli.main import leave
atexit.register(lambda: print("atexit ran"))
sys.stdout.write("x" * 100_000 + "\\n")  # buffered: a pipe is not a terminal
if sys.argv[1] == "thread":
    def late():
        time.sleep(0.2)
        print("thread ended")
    threading.Thread(target=late).start()
class Kept:
    def __del__(self):
        print("freed")
kept = Kept()
leave(int(sys.argv[2]))
"""


@pytest.mark.parametrize(("thread", "code"), [(False, 0), (False, 3), (True, 0)])
def test_leave_runs_what_an_exit_must_and_skips_freeing(thread: bool, code: int) -> None:
    """The command's end: atexit's functions run and the buffered output reaches the pipe whole, with the
    command's exit status; the objects still alive are not freed one by one (an object's __del__ does not
    run, as the interpreter's own exit does not promise it either). A thread still running is waited for."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _LEAVE, "thread" if thread else "-", str(code)],
                          capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode == code and proc.stderr == ""
    assert lines[0] == "x" * 100_000 and "atexit ran" in lines
    assert ("thread ended" in lines) == thread
    if not thread:
        assert "freed" not in lines
