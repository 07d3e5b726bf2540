"""The regression gate: a planted 10 % regression in one context is the only context named; noise from
repeated runs; exit status of the command."""

from __future__ import annotations

import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.views.compare import compare
from hpcsa.views.compare.gate import evaluate, parse_rule
from tests.conftest import run_cli
from tests.views.compare.builders import write_run

LEAF = "main thread / main / a.c:10 / → solve / loop at a.c:20 / a.c:21"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("gate")
    return {"base": str(write_run(d / "base.d", loop=10, tail=2, own=1, io=3)),
            # +10 % in a.c:21 alone: its loop, solve, line 10, main and the root grow 6-10 % with it
            "slow": str(write_run(d / "slow.d", loop=11, tail=2, own=1, io=3)),
            "rep1": str(write_run(d / "rep1.d", loop=8.5, tail=2, own=1, io=3)),
            "rep2": str(write_run(d / "rep2.d", loop=11.5, tail=2, own=1, io=3)),
            "new1": str(write_run(d / "new1.d", loop=10.8, tail=2, own=1, io=3)),
            "new2": str(write_run(d / "new2.d", loop=11.2, tail=2, own=1, io=3))}


def test_rules_parse():
    r = parse_rule("CPUTIME (sec):I > 5%")
    assert (r.metric, r.side, r.op, r.threshold, r.relative) == ("CPUTIME (sec)", "inclusive", ">", 0.05, True)
    r = parse_rule("GXCOPY:H2D (B):E >= 1e6")
    assert (r.metric, r.side, r.op, r.threshold, r.relative) == ("GXCOPY:H2D (B)", "exclusive", ">=", 1e6, False)
    assert parse_rule("CPUTIME < -5%").threshold == -0.05
    with pytest.raises(HpcsaError):
        parse_rule("CPUTIME grows a lot")


@pytest.mark.parametrize("side", ["I", "E"])
def test_a_planted_regression_is_the_only_context_named(runs, side):
    cmp = compare([runs["base"], runs["slow"]])
    result = evaluate(cmp, [parse_rule(f"CPUTIME (sec):{side} > 5%")])
    assert [c.path for c in result.crossings] == [LEAF]
    c = result.crossings[0]
    assert (c.reference_value, c.value) == (10, 11) and c.relative == pytest.approx(0.10)
    # what held the leaf crossed too (the loop +10 %; inclusive: solve +8.3 %, line 10, main +6.25 %...)
    assert result.folded >= 1


def test_a_change_below_the_line_is_not_named(runs):
    cmp = compare([runs["base"], runs["slow"]])
    assert not evaluate(cmp, [parse_rule("CPUTIME:I > 10.5%")]).failed
    assert not evaluate(cmp, [parse_rule("CPUTIME:I < -1%")]).failed  # nothing got faster


def test_compare_a_with_itself_crosses_nothing(runs):
    cmp = compare([runs["base"], runs["base"]])
    assert not evaluate(cmp, [parse_rule("CPUTIME:I > 0%"), parse_rule("CPUTIME:E < 0%")], min_share=0).failed


def test_repeated_runs_set_the_noise(runs):
    # base, rep1, rep2: a.c:21 = 10, 8.5, 11.5 (mean 10, spread 3); new1, new2: 10.8, 11.2 (mean 11, +10 %)
    dbs = [runs[k] for k in ("base", "rep1", "rep2", "new1", "new2")]
    meta = [{"config": "old"}] * 3 + [{"config": "new"}] * 2
    grouped = compare(dbs, meta=meta, group_by="config")
    rule = parse_rule("CPUTIME (sec):E > 5%")
    assert not evaluate(grouped, [rule]).failed  # +1 is within the old runs' spread of 3
    named = evaluate(grouped, [rule], noise=0)  # without the noise rule, the mean's +10 % counts
    assert [c.path for c in named.crossings] == [LEAF]
    assert named.crossings[0].compared == "config=new" and named.crossings[0].reference == "config=old"


def test_against_the_mean_of_the_others(runs):
    dbs = [runs[k] for k in ("base", "base", "base", "slow")]
    result = evaluate(compare(dbs), [parse_rule("CPUTIME:E > 5%")], against="mean")
    assert [(c.compared, c.path) for c in result.crossings] == [("slow", LEAF)]


def test_the_command_prints_only_the_crossings_and_exits_1(runs):
    proc = run_cli("compare", runs["base"], runs["slow"], "--fail-if", "CPUTIME (sec):I > 5%")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(LEAF + ": +10.0%")
    ok = run_cli("compare", runs["base"], runs["base"], "--fail-if", "CPUTIME (sec):I > 5%")
    assert ok.returncode == 0 and ok.stdout == "" and "no context crossed" in ok.stderr
