"""hpcprof's reading of a binary without a structure file (structure/direct.py): its merge and claim
rules checked by hand on small cases, the fixture library read whole, and mutated binaries fuzzed."""

from __future__ import annotations

import numpy as np

from hpcsa.aggregate.lexical import read_binary
from hpcsa.core.demangle import demangle
from hpcsa.formats.hpcstruct.model import A, P, S
from hpcsa.structure.direct import Function, _claimed, _line_table, _Node, _post_order, read_direct
from tests.conftest import FIXTURES
from tests.fuzzing import fuzz_reader

SAMPLE = FIXTURES / "structure" / "sample.so"


def test_function_merge_follows_hpcprof():
    """Lowest entry, lexically first file (lowest positive line in it), lexically first name."""
    f = Function()
    f.merge("zeta", 0x40, "b.c", 7, )
    f.merge("alpha", 0x20, "b.c", 3)
    f.merge("", -1, "a.c", 0)
    assert (f.name, f.offset, f.file, f.line) == ("alpha", 0x20, "a.c", 0)
    f.merge("beta", 0x30, "a.c", 9)
    assert (f.name, f.offset, f.file, f.line) == ("alpha", 0x20, "a.c", 9)  # line 0 gives way
    f.merge("beta", 0x10, None, 0)  # no file: the file stays
    assert (f.offset, f.file, f.line) == (0x10, "a.c", 9)


def test_children_claim_before_parents_and_earlier_units_first():
    # Pre-order parents: 0 (a function) holds 1 (inlined) which holds 2; 3 is a second top function.
    assert _post_order([-1, 0, 1, -1], 0) == [2, 1, 0, 3]
    nodes = [_Node(-1, 0, False, "", 0, [(0, 100)]), _Node(0, 1, True, "a.c", 5, [(10, 30)]),
             _Node(1, 2, True, "a.c", 6, [(20, 25)]), _Node(-1, 3, False, "", 0, [(90, 120)])]
    bounds, owner = _claimed(nodes, [2, 1, 0, 3])
    got = {(int(bounds[i]), int(bounds[i + 1])): int(owner[i]) for i in range(len(bounds) - 1)}
    assert got == {(0, 10): 0, (10, 20): 1, (20, 25): 2, (25, 30): 1, (30, 90): 0, (90, 100): 0, (100, 120): 3}


def test_rows_at_one_address():
    """A row with a file beats one without; of one file the lower line; of two the file first used."""
    addr = np.array([0x10, 0x10, 0x10, 0x20, 0x20, 0x30], np.uint64)
    fid = np.array([-1, 1, 1, 1, 0, -1])
    line = np.array([1, 9, 4, 2, 8, 3])
    a, f, ln = _line_table([(addr, fid, line)])
    assert a.tolist() == [0x10, 0x20, 0x30] and f.tolist() == [1, 0, -1] and ln.tolist()[:2] == [4, 8]


def test_rows_at_one_address_merge_in_any_order():
    """hpcprof merges the rows of one address by a minimum, so neither their order in the program nor the
    unit they come from decides; nor does being last (libm's fmod entry: e_fmod.c 27, 28, 29, 31, 31, 31 at
    one address gives 27, as in hpcprof's database)."""
    addr = np.array([0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x50, 0x50, 0x50, 0x60, 0x60], np.uint64)
    fid = np.array([2, 2, 2, 2, 2, 2, 3, 3, 1, -1, 4])
    line = np.array([27, 28, 29, 31, 31, 31, 947, 947, 239, 5, 0])
    expected = ([0x40, 0x50, 0x60], [2, 1, 4], [27, 239, 0])
    rng = np.random.default_rng(46)
    for _ in range(20):
        perm = rng.permutation(len(addr))
        cut = int(rng.integers(0, len(addr) + 1))  # the rows split over two units
        units = [(addr[perm[:cut]], fid[perm[:cut]], line[perm[:cut]]),
                 (addr[perm[cut:]], fid[perm[cut:]], line[perm[cut:]])]
        a, f, ln = _line_table(units)
        assert (a.tolist(), f.tolist(), ln.tolist()) == expected


def test_fixture_library_read_whole():
    """sample.so (gcc -O2 -g): square_sum inlined into nest at line 19, its lines under it."""
    d = read_direct(SAMPLE, demangle)
    m = d.module
    names = {d.functions[int(d.function_of[r])].name for r in np.flatnonzero(m.scopes["kind"] == P).tolist()}
    assert {"nest", "dispatch", "fact", "checked"} <= names
    outer = [r for r in np.flatnonzero(m.scopes["kind"] == A).tolist()
             if d.function_of[r] < 0 and m.text(int(m.scopes["name"][r])) is None]
    assert any(int(m.scopes["line"][r]) == 19 for r in outer)  # the call line of the inlined call
    fn = {f.name: f for f in d.functions}
    assert fn["nest"].file.endswith("sample.c") and fn["nest"].line == 14 and fn["square_sum"].line == 7
    assert int(np.count_nonzero(m.scopes["kind"] == S)) > 20 and len(m.leaf_map) > 20


def test_fuzz_read_binary(tmp_path):
    """Mutated libraries: DWARF and symbols are read, or the binary is passed over; never an exception."""
    def read(path: str) -> None:
        read_binary(path, path, [])

    fuzz_reader(read, [SAMPLE], tmp_path, ".so")
