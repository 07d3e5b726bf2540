"""The external disassemblers ``hpcsa struct`` runs for GPU code (llvm-objdump, nvdisasm), found and run
the same way: an environment variable names the executable, else the one on ``PATH``, else the places a
vendor install or a Python wheel puts it; a tool that cannot be started raises the caller's error."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def find_tool(env: str, name: str, more: Callable[[], Iterable[str]] = tuple) -> str | None:
    """``$env`` when it is set (None if that is not executable), else ``name`` on ``PATH``, else the first
    executable of ``more()``."""
    exe = os.environ.get(env)
    if exe:
        return exe if os.access(exe, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    return next((cand for cand in more() if os.access(cand, os.X_OK)), None)


def run_tool(exe: str, args: list[str], timeout: float,
             error: Callable[[str], Exception]) -> subprocess.CompletedProcess[bytes]:
    """Run ``exe args`` with its output captured; a tool that cannot start or times out raises ``error``."""
    try:
        return subprocess.run([exe, *args], capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise error(f"cannot run {exe}: {exc}") from None


def disassembly(run: Callable[[], T], error: type[Exception], notes: list[str]) -> T | None:
    """``run()``'s parsed listing, or None with a warning in ``notes`` when the disassembler is missing or
    failed (``error``): the structure then comes from ELF and DWARF only."""
    try:
        return run()
    except error as exc:
        notes.append(f"warning: {exc}; structure from ELF and DWARF only (no loops, no call sites)")
        return None
