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

from hpcsa.ingest.gpubin import device_images
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
    assert len(_lm_blocks(host_only)) == 1
    assert "--device-code" in err
    both, err = _struct(tmp_path, GPU / library, "both.hpcstruct", "--device-code")
    blocks = _lm_blocks(both)
    code = CODE_OBJECT if plain is None else _nvidia_cubin(tmp_path, library)
    name = f"gpubins/{hashlib.md5(code.read_bytes()).hexdigest()}.gpubin"
    assert name in blocks
    want, _ = _struct(tmp_path, code, "gpu.hpcstruct", "--name", name)
    assert blocks[name] == _lm_blocks(want)[name]
    # The host module is the same with or without its device code.
    host = next(iter(_lm_blocks(host_only)))
    assert blocks[host] == _lm_blocks(host_only)[host]


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
    from hpcsa.ingest import fatbin

    empty.write_bytes(fatbin.build([(fatbin.KIND_PTX, 80, b"// no code\n", "zstd")]))
    assert_one_line_error(run_cli("struct", str(empty), "-o", str(tmp_path / "y.hpcstruct")), "no NVIDIA or AMD")
