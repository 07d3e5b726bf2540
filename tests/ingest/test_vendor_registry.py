"""The vendor-reader registry: a reader module dropped into the package is recognised and read by
``hpcsa ingest`` with no dispatcher edited; recognition order is by rank, SQLite kinds stay apart."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpcsa.cli import main as cli
from hpcsa.ingest import vendors
from hpcsa.ingest.measdir import write_measurement
from hpcsa.ingest.sources import classify, read_sources
from hpcsa.ingest.vendors import Reader, VendorReader, readers, register
from tests.conftest import FIXTURES
from tests.ingest.measdir_check import load, total

MODULE = "toyvendor_registry_test"
#: A complete vendor module, written as a user would write one: recognise by content, read to the model.
TOY_MODULE = textwrap.dedent('''
    """TOYTRACE text: a header line, then "kernel <name> <start ns> <end ns>" per line."""

    from hpcsa.ingest import model as M
    from hpcsa.ingest.vendors import Probe, VendorReader, register


    def recognise(probe: Probe) -> bool:
        return probe.head.startswith(b"TOYTRACE 1\\n")


    def read(paths: list[str]) -> M.GpuTrace:
        tr = M.GpuTrace(source="toy 1", path=paths[0], clock="ns", api_domain="TOY")
        with open(paths[0]) as fh:
            rows = [ln.split() for ln in fh.read().splitlines()[1:] if ln.strip()]
        n = len(rows)
        tr.apis = M.table(M.API_DTYPE, n, process=7, thread=7, name=tr.intern("toyLaunch"),
                          start=[int(r[2]) - 10 for r in rows], end=[int(r[2]) - 5 for r in rows],
                          corr=list(range(1, n + 1)))
        tr.ops = M.table(M.OP_DTYPE, n, kind=M.KERNEL, process=7, thread=7, device=0, context=0, stream=1,
                         corr=list(range(1, n + 1)), start=[int(r[2]) for r in rows],
                         end=[int(r[3]) for r in rows], name=tr.intern_many([r[1] for r in rows]))
        tr.processes[7] = M.ProcessInfo(7)
        return tr


    register(VendorReader(name="toy", label="toy text", what="toy trace", rank=95, recognise=recognise,
                          read=read))
''')


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy module placed in a directory that is part of the vendors package's path."""
    pkg = tmp_path / "more-vendors"
    pkg.mkdir()
    (pkg / f"{MODULE}.py").write_text(TOY_MODULE)
    monkeypatch.setattr(vendors, "__path__", [*vendors.__path__, str(pkg)])
    yield tmp_path
    vendors.unregister("toy")
    sys.modules.pop(f"{vendors.__name__}.{MODULE}", None)


def _toy_file(d: Path, body: str = "kernel axpy 1000 3000\nkernel dot 4000 4500\n") -> Path:
    f = d / "run.toy"
    f.write_text("TOYTRACE 1\n" + body)
    return f


def test_new_module_is_dispatched_without_editing_a_dispatcher(toy_package: Path) -> None:
    src = _toy_file(toy_package)
    assert classify(str(src)) == "toy"
    (trace,) = read_sources([str(src)])
    assert trace.source == "toy 1" and len(trace.ops) == 2
    out = toy_package / "m"
    out.mkdir()
    write_measurement([trace], str(out))
    meas = load(str(out))
    assert total(meas, "GKER:COUNT") == 2
    assert total(meas, "GKER (sec)") == pytest.approx((2000 + 500) * 1e-9)


def test_new_module_through_the_cli(toy_package: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _toy_file(toy_package)
    assert cli.main(["ingest", str(src), "-o", str(toy_package / "cli.m")]) == 0
    assert total(load(str(toy_package / "cli.m")), "GKER:COUNT") == 2
    assert len(list((toy_package / "cli.m").glob("*.hpcrun"))) == 2  # the CPU thread and the GPU stream
    bad = toy_package / "bad.toy"
    bad.write_text("TOYTRACE 1\nkernel axpy 1000\n")
    capsys.readouterr()
    assert cli.main(["ingest", str(bad), "-o", str(toy_package / "bad.m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hpcsa: error: {bad}: toy trace is corrupt or malformed (IndexError: list index out of range)"]
    assert not (toy_package / "bad.m").exists()


def test_accepted_formats_come_from_the_registry(toy_package: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = toy_package / "notes.txt"
    other.write_text("nothing a GPU tool wrote\n")
    assert cli.main(["ingest", str(other), "-o", str(toy_package / "x.m")]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"hpcsa: error: {other}: not a GPU-record source hpcsa recognises (")
    assert line.endswith(", rocprofv2 text, toy text)")  # rank 95 after rocprofv2's 90


def test_lower_rank_wins_on_ambiguous_content(toy_package: Path) -> None:
    # A reader registered later with a higher rank never takes a file from an earlier, stricter one.
    greedy = VendorReader(name="greedy", label="anything", what="anything", rank=99, recognise=lambda p: True,
                          read=lambda paths: pytest.fail("must not be read"))
    register(greedy)
    try:
        assert classify(str(FIXTURES / "ingest" / "tiny-rocprofv2.txt")) == "rocprofv2"
        assert classify(str(_toy_file(toy_package))) == "toy"
        assert classify(str(FIXTURES / "ingest" / "tiny-nsys.sqlite")) == "nsys"  # SQLite: greedy is not
    finally:
        vendors.unregister("greedy")


def test_sqlite_kinds_keep_their_precedence() -> None:
    assert classify(str(FIXTURES / "ingest" / "tiny-nsys.sqlite")) == "nsys"
    assert classify(str(FIXTURES / "demo" / "particles.nvprof")) == "nvprof"
    sqlite_kinds = [r.name for r in readers() if r.sqlite]
    assert sqlite_kinds == ["nsys", "nvprof", "rocpd", "rocprof-v1"]  # nsys exports also have CUPTI tables


def test_every_registered_reader_implements_the_protocol() -> None:
    found = readers()
    assert {"nsys", "nvprof", "rocpd", "rocprof-v1", "cupti-pcsampling-util", "kineto", "rocprofv3-csv",
            "unitrace", "rocprofv2"} <= {r.name for r in found}
    assert all(isinstance(r, Reader) for r in found)
    ranks = [(r.rank, r.name) for r in found]
    assert ranks == sorted(ranks) and len({r.rank for r in found}) == len(found)


def test_register_refuses_a_second_reader_of_the_same_name_and_non_readers() -> None:
    nsys = next(r for r in readers() if r.name == "nsys")
    assert register(nsys) is nsys  # importing a module twice is harmless
    with pytest.raises(ValueError, match="two GPU-record readers are named 'nsys'"):
        register(VendorReader(name="nsys", label="x", what="x", rank=1, recognise=lambda p: False,
                              read=lambda paths: pytest.fail("unused")))
    with pytest.raises(TypeError):
        register(object())  # type: ignore[arg-type]
