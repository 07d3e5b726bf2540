"""A call through a stub to a function that never returns ends its function, as in hpcstruct: where the
binary defines the function itself (ld.so calls its own ``_dl_signal_error`` through its PLT) and where the
stub is one of ``.plt.got`` (libstdc++ reaches ``std::terminate`` so). Before, hpcsa ran on past such calls
into the next function, whose code hpcprof then attributed to the one before it."""

from __future__ import annotations

import pytest

from hpcsa.structure.binary import analyze_binary
from tests.structure.measured import claimed_by_another, measured_library, procedures_of

CASES = {  # library: a function hpcsa used to let the one before it run into (hpcstruct never did)
    "ld-linux-x86-64.so.2": "decompose_rpath",
    "libstdc++.so.6.0.30": "__cxa_free_exception",
}


@pytest.mark.parametrize("library", sorted(CASES))
def test_functions_end_at_calls_through_never_returning_stubs(shared_data, library):
    ref = measured_library(shared_data, library)
    ours = analyze_binary(ref.path, lm_name=ref.path).module
    names = procedures_of(ours)
    entry = next((a for a, n in names.items() if n.startswith(CASES[library] + " [")), None)
    if entry is None or entry not in procedures_of(ref):
        pytest.skip(f"{ref.path} is another build than the measured one")
    theirs, mine = set(claimed_by_another(ref)), set(claimed_by_another(ours))
    assert entry not in mine and entry not in theirs
    # (of the procedures hpcstruct has: in a stripped library hpcsa finds more, hpcsa.structure.x86.stripped,
    # and the .cold parts among them are their parents' code, as in hpcstruct: test_dyninst_rules.py)
    mine &= set(procedures_of(ref))
    assert len(mine) <= len(theirs) + 1, sorted(names[a] for a in mine - theirs)
