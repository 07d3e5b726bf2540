"""Benchmark: finding and decompressing GPU code in containers (``hpcsa.structure.gpu.gpubin.device_images``).

A library-sized container is made from the fixtures: the sm_80 ``-G`` cubin (60,848 bytes) repeated 256
times, each copy made distinct by a changed byte in its ELF padding, stored as an NVIDIA fatbin plain, with
zstd and with LZ4 entries (hpcsa's writer, which cuobjdump reads), and the AMD code object likewise in
a ``CCOB`` v3 bundle (zstd, zlib). Reported: the median of N runs of ``device_images`` on the file's bytes,
the uncompressed megabytes per second, and the compression ratio.

    .venv/bin/python benchmarks/bench_device_code.py [--record] [--runs N]

``--record`` writes the table to benchmarks/results/device_code.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from hpcsa.core.outputs import write_file
from hpcsa.structure.gpu import fatbin, offload_bundle
from hpcsa.structure.gpu.gpubin import device_images

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "fixtures" / "gpu"
COPIES = 256


def _copies(data: bytes) -> list[bytes]:
    """Distinct copies: a byte of the ELF identification padding (e_ident[15], unused) set to the copy number."""
    return [data[:15] + bytes([i % 256]) + data[16:] for i in range(COPIES)]


def containers() -> dict[str, tuple[bytes, int]]:
    cubins = _copies((GPU / "callgraph-sm80-G.cubin").read_bytes())
    code = _copies((GPU / "callgraph-gfx90a-O2.co").read_bytes())
    plain = sum(len(c) for c in cubins)
    out = {f"fatbin, {codec or 'plain'}": (fatbin.build([(fatbin.KIND_ELF, 80, c, codec) for c in cubins]), plain)
           for codec in (None, "zstd", "lz4")}
    bundle = offload_bundle.build([("host-x86_64-unknown-linux-gnu", b"")]
                                  + [(f"hipv4-amdgcn-amd-amdhsa--gfx90a:{i}", c) for i, c in enumerate(code)])
    for codec in ("zstd", "zlib"):
        out[f"CCOB v3, {codec}"] = (offload_bundle.build_compressed(bundle, 3, codec), sum(len(c) for c in code))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for name, (data, plain) in containers().items():
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            images = device_images(data, name)
            times.append(time.perf_counter() - t0)
        assert len(images) == COPIES, (name, len(images))
        med = statistics.median(times)
        rows.append(f"| {name} | {len(data):,} | {plain:,} | {plain / len(data):.1f} | {COPIES} | {med * 1e3:.0f} "
                    f"| {plain / med / 1e6:.0f} |")
    text = (f"# Device-code container benchmark\n\n`benchmarks/bench_device_code.py --runs {args.runs}` (median of "
            f"{args.runs}; Python {platform.python_version()}, {platform.machine()}, shared 2-core machine under "
            "load from other work).\n\n"
            "| container | bytes | code bytes | ratio | code objects | `device_images` (ms) | MB/s of code |\n"
            "|---|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n\n"
            "Fatbin entries are compressed one by one (ratios like nvcc's own: 4.3 for this source's sm_80 "
            "cubin with zstd); a bundle is compressed whole, and its 256 nearly identical copies compress far "
            "better than real code objects would, so its MB/s is the meaningful column.\n")
    print(text)
    if args.record:
        write_file(ROOT / "benchmarks" / "results" / "device_code.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
