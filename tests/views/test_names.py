"""Short procedure names (:mod:`hpcsa.views.names`): C++ names without template arguments and parameter
lists, the form hatchet and hpcviewer users know; names that are not C++ kept; distinct names kept distinct
-- by hand-written expectations and on the real C++ and CUDA (CloverLeaf) databases' procedure names."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcsa.formats.db.database import open_database
from hpcsa.views.names import ShortNames, short_name


@pytest.mark.parametrize(("full", "short"), [
    ("std::vector<int, std::allocator<int> >::push_back(int const&)", "std::vector::push_back"),
    ("void clover::par_ranged2d_kernel<advec_mom_kernel(int, int)::{lambda(int, int)#3}>(clover::Range2d, "
     "advec_mom_kernel(int, int)::{lambda(int, int)#3})", "clover::par_ranged2d_kernel"),
    ("int const& std::max<int>(int const&, int const&)", "std::max"),  # a return type with qualifiers
    ("char const* volatile* foo::bar(int)", "foo::bar"),
    ("std::vector<char const*>::size() const", "std::vector::size"),
    ("foo(int) [clone .constprop.0]", "foo [clone .constprop.0]"),
    ("std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
     "(std::basic_ostream<char, std::char_traits<char> >&, char const*)", "std::operator<<"),
    ("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper"),
    ("main", "main"), ("dgemm_", "dgemm_"), ("<gpu kernel>", "<gpu kernel>"),
    ("<unknown procedure> 0x40 [libm.so.6]", "<unknown procedure> 0x40 [libm.so.6]"),
    ("broken<(int", "broken<(int"),  # not read as C++: kept as it is
])
def test_short_names(full: str, short: str) -> None:
    assert short_name(full) == short


def test_template_arguments_levels() -> None:
    assert short_name("int const& std::max<int>(int const&, int const&)", 1) == "std::max<int>"
    assert short_name("void f<&(g(int))>(int)", 1) == "f<&g>"  # a function's address as the argument
    assert short_name("std::vector<int, std::allocator<int> >::push_back(int const&)", 1) == \
        "std::vector<int, std::allocator>::push_back"
    assert short_name("std::vector<int, std::allocator<int> >::push_back(int const&)", 2) == \
        "std::vector<int, std::allocator<int>>::push_back"


def test_nvcc_extended_lambdas() -> None:
    """nvcc's host-device lambda wrapper reads as the function and number that name the lambda."""
    tag = "__nv_dl_tag<void (*)(bool, int, clover::Buffer2D<double>&), &(PdV_kernel(bool, int, clover::Buffer2D<double>&)), 2u>"
    name = (f"void clover::par_ranged2<256ul, __nv_hdl_wrapper_t<false, false, {tag}, void (int, int), double> >"
            f"(clover::Range2d const&, __nv_hdl_wrapper_t<false, false, {tag}, void (int, int), double>)")
    assert short_name(name) == "clover::par_ranged2"
    assert short_name(name, 1) == "clover::par_ranged2<256ul, PdV_kernel::{hd lambda#2}>"
    device = "clover::par_ranged2d_kernel<PdV_kernel(bool, int)::{lambda(int, int)#2}>(clover::Range2d)"
    assert short_name(device, 1) == "clover::par_ranged2d_kernel<PdV_kernel::{lambda#2}>"


def test_distinct_names_stay_distinct() -> None:
    names = ["void k<A::{lambda(int)#1}>(int)", "void k<B::{lambda(int)#1}>(int)", "f(int)", "f(double)",
             "g<int>()", "h<x<1> >(int)", "h<x<2> >(int)", "main", "main"]
    assert ShortNames(names).short == ["k<A::{lambda#1}>", "k<B::{lambda#1}>", "f(int)", "f(double)", "g",
                                       "h<x<1>>", "h<x<2>>", "main", "main"]


def test_real_names(shared_data: Path) -> None:
    """The C++ run: its longest name, 787 characters, and every other one read in at most 120."""
    path = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (path / "meta.db").is_file():
        pytest.skip(f"{path} is absent")
    full = list(open_database(path).meta.functions.names)
    short = ShortNames(full).short
    owners: dict[str, set[str]] = {}
    for f, s in zip(full, short, strict=True):
        owners.setdefault(s, set()).add(f)
        assert len(s) <= len(f)
    assert all(len(v) == 1 for v in owners.values())  # no two different full names read alike
    assert max(map(len, short)) <= 120 < 787 == max(map(len, full))


def test_view_full_names_switch(shared_data: Path) -> None:
    """``hpcsa view`` shows short names, the full ones with ``--full-names``; the rows are the same."""
    import json

    from tests.conftest import run_cli

    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    if not (db / "meta.db").is_file():
        pytest.skip(f"{db} is absent")
    args = ("view", str(db), "--view", "flat", "--depth", "3", "--top", "0", "--format", "json")
    short = [r for r in json.loads(run_cli(*args, check=True).stdout)["rows"] if "label" in r]
    full = [r for r in json.loads(run_cli(*args, "--full-names", check=True).stdout)["rows"] if "label" in r]
    assert [r["values"] for r in short] == [r["values"] for r in full]
    changed = [(s["label"], f["label"]) for s, f in zip(short, full, strict=True) if s["label"] != f["label"]]
    assert changed and all(len(s) < len(f) for s, f in changed)
    assert max(len(r["label"]) for r in short) <= 122 < max(len(r["label"]) for r in full)
