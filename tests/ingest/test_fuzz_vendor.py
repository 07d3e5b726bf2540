"""Fuzzing the vendor-record readers (SQLite exports, CSV, unitrace text, CUPTI util file) (issue 8)."""

from __future__ import annotations

import gzip
from pathlib import Path

from hpcsa.ingest.sources import read_sources
from tests.conftest import FIXTURES
from tests.fuzzing import fuzz_reader


def _read(path: str) -> None:
    read_sources([path])


def _sources(shared: Path) -> list[Path]:
    rec = shared / "gpu-records"
    picks = [
        *sorted((rec / "nvidia" / "nsys-2024.5-jetson-orin-memset-sync").glob("*.sqlite")),
        *sorted((rec / "nvidia" / "nvprof-cupti-pcsampling-titanv").glob("*.nvprof")),
        *sorted((rec / "amd" / "rocprofv3-rocpd-rocm7.1-mi300x-batched-gemm").glob("*.db")),
        *sorted((rec / "intel" / "unitrace-gold-dpc_gemm").glob("*")),
        *sorted((rec / "synthetic" / "cupti-pcsampling-util-cuda13").glob("*")),
    ]
    return [p for p in picks if p.is_file() and p.stat().st_size < 4 << 20 and not p.name.endswith(".md")]


def test_fuzz_vendor_records(shared_data, tmp_path):
    sources = _sources(shared_data)
    counts = fuzz_reader(_read, sources, tmp_path, "")
    assert counts["error"] > 0


def test_fuzz_kineto_and_rocprofv2(shared_data, tmp_path):
    """The PyTorch profiler and rocprofv2 readers: real traces, gzip as stored and decompressed (so that most
    mutations reach the JSON parser and the event handling rather than the gzip check)."""
    rec = shared_data / "gpu-records"
    sources = sorted(rec.glob("*/kineto-*/*.json.gz")) + sorted((rec / "amd" / "rocprofv2-golden-traces").glob("*.txt"))
    plain = tmp_path / "plain"
    plain.mkdir()
    for gz in sorted(rec.glob("*/kineto-*/*.json.gz")):
        target = plain / gz.name[: -len(".gz")]
        target.write_bytes(gzip.decompress(gz.read_bytes()))
        sources.append(target)
    counts = fuzz_reader(_read, sources, tmp_path, "")
    assert counts["error"] > 0 and counts["ok"] > 0


def test_fuzz_fixture_records(tmp_path):
    sources = [p for p in sorted((FIXTURES / "ingest").rglob("*")) if p.is_file() and p.suffix != ".py"]
    fuzz_reader(_read, sources, tmp_path, "")
