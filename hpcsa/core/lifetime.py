"""What a process keeps until it ends, rather than freeing it object by object.

Freeing a binary's structure (millions of small objects) takes tens of milliseconds, python3.11d's 50-60 ms:
each object is handed back on its own. A process that ends right after its command (the ``hpcsa`` command,
whose :func:`hpcsa.cli.main.leave` ends with ``os._exit``) gives all its pages back to the system at once instead.
A library caller's process goes on, so there such objects are freed as usual.
"""

from __future__ import annotations

_kept: list[object] | None = None


def ends_with_command() -> None:
    """Declare that this process ends when its command does (the ``hpcsa`` command, before it runs)."""
    global _kept
    if _kept is None:
        _kept = []


def keeper() -> list[object] | None:
    """A list whose objects stay until the process ends, where it ends with its command; None elsewhere."""
    return _kept
