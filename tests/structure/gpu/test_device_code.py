"""``hpcsa struct`` on compressed device code: fatbin and offload-bundle files, the GPU code a host library
embeds (``--device-code``), and a measurement's ``gpubins/`` file that is a compressed bundle.

The expectation each time is the structure of the same code object given plain (the real AMD code object
fixture, or the cubin whose MD5 the fixture manifest records as nvcc's output).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from hpcsa.structure.gpu.gpubin import device_images
from tests.conftest import FIXTURES, assert_one_line_error, run_cli

GPU = FIXTURES / "gpu"
MANIFEST = json.loads((GPU / "compressed-cubins.json").read_text())
CODE_OBJECT = GPU / "callgraph-gfx90a-O2.co"


def _struct(tmp_path: Path, binary: Path, out: str, *extra: str) -> tuple[str, str]:
    proc = run_cli("struct", str(binary), "-o", str(tmp_path / out), *extra, check=True)
    return (tmp_path / out).read_text(), proc.stderr


def _nvidia_cubin(tmp_path: Path, container: str) -> Path:
    want = MANIFEST[container]["cubin_md5"]
    data = (GPU / container).read_bytes()
    [code] = [i.data for i in device_images(data, container) if hashlib.md5(i.data).hexdigest() == want]
    path = tmp_path / "plain.cubin"
    path.write_bytes(code)
    return path


@pytest.mark.parametrize("container", ["callgraph-gfx90a-v3-zstd.ccob", "callgraph-gfx90a-v2-zlib.ccob",
                                       "callgraph-sm75-zstd.fatbin", "callgraph-sm80-lz4.fatbin"])
def test_container_file_has_the_structure_of_its_code_object(tmp_path: Path, container: str) -> None:
    plain = CODE_OBJECT if container.endswith(".ccob") else _nvidia_cubin(tmp_path, container)
    want, _ = _struct(tmp_path, plain, "plain.hpcstruct", "--name", "/app/code")
    got, err = _struct(tmp_path, GPU / container, "c.hpcstruct", "--name", "/app/code")
    assert got == want
    assert "compressed" in err or "CCOB" in err


def _lm_blocks(xml: str) -> dict[str, str]:
    """<LM n=...> -> its XML with the ids taken out (ids are numbered across the whole file)."""
    out = {}
    for m in re.finditer(r'<LM i="\d+" n="([^"]*)".*?</LM>', xml, re.S):
        out[m.group(1)] = re.sub(r' i="\d+"', "", m.group(0))
    return out


@pytest.mark.parametrize(("library", "plain"), [("libcallgraph-hip.so", None),
                                                 ("libcallgraph-cuda.so", "cuda")])
def test_device_code_of_a_host_library(tmp_path: Path, library: str, plain: str | None) -> None:
    host_only, err = _struct(tmp_path, GPU / library, "host.hpcstruct")
    assert "--device-code" in err
    assert not list(tmp_path.glob("*.gpubin-gpucfg-yes.hpcstruct"))
    out = tmp_path / "with"
    out.mkdir()
    host, err = _struct(out, GPU / library, "host.hpcstruct", "--device-code")
    assert host == host_only  # the host's own structure file is the same with or without its device code
    code = CODE_OBJECT if plain is None else _nvidia_cubin(tmp_path, library)
    md5 = hashlib.md5(code.read_bytes()).hexdigest()
    want, _ = _struct(tmp_path, code, "gpu.hpcstruct", "--name", f"gpubins/{md5}.gpubin")
    assert (out / f"{md5}.gpubin-gpucfg-yes.hpcstruct").read_text() == want
    # Every code object it embeds gets one (the CUDA library also has a code-less sm_75 cubin).
    names = sorted(p.name for p in out.glob("*.gpubin-gpucfg-yes.hpcstruct"))
    images = device_images((GPU / library).read_bytes(), library)
    assert names == sorted(f"{hashlib.md5(i.data).hexdigest()}.gpubin-gpucfg-yes.hpcstruct" for i in images)


def test_prof_places_gpu_code_of_a_compressed_bundle(tmp_path: Path) -> None:
    """ingest --binary HOST-LIBRARY, struct --device-code HOST-LIBRARY, prof -S: the database equals the
    one made from the plain code object and its structure file."""
    import sqlite3

    from hpcsa.formats.db.compare import compare_databases

    src = tmp_path / "run.sqlite"
    shutil.copy(FIXTURES / "ingest" / "tiny-nsys.sqlite", src)
    con = sqlite3.connect(src)
    con.execute("UPDATE StringIds SET value = 'kernel_calls' WHERE value = '_Z5saxpyifPfS_'")
    con.commit()
    con.close()
    md5 = hashlib.md5(CODE_OBJECT.read_bytes()).hexdigest()
    dbs = []
    for label, binary, struct_args in [
            ("compressed", GPU / "libcallgraph-hip.so", ["--device-code"]),
            ("plain", CODE_OBJECT, ["--name", f"gpubins/{md5}.gpubin"])]:
        work = tmp_path / label
        work.mkdir()
        run_cli("ingest", str(src), "--binary", str(binary), "-o", str(work / "m"), check=True)
        run_cli("struct", str(binary), "-o", str(work / "b.hpcstruct"), *struct_args, check=True)
        gpu = work / f"{md5}.gpubin-gpucfg-yes.hpcstruct"
        if label == "plain":
            (work / "b.hpcstruct").rename(gpu)
        run_cli("prof", str(work / "m"), "-S", str(gpu), "-o", str(work / "db"), check=True)
        dbs.append(work / "db")
    assert compare_databases(str(dbs[0]), str(dbs[1])).same
    meta = (dbs[0] / "meta.db").read_bytes()
    assert b"callgraph.cl" in meta  # the kernel got its source file from the structure


def test_compressed_gpubin_of_a_measurement(tmp_path: Path) -> None:
    """A ``gpubins/`` file holding a CCOB bundle (the bytes of the loaded file) gets the structure of the
    code object inside it."""
    meas = tmp_path / "m"
    shutil.copytree(FIXTURES / "measurements" / "tiny.m", meas, ignore=shutil.ignore_patterns("structs"))
    ccob = (GPU / "callgraph-gfx90a-v3-zstd.ccob").read_bytes()
    digest = hashlib.md5(ccob).hexdigest()
    (meas / "gpubins").mkdir(exist_ok=True)
    (meas / "gpubins" / f"{digest}.gpubin").write_bytes(ccob)
    proc = run_cli("struct", str(meas))
    assert proc.returncode == 0, proc.stderr
    got = (meas / "structs" / f"{digest}.gpubin-gpucfg-yes.hpcstruct").read_text()
    want, _ = _struct(tmp_path, CODE_OBJECT, "want.hpcstruct", "--name", f"gpubins/{digest}.gpubin")
    assert got == want


def test_damaged_container_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ccob"
    bad.write_bytes((GPU / "callgraph-gfx90a-v3-zstd.ccob").read_bytes()[:-40])
    assert_one_line_error(run_cli("struct", str(bad), "-o", str(tmp_path / "x.hpcstruct")), "bad.ccob")
    assert not (tmp_path / "x.hpcstruct").exists()
    empty = tmp_path / "empty.fatbin"
    from hpcsa.structure.gpu import fatbin

    empty.write_bytes(fatbin.build([(fatbin.KIND_PTX, 80, b"// no code\n", "zstd")]))
    assert_one_line_error(run_cli("struct", str(empty), "-o", str(tmp_path / "y.hpcstruct")), "only PTX")
    bundle = tmp_path / "host-only.bundle"
    from hpcsa.structure.gpu import offload_bundle

    bundle.write_bytes(offload_bundle.build([("host-x86_64-unknown-linux-gnu", b"")]))
    assert_one_line_error(run_cli("struct", str(bundle), "-o", str(tmp_path / "z.hpcstruct")), "no NVIDIA or AMD")
