"""Every ``# type: ignore`` in the package names the error codes it silences and says why, after it:
``# type: ignore[code]  # the reason in words``. mypy runs in ``make test`` (``make typecheck``) with
``warn_unused_ignores``; this keeps the ones that remain explained."""

from __future__ import annotations

import io
import re
import tokenize
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

# A type: ignore comment: its codes in brackets, then what follows it on the line.
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<after>.*)")
_CODES = re.compile(r"\[\s*[a-z][a-z-]*(\s*,\s*[a-z][a-z-]*)*\s*\]")
# The reason: a comment of its own after the ignore, in words (a bare noqa comment is no reason).
_REASON = re.compile(r"\s*#\s*(?!noqa\b)\w")


def _package_folders() -> list[Path]:
    """The folders of ``[tool.setuptools] package-dir``: the sources of the installed ``hpcsa``."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        package_dir: dict[str, str] = tomllib.load(fh)["tool"]["setuptools"]["package-dir"]
    return sorted({ROOT / folder for folder in package_dir.values()})


def problems(source: str) -> Iterator[tuple[int, str]]:
    """(line, what is missing) of each ``type: ignore`` comment of ``source`` without codes or a reason."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        found = _IGNORE.search(token.string)
        if found is None:
            continue
        codes = found.group("codes")
        if codes is None or not _CODES.fullmatch(codes):
            yield token.start[0], "no error code: write type: ignore[code]"
        elif not _REASON.match(found.group("after")):
            yield token.start[0], "no reason: write type: ignore[code]  # why"


def test_the_rule():
    source = ("a = 1  # type: ignore[misc]  # a base chosen at run time\n"
              "b = 2  # type: ignore[arg-type,return-value]  # stubs: a file object\n"
              "c = 3  # type: ignore\n"
              "d = 4  # type: ignore[misc]\n"
              "e = 5  # type: ignore[]  # empty\n"
              "f = 6  # type: ignore[misc]  # noqa: E501\n"
              "g = '# type: ignore'\n")
    assert [line for line, _ in problems(source)] == [3, 4, 5, 6]


def test_every_type_ignore_has_codes_and_a_reason():
    found = []
    for folder in _package_folders():
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            for line, problem in problems(path.read_text(encoding="utf-8")):
                found.append(f"{path.relative_to(ROOT)}:{line}: {problem}")
    assert found == [], "type: ignore comments to complete:\n" + "\n".join(found)
