"""Errors that name the next step: a measurement directory, an old-format database or any other directory given
to a command that reads a database; a misspelt subcommand, option or choice gets a "did you mean"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, assert_one_line_error, run_cli

MEASUREMENT = FIXTURES / "measurements" / "tiny.m"
DATABASE = FIXTURES / "views" / "threads.d"


def _argv(command: str, path: Path, tmp_path: Path) -> list[str]:
    """The command reading ``path`` as its database (with the other arguments it requires)."""
    if command == "scaling":
        return [command, str(path), str(DATABASE)]
    if command in ("export-trace", "aggregate-threads"):
        return [command, str(path), "-o", str(tmp_path / "out")]
    return [command, str(path)] + (["--port", "0"] if command == "serve" else [])


DATABASE_COMMANDS = ("view", "serve", "blame", "stats", "imbalance", "export-trace", "aggregate-threads", "scaling")


@pytest.mark.parametrize("command", DATABASE_COMMANDS)
def test_a_measurement_directory_says_run_prof_first(command: str, tmp_path: Path) -> None:
    proc = run_cli(*_argv(command, MEASUREMENT, tmp_path))
    assert_one_line_error(proc, str(MEASUREMENT))
    assert "is a measurement directory" in proc.stderr and f"run `hpcsa prof {MEASUREMENT} -o DB`" in proc.stderr
    assert "meta.db is missing" not in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ("view", "serve", "stats", "blame"))
def test_an_old_format_database_says_what_to_do(command: str, tmp_path: Path) -> None:
    old = tmp_path / "hpctoolkit-app-database"
    old.mkdir()
    (old / "experiment.xml").write_text('<?xml version="1.0"?>\n<HPCToolkitExperiment version="2.2">\n')
    (old / "1.app-000000-000-a8c00270-160443-0.metric-db").write_bytes(b"HPCPROF-metricdb__")
    proc = run_cli(*_argv(command, old, tmp_path))
    assert_one_line_error(proc, str(old))
    assert "old format (experiment.xml, hpcprof before 2022)" in proc.stderr
    assert "re-run hpcprof 2022.10 or newer on its measurements, or `hpcsa prof MEASDIR`" in proc.stderr


def test_real_old_format_databases(shared_data: Path) -> None:
    """hatchet's and hpcviewer's test databases of HPCToolkit's earlier formats (experiment.xml with
    *.metric-db, and 2020's experiment.xml with profile.db)."""
    peers = shared_data / "peers"
    for old in (peers / "hatchet-testdata" / "hpctoolkit-cpi-database",
                peers / "hpcviewer-testdata" / "prof2" / "empty-trace"):
        if not (old / "experiment.xml").is_file():
            pytest.skip(f"{old} is absent")
        proc = run_cli("view", str(old))
        assert_one_line_error(proc, str(old))
        assert "old format (experiment.xml" in proc.stderr and "meta.db is missing" not in proc.stderr


def test_any_other_directory_says_what_a_database_holds(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    proc = run_cli("view", str(tmp_path))
    assert_one_line_error(proc, str(tmp_path))
    assert "not an HPCToolkit database (no meta.db)" in proc.stderr and "meta.db and profile.db" in proc.stderr


def _usage_error(*argv: str) -> str:
    proc = run_cli(*argv)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("usage: ")
    return proc.stderr.splitlines()[-1]


def test_a_misspelt_subcommand_gets_a_suggestion() -> None:
    assert "invalid choice: 'porf'; did you mean 'prof'? (choose from " in _usage_error("porf", "x.m")
    assert "did you mean 'view'?" in _usage_error("veiw", str(DATABASE))
    assert "did you mean 'aggregate-threads'?" in _usage_error("agregate-threads")
    assert "did you mean" not in _usage_error("xyzzy")


def test_a_misspelt_option_or_choice_gets_a_suggestion() -> None:
    line = _usage_error("view", str(DATABASE), "--detph", "3")
    assert line.startswith("hpcsa view: error: unrecognized arguments: --detph") and "did you mean '--depth'?" in line
    assert "did you mean '--depth'?" in _usage_error("view", str(DATABASE), "--depht=3")
    assert "did you mean '--binaries'?" in _usage_error("prof", str(MEASUREMENT), "--binaires", "bin")
    assert "did you mean '--version'?" in _usage_error("--verison")
    assert "invalid choice: 'calers'; did you mean 'callers'?" in _usage_error("view", str(DATABASE), "--view",
                                                                                "calers")
    assert _usage_error("view", str(DATABASE), "extra") == "hpcsa view: error: unrecognized arguments: extra"
