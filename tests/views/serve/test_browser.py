"""``hpcsa serve`` in a real browser (headless Chromium from Debian, driven by selenium).

One browser for the module, one server per database; the page is clicked through its views, sorting,
flattening, hot path, source pane, per-profile plots, filters, search and shared links, and what it shows is
checked against ``hpcsa view --format json`` / ``hpcsa imbalance --format json`` (numbers as the text tables
print them: one notation per metric, :func:`hpcsa.views.render.notation`, from the values the page shows).
The trace views are tested in ``test_browser_trace.py``, names, layout and the other tools in
``test_browser_tools.py``. Screenshots go to the ``shots`` folder (``build/screenshots/serve``, never
committed), for a person to look at.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hpcsa.formats.db.database import open_database
from hpcsa.views.render import compact, notation, percent
from tests.conftest import run_cli
from tests.views.serve.helpers import Served, serving
from tests.views.serve.pages import click, idle, load, rows, view_json, wait


@pytest.fixture(scope="module")
def served(cxx: Path) -> Iterator[Served]:
    with serving(cxx) as s:
        yield s


def check_against(shown: list[dict[str, Any]], doc: dict) -> None:
    """Every shown row is a row of ``hpcsa view``'s JSON, in the same order, with its values and texts (each
    metric in the one notation its shown values choose, as ``hpcsa view`` prints them)."""
    ref = [r for r in doc["rows"] if "label" in r]
    heads = [(c["name"] + (" (I)" if c["side"] == "inclusive" else " (E)"), c["total"]) for c in doc["columns"]]
    metric = [c["name"] for c in doc["columns"]]
    write = {m: notation([row["values"][k] or 0.0 for row in shown for k in range(len(heads)) if metric[k] == m])
             for m in metric}
    at = 0
    for row in shown:
        while at < len(ref) and (ref[at]["depth"], ref[at]["label"]) != (row["depth"], row["label"]):
            at += 1
        assert at < len(ref), f"row {row['label']!r} (depth {row['depth']}) is not in hpcsa view's output"
        want = [ref[at]["values"][h] for h, _ in heads]
        assert row["values"] == want, row["label"]
        for k, (text, v, (h, total)) in enumerate(zip(row["texts"], want, heads, strict=True)):
            assert text.replace("\xa0", " ").split(" ")[0] == write[metric[k]](v or 0.0), (row["label"], h)
            if v and "%" in text:
                assert text.endswith(percent(v, total)), (row["label"], h)
        at += 1


def test_views_sort_flatten(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    load(browser, served.url)
    shown = rows(browser)
    assert len(shown) >= 5 and shown[0]["label"] == "Experiment Aggregate Metrics"
    check_against(shown, view_json(cxx, "--depth", "4"))
    browser.save_screenshot(str(shots / "top-down.png"))
    # sort by the exclusive column: siblings in descending exclusive order
    click(browser, '#tree-head th[data-sort="0:e"]')
    check_against(rows(browser), view_json(cxx, "--depth", "4", "--sort", "CPUTIME (sec) (E)"))
    click(browser, '#tree-head th[data-sort="0:i"]')
    click(browser, '#views [data-view="bottom-up"]')
    check_against(rows(browser), view_json(cxx, "--view", "bottom-up", "--depth", "2"))
    click(browser, '#views [data-view="flat"]')
    check_against(rows(browser), view_json(cxx, "--view", "flat", "--depth", "2"))
    click(browser, "#flatten-more")
    shown = rows(browser)
    check_against(shown, view_json(cxx, "--view", "flat", "--flatten", "1", "--depth", "2"))
    assert browser.find_element("id", "flatten-n").text == "1"
    browser.save_screenshot(str(shots / "flat.png"))


def test_hot_path_source_and_profiles(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    load(browser, served.url)
    click(browser, "#hot")
    hot = view_json(cxx, "--hot-path")["hot_path"]["nodes"]
    shown = rows(browser)
    assert [r["label"] for r in shown if r["hot"]] == [n["label"] for n in hot]
    sel = [r for r in shown if r["sel"]]
    assert len(sel) == 1 and sel[0]["label"] == hot[-1]["label"]
    # keys: up moves to the row above, left (on a closed node) to the parent
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    at = [r["node"] for r in shown].index(sel[0]["node"])
    ActionChains(browser).send_keys(Keys.ARROW_UP).perform()
    idle(browser)
    assert [r["node"] for r in rows(browser) if r["sel"]] == [shown[at - 1]["node"]]
    ActionChains(browser).send_keys(Keys.ARROW_DOWN).perform()
    idle(browser)
    ActionChains(browser).send_keys(Keys.ARROW_LEFT).perform()
    idle(browser)
    parent = next(r for r in reversed(shown[:at]) if r["depth"] < shown[at]["depth"])
    assert [r["node"] for r in rows(browser) if r["sel"]] == [parent["node"]]
    click(browser, f'#tree-body tr[data-node="{sel[0]["node"]}"]')
    # source pane: the copy in src/, at the line
    click(browser, '#panes [data-pane="source"]')
    wait(browser, lambda: browser.find_elements("css selector", "#source .ln.at"), "the source line")
    line = browser.find_element("css selector", "#source .ln.at")
    # the end of the hot path is a procedure frame: the pane shows where meta.db says it is defined
    meta = open_database(cxx).meta
    row = int(np.flatnonzero(meta.contexts.ctx_id == hot[-1]["ctx_id"])[0])
    f = int(meta.contexts.function[row])
    file, want_line = meta.files[int(meta.functions.file[f])], int(meta.functions.line[f])
    assert file.startswith("src/") and int(meta.file_flags[int(meta.functions.file[f])]) & 1
    assert int(line.get_attribute("data-n")) == want_line
    assert line.text.rstrip() == (cxx / file).read_text().splitlines()[want_line - 1].rstrip()
    head = browser.find_element("id", "source-head")
    assert (head.get_attribute("data-file"), head.get_attribute("data-line")) == (file, str(want_line))
    # the callee shares its row with its call-site line: a link shows that line
    site = meta.contexts.parent[row]
    site_file, site_line = meta.files[int(meta.contexts.file[site])], int(meta.contexts.line[site])
    click(browser, "#source-other")
    wait(browser, lambda: head.get_attribute("data-line") == str(site_line), "the call site")
    at = browser.find_element("css selector", "#source .ln.at")
    assert head.get_attribute("data-file") == site_file and at.get_attribute("data-n") == str(site_line)
    assert at.text.rstrip() == (cxx / site_file).read_text().splitlines()[site_line - 1].rstrip()
    browser.save_screenshot(str(shots / "source.png"))
    # profiles pane: the statistics of hpcsa imbalance for this context
    click(browser, '#panes [data-pane="profiles"]')
    wait(browser, lambda: browser.find_elements("css selector", "#dist-stats td"), "the statistics")
    ref = json.loads(run_cli("imbalance", str(cxx), "--format", "json", "--context", f"#{hot[-1]['ctx_id']}",
                             check=True).stdout)["context"]
    for k in ("min", "mean", "max", "stddev", "imbalance"):
        cell = browser.find_element("css selector", f'#dist-stats td[data-stat="{k}"]')
        assert float(cell.get_attribute("data-v")) == pytest.approx(ref[k], rel=1e-12, abs=1e-15), k
        assert cell.text == (compact(ref[k]) or "0"), k
    drawn = browser.execute_script("""const c = document.getElementById('dist-hist');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;""")
    assert drawn > 500, "the histogram is not drawn"
    browser.save_screenshot(str(shots / "profiles.png"))


def test_filters_search_and_shared_link(browser: Any, served: Served, cxx: Path) -> None:
    load(browser, served.url)
    click(browser, "#hot")
    before = {r["label"]: r for r in rows(browser)}
    victim = next(r for r in rows(browser) if "[clone ._omp_fn.0]" in r["label"] and "→" in r["label"])
    parent_label = "libgomp.so.1.0.0+0x1cd8d"
    assert parent_label in before
    browser.find_element("css selector", "#filters-menu summary").click()
    browser.find_element("id", "filter-pattern").send_keys("parallel_energy(*) [[]clone*")
    browser.find_element("css selector", '#filter-mode option[value="both"]').click()
    click(browser, "#filter-add")
    browser.find_element("css selector", "#filters-menu summary").click()  # the menu stays open for more filters
    after = rows(browser)
    assert not any("[clone ._omp_fn.0]" in r["label"] for r in after)
    parent = next(r for r in after if r["label"] == parent_label)
    api = served.get("/api/rows", view="top-down", nodes=parent["node"], filters="both:parallel_energy(*) [[]clone*")
    assert parent["values"] == api["rows"][0]["values"]
    assert parent["values"][0] == before[parent_label]["values"][0]  # inclusive unchanged
    assert parent["values"][1] == pytest.approx((before[parent_label]["values"][1] or 0) + victim["values"][0],
                                                rel=1e-9)
    # the link keeps view, filters, selection
    click(browser, "#tree-body tr[data-node]:nth-child(3)")
    chosen = [r for r in rows(browser) if r["sel"]][0]
    url = browser.current_url
    assert "filters=" in url and f"sel={chosen['node']}" in url
    browser.get("about:blank")
    load(browser, url)
    again = rows(browser)
    assert [r["label"] for r in again if r["sel"]] == [chosen["label"]]
    assert browser.find_element("id", "filter-count").text == "(1)"
    # search box: procedures by name, a click reveals the node
    box = browser.find_element("id", "search")
    box.send_keys("fold_if")
    box.send_keys("\n")
    wait(browser, lambda: browser.find_elements("css selector", "#search-results li[data-node]"), "search results")
    hit = browser.find_element("css selector", "#search-results li[data-node]")
    node = int(hit.get_attribute("data-node"))
    hit.click()
    idle(browser)
    sel = [r for r in rows(browser) if r["sel"]]
    assert sel and sel[0]["node"] == node and "fold_if" in sel[0]["label"]


def test_filters_in_callers_and_flat_views(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    glob = "parallel_energy(*) [[]clone*"
    load(browser, served.url)
    click(browser, '#views [data-view="bottom-up"]')
    assert any("[clone ._omp_fn.0]" in r["label"] for r in rows(browser))
    click(browser, "#tree-body tr[data-node]:nth-child(2)")
    assert "sel=" in browser.current_url
    browser.find_element("css selector", "#filters-menu summary").click()
    browser.find_element("id", "filter-pattern").send_keys(glob)
    browser.find_element("css selector", '#filter-mode option[value="both"]').click()
    click(browser, "#filter-add")
    shown = rows(browser)
    # rebuilt from the filtered tree: the procedure is gone, its cost is its callers', the selection is dropped
    assert not any("[clone ._omp_fn.0]" in r["label"] for r in shown)
    assert not any(r["sel"] for r in shown) and "sel=" not in browser.current_url
    check_against(shown, view_json(cxx, "--view", "bottom-up", "--depth", "2", "--filter", f"both:{glob}"))
    browser.save_screenshot(str(shots / "bottom-up-filtered.png"))
    click(browser, '#views [data-view="flat"]')
    check_against(rows(browser), view_json(cxx, "--view", "flat", "--depth", "2", "--filter", f"both:{glob}"))
