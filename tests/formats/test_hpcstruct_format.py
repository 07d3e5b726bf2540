"""The .hpcstruct 4.9 format: every real file, round trips, hpcprof's reading of the tree, hostile XML."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.formats.hpcstruct import writer
from hpcsa.formats.hpcstruct.model import A, C, F, L, ModuleBuilder, P, S, StructureFile, renumber
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.hpcstruct.stream import iter_modules
from hpcsa.formats.hpcstruct.writer import render, write_hpcstruct
from tests.conftest import assert_one_line_error, run_cli


def real_files(hpctoolkit: Path) -> list[Path]:
    return sorted((hpctoolkit / "struct").glob("*.hpcstruct")) + sorted(
        (hpctoolkit / "meas").glob("*/structs/*.hpcstruct"))


def body(text: str) -> str:
    return text[text.index("<HPCToolkitStructure "):]


def test_every_real_file_parses_with_independent_counts(hpctoolkit_data):
    files = real_files(hpctoolkit_data)
    assert len([f for f in files if f.parent.name == "struct"]) == 84
    assert len(files) > 84
    for path in files:
        text = path.read_text()
        sf = read_hpcstruct(path)
        assert sf.version == "4.9" and sf.id == 0
        assert len(sf.modules) == text.count("<LM ")
        for tag, kind in (("F", F), ("P", P), ("A", A), ("L", L), ("S", S), ("C", C)):
            assert sum(m.count(kind) for m in sf.modules) == text.count(f"<{tag} "), (path.name, tag)
        ranges = len(re.findall(r"\[0x[0-9a-f]+-0x[0-9a-f]+\)", text))
        assert sum(len(m.ranges) for m in sf.modules) == ranges, path.name


def test_round_trip_is_identical(hpctoolkit_data, tmp_path):
    for path in real_files(hpctoolkit_data):
        sf = read_hpcstruct(path)
        out = tmp_path / path.name
        write_hpcstruct(out, sf)
        again = read_hpcstruct(out)
        assert sf.same_content(again), path.name
        # hpcstruct's own layout is reproduced element for element (the DTD comments differ).
        assert body(out.read_text()) == body(path.read_text()), path.name


def test_hpcprof_reading_of_inlined_loops(hpctoolkit_data):
    m = read_hpcstruct(hpctoolkit_data / "struct" / "inlines+loops-x86_64-gcc10-dr.hpcstruct").modules[0]
    # 0x12c5 lies in f4_1 > loop 53 > inlined call at 54 > f4_inline > loop 48 > line 48 (read off the file).
    leaf = int(m.lookup([0x12C5])[0])
    steps = [(s.relation, s.kind, s.name, s.line, s.address) for s in m.lexical_path(leaf)]
    assert steps == [
        ("enclosure", "function", "f4_1 [inlines+loops-x86_64-gcc10-dr]", 52, 0x1280),
        ("enclosure", "loop", None, 53, 0x12B0),
        ("inlined_call", "line", None, 54, None),
        ("enclosure", "function", "f4_inline", 48, None),
        ("enclosure", "loop", None, 48, 0x12C0),
        ("enclosure", "line", None, 48, None),
    ]
    assert {s.file for s in m.lexical_path(leaf)} == {"/src/inlines+loops.c"}
    # A guard alien only switches the file: no step of its own (0x11f1 is in f3_3's guard, line 35).
    guard_steps = m.lexical_path(int(m.lookup([0x11F1])[0]))
    assert [(s.kind, s.line) for s in guard_steps] == [("function", 36), ("line", 35)]
    # Procedures without line information live in the [binary] pseudo-file.
    fini = m.lexical_path(int(m.lookup([0x138C])[0]))
    assert fini[0].name == "_fini [inlines+loops-x86_64-gcc10-dr]" and fini[0].file == "[inlines+loops-x86_64-gcc10-dr]"
    # Outside every statement: -1.
    assert m.lookup([0x0, 0x1395, 0x1110]).tolist()[:2] == [-1, -1]


def test_lookup_matches_a_naive_scan(hpctoolkit_data):
    m = read_hpcstruct(hpctoolkit_data / "meas" / "loops-cputime-t.m" / "structs" / "libgomp.so.1.0.0.hpcstruct"
                       ).modules[0]
    kinds = m.scopes["kind"]
    stmt = [(int(r["lo"]), int(r["hi"]), int(r["scope"])) for r in m.ranges if kinds[r["scope"]] in (S, C)]
    rng = np.random.default_rng(7)
    lo = min(s[0] for s in stmt)
    hi = max(s[1] for s in stmt)
    probes = rng.integers(lo - 16, hi + 16, 3000)
    got = m.lookup(probes).tolist()
    for addr, row in zip(probes.tolist(), got, strict=True):
        expect = next((s for a, b, s in stmt if a <= addr < b), -1)  # first claim in document order
        assert row == expect, hex(addr)


def test_call_sites_and_procedures_by_entry(hpctoolkit_data):
    m = read_hpcstruct(hpctoolkit_data / "struct" / "recursion-sm_75-nvcc112-0+gpucfg.hpcstruct").modules[0]
    assert m.has_calls is True
    cs = m.call_sites
    assert len(cs) == 9
    assert (cs["callee"] >= 0).all()  # every t names a procedure entry
    name = {int(r): m.text(int(m.scopes["name"][r])) for r in np.unique(np.r_[cs["caller"], cs["callee"]])}
    edges = {(name[int(c["caller"])].split("::")[-1], int(c["address"]), name[int(c["callee"])].split("::")[-1])
             for c in cs}
    assert ("heart()", 0x15040, "top1(double volatile*, int)") in edges  # <C i="39" ... t="0x13200">
    assert ("kernmain()", 0x15530, "heart()") in edges
    procs = m.procedures
    assert (np.diff(procs["entry"].astype(np.int64)) > 0).all()
    assert m.procedure_at(0x14A80) == int(cs["callee"][cs["address"] == 0x15530][0])
    assert m.procedure_at(0x14A81) == -1


def test_leaf_map_first_claim_wins_on_overlap():
    b = ModuleBuilder("/bin/x")
    f = b.add(F, -1, file="/x.c")
    p = b.add(P, f, name="p", line=1, ranges=[(0x100, 0x101)])
    b.add(S, p, line=2, ranges=[(0x100, 0x110), (0x120, 0x130)])
    s2 = b.add(S, p, line=3, ranges=[(0x108, 0x118), (0x130, 0x140)])
    m = b.finish()
    assert m.lookup([0x100, 0x10F, 0x110, 0x117, 0x12F, 0x130, 0x140]).tolist() == [1 + 1, 2, -1, -1, 2, s2, -1]


def test_builder_write_read_with_awkward_strings(tmp_path):
    b = ModuleBuilder('/tmp/we "quote" & <angle>\tand\nnewline é')
    f = b.add(F, -1, file="/src/ü.c")
    p = b.add(P, f, name="operator<<(std::ostream&, T const&) [lib]", link="_ZlsRSoRK1T", line=7, sym=3,
              ranges=[(0x10, 0x11)])
    outer = b.add(A, p, line=9, file="/src/ü.c", name="", ranges=[])
    inner = b.add(A, outer, line=2, file="/inc/h.h", name="inl", ranges=[])
    loop = b.add(L, inner, line=3, file="/inc/h.h", ranges=[(0x20, 0x21)])
    b.add(S, loop, line=3, ranges=[(0x20, 0x28)])
    b.add(C, p, line=10, ranges=[(0x30, 0x34)], target=0x10, device="NVIDIA sm_80")
    sf = StructureFile(modules=[b.finish()])
    renumber(sf)
    out = tmp_path / "x.hpcstruct"
    write_hpcstruct(out, sf)
    again = read_hpcstruct(out)
    assert sf.same_content(again)
    m = again.modules[0]
    assert m.path == '/tmp/we "quote" & <angle>\tand\nnewline é'
    assert m.scopes["id"].tolist() == [3, 4, 5, 6, 7, 8, 9] and m.id == 2
    steps = m.lexical_path(int(m.lookup([0x24])[0]))
    assert [(s.relation, s.kind, s.file, s.line) for s in steps] == [
        ("enclosure", "function", "/src/ü.c", 7),
        ("inlined_call", "line", "/src/ü.c", 9),
        ("enclosure", "function", "/inc/h.h", 2),
        ("enclosure", "loop", "/inc/h.h", 3),
        ("enclosure", "line", "/inc/h.h", 3),
    ]


def test_interrupted_writer_leaves_nothing(tmp_path, hpctoolkit_data, monkeypatch):
    sf = read_hpcstruct(hpctoolkit_data / "meas" / "small.m" / "structs" / "testmeas-small.hpcstruct")
    real_render = writer.render_module

    def dies_midway(m):
        yield next(real_render(m))
        raise KeyboardInterrupt

    monkeypatch.setattr(writer, "render_module", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        write_hpcstruct(tmp_path / "out.hpcstruct", sf)
    assert os.listdir(tmp_path) == []


PROLOGUE = '<?xml version="1.0"?>\n'
DOC = '<HPCToolkitStructure i="0" version="4.9" n="">\n<LM i="2" n="{n}" has-calls="0" v="{{}}">\n</LM>\n' \
      '</HPCToolkitStructure>\n'


@pytest.mark.parametrize("dtd, what", [
    ('<!DOCTYPE HPCToolkitStructure [<!ENTITY x "boom">]>', "declares the entity 'x'"),
    ('<!DOCTYPE HPCToolkitStructure [<!ENTITY x SYSTEM "file:///etc/passwd">]>', "declares the entity 'x'"),
    ('<!DOCTYPE HPCToolkitStructure [<!ENTITY % p "<!ENTITY y \'z\'>"> %p;]>', "parameter entity 'p'"),
    ('<!DOCTYPE HPCToolkitStructure [<!ENTITY u SYSTEM "http://example.invalid/x" NDATA gif>]>',
     "entity 'u'"),
])
def test_entity_declarations_are_refused(tmp_path, dtd, what):
    path = tmp_path / "evil.hpcstruct"
    path.write_text(PROLOGUE + dtd + "\n" + DOC.format(n="&x;"))
    with pytest.raises(FormatError, match=re.escape(what)):
        read_hpcstruct(path)


def test_billion_laughs_is_refused_without_expansion(tmp_path):
    lol = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">'
                                       for i in range(1, 10)]
    path = tmp_path / "laughs.hpcstruct"
    path.write_text(PROLOGUE + "<!DOCTYPE HPCToolkitStructure [" + "".join(lol) + "]>\n" + DOC.format(n="&lol9;"))
    start = time.monotonic()
    proc = run_cli("dump", str(path))
    assert time.monotonic() - start < 20
    assert_one_line_error(proc, "laughs.hpcstruct")
    assert "entity" in proc.stderr and "lol" not in proc.stdout


def test_undeclared_entity_and_external_dtd_are_refused(tmp_path):
    path = tmp_path / "ext.hpcstruct"
    path.write_text(PROLOGUE + DOC.format(n="&undeclared;"))
    with pytest.raises(FormatError, match="undefined entity|undeclared entity"):
        read_hpcstruct(path)
    path.write_text(PROLOGUE + '<!DOCTYPE HPCToolkitStructure SYSTEM "http://example.invalid/s.dtd">\n'
                    + DOC.format(n="/bin/&undeclared;"))
    with pytest.raises(FormatError, match="external DTD 'http://example.invalid/s.dtd'"):
        read_hpcstruct(path)
    path.write_text(PROLOGUE + DOC.format(n="/bin/a&amp;b&#10;"))  # predefined and character references
    assert read_hpcstruct(path).modules[0].path == "/bin/a&b\n"


def test_bad_files_give_one_line_errors(tmp_path, hpctoolkit_data):
    good = (hpctoolkit_data / "struct" / "inlines+loops-x86_64-gcc10-dr.hpcstruct").read_bytes()
    cases = {
        "truncated.hpcstruct": good[: len(good) * 2 // 3],
        "garbage.hpcstruct": b"<?xml version='1.0'?>\n<HPC\x00\xff\xfe garbage",
        "version.hpcstruct": good.replace(b'version="4.9"', b'version="5.1"'),
        "empty.hpcstruct": b"<?xml version='1.0'?>\n",
        "badv.hpcstruct": good.replace(b'v="{[0x1110-0x1111)}"', b'v="{[0x1110-0x1111"'),
        "badnest.hpcstruct": good.replace(b'<S i="5" l="14" v="{[0x1110-0x111e)}"/>',
                                          b'<S i="5" l="14" v="{[0x1110-0x111e)}"><S i="99" l="1"/></S>'),
        "badline.hpcstruct": good.replace(b'<S i="5" l="14"', b'<S i="5" l="x14"'),
        "other.hpcstruct": b"<?xml version='1.0'?>\n<html><body/></html>\n",
    }
    expected = {"truncated": "truncated", "version": "version 5.1 is not supported", "empty": "truncated",
                "badv": "not an address range set", "badnest": "not allowed directly inside <S>",
                "badline": "not a decimal integer", "other": "unexpected element <html>"}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        proc = run_cli("dump", str(path))
        assert_one_line_error(proc, name)
        stem = name.split(".")[0]
        if stem in expected:
            assert expected[stem] in proc.stderr, proc.stderr
    with pytest.raises(HpcsaError, match="no such file"):
        read_hpcstruct(tmp_path / "missing.hpcstruct")


def test_dump_cli_shows_the_tree(hpctoolkit_data):
    proc = run_cli("dump", str(hpctoolkit_data / "struct" / "inlines+loops-x86_64-gcc10-dr.hpcstruct"))
    assert proc.returncode == 0, proc.stderr
    assert "inlined f4_inline from /src/inlines+loops.c:48" in proc.stdout
    assert "loops: 11" in proc.stdout and "inlined_calls: 4" in proc.stdout and "guards: 2" in proc.stdout


def test_streaming_yields_modules_and_header(hpctoolkit_data):
    header = StructureFile()
    path = hpctoolkit_data / "meas" / "loops-cputime-t.m" / "structs" / "libc-2.31.so.hpcstruct"
    mods = list(iter_modules(path, header=header))
    assert header.version == "4.9" and len(mods) == 1 and mods[0].path.endswith("libc-2.31.so")
    assert "".join(render(StructureFile(modules=mods)))  # renders again without error


@pytest.mark.parametrize("part", [1, 7, 1000])
def test_a_module_read_in_parts_equals_it_read_whole(shared_data, monkeypatch, part):
    """Scopes are converted a part at a time; columns, ranges and the numbering of strings must be those of
    one pass over the whole module (the part size is only a memory bound)."""
    from hpcsa.formats.hpcstruct import stream

    files = sorted((shared_data / "hpctoolkit" / "meas").glob("*/structs/*.hpcstruct"))[:6]
    if not files:
        pytest.skip("no structure files in the shared data")
    monkeypatch.setattr(stream, "SCOPE_PART", 1 << 40)
    whole = [read_hpcstruct(f) for f in files]
    monkeypatch.setattr(stream, "SCOPE_PART", part)
    for f, w in zip(files, whole, strict=True):
        got = read_hpcstruct(f)
        assert len(got.modules) == len(w.modules)
        for a, b in zip(got.modules, w.modules, strict=True):
            assert np.array_equal(a.scopes, b.scopes), f
            assert np.array_equal(a.ranges, b.ranges), f
            assert a.strings == b.strings, f
