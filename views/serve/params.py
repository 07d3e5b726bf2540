"""Query parameters of ``hpcsa serve``'s API: integers and flags, with one clear error for a bad value."""

from __future__ import annotations


def integer(q: dict[str, str], name: str, default: int | None = None) -> int:
    v = q.get(name)
    if v is None or v == "":
        if default is None:
            raise ValueError(f"missing parameter {name!r}")
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"parameter {name!r} must be an integer, not {v!r}") from None


def flag(q: dict[str, str], name: str) -> bool:
    return q.get(name, "") in ("1", "true", "yes", "on")
