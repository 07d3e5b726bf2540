"""How hpcsa struct finds and runs an external disassembler (the rule llvm-objdump and nvdisasm share)."""

from __future__ import annotations

import os
import sys

import pytest

from hpcsa.structure.gpu.tools import disassembly, find_tool, run_tool


class ToolFailed(Exception):
    pass


def _executable(path, body: str = "#!/bin/sh\necho ok\n"):
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


def test_the_environment_variable_wins_and_is_not_second_guessed(tmp_path, monkeypatch):
    mine = _executable(tmp_path / "mytool")
    monkeypatch.setenv("HPCSA_TEST_TOOL", mine)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_tool("HPCSA_TEST_TOOL", "sh", lambda: [mine]) == mine
    monkeypatch.setenv("HPCSA_TEST_TOOL", str(tmp_path / "missing"))  # named but absent: no fallback
    assert find_tool("HPCSA_TEST_TOOL", "mytool", lambda: [mine]) is None


def test_path_then_the_first_executable_fallback(tmp_path, monkeypatch):
    monkeypatch.delenv("HPCSA_TEST_TOOL", raising=False)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = _executable(bindir / "mytool")
    monkeypatch.setenv("PATH", str(bindir))
    assert find_tool("HPCSA_TEST_TOOL", "mytool") == on_path
    plain = tmp_path / "plain"
    plain.write_text("not executable")
    later = _executable(tmp_path / "later")
    assert find_tool("HPCSA_TEST_TOOL", "othertool", lambda: [str(plain), str(tmp_path / "gone"), later]) == later
    assert find_tool("HPCSA_TEST_TOOL", "othertool") is None


def test_run_tool_captures_output_and_turns_a_failed_start_into_the_callers_error(tmp_path):
    proc = run_tool(sys.executable, ["-c", "print('listing')"], 60, ToolFailed)
    assert proc.returncode == 0 and proc.stdout.strip() == b"listing"
    missing = os.path.join(tmp_path, "no-such-tool")
    with pytest.raises(ToolFailed, match=f"^cannot run {missing}: "):
        run_tool(missing, [], 60, ToolFailed)
    with pytest.raises(ToolFailed, match="timed out"):
        run_tool(sys.executable, ["-c", "import time; time.sleep(5)"], 0.2, ToolFailed)


def test_a_failed_disassembler_degrades_to_a_warning_and_other_errors_pass(tmp_path):
    notes: list[str] = []
    assert disassembly(lambda: {"listing": 1}, ToolFailed, notes) == {"listing": 1} and notes == []

    def missing() -> None:
        raise ToolFailed("mytool not found")
    assert disassembly(missing, ToolFailed, notes) is None
    assert notes == ["warning: mytool not found; structure from ELF and DWARF only (no loops, no call sites)"]

    def broken() -> None:
        raise ValueError("a parser bug is not a missing tool")
    with pytest.raises(ValueError):
        disassembly(broken, ToolFailed, notes)
