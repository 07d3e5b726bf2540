"""Mutation fuzzing of readers: every input ends in a result or an HpcsaError, quickly and in bounded memory.

Mutations start from real files (``../shared/data``) and the project's fixtures. Each case is
reproducible from (source file, seed). The number of cases per reader is ``HPCSA_FUZZ_EXAMPLES``
(default 60, kept small for CI; the README shows a longer run).
"""

from __future__ import annotations

import contextlib
import os
import signal
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hpcsa.core.errors import HpcsaError

EXAMPLES = int(os.environ.get("HPCSA_FUZZ_EXAMPLES", "60"))
TIME_LIMIT_S = 10
EXTREMES = [0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, (1 << 63) - 1, (1 << 64) - 1]


def mutate(data: bytes, seed: int) -> bytes:
    """One of several structure-aware-ish mutations, chosen and placed by ``seed``."""
    rng = np.random.default_rng(seed)
    buf = bytearray(data)
    kind = int(rng.integers(0, 7))
    if not buf:
        return bytes(rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8))
    pos = int(rng.integers(0, len(buf)))
    if kind == 0:  # flip a few bits
        for _ in range(int(rng.integers(1, 9))):
            p = int(rng.integers(0, len(buf)))
            buf[p] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:  # truncate
        del buf[pos:]
    elif kind == 2:  # overwrite an integer field with an extreme value, either byte order
        width = int(rng.choice([2, 4, 8]))
        value = int(rng.choice(EXTREMES)) & ((1 << (8 * width)) - 1)
        order = "big" if rng.integers(0, 2) else "little"
        buf[pos : pos + width] = value.to_bytes(width, order)
    elif kind == 3:  # insert random bytes
        buf[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 32)), dtype=np.uint8))
    elif kind == 4:  # delete a slice
        del buf[pos : pos + int(rng.integers(1, 64))]
    elif kind == 5:  # duplicate a slice elsewhere
        end = min(len(buf), pos + int(rng.integers(1, 128)))
        chunk = buf[pos:end]
        at = int(rng.integers(0, len(buf)))
        buf[at : at + len(chunk)] = chunk
    else:  # zero a region
        end = min(len(buf), pos + int(rng.integers(1, 256)))
        buf[pos:end] = bytes(end - pos)
    return bytes(buf)


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout()


def check_input(reader: Callable[[str], Any], path: Path, memory_limit: int) -> str:
    """Run ``reader`` on ``path``; return "ok" or "error"; raise AssertionError on anything else."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT_S)
    tracemalloc.start()
    try:
        reader(str(path))
        outcome = "ok"
    except HpcsaError as exc:
        text = str(exc)
        assert "\n" not in text.strip(), f"multi-line error for {path}: {text!r}"
        outcome = "error"
    except _Timeout:
        raise AssertionError(f"{path}: reader ran longer than {TIME_LIMIT_S} s") from None
    except Exception as exc:  # noqa: BLE001 - this is the point of the fuzzer
        raise AssertionError(f"{path}: uncaught {type(exc).__name__}: {exc}") from exc
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak <= memory_limit, f"{path}: reader allocated {peak} bytes (limit {memory_limit})"
    return outcome


def _content_size(data: bytes) -> int:
    """The bytes a reader parses: a gzip member's decompressed content (what a reader of ``.json.gz`` holds),
    else the data itself."""
    if data[:2] != b"\x1f\x8b":
        return len(data)
    size = 0
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with contextlib.suppress(zlib.error):  # as far as it inflates: a reader may parse a damaged member that far
        for at in range(0, len(data), 1 << 16):
            size += len(inflate.decompress(data[at:at + (1 << 16)]))
    return max(len(data), size)


def fuzz_reader(reader: Callable[[str], Any], sources: list[Path], tmp_path: Path, suffix: str,
                examples: int = EXAMPLES, materialize: Callable[[Path, bytes], Path] | None = None,
                ) -> dict[str, int]:
    """Mutate ``sources`` ``examples`` times; every case must end in a result or an HpcsaError.

    ``materialize`` turns mutated bytes into the path the reader takes (e.g. a database directory
    holding one mutated file); by default the bytes are written to a file with ``suffix``.
    """
    assert sources, "no seed inputs to fuzz"
    counts = {"ok": 0, "error": 0}
    for i in range(examples):
        src = sources[i % len(sources)]
        data = mutate(src.read_bytes(), seed=i)
        if materialize is not None:
            target = materialize(tmp_path / f"case{i}", data)
        else:
            target = tmp_path / f"case{i}{suffix}"
            target.write_bytes(data)
        limit = max(64 << 20, 50 * _content_size(data))
        try:
            counts[check_input(reader, target, limit)] += 1
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n  reproduce: mutate({src}, seed={i})") from None
    return counts
