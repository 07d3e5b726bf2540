"""No test installs a system package unless CI asks: every ``apt-get install`` in the tests is guarded by
``HPCSA_CI_INSTALL``, which ``.ci/run`` (and nothing else) sets."""

from __future__ import annotations

import re

from tests.conftest import ROOT

GUARD = "HPCSA_CI_INSTALL"


def test_apt_get_install_only_where_ci_asks() -> None:
    runs_apt = re.compile(r"""\[\s*["']apt-get["']\s*,\s*["']install["']""")
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if runs_apt.search(text):
            found.append(path.relative_to(ROOT))
            assert GUARD in text, f"{path.relative_to(ROOT)} runs apt-get unguarded"
    assert found, "no test installs anything: drop this test and the variable"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^export {GUARD}=1$", ci, re.MULTILINE)
