"""``hpcsa serve``'s tools in headless Chromium: short and full names, the thread view, derived metrics,
CSV export, the page for a missing token, and the layout at 1280 x 760 -- each checked against ``hpcsa view
--format json`` or the database's own values. Screenshots go to ``shots``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpcsa.views.experiment import open_experiment
from hpcsa.views.threadview import matching_profiles
from tests.views.serve.helpers import Served, serving
from tests.views.serve.pages import click, idle, load, no_errors, rows, view_json, wait


@pytest.fixture(scope="module")
def served(cxx: Path) -> Iterator[Served]:
    with serving(cxx) as s:
        yield s


def test_layout_and_full_names(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    browser.set_window_size(1280, 760)
    load(browser, served.url + "#view=flat")
    click(browser, "#hot")
    # no page-level sideways scroll; the footer is inside the window
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    assert browser.execute_script("return document.getElementById('status').getBoundingClientRect().bottom") \
        <= browser.execute_script("return window.innerHeight") + 1
    shown = rows(browser)
    ref = {(r["depth"], r["label"]) for r in view_json(cxx, "--view", "flat", "--depth", "9")["rows"]
           if "label" in r}
    assert all((r["depth"], r["label"]) in ref for r in shown)  # the short names hpcsa view prints
    long = [r for r in shown if r["full"]]
    assert long and all(len(r["label"]) < len(r["full"]) and r["full"] in r["title"] for r in long)
    browser.save_screenshot(str(shots / "short-names.png"))
    click(browser, "#full-names")
    assert "names=full" in browser.current_url
    again = rows(browser)
    assert [(r["node"], r["hot"], r["sel"]) for r in again] == [(r["node"], r["hot"], r["sel"]) for r in shown]
    after = {r["node"]: r["label"] for r in again}
    for r in long:
        if r["node"] in after:
            assert after[r["node"]] == r["full"]
    full_ref = {r["label"] for r in view_json(cxx, "--view", "flat", "--depth", "9", "--full-names")["rows"]
                if "label" in r}
    assert set(after.values()) <= full_ref
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    browser.save_screenshot(str(shots / "full-names.png"))
    click(browser, "#full-names")
    no_errors(browser)


def test_thread_view(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    load(browser, served.url)
    browser.find_element("css selector", "#threads-menu summary").click()
    browser.find_element("id", "threads-pattern").send_keys("run 5")
    click(browser, "#threads-apply")
    note = browser.find_element("id", "thread-note")
    wait(browser, lambda: note.get_attribute("data-profiles"), "the thread view")
    idle(browser)
    assert note.get_attribute("data-profiles") == "16" and "16 of 1,024 profiles" in note.text
    exp = open_experiment(cxx)
    want = sum(float(exp.profile_values(i, "CPUTIME (sec)")[0]) for i in matching_profiles(exp, "run 5"))
    root = rows(browser)[0]
    assert root["label"] == "Experiment Aggregate Metrics" and root["values"][0] == pytest.approx(want, rel=1e-12)
    assert 0 < want < exp.total("CPUTIME (sec)") / 10
    assert "threads=run" in browser.current_url
    browser.save_screenshot(str(shots / "thread-view.png"))
    # a bad pattern: one line in the menu, the view unchanged
    box = browser.find_element("id", "threads-pattern")
    box.clear()
    box.send_keys("warp 3")
    click(browser, "#threads-apply")
    assert "unknown word 'warp'" in browser.find_element("id", "threads-error").text
    assert note.get_attribute("data-profiles") == "16"
    browser.get_log("browser")  # the refused pattern's 400 is expected: clear the log
    click(browser, "#threads-clear")
    assert rows(browser)[0]["values"][0] == pytest.approx(exp.total("CPUTIME (sec)"), rel=1e-12)


def test_derived_metric_and_csv(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    load(browser, served.url)
    click(browser, "#derive-open")
    browser.find_element("id", "derive-name").send_keys("twice")
    browser.find_element("id", "derive-formula").send_keys("2*$")
    click(browser, "#derive-ok")
    assert browser.find_element("id", "derive-error").text  # a formula that does not parse: said in the dialog
    assert browser.execute_script("return document.getElementById('derive-dialog').open")
    browser.get_log("browser")  # the refused formula's 400 is expected: clear the log
    formula = browser.find_element("id", "derive-formula")
    formula.clear()
    formula.send_keys("2*$0")
    click(browser, "#derive-ok")
    assert not browser.execute_script("return document.getElementById('derive-dialog').open")
    assert "derived=twice" in browser.current_url
    heads = [th.text for th in browser.find_elements("css selector", "#tree-head th")]
    assert any("twice" in h for h in heads)
    ref = view_json(cxx, "--depth", "4", "-d", "twice=2*$0", "--metric", "CPUTIME (sec)", "--metric", "twice")
    refrows = {(r["depth"], r["label"]): r["values"] for r in ref["rows"] if "label" in r}
    shown = rows(browser)
    col = next(i for i, h in enumerate(heads) if "twice" in h and "(I)" in h)  # the cells in header order
    for r in shown:
        assert r["values"][col] == pytest.approx(refrows[(r["depth"], r["label"])]["twice (I)"], rel=1e-12)
    assert shown[0]["values"][col] == pytest.approx(2 * shown[0]["values"][0], rel=1e-12)
    browser.save_screenshot(str(shots / "derived.png"))
    # the CSV export holds exactly the shown rows and values
    click(browser, "#csv")
    text = wait(browser, lambda: browser.execute_script("return window.__lastCsv"), "the CSV")
    table = list(csv.reader(io.StringIO(text)))
    assert len(table) == len(shown) + 1
    for line, r in zip(table[1:], shown, strict=True):
        assert r["label"] in line
    no_errors(browser)


def test_missing_or_wrong_token_page(browser: Any, served: Served) -> None:
    base = served.url.split("?", 1)[0]
    browser.get(served.url)
    browser.delete_all_cookies()  # the token a page was opened with is kept in a cookie
    for url in (base, base + "?token=wrong"):
        browser.get(url)
        body = browser.find_element("tag name", "body").text
        assert "token" in body and not body.lstrip().startswith("{")  # a page, not raw JSON
        assert browser.execute_script("return getComputedStyle(document.body).maxWidth") != "none"  # styled
        log = browser.get_log("browser")  # the 403 of the page itself is expected; nothing else
        assert all("403" in e["message"] and e["source"] == "network" for e in log), log


def test_metric_menu_groups_search_and_empty_metrics(browser: Any, hpctoolkit_data: Path, shots: Path) -> None:
    """A CUDA database with PC sampling: 81 metric columns, 66 of them without data. The menu groups them
    (GPU operations, GPU instructions, GPU stalls, ...), hides the empty ones unless asked, and searches."""
    with serving(hpctoolkit_data / "dbase" / "loops-cuda-nvidiapc-t.d") as s:
        info = s.get("/api/info")
        cols = info["columns"]
        load(browser, s.url)
        browser.find_element("css selector", "#metrics-menu summary").click()
        listed = browser.execute_script("""return [...document.querySelectorAll('#metric-list .group')].map(g =>
          [g.dataset.group, [...g.querySelectorAll('label')].map(l => +l.dataset.index)]);""")
        shown = {i for _, idx in listed for i in idx}
        want = {c["index"] for c in cols if c["total"] or c["index"] in info["default_columns"]}
        assert shown == want and len(shown) < len(cols)
        group_of = {c["index"]: c["group"] for c in cols}
        assert all(group_of[i] == g for g, idx in listed for i in idx)
        assert [g for g, _ in listed] == [g for g in info["groups"] if any(group_of[i] == g for i in shown)]
        assert {"GPU operations", "GPU instructions", "GPU stalls"} <= {g for g, _ in listed}
        hidden = len(cols) - len(shown)
        assert f"{hidden} metrics without data hidden" in browser.find_element("id", "metric-list").text
        browser.save_screenshot(str(shots / "metrics-menu.png"))
        browser.find_element("id", "metric-empty").click()
        every = browser.execute_script("return document.querySelectorAll('#metric-list label').length")
        assert every == len(cols)
        browser.find_element("id", "metric-search").send_keys("stl")
        found = browser.execute_script("return [...document.querySelectorAll('#metric-list label')].map(l => "
                                       "+l.dataset.index)")
        assert found and set(found) == {c["index"] for c in cols if "stl" in c["name"].lower()}
        no_errors(browser)


def test_source_pane_follows_the_selection_in_every_view(browser: Any, served: Served) -> None:
    """The pane shows the selected row's source, with the path the program was built from (not the copy's
    ``src/...``), and never the previous view's file."""
    def head() -> tuple[str | None, str | None, str]:
        h = browser.find_element("id", "source-head")
        return h.get_attribute("data-file"), h.get_attribute("data-line"), h.text

    load(browser, served.url)
    click(browser, "#hot")
    file, line, text = head()
    assert file == "src/opt/extra-src/cxx_features.cpp" and text.startswith(f"/opt/extra-src/cxx_features.cpp:{line}")
    click(browser, '#views [data-view="flat"]')
    assert head()[0] is None and "Select" in head()[2]  # nothing selected in the new view: no stale file
    click(browser, "#hot")
    sel = [r["label"] for r in rows(browser) if r["sel"]]
    assert sel == ["cxx_features.cpp:88"] and head()[:2] == ("src/opt/extra-src/cxx_features.cpp", "88")
    assert head()[2].startswith("/opt/extra-src/cxx_features.cpp:88")
    click(browser, '#views [data-view="bottom-up"]')
    assert head()[0] is None
    no_errors(browser)


def test_frozen_metric_columns_and_resizable_scope(browser: Any, served: Served) -> None:
    """With full names the scope column is wider than the pane: scrolling it sideways leaves the metric
    columns where they are; the scope column's grip sets its width."""
    from selenium.webdriver.common.action_chains import ActionChains

    browser.set_window_size(1280, 760)
    load(browser, served.url + "#view=flat&names=full")
    click(browser, "#hot")
    pane = browser.find_element("id", "tree-pane")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", pane)
    first = "#tree-body tr[data-node] td.v"
    left = browser.execute_script(f"return document.querySelector('{first}').getBoundingClientRect().left")
    label = browser.execute_script("return document.querySelector('#tree-body tr[data-node] .label')"
                                   ".getBoundingClientRect().left")
    browser.execute_script("arguments[0].scrollLeft = 300", pane)
    assert browser.execute_script(f"return document.querySelector('{first}').getBoundingClientRect().left") == \
        pytest.approx(left, abs=1)  # frozen
    assert browser.execute_script("return document.querySelector('#tree-body tr[data-node] .label')"
                                  ".getBoundingClientRect().left") < label - 100  # the scope scrolled
    browser.execute_script("arguments[0].scrollLeft = 0", pane)
    grip = browser.find_element("css selector", "#tree-head th.scope .grip")
    scope = browser.find_element("css selector", "#tree-head th.scope")
    x0 = scope.location["x"]
    ActionChains(browser).click_and_hold(grip).move_by_offset(250 - (grip.location["x"] - x0), 0).release().perform()
    idle(browser)
    assert scope.size["width"] == pytest.approx(250, abs=20)
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    no_errors(browser)
