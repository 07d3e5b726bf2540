"""Agreement of ``hpcsa struct`` with real hpcstruct on every x86-64 binary in ../shared/data, and what it finds
in the stripped binaries there, judged by address against their unstripped twins.

Tables printed (markdown):

* one row per binary with a real hpcstruct file beside it: HPCToolkit's 48 x86-64 test binaries
  (``hpctoolkit/bin`` -> ``hpctoolkit/struct``), the C++ and computed-goto programs of ``hpctoolkit-extra``, and
  the system libraries the real run ``meas-cxx1024`` measured (its ``structs/``; each skipped where the library
  at the recorded path is another build): procedures, statements (line + scope), loops, as
  :func:`hpcsa.formats.hpcstruct.compare.compare` scores them;
* one row per stripped binary of ``hpctoolkit-extra/stripped``: procedure entries and loops (enclosing entry,
  lowest address) of hpcsa's output for the stripped file against real hpcstruct's for the unstripped twin
  (:func:`hpcsa.formats.hpcstruct.compare.address_agreement`), and what real hpcstruct found in the stripped file;
* one row per stripped system library the real run measured (no ``.symtab``, no debug file: no twin): the
  share of hpcstruct's procedure entries and loop addresses hpcsa finds too, and the procedures hpcsa finds
  beyond them, with how many of those start an FDE of ``.eh_frame``. Here hpcsa finds more than hpcstruct
  (hpcsa.structure.x86.stripped), so the agreement scores above are lower than where both see the same.

    .venv/bin/python benchmarks/bench_struct_agreement.py [--only SUBSTRING ...] [--record]

``--record`` writes benchmarks/results/struct_agreement.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data"))
sys.path.insert(0, str(ROOT))

from hpcsa.formats.hpcstruct.compare import HEADER, address_agreement, compare, loop_addresses  # noqa: E402
from hpcsa.formats.hpcstruct.model import L, P  # noqa: E402
from hpcsa.formats.hpcstruct.reader import read_hpcstruct  # noqa: E402
from hpcsa.structure.binary import analyze_binary  # noqa: E402
from hpcsa.structure.elf import open_elf  # noqa: E402

MEASURED = DATA / "hpctoolkit-extra" / "meas-cxx1024" / "structs"


def pairs() -> list[tuple[str, Path, Path]]:
    """(label, binary, real hpcstruct file) for every x86-64 binary with a reference."""
    out = []
    hpctk = DATA / "hpctoolkit"
    for b in sorted((hpctk / "bin").glob("*-x86_64-*")):
        if not b.name.endswith(".license"):
            out.append((b.name, b, hpctk / "struct" / f"{b.name}.hpcstruct"))
    extra = DATA / "hpctoolkit-extra"
    for ref in sorted((extra / "struct").glob("*.hpcstruct")):
        out.append((ref.stem, extra / "bin" / ref.stem, ref))
    for ref in sorted(MEASURED.glob("*.hpcstruct")):
        path = Path(read_hpcstruct(ref).modules[0].path)
        if ref.stem == "cxx-gcc-O2":
            path = extra / "bin" / "cxx-gcc-O2"
        out.append((f"measured {ref.stem}", path, ref))
    return out


def agreement_rows(only: list[str]) -> list[str]:
    rows = []
    for label, binary, ref_path in pairs():
        if only and not any(s in label for s in only):
            continue
        if not binary.is_file():
            rows.append(f"{label:<34} (absent: {binary})")
            continue
        ref = read_hpcstruct(ref_path).modules[0]
        ours = analyze_binary(binary, lm_name=ref.path).module
        if ours.count(P) and ref.count(P) and not _same_build(ref, ours):
            rows.append(f"{label:<34} (another build of {binary} is installed here)")
            continue
        # hpctoolkit-extra's same-length path rewrite left clang's DWARF 5 `/tmp` + `extra-src/...` where
        # hpcstruct's text names `/opt/extra-src/...` (see tests/structure/test_struct_agreement.py).
        ours = dataclasses.replace(ours, strings=[s.replace("/tmp/extra-src/", "/opt/extra-src/") if s else s
                                                  for s in ours.strings])
        a = compare(ref, ours, open_elf(binary).read)
        rows.append(a.row(label))
        print(rows[-1], file=sys.stderr)
    return rows


def _same_build(ref, ours) -> bool:  # type: ignore[no-untyped-def]
    """Most of the reference's procedure entries are procedure entries of ours (else: another build)."""
    theirs = set(ref.procedures["entry"].tolist())
    mine = set(ours.procedures["entry"].tolist())
    return len(theirs & mine) >= 0.5 * len(theirs)


STRIPPED_HEADER = (f"{'stripped binary':<30} {'entry recall':>12} {'precision':>9} {'loop recall':>11} "
                   f"{'precision':>9}   {'entries twin/ours':>17}   {'loops twin/ours':>15}   hpcstruct P/L")


def stripped_rows(only: list[str]) -> list[str]:
    rows = []
    base = DATA / "hpctoolkit-extra"
    for binary in sorted((base / "stripped" / "bin").glob("*-stripped")):
        name = binary.name.removesuffix("-stripped")
        if only and not any(s in binary.name for s in only):
            continue
        twin = read_hpcstruct(base / "struct" / f"{name}.hpcstruct").modules[0]
        theirs = read_hpcstruct(base / "stripped" / "struct" / f"{binary.name}.hpcstruct").modules[0]
        ours = analyze_binary(binary).module
        a = address_agreement(twin, ours)
        rows.append(f"{binary.name:<30} {100 * a.entry_recall:11.1f}% {100 * a.entry_precision:8.1f}% "
                    f"{100 * a.loop_recall:10.1f}% {100 * a.loop_precision:8.1f}%   "
                    f"{a.n_entries[0]:>8}/{a.n_entries[1]:<8}   {a.n_loops[0]:>7}/{a.n_loops[1]:<7}   "
                    f"{theirs.count(P)}/{theirs.count(L)}")
        print(rows[-1], file=sys.stderr)
    return rows


LIB_HEADER = (f"{'stripped library':<24} {'hpcstruct entries found':>23} {'loop addresses found':>20} "
              f"{'extra procedures':>16} {'of them FDE starts':>18}")


def stripped_library_rows(only: list[str]) -> list[str]:
    rows = []
    for ref_path in sorted(MEASURED.glob("*.hpcstruct")):
        if only and not any(s in ref_path.stem for s in only):
            continue
        ref = read_hpcstruct(ref_path).modules[0]
        if not Path(ref.path).is_file():
            continue
        image = open_elf(ref.path)
        if image.has_symtab or image.debug_symtab is not None:
            continue
        ours = analyze_binary(ref.path, lm_name=ref.path).module
        a = address_agreement(ref, ours)
        theirs_loops = {addr for _e, addr in loop_addresses(ref)}
        mine_loops = {addr for _e, addr in loop_addresses(ours)}
        found = a.n_entries[0] - len(a.missed_entries)
        fdes = sum(e in image.fde_ranges for e in a.extra_entries)
        rows.append(f"{ref_path.stem:<24} {found:>11}/{a.n_entries[0]:<11} "
                    f"{len(theirs_loops & mine_loops):>9}/{len(theirs_loops):<10} {len(a.extra_entries):>16} {fdes:>18}")
        print(rows[-1], file=sys.stderr)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=[], metavar="SUBSTRING", help="binaries whose label holds one")
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/struct_agreement.md")
    ap.add_argument("--no-stripped", action="store_true")
    ap.add_argument("--no-agreement", action="store_true")
    args = ap.parse_args()
    t = time.perf_counter()
    rows = [] if args.no_agreement else agreement_rows(args.only)
    srows = [] if args.no_stripped else stripped_rows(args.only)
    lrows = [] if args.no_stripped else stripped_library_rows(args.only)
    lines = ["# hpcsa struct against real hpcstruct, every x86-64 binary of ../shared/data", "",
             f"Recorded {time.strftime('%Y-%m-%d %H:%M')} by `benchmarks/bench_struct_agreement.py` "
             f"({time.perf_counter() - t:.0f} s).", "",
             "Scores in percent (matched / the larger count); see hpcsa/formats/hpcstruct/compare.py.", "",
             "```", HEADER, *rows, "```", "",
             "## Stripped binaries, judged by address against the unstripped twin", "",
             "Truth: real hpcstruct's procedure entries and loops (enclosing procedure entry, lowest address) "
             "for the unstripped binary; stripping moves no code. Last column: what real hpcstruct found in the "
             "stripped file (procedures/loops).", "",
             "```", STRIPPED_HEADER, *srows, "```", "",
             "## Stripped system libraries of the real run (no twin)", "",
             "hpcstruct's procedure entries and loop addresses that hpcsa finds too, and the procedures hpcsa "
             "finds beyond hpcstruct's (most start an FDE; the others are PLT stubs, the loader's entries and "
             "call targets).", "",
             "```", LIB_HEADER, *lrows, "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        (ROOT / "benchmarks" / "results" / "struct_agreement.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
