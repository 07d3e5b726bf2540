"""hpcsa.core.digests: hashlib's values, without loading OpenSSL into a command's processes."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys

from hpcsa.core import digests


def test_the_same_values_as_hashlib() -> None:
    data = bytes(range(256)) * 5000  # more than one read of file_digest
    assert digests.md5(data).hexdigest() == hashlib.md5(data).hexdigest()
    assert digests.blake2b(data, digest_size=8).digest() == hashlib.blake2b(data, digest_size=8).digest()
    assert digests.file_digest(io.BytesIO(b""), digests.md5()).hexdigest() == hashlib.md5(b"").hexdigest()


def test_content_keys_are_blake3(monkeypatch) -> None:
    """Known answers of BLAKE3's reference test vectors (the BLAKE3 repository's test_vectors.json: input byte
    i is i mod 251), for one chunk and for many, hashed whole or read from a file in pieces."""
    assert digests.content_digest().hexdigest() == (
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262")
    one_chunk = bytes(i % 251 for i in range(1024))
    assert digests.content_digest(one_chunk).hexdigest() == (
        "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7")
    data = bytes(i % 251 for i in range(102400))
    want = "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"
    assert digests.content_digest(data).hexdigest() == want
    monkeypatch.setattr(digests, "READ_SIZE", 4096)  # 25 reads
    assert digests.file_digest(io.BytesIO(data), digests.content_digest()).hexdigest() == want
    assert digests.CONTENT_DIGEST_SIZE == len(digests.content_digest(data).digest())


def test_a_cpu_prof_run_never_loads_openssl(tmp_path) -> None:
    """A first and a second ``hpcsa prof -j 2`` of a CPU measurement (structure files parsed, cached, then
    mapped): hashlib, whose import maps OpenSSL's libcrypto (3.4 MiB per process), is never loaded. (GPU runs
    load it with networkx, and numpy.random loads it through the secrets module.)"""
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    generate(tmp_path / "app.m", SynthSpec.preset("cpu", 16, contexts=400, seed=5))
    code = (
        "import sys, os\n"
        "os.environ['HPCSA_CACHE_DIR'] = sys.argv[1] + '/cache'\n"
        "from hpcsa.cli.main import main\n"
        "rc = [main(['prof', sys.argv[1] + '/app.m', '-o', sys.argv[1] + f'/{k}.d', '-j', '2']) for k in 'ab']\n"
        "print(rc, '_hashlib' in sys.modules, 'libcrypto' in open('/proc/self/maps').read())\n"
    )
    got = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert got.stdout.split("\n")[-2] == "[0, 0] False False", (got.stdout, got.stderr)
    assert any((tmp_path / "cache" / "parsed-struct").iterdir())  # the structure files went through the cache
