"""Names that are not UTF-8 are printed escaped by every command, to a pipe and to a file (issue 13).

Each command runs through ``hpcsa.cli.main.main`` with stdout and stderr replaced by strict UTF-8 text streams
over a real pipe or a real file, as a shell redirection gives them; a non-UTF-8 byte must come out as
``\\xNN`` and the command must end with status 0 or 2, never an exception. The fuzz part runs ``dump`` and
``view`` on mutated real files the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

from hpcsa.cli.main import main
from hpcsa.core.textout import escape, json_safe
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from tests.conftest import FIXTURES
from tests.fuzzing import EXAMPLES, mutate

MODULE = b"/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"


def run_to(kind: str, args: list[str], tmp: Path) -> tuple[int, bytes, bytes]:
    """Run the CLI with stdout/stderr going to a pipe or a file; return (status, stdout, stderr bytes)."""
    old = sys.stdout, sys.stderr
    err_path = tmp / "stderr.txt"
    err = open(err_path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    chunks: list[bytes] = []
    if kind == "pipe":
        r, w = os.pipe()
        out = open(w, "w", encoding="utf-8")  # noqa: SIM115
        reader = threading.Thread(target=lambda: chunks.append(os.fdopen(r, "rb").read()))
        reader.start()
    else:
        out = open(tmp / "stdout.txt", "w", encoding="utf-8")  # noqa: SIM115
    sys.stdout, sys.stderr = out, err
    try:
        status = main(args)
    finally:
        sys.stdout, sys.stderr = old
        out.close()
        err.close()
    if kind == "pipe":
        reader.join()
        data = b"".join(chunks)
    else:
        data = (tmp / "stdout.txt").read_bytes()
    return status, data, err_path.read_bytes()


def test_escape_writes_the_original_byte():
    assert escape("a\udcffb\udc80") == "a\\xffb\\x80"
    assert escape("plain ü") == "plain ü"
    text = json_safe(json.dumps({"n": "lib\udcff ü"}, ensure_ascii=False))
    assert json.loads(text) == {"n": "lib\\xff ü"}  # valid JSON that reads as hpcsa prints the byte


def _non_utf8_measurement(hpctoolkit_data: Path, tmp: Path) -> Path:
    """A copy of a real measurement whose libgomp path has a byte that is not UTF-8 (same length)."""
    src = hpctoolkit_data / "meas" / "loops-cputime-t.m"
    meas = tmp / "bad.m"
    shutil.copytree(src, meas, ignore=shutil.ignore_patterns("structs", "*.license"))
    changed = 0
    for f in meas.glob("*.hpcrun"):
        raw = f.read_bytes()
        if MODULE in raw:
            f.write_bytes(raw.replace(MODULE, MODULE.replace(b"libgomp", b"libg\xffmp")))
            changed += 1
    assert changed, "the seed measurement no longer names libgomp"
    return meas


@pytest.mark.parametrize("kind", ["pipe", "file"])
def test_commands_print_non_utf8_names_escaped(hpctoolkit_data, tmp_path, kind):
    meas = _non_utf8_measurement(hpctoolkit_data, tmp_path)
    hpcrun = next(meas.glob("*.hpcrun"))
    db = tmp_path / "bad.d"
    status, _, _ = run_to(kind, ["prof", "-j", "1", "-o", str(db), str(meas)], tmp_path)
    assert status == 0
    want = b"libg\\xffmp.so"
    for args in (["dump", str(hpcrun)], ["dump", str(db / "meta.db")], ["dump", str(db)],
                 ["view", str(db), "--view", "flat", "--depth", "2"], ["view", str(db), "--depth", "20"],
                 ["view", str(db), "--view", "callers"], ["stats", str(db)], ["imbalance", str(db)]):
        status, out, err = run_to(kind, args, tmp_path)
        assert status == 0, (args, err)
        out.decode("utf-8")  # strictly UTF-8: no surrogate slipped through
        if args[0] in ("dump", "view") and "callers" not in args:
            assert want in out, args
    status, out, _ = run_to(kind, ["view", str(db), "--format", "json", "--depth", "20"], tmp_path)
    assert status == 0 and any("libg\\xffmp.so" in t for t in _strings(json.loads(out)))
    status, _, err = run_to(kind, ["export-trace", str(db), "--output", str(tmp_path / "t.json")], tmp_path)
    assert status == 0, err
    json.loads((tmp_path / "t.json").read_bytes())  # strictly UTF-8 and valid JSON


def test_struct_writes_a_non_utf8_symbol_name_escaped(tmp_path):
    """A symbol name with a byte that is not UTF-8: the structure file is written, valid, and readable."""
    lib = tmp_path / "libodd.so"
    raw = (FIXTURES / "structure" / "sample.so").read_bytes()
    assert b"dispatch\x00" in raw
    lib.write_bytes(raw.replace(b"dispatch\x00", b"dis\xffatch\x00"))
    out = tmp_path / "libodd.hpcstruct"
    status, _, err = run_to("file", ["struct", str(lib), "-o", str(out)], tmp_path)
    assert status == 0, err
    names = {n for m in read_hpcstruct(out).modules for n in m.strings}
    # Either escaped or replaced (the ELF reader decodes symbol names with U+FFFD): never lost, never a crash.
    assert any(n.startswith(("dis\\xffatch", "dis\ufffdatch")) for n in names), sorted(names)[:20]


def _strings(doc: object) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [t for k, v in doc.items() for t in _strings(k) + _strings(v)]
    if isinstance(doc, list):
        return [t for v in doc for t in _strings(v)]
    return []


def _fuzz_sources(hpctoolkit_data: Path) -> list[tuple[str, Path]]:
    dbase = hpctoolkit_data / "dbase"
    out = [("hpcrun", p) for p in sorted((hpctoolkit_data / "meas").glob("*.m/*.hpcrun"))[:6]]
    out += [(m, dbase / d / m) for d in ("small.d", "loops-cputime-t.d", "loops-hip-amd-t.nostruct.d")
            for m in ("meta.db", "trace.db")]
    return [(k, p) for k, p in out if p.exists()]


@pytest.mark.parametrize("kind", ["pipe", "file"])
def test_fuzz_output_paths(hpctoolkit_data, tmp_path, kind):
    """dump, view and compare (against the unmutated database) on mutated real files: status 0 or 2, strictly UTF-8 output, never an exception."""
    sources = _fuzz_sources(hpctoolkit_data)
    assert sources
    outcomes = {0: 0, 2: 0}
    for i in range(max(EXAMPLES // 3, 8)):
        what, src = sources[i % len(sources)]
        case = tmp_path / f"case{i}"
        if what == "hpcrun":
            case.mkdir()
            target = case / src.name
            target.write_bytes(mutate(src.read_bytes(), seed=i))
            commands = [["dump", str(target)]]
        else:
            shutil.copytree(src.parent, case)
            (case / what).write_bytes(mutate(src.read_bytes(), seed=i))
            commands = [["dump", str(case / what)], ["view", str(case), "--depth", "3"],
                        ["compare", str(src.parent), str(case), "--depth", "3"]]
        for args in commands:
            try:
                status, out, _ = run_to(kind, args, tmp_path)
            except Exception as exc:  # noqa: BLE001 - this is the point of the fuzzer
                raise AssertionError(f"{args}: {type(exc).__name__}: {exc}\n  reproduce: mutate({src}, "
                                     f"seed={i})") from exc
            assert status in (0, 2), (args, status)
            out.decode("utf-8")
            outcomes[status] += 1
    assert outcomes[0] and outcomes[2]
