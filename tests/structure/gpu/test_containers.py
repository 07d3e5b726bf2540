"""Compressed device code: NVIDIA fatbin entries (zstd, LZ4 block) and clang offload bundles (plain, CCOB
v1-v3 with zstd or zlib), read from fatbin/bundle files and from host binaries, for ``--binary``.

Expectations come from the toolchains, not from hpcsa: nvcc's own cubin for the same source and options
(its MD5 recorded by fixtures/gpu/make_compressed.py, or rebuilt here when nvcc is installed),
``cuobjdump -xelf``, ``clang-offload-bundler``, the real AMD code object fixture, and hashlib/struct
for the CCOB header fields.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from hpcsa.core.errors import FormatError
from hpcsa.structure.gpu import fatbin, offload_bundle
from hpcsa.structure.gpu.gpubin import device_images
from tests.conftest import FIXTURES, assert_one_line_error, run_cli
from tests.fuzzing import EXAMPLES, fuzz_reader
from tests.ingest.measdir_check import load
from tests.ingest.test_ingest_binary import records_naming

GPU = FIXTURES / "gpu"
MANIFEST = json.loads((GPU / "compressed-cubins.json").read_text())
CODE_OBJECT = (GPU / "callgraph-gfx90a-O2.co").read_bytes()
GFX90A = "hipv4-amdgcn-amd-amdhsa--gfx90a"
HOST = "host-x86_64-unknown-linux-gnu"
NSYS = FIXTURES / "ingest" / "tiny-nsys.sqlite"
CONTAINERS = sorted([*GPU.glob("*.fatbin"), *GPU.glob("*.ccob"), *GPU.glob("libcallgraph-*.so")])


def _images(path: Path) -> list[bytes]:
    return [i.data for i in device_images(path.read_bytes(), str(path))]


def _cuobjdump() -> str | None:
    if shutil.which("cuobjdump"):
        return shutil.which("cuobjdump")
    try:
        files = metadata.files("nvidia-cuda-cuobjdump") or []
    except metadata.PackageNotFoundError:
        return None
    return next((str(f.locate()) for f in files if f.name == "cuobjdump" and f.parent.name == "bin"), None)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA 12.8+) is not on PATH")
needs_cuobjdump = pytest.mark.skipif(_cuobjdump() is None, reason="cuobjdump is not installed "
                                     "(pip install nvidia-cuda-cuobjdump)")
BUNDLER = shutil.which("clang-offload-bundler") or shutil.which("clang-offload-bundler-14")
needs_bundler = pytest.mark.skipif(BUNDLER is None, reason="clang-offload-bundler is not installed (clang-tools)")


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_fixture_entries_decompress_to_the_cubin_nvcc_emits(name: str) -> None:
    want = MANIFEST[name]
    images = _images(GPU / name)
    digests = {hashlib.md5(d).hexdigest(): len(d) for d in images}
    assert digests.get(want["cubin_md5"]) == want["cubin_size"], digests
    codec = "lz4" if "lz4" in name else "zstd"
    data = (GPU / name).read_bytes()
    start = data.find(fatbin.MAGIC_BYTES)
    assert {e.codec for e in fatbin.read_all(data, name, start)} == {codec}


@needs_nvcc
@pytest.mark.parametrize(("flags", "codec"), [
    (["-Xfatbin=-compress-all"], "zstd"),
    (["-Xfatbin=-compress-all", "--compress-mode=size"], "zstd"),
    (["-Xfatbin=-compress-all", "--compress-mode=balance"], "zstd"),
    (["-Xfatbin=-compress-all", "--compress-mode=speed"], "lz4"),
    (["-Xfatbin=-compress=false"], None),
])
def test_fresh_nvcc_fatbins(tmp_path: Path, flags: list[str], codec: str | None) -> None:
    src = tmp_path / "callgraph.cu"
    shutil.copy(GPU / "callgraph.cu", src)
    code = ["-arch=sm_80", "-lineinfo", "-frandom-seed=1"]
    subprocess.run(["nvcc", "-cubin", *code, "-o", "k.cubin", "callgraph.cu"], cwd=tmp_path, check=True,
                   capture_output=True)
    subprocess.run(["nvcc", "-fatbin", *code, *flags, "-o", "k.fatbin", "callgraph.cu"], cwd=tmp_path,
                   check=True, capture_output=True)
    data = (tmp_path / "k.fatbin").read_bytes()
    entries = fatbin.read_all(data, "k.fatbin")
    assert [(e.arch, e.codec) for e in entries] == [(80, codec)]
    assert entries[0].data == (tmp_path / "k.cubin").read_bytes()
    if _cuobjdump():
        out = tmp_path / "x"
        out.mkdir()
        subprocess.run([_cuobjdump(), "-xelf", "all", str(tmp_path / "k.fatbin")], cwd=out, check=True,
                       capture_output=True)
        assert [p.read_bytes() for p in out.iterdir()] == [entries[0].data]


@needs_cuobjdump
@pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
def test_fatbins_of_the_writer_are_read_by_cuobjdump(tmp_path: Path, codec: str | None) -> None:
    cubin = (GPU / "callgraph-sm80-G.cubin").read_bytes()
    path = tmp_path / "w.fatbin"
    path.write_bytes(fatbin.build([(fatbin.KIND_ELF, 80, cubin, codec)]))
    out = tmp_path / "x"
    out.mkdir()
    proc = subprocess.run([_cuobjdump(), "-xelf", "all", str(path)], cwd=out, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [p.read_bytes() for p in out.iterdir()] == [cubin]
    assert _images(path) == [cubin]


@needs_bundler
def test_bundle_writer_is_clang_offload_bundlers(tmp_path: Path) -> None:
    (tmp_path / "host").write_bytes(b"")
    (tmp_path / "gpu.co").write_bytes(CODE_OBJECT)
    made = tmp_path / "clang.bundle"
    subprocess.run([BUNDLER, "-type=bc", f"-targets={HOST},{GFX90A}", f"-inputs={tmp_path / 'host'},"
                    f"{tmp_path / 'gpu.co'}", f"-outputs={made}"], check=True, capture_output=True)
    assert offload_bundle.build([(HOST, b""), (GFX90A, CODE_OBJECT)]) == made.read_bytes()
    aligned = tmp_path / "aligned.bundle"   # hipcc's layout: code objects at 4096-byte boundaries
    aligned.write_bytes(offload_bundle.build([(HOST, b""), (GFX90A, CODE_OBJECT)], alignment=4096))
    subprocess.run([BUNDLER, "-type=bc", "-unbundle", f"-targets={GFX90A}", f"-inputs={aligned}",
                    f"-outputs={tmp_path / 'out.co'}"], check=True, capture_output=True)
    assert (tmp_path / "out.co").read_bytes() == CODE_OBJECT
    assert _images(aligned) == [CODE_OBJECT]


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("codec", ["zstd", "zlib"])
def test_ccob_headers_and_contents(version: int, codec: str) -> None:
    plain = offload_bundle.build([(HOST, b""), (GFX90A, CODE_OBJECT)])
    ccob = offload_bundle.build_compressed(plain, version, codec)
    # The header, read independently of hpcsa's layout tables (clang's OffloadBundler.cpp):
    magic, ver, method = struct.unpack_from("<4sHH", ccob)
    assert (magic, ver, method) == (b"CCOB", version, {"zlib": 0, "zstd": 1}[codec])
    fmt = {1: "<I", 2: "<II", 3: "<QQ"}[version]
    sizes = struct.unpack_from(fmt, ccob, 8)
    assert sizes[-1] == len(plain)
    if version > 1:
        assert sizes[0] == len(ccob)
    (digest,) = struct.unpack_from("<Q", ccob, 8 + struct.calcsize(fmt))
    assert digest == struct.unpack("<Q", hashlib.md5(plain).digest()[:8])[0]
    # Found in a host section among padding and other bundles, ending where its stream ends.
    section = bytes(100) + ccob + bytes(4096) + plain + bytes(7)
    entries = offload_bundle.read_all(section, "sec")
    assert [(e.triple, e.data) for e in entries] == [(HOST, b""), (GFX90A, CODE_OBJECT)] * 2
    assert entries[1].container == f"CCOB v{version} ({codec})"


@pytest.mark.parametrize("name", ["callgraph-gfx90a-v3-zstd.ccob", "callgraph-gfx90a-v2-zlib.ccob",
                                  "libcallgraph-hip.so"])
def test_amd_fixtures_hold_the_real_code_object(name: str) -> None:
    assert _images(GPU / name) == [CODE_OBJECT]


def _damaged(data: bytes, how: str) -> bytes:
    buf = bytearray(data)
    if how == "truncated":
        return bytes(buf[: len(buf) * 2 // 3])
    if how == "payload":  # the compressed stream garbled in its middle
        mid = len(buf) // 2
        buf[mid:mid + 16] = bytes(16)
        return bytes(buf)
    raise AssertionError(how)


@pytest.mark.parametrize("name", ["callgraph-sm75-zstd.fatbin", "callgraph-sm80-lz4.fatbin",
                                  "callgraph-gfx90a-v3-zstd.ccob", "callgraph-gfx90a-v2-zlib.ccob"])
@pytest.mark.parametrize("how", ["truncated", "payload"])
def test_damaged_containers_give_one_line(tmp_path: Path, name: str, how: str) -> None:
    bad = tmp_path / name
    bad.write_bytes(_damaged((GPU / name).read_bytes(), how))
    with pytest.raises(FormatError):
        device_images(bad.read_bytes(), str(bad))
    proc = run_cli("ingest", str(NSYS), "--binary", str(bad), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, name)
    assert not (tmp_path / "m").exists()


def test_unknown_versions_are_refused_by_name(tmp_path: Path) -> None:
    plain = offload_bundle.build([(HOST, b""), (GFX90A, CODE_OBJECT)])
    v4 = bytearray(offload_bundle.build_compressed(plain, 3, "zstd"))
    v4[4:6] = (4).to_bytes(2, "little")
    with pytest.raises(FormatError, match="version 4 is not supported"):
        device_images(bytes(v4), "v4.ccob")
    m9 = bytearray(offload_bundle.build_compressed(plain, 3, "zstd"))
    m9[6:8] = (9).to_bytes(2, "little")
    with pytest.raises(FormatError, match="compression method 9"):
        device_images(bytes(m9), "m9.ccob")
    fb = bytearray((GPU / "callgraph-sm75-zstd.fatbin").read_bytes())
    fb[4:6] = (2).to_bytes(2, "little")
    path = tmp_path / "v2.fatbin"
    path.write_bytes(bytes(fb))
    assert_one_line_error(run_cli("ingest", str(NSYS), "--binary", str(path), "-o", str(tmp_path / "m")),
                          "container version 2 is not supported")
    bad_hash = bytearray(offload_bundle.build_compressed(plain, 2, "zlib"))
    bad_hash[16] ^= 1
    with pytest.raises(FormatError, match="does not match the hash"):
        device_images(bytes(bad_hash), "h.ccob")


def test_fuzz_device_code_containers(tmp_path: Path) -> None:
    def read(path: str) -> None:
        with open(path, "rb") as fh:
            device_images(fh.read(), path)

    counts = fuzz_reader(read, CONTAINERS, tmp_path, ".bin")
    assert sum(counts.values()) == EXAMPLES and counts["error"] > 0


def _kernel_offsets(meas: Path, data: bytes) -> list[int]:
    digest = hashlib.md5(data).hexdigest()
    assert (meas / "gpubins" / f"{digest}.gpubin").read_bytes() == data
    main = load(str(meas)).profiles[0]
    [lm] = [m.id for m in main.loadmap if m.path == f"gpubins/{digest}.gpubin"]
    return sorted(int(x) for x in main.cct["lm_ip"][main.cct["lm_id"] == lm])


@pytest.mark.parametrize(("binary", "kernel", "plain"), [
    ("libcallgraph-cuda.so", "_Z12kernel_callsPii", None),
    ("callgraph-sm80-lz4.fatbin", "_Z12kernel_loopsPfPKfii", None),
    ("libcallgraph-hip.so", "kernel_calls", "callgraph-gfx90a-O2.co"),
    ("callgraph-gfx90a-v2-zlib.ccob", "kernel_loops", "callgraph-gfx90a-O2.co"),
])
def test_binary_option_places_kernels_in_decompressed_code(tmp_path: Path, binary: str, kernel: str,
                                                           plain: str | None) -> None:
    """``--binary`` with compressed code gives what the same code given plain gives."""
    src = records_naming(tmp_path, kernel)
    run_cli("ingest", str(src), "--binary", str(GPU / binary), "-o", str(tmp_path / "c"), check=True)
    if plain is None:  # NVIDIA: the decompressed cubin whose MD5 the fixture manifest records
        want = MANIFEST.get(binary, {}).get("cubin_md5")
        [code] = [d for d in _images(GPU / binary) if hashlib.md5(d).hexdigest() == want]
        (tmp_path / "plain.cubin").write_bytes(code)
        plain_path = tmp_path / "plain.cubin"
    else:
        plain_path = GPU / plain
        code = plain_path.read_bytes()
    run_cli("ingest", str(src), "--binary", str(plain_path), "-o", str(tmp_path / "p"), check=True)
    got = _kernel_offsets(tmp_path / "c", code)
    assert got == _kernel_offsets(tmp_path / "p", code)
    assert len(got) == 2 and got[0] > 0


def test_gpu_elves_embedded_whole_are_found_outside_containers() -> None:
    """Code objects stored as is in a host file (no fatbin or bundle) are cut out at their own extent."""
    a = (GPU / "callgraph-sm75-lineinfo.cubin").read_bytes()
    b = (GPU / "callgraph-gfx90a-O2.co").read_bytes()
    host = (GPU / "libcallgraph-hip.so").read_bytes()  # a host ELF first, its bundle in .hip_fatbin
    blob = host + b"\x7fELF junk" + a + bytes(5) + b + bytes(3)
    assert [i.data for i in device_images(blob, "blob")] == [b, a]
    assert [i.origin for i in device_images(blob, "blob")][1] == "embedded whole"


def test_ptx_only_fatbin_says_so(tmp_path: Path) -> None:
    ptx = tmp_path / "jit.fatbin"
    ptx.write_bytes(fatbin.build([(fatbin.KIND_PTX, 80, b".version 9.0\n.target sm_80\n", "zstd")]))
    assert device_images(ptx.read_bytes(), str(ptx)) == []
    proc = run_cli("ingest", str(NSYS), "--binary", str(ptx), "-o", str(tmp_path / "m"))
    assert_one_line_error(proc, "holds only PTX")
