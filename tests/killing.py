"""Kill a command with SIGKILL at random moments and check what it leaves under its final name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ENV = dict(os.environ, HPCSA_NO_PROGRESS="1")


def run_to_completion(args: list[str]) -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "hpcsa", *args], check=True, capture_output=True, env=ENV)
    return time.monotonic() - start


def kill_at(args: list[str], delay: float) -> int:
    proc = subprocess.Popen([sys.executable, "-m", "hpcsa", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ENV, start_new_session=True)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and any worker processes it started
        proc.wait()
    return proc.returncode


def kill_repeatedly(args: list[str], final: Path, check_complete: Callable[[Path], None], runs: int = 20,
                    seed: int = 0) -> dict[str, int]:
    """Kill ``runs`` times at uniform random moments within one full run's duration.

    After each kill, whatever exists under ``final`` must pass ``check_complete`` (it must read as the
    whole, correct output); then it is removed so the next kill starts fresh. Returns how many kills
    left nothing, and how many landed after the output was complete.
    """
    duration = run_to_completion(args)
    rng = np.random.default_rng(seed)
    outcome = {"nothing": 0, "complete": 0}
    for delay in rng.uniform(0.02, duration, runs):
        code = kill_at(args, float(delay))
        if final.exists():
            check_complete(final)
            outcome["complete"] += 1
            if final.is_dir():
                import shutil

                shutil.rmtree(final)
            else:
                final.unlink()
        else:
            assert code != 0, "a run that exited normally must leave its output"
            outcome["nothing"] += 1
    return outcome


def leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))
