"""The quick starts of the README and the docs, run as they are written, so that they cannot rot.

A runnable block is a ``console`` fence right after a comment naming its scenario::

    <!-- quickstart: hpcrun -->
    ```console
    $ hpcsa prof app.m -o app.d
    hpcsa prof: 1024 profiles, 893 contexts, ... -> app.d in ... s
    ```

Lines starting with ``$ `` are commands (run by ``bash`` in the scenario's folder, with this checkout's
``hpcsa`` first on ``PATH``); the lines after a command are what it prints (standard output and standard
error). Every such line must be printed by the command: ``...`` within a line stands for any text, and a
line that is only ``...`` for lines left out, so outputs can be trimmed and what changes from run to run
(tokens, absolute paths) left out. A number stands for any number: the figures shown are those of a real
run, but they depend on the machine (its system libraries are structured too) and on the version, while the
test is about the commands and what they print. Order is not checked (the two streams interleave
differently in a pipe).
Every command must succeed, except one whose expected output says otherwise (none does yet).

The blocks of one scenario in one file run in order in one temporary folder, which the scenario's set-up
fills with the data the page names (``app.m``, ``report.sqlite``, ...), taken from ``../shared/data``
(``HPCSA_SHARED_DATA``): without it the tests are skipped, as the other conformance tests are.
``hpcsa serve`` is started, its first lines read, and stopped with Ctrl-C.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.interrupting import sigint_as_in_a_terminal

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"^<!--\s*quickstart:\s*([\w-]+)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,})console\s*$")


@dataclass
class Command:
    line: int
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: Path
    line: int
    scenario: str
    commands: list[Command]


def blocks_of(page: Path) -> list[Block]:
    """The runnable blocks of a page, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    other_fence: str | None = None  # inside a fence that is not a runnable block (an example of one, say)
    while i < len(lines):
        opening = re.match(r"^(`{3,}|~{3,})", lines[i])
        if other_fence is not None:
            if lines[i].rstrip() == other_fence:
                other_fence = None
            i += 1
            continue
        if opening:
            other_fence = opening.group(1)
            i += 1
            continue
        marker = MARKER.match(lines[i])
        if not marker:
            i += 1
            continue
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise AssertionError(f"{page.name}:{i + 1}: a quickstart marker must be followed by a ```console fence")
        commands: list[Command] = []
        j = i + 2
        while j < len(lines) and lines[j].rstrip() != fence.group(1):
            text = lines[j]
            if text.startswith("$ "):
                commands.append(Command(j + 1, text[2:]))
                while commands[-1].text.endswith("\\") and j + 1 < len(lines):  # a continued command
                    j += 1
                    commands[-1].text = commands[-1].text[:-1] + " " + lines[j].strip()
            elif commands:
                commands[-1].expected.append(text.rstrip())
            j += 1
        found.append(Block(page, i + 1, marker.group(1), commands))
        i = j + 1
    return found


NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]\d+)?")


def literal(text: str) -> str:
    """``text`` as a pattern in which every number stands for any number."""
    parts = NUMBER.split(text)
    return NUMBER.pattern.join(re.escape(part) for part in parts)


def pattern(expected: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "..." else literal(part)
                              for part in re.split(r"(\.\.\.)", expected)) + r"\s*")


def check_output(command: Command, out: str, where: str) -> None:
    printed = out.splitlines()
    for want in command.expected:
        if want.strip() in ("", "..."):
            continue
        if not any(pattern(want).fullmatch(line) for line in printed):
            raise AssertionError(
                f"{where}: `{command.text}` no longer prints\n    {want}\n"
                f"Run it and paste what it prints (trim with ...). It printed:\n{out}")


# The data each scenario's page names, from the shared reference data (see the module's docstring).
def setup_hpcrun(data: Path, folder: Path) -> None:
    shutil.copytree(data / "hpctoolkit-extra" / "meas-cxx1024", folder / "app.m")
    shutil.copytree(data / "hpctoolkit-extra" / "src", folder / "src")


def setup_moved(data: Path, folder: Path) -> None:
    shutil.copytree(data / "hpctoolkit-extra" / "meas-cxx1024", folder / "run.m",
                    ignore=shutil.ignore_patterns("structs"))  # as hpcrun leaves it: no structure files yet
    shutil.copytree(data / "hpctoolkit-extra" / "bin", folder / "bin")
    shutil.copytree(data / "hpctoolkit-extra" / "src", folder / "src")


def setup_vendor(data: Path, folder: Path) -> None:
    records = data / "gpu-records"
    shutil.copy(records / "nvidia" / "nsys-2024.5-cloverleaf-4xa100" / "perlmutter-cloverleaf-cuda.sqlite",
                folder / "report.sqlite")
    shutil.copy(records / "amd" / "rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm" / "21_results.db",
                folder / "results.db")
    shutil.copy(next((records / "nvidia" / "kineto-cupti-a100-simple-add").glob("*.json.gz")),
                folder / "trace.json.gz")


SCENARIOS = {"hpcrun": setup_hpcrun, "moved": setup_moved, "vendor": setup_vendor}


def writable(folder: Path) -> None:
    """The shared data is read-only; the copies are the user's own files."""
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def cases() -> list[tuple[Path, str]]:
    seen: dict[tuple[Path, str], None] = {}
    for page in PAGES:
        for block in blocks_of(page):
            seen[(block.page, block.scenario)] = None
    return list(seen)


def test_pages_have_runnable_quick_starts() -> None:
    """The README and the docs' quick start keep their runnable blocks, each for a known scenario."""
    found = cases()
    assert (ROOT / "README.md", "hpcrun") in found
    quickstart = ROOT / "docs" / "quickstart.md"
    assert {s for p, s in found if p == quickstart} == {"hpcrun", "vendor", "moved"}
    for page, scenario in found:
        assert scenario in SCENARIOS, f"{page.name}: unknown quickstart scenario {scenario!r}"
    for page in PAGES:
        for block in blocks_of(page):
            assert block.commands, f"{page.name}:{block.line}: a quickstart block without a command"


def serve(command: Command, folder: Path, env: dict[str, str], where: str) -> None:
    """Start the server, read what it prints before it waits, stop it with Ctrl-C (exit status 0). The port
    the page names may be taken on this machine: the server takes a free one, which is then read as the
    page's."""
    documented = re.search(r"--port[ =](\d+)", command.text)
    text = re.sub(r"--port[ =]\d+", "--port 0", command.text) if documented else command.text
    proc = subprocess.Popen(["bash", "-c", f"exec {text}"], cwd=folder, env=env, text=True,
                            preexec_fn=sigint_as_in_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if "Ctrl-C" in line:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    out = "\n".join(lines)
    taken = re.search(r"127\.0\.0\.1:(\d+)", out)
    if documented and taken:
        out = out.replace(taken.group(1), documented.group(1))
    check_output(command, out, where)
    assert proc.returncode == 0, f"{where}: `{command.text}` ended with {proc.returncode} on Ctrl-C:\n{rest}"


@pytest.mark.parametrize(("page", "scenario"), cases(), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_quickstart(page: Path, scenario: str, shared_data: Path, tmp_path: Path) -> None:
    SCENARIOS[scenario](shared_data, tmp_path)
    writable(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               HPCSA_NO_PROGRESS="1", COLUMNS="200", LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")
    for block in blocks_of(page):
        if block.scenario != scenario:
            continue
        for command in block.commands:
            where = f"{page.relative_to(ROOT)}:{command.line}"
            if command.text.startswith("hpcsa serve"):
                serve(command, tmp_path, env, where)
                continue
            proc = subprocess.run(["bash", "-c", command.text], cwd=tmp_path, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            assert proc.returncode == 0, f"{where}: `{command.text}` failed ({proc.returncode}):\n{proc.stdout}"
            check_output(command, proc.stdout, where)
