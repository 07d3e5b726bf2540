"""The parsed-structure cache: same modules as the XML, reused only when it matches the file's bytes."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import time
from pathlib import Path

import blake3
import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.hpcstruct import parsedcache, reader, stream
from hpcsa.formats.hpcstruct.model import Module, ModuleBuilder, S

CXX_STRUCTS = ("hpctoolkit-extra", "meas-cxx1024", "structs")


def some_files(shared: Path) -> list[Path]:
    files = sorted((shared / "hpctoolkit" / "meas").glob("*/structs/*.hpcstruct"))
    return files + sorted((shared / "hpctoolkit" / "struct").glob("*.hpcstruct"))[:6]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("HPCSA_CACHE_DIR", str(root))
    return root / parsedcache.SUBDIR


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.bin")) if cache.is_dir() else []


def test_cached_modules_equal_the_parsed_ones(shared_data, cache):
    for path in some_files(shared_data):
        parsed = reader.read_hpcstruct(path)
        first = parsedcache.read_structure(path)   # parses and stores
        second = parsedcache.read_structure(path)  # from the entry
        for sf in (first, second):
            assert sf.same_content(parsed), path
            assert (sf.version, sf.id, sf.name) == (parsed.version, parsed.id, parsed.name)
        for a, b in zip(second.modules, parsed.modules, strict=True):
            assert np.array_equal(a.leaf_map, b.leaf_map)
            assert a.strings == b.strings
    assert len(entries(cache)) == len({p.read_bytes() for p in some_files(shared_data)})


def test_second_read_does_not_parse_xml(shared_data, cache, monkeypatch):
    from hpcsa.formats.hpcstruct import scan

    path = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    parsedcache.read_structure(path)

    def no_parse(*args):
        raise AssertionError("parsed the XML again")

    for module, name in ((reader, "read_hpcstruct"), (stream, "read_with_expat"), (scan, "scan"),
                         (scan, "scan_file")):
        monkeypatch.setattr(module, name, no_parse)
    assert parsedcache.read_structure(path).modules


_WARM_READ = """
import sys
from hpcsa.formats.hpcstruct import parsedcache
parsedcache.read_structure(sys.argv[1])
print(sorted(m for m in sys.modules if m in ("hpcsa.formats.hpcstruct.reader", "hpcsa.formats.hpcstruct.stream",
                                              "hpcsa.formats.hpcstruct.scan", "xml.parsers.expat")))
"""


def test_a_read_from_the_cache_does_not_load_the_parsers(shared_data, cache):
    """The XML parsers are imported only where a file has no valid entry: a warm run never loads them."""
    import os
    import subprocess
    import sys

    path = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    env = dict(os.environ)  # the fixture's HPCSA_CACHE_DIR
    first = subprocess.run([sys.executable, "-c", _WARM_READ, str(path)], capture_output=True, text=True, env=env,
                           check=True)
    again = subprocess.run([sys.executable, "-c", _WARM_READ, str(path)], capture_output=True, text=True, env=env,
                           check=True)
    assert "hpcsa.formats.hpcstruct.stream" in first.stdout
    assert again.stdout.strip() == "[]" and len(entries(cache)) == 1


def test_a_changed_file_gets_a_new_entry(shared_data, cache, tmp_path):
    src = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    mine = tmp_path / "x.hpcstruct"
    shutil.copy(src, mine)
    before = parsedcache.read_structure(mine)
    text = mine.read_text().replace('l="', 'l="1', 1)  # a statement's line gains a leading 1
    mine.write_text(text)
    after = parsedcache.read_structure(mine)
    assert after.same_content(reader.read_hpcstruct(mine))
    assert not after.same_content(before)
    assert len(entries(cache)) == 2


def test_damaged_or_foreign_entries_are_never_trusted(shared_data, cache, monkeypatch):
    path = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    truth = reader.read_hpcstruct(path)
    parsedcache.read_structure(path)
    (entry,) = entries(cache)
    good = entry.read_bytes()
    other = shared_data / "hpctoolkit" / "meas" / "loops-cputime-t.m" / "structs"
    foreign_src = sorted(other.glob("*.hpcstruct"))[0]
    parsedcache.read_structure(foreign_src)
    foreign = next(e for e in entries(cache) if e != entry).read_bytes()
    flipped = bytearray(good)
    flipped[-5] ^= 0x40
    for bad in (good[: len(good) // 2], bytes(flipped), foreign, b"", b"junk" * 100):
        entry.write_bytes(bad)
        got = parsedcache.read_structure(path)
        assert got.same_content(truth)
        assert entry.read_bytes() == good  # rebuilt


def test_no_cache_when_off_or_unwritable(shared_data, tmp_path, monkeypatch):
    path = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    truth = reader.read_hpcstruct(path)
    monkeypatch.setenv("HPCSA_CACHE_DIR", "off")
    assert parsedcache.cache_root() is None
    assert parsedcache.read_structure(path).same_content(truth)
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("HPCSA_CACHE_DIR", str(blocker))
    assert parsedcache.read_structure(path).same_content(truth)
    monkeypatch.delenv("HPCSA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert parsedcache.cache_root() == tmp_path / "xdg" / "hpcsa"


def test_a_named_cache_that_cannot_be_used_is_one_note(tmp_path, monkeypatch):
    """$HPCSA_CACHE_DIR set by the user but unusable: prof says so once (and stays right); the default cache
    or none at all says nothing."""
    from tests.conftest import run_cli

    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    monkeypatch.setenv("HPCSA_CACHE_DIR", str(blocker))
    assert parsedcache.explicit_cache_problem() == (f"$HPCSA_CACHE_DIR={blocker}: cannot hold the parsed structure "
                                                    "files (Not a directory); they are parsed on every run")
    for quiet in ("off", str(tmp_path / "usable")):
        monkeypatch.setenv("HPCSA_CACHE_DIR", quiet)
        assert parsedcache.explicit_cache_problem() is None
    monkeypatch.delenv("HPCSA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the default location, unusable: silently uncached
    assert parsedcache.explicit_cache_problem() is None
    meas = tmp_path / "m"
    run_cli("synth", str(meas), "-n", "2", check=True)  # with its structure files
    ok = run_cli("prof", str(meas), "-o", str(tmp_path / "ok.d"), check=True, env={"HPCSA_CACHE_DIR": "off"})
    noted = run_cli("prof", str(meas), "-o", str(tmp_path / "noted.d"), check=True,
                    env={"HPCSA_CACHE_DIR": str(blocker)})
    assert "note" not in ok.stderr
    assert noted.stderr.count("hpcsa: note: $HPCSA_CACHE_DIR=") == 1
    for name in ("meta.db", "profile.db", "cct.db"):
        assert (tmp_path / "ok.d" / name).read_bytes() == (tmp_path / "noted.d" / name).read_bytes()


def test_bad_structure_file_still_reported_in_one_line(tmp_path, cache):
    bad = tmp_path / "bad.hpcstruct"
    bad.write_text("<HPCToolkitStructure version='4.9'><LM n='x'><P")
    with pytest.raises(Exception) as info:
        parsedcache.read_structure(bad)
    assert str(bad) in str(info.value)
    assert entries(cache) == []


def full_lexical_path(m: Module, leaf: int) -> list:
    """lexical_path through the whole-module arrays (the per-leaf chain must agree with them)."""
    m._lexical  # noqa: B018  (computing it makes lexical_path use the whole-module arrays)
    return m.lexical_path(leaf)


def test_per_leaf_chain_equals_the_whole_module_reading(shared_data):
    """A statement's lexical path from its ancestors alone, alone or in a batch, is the one the whole-module
    arrays give (two derivations of hpcprof's reading of aliens, files and loops)."""
    libc = shared_data.joinpath(*CXX_STRUCTS)
    paths = sorted(libc.glob("*.hpcstruct")) if libc.is_dir() else []
    paths += sorted((shared_data / "hpctoolkit" / "struct").glob("inlines*.hpcstruct"))
    assert paths
    rng = np.random.default_rng(7)
    for path in paths:
        for lazy in reader.read_hpcstruct(path).modules:
            leaves = np.flatnonzero(lazy.scopes["kind"] == S)
            if not len(leaves):
                continue
            pick = rng.choice(leaves, size=min(300, len(leaves)), replace=False).tolist()
            got = [lazy.lexical_path(leaf) for leaf in pick]
            # worked out together (unsorted, repeated), each path is the one worked out alone
            assert lazy.lexical_paths(pick + pick[:20]) == got + got[:20], path
            assert "_lexical" not in lazy.__dict__  # the chain did not need the whole module
            full = Module(lazy.path, lazy.scopes, lazy.ranges, lazy.strings, lazy.id, lazy.has_calls, lazy.has_v)
            assert got == [full_lexical_path(full, leaf) for leaf in pick], path


def _resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isdigit() or line[:1] in "abcdef" and "-" in line.split()[0]:
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_a_mapped_entry_is_not_left_resident(shared_data, cache):
    """Checking an entry reads all of it; afterwards only what queries read is resident, and releasing the
    pages keeps every answer (they fault back in)."""
    if not Path("/proc/self/smaps").is_file():
        pytest.skip("needs /proc/self/smaps (Linux) to see resident pages")
    path = shared_data.joinpath(*CXX_STRUCTS, "libc.so.6.hpcstruct")
    if not path.is_file():
        pytest.skip(f"{path} absent")
    parsed = reader.read_hpcstruct(path).modules[0]
    parsedcache.read_structure(path)  # stores the entry
    (entry,) = entries(cache)
    mapped = parsedcache.read_structure(path).modules[0]
    size_kib = entry.stat().st_size // 1024
    assert size_kib > 4096
    assert _resident_kib(entry) < size_kib // 4  # the digest's pass over it was dropped as it went
    addrs = parsed.leaf_map["lo"][:: max(1, len(parsed.leaf_map) // 200)]
    want = parsed.lookup(addrs)
    assert mapped.lookup(addrs).tolist() == want.tolist()
    paths = [mapped.lexical_path(int(leaf)) for leaf in want]
    mapped.release_pages()
    assert _resident_kib(entry) < 64
    assert mapped.lookup(addrs).tolist() == want.tolist()
    assert [mapped.lexical_path(int(leaf)) for leaf in want] == paths == [parsed.lexical_path(int(leaf))
                                                                           for leaf in want]
    copy = pickle.loads(pickle.dumps(mapped))  # to a worker or another rank: arrays copied, no mapping
    assert "mapping" not in copy.__dict__ and copy.same_content(parsed)
    assert copy.lookup(addrs).tolist() == want.tolist()


def test_store_structure_leaves_an_entry_that_maps_to_the_parsed_modules(shared_data, cache, tmp_path,
                                                                         monkeypatch):
    path = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    digest = parsedcache.store_structure(path)
    assert digest == blake3.blake3(path.read_bytes()).hexdigest()  # named by the BLAKE3-256 of its bytes
    assert len(entries(cache)) == 1
    mapped = parsedcache.read_cached(path)
    assert mapped is not None and mapped.same_content(reader.read_hpcstruct(path))
    by_digest = parsedcache.read_entry(digest)
    assert by_digest is not None and by_digest.same_content(mapped)
    assert parsedcache.read_entry("0" * 64) is None
    assert parsedcache.store_structure(path) == digest  # valid already: kept, not rewritten
    assert len(entries(cache)) == 1
    monkeypatch.setenv("HPCSA_CACHE_DIR", "off")
    assert not parsedcache.store_structure(path)


def test_least_recently_used_entries_are_evicted_beyond_the_bound(shared_data, cache, monkeypatch):
    """Beyond HPCSA_CACHE_MAX the least recently used entries go (reading one marks it used); the entry just
    written stays even when it alone is over the bound; 0 means no bound."""
    import os
    import time

    a, b, c = list({p.read_bytes(): p for p in some_files(shared_data)}.values())[:3]
    entry = {p: cache / f"{parsedcache._digest_of(str(p))}.bin" for p in (a, b, c)}
    monkeypatch.setenv("HPCSA_CACHE_MAX", "0")
    for p in (a, b, c):
        parsedcache.read_structure(p)
    size = {p: entry[p].stat().st_size for p in (a, b, c)}
    entry[c].unlink()
    past = time.time() - 100
    os.utime(entry[a], (past, past))
    os.utime(entry[b], (past + 1, past + 1))
    parsedcache.read_structure(a)  # a hit: a's entry is now the most recently used, b's the least
    monkeypatch.setenv("HPCSA_CACHE_MAX", str(size[a] + size[c]))
    parsedcache.read_structure(c)  # written; b's entry makes room for it
    assert set(entries(cache)) == {entry[a], entry[c]}
    monkeypatch.setenv("HPCSA_CACHE_MAX", "1")  # smaller than any entry: only the one just written stays
    parsedcache.read_structure(b)
    assert entries(cache) == [entry[b]]
    assert parsedcache.read_cached(b) is not None


@pytest.mark.parametrize(("text", "limit"), [("", parsedcache.DEFAULT_MAX), ("500M", 500 << 20), ("2GiB", 2 << 30),
                                            ("1.5k", 1536), ("123", 123), ("0", None), ("none", None)])
def test_cache_bound_setting(text, limit, monkeypatch):
    monkeypatch.setenv("HPCSA_CACHE_MAX", text)
    assert parsedcache.cache_limit() == limit


def test_bad_cache_bound_is_one_clear_error(shared_data, cache, monkeypatch):
    monkeypatch.setenv("HPCSA_CACHE_MAX", "lots")
    with pytest.raises(HpcsaError, match="HPCSA_CACHE_MAX='lots'"):
        parsedcache.read_structure(some_files(shared_data)[0])


@pytest.mark.parametrize("strings", [[], [""], ["main", "", "a.c"], ["naïve", "x", "東京.cpp", ""], ["\udcff", "z"]])
def test_strings_round_trip_through_an_entry(strings):
    """The packed strings (one buffer, one end per string) decode to the same texts, ASCII or not."""
    b = ModuleBuilder("/lib/x.so")
    for i, s in enumerate(strings):
        b.add(S, -1, line=i, file=s, ranges=[(16 * i, 16 * i + 4)])
    m = b.finish()
    assert list(m.strings) == list(dict.fromkeys(strings))
    data = parsedcache.encode(parsedcache.StructureFile(modules=[m]), "d" * 64)
    back = parsedcache.decode(data, "d" * 64).modules[0]
    assert list(back.strings) == list(m.strings)
    ends = back.strings._ends
    expected = [len(s.encode("utf-8", "surrogatepass")) + 1 for s in m.strings]
    assert ends.tolist() == (np.cumsum(expected) - 1).tolist()  # each string's NUL; the last: the buffer's end


def test_a_string_with_nul_is_refused_in_one_line():
    b = ModuleBuilder("/lib/x.so")
    b.add(S, -1, line=1, file="a\0b", ranges=[(0, 4)])
    with pytest.raises(HpcsaError, match="NUL"):
        parsedcache.encode(parsedcache.StructureFile(modules=[b.finish()]), "d" * 64)


def _hashes(monkeypatch) -> list[str]:
    """Count the structure files read to hash them (the paths, in order)."""
    read: list[str] = []
    real = parsedcache._digest_of

    def counted(path: str) -> str | None:
        read.append(path)
        return real(path)

    monkeypatch.setattr(parsedcache, "_digest_of", counted)
    return read


def _after_the_tick_of(ns: int, probe: Path) -> None:
    """Return once the file system's clock (coarse: a kernel tick) stamps files later than ``ns``."""
    probe.write_bytes(b"")
    while probe.stat().st_ctime_ns <= ns:
        os.utime(probe)


def test_a_file_unchanged_since_it_was_hashed_is_not_read_again(shared_data, cache, tmp_path, monkeypatch):
    """read_cached takes the hash of a file whose status (inode, size, times) is the one it hashed from the
    record beside the entries; a change of the bytes, even of the same size with the modification time put
    back, is hashed again and gets its own entry."""
    from hpcsa.formats.hpcstruct import known_digests

    src = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    mine = tmp_path / "x.hpcstruct"
    shutil.copy(src, mine)
    # the file as if written long before the runs (a file written within RACY_NS is never remembered)
    monkeypatch.setattr(known_digests, "clock_ns", lambda: time.time_ns() + 10 * known_digests.RACY_NS)
    truth = reader.read_hpcstruct(mine)
    assert parsedcache.store_structure(mine)
    read = _hashes(monkeypatch)
    for _ in range(2):
        got = parsedcache.read_cached(mine)
        assert got is not None and got.same_content(truth)
    assert read == []  # the hash came from the record of the store
    (record,) = (cache / known_digests.SUBDIR).iterdir()
    # the same bytes at another path are hashed (a record names its path)
    other = tmp_path / "y.hpcstruct"
    shutil.copy(mine, other)
    assert parsedcache.read_cached(other).same_content(truth) and read == [str(other)]
    # changed bytes, same size, modification time put back: hashed again, and no longer the old entry
    st = mine.stat()
    _after_the_tick_of(st.st_ctime_ns, tmp_path / "probe")
    old = mine.read_text()
    at = next(m.end() for m in re.finditer(r' l="[1-8]', old))  # a statement's line, one digit changed
    text = old[:at - 1] + str(int(old[at - 1]) + 1) + old[at:]
    mine.write_text(text)
    os.utime(mine, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert mine.stat().st_size == st.st_size and mine.stat().st_mtime_ns == st.st_mtime_ns
    assert parsedcache.read_cached(mine) is None  # no entry for the new bytes: the caller parses them
    assert read[-1] == str(mine)
    assert parsedcache.store_structure(mine)
    assert parsedcache.read_structure(mine).same_content(reader.read_hpcstruct(mine))
    # a damaged record is ignored
    record.write_text("{not json")
    read.clear()
    assert parsedcache.read_cached(mine).same_content(reader.read_hpcstruct(mine)) and read == [str(mine)]


def test_a_file_written_just_before_is_hashed_every_time(shared_data, cache, tmp_path, monkeypatch):
    """Within RACY_NS of its last change a file's status is not remembered (the file system's clock is coarse:
    a change in the same tick would keep it): every lookup hashes it, as without the records."""
    from hpcsa.formats.hpcstruct import known_digests

    src = shared_data / "hpctoolkit" / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct"
    mine = tmp_path / "x.hpcstruct"
    shutil.copy(src, mine)
    assert parsedcache.store_structure(mine)
    read = _hashes(monkeypatch)
    for _ in range(2):
        assert parsedcache.read_cached(mine) is not None
    assert read == [str(mine)] * 2
    assert not (cache / known_digests.SUBDIR).exists()
