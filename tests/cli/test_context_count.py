"""One count of "contexts" (hpcsa.formats.db.database.context_count: meta.db's entry points and the contexts
below them, as hpcviewer shows them) printed alike by ``hpcsa prof``, ``hpcsa stats`` and ``hpcsa serve`` on
a real database (they printed 893, 594 and 597 for this one: context ids, meta.db's contexts without the
entry points, and the view's rows with the root)."""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db import metadb
from hpcsa.formats.db.database import context_count, open_database
from tests.conftest import run_cli
from tests.interrupting import sigint_as_in_a_terminal


@pytest.fixture(scope="module")
def prof_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    meas = shared_data / "hpctoolkit-extra" / "meas-cxx1024"
    if not meas.is_dir():
        pytest.skip(f"{meas} is absent")
    db = tmp_path_factory.mktemp("contexts") / "cxx.d"
    proc = run_cli("prof", str(meas), "-o", str(db), check=True)
    return db, proc.stderr + proc.stdout


def _counted(text: str, pattern: str) -> int:
    m = re.search(pattern, text)
    assert m, text
    return int(m.group(1).replace(",", ""))


def _serve_counts(db: Path) -> tuple[int, int]:
    """(the count ``hpcsa serve`` prints when ready, the one its page shows from /api/info)."""
    proc = subprocess.Popen([sys.executable, "-m", "hpcsa", "serve", str(db), "--port", "0"],
                            preexec_fn=sigint_as_in_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        head = [proc.stdout.readline() for _ in range(2)] if proc.stdout else []
        url = head[1].split("open ", 1)[1].strip()
        with urllib.request.urlopen(url.replace("/?", "/api/info?"), timeout=30) as r:
            info = json.loads(r.read())
        return _counted(head[0], r"([\d,]+) contexts"), int(info["contexts"])
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_definition(prof_run: tuple[Path, str]) -> None:
    db = open_database(prof_run[0])
    tree = db.meta.contexts
    assert tree is not None
    n = context_count(db.meta)
    assert n == db.n_contexts() == len(tree.entry_points) + len(tree) == 596  # 2 entry points, 594 below
    assert db.n_ctx_ids() == 893 > n  # ids of elided instruction contexts too
    assert not metadb.elided(tree).any()  # a written meta.db holds none
    # meta.db about to be written: its instructions nested in their parent are not counted, as it drops them
    extra = metadb.ContextTree.from_columns(
        tree.entry_points, ctx_id=[*tree.ctx_id.tolist(), 10_000], parent=[*tree.parent.tolist(), 0],
        entry=[*tree.entry.tolist(), int(tree.entry[0])], relation=[*tree.relation.tolist(), metadb.LEXICAL],
        lexical_type=[*tree.lexical_type.tolist(), metadb.INSTRUCTION])
    assert len(extra) == len(tree) + 1 and int(np.count_nonzero(metadb.elided(extra))) == 1
    assert context_count(dataclasses.replace(db.meta, contexts=extra)) == n


def test_stats_and_the_served_page_count_the_definition(prof_run: tuple[Path, str]) -> None:
    db = prof_run[0]
    n = open_database(db).n_contexts()
    stats = run_cli("stats", str(db), check=True).stdout
    assert _counted(stats, r"contexts ([\d,]+) \(") == n and "(893 context ids)" in stats
    assert json.loads(run_cli("stats", str(db), "--format", "json", check=True).stdout)["contexts"] == n
    assert _serve_counts(db)[1] == n


def test_prof_stats_and_serve_print_the_same_count(prof_run: tuple[Path, str]) -> None:
    db, prof_text = prof_run
    stats = run_cli("stats", str(db), check=True).stdout
    printed, page = _serve_counts(db)
    counts = {"prof": _counted(prof_text, r"profiles, ([\d,]+) contexts"),
              "stats": _counted(stats, r"contexts ([\d,]+) \("), "serve": printed, "serve page": page}
    assert set(counts.values()) == {open_database(db).n_contexts()}, counts
