"""``hpcsa serve``'s trace mode in headless Chromium (hpctraceviewer's main, depth and summary views).

What the page shows is read out of the page (row labels are text, the ruler's ticks, the legend, the window
statistics, the call path under the pointer) and checked against the trace API and against the database
itself: row labels against the processes' labels of :mod:`hpcsa.views.processes`, painted pixels against the
server's colour runs, the window statistics against rows x window length. Screenshots go to ``shots``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpcsa.views.experiment import open_experiment
from tests.views.serve.helpers import Served, serving
from tests.views.serve.pages import click, idle, load, no_errors, wait

PAINTED_JS = """const c = document.getElementById(arguments[0]);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] + d[i+1] + d[i+2] < 700) n++; return n / (d.length / 4);"""

LABELS_JS = """return [...document.querySelectorAll('#trace-labels .rl')].map(e => ({row: +e.dataset.row,
  label: e.dataset.label, process: e.dataset.process, text: e.textContent}));"""


@pytest.fixture(scope="module")
def served(cxx: Path) -> Iterator[Served]:
    with serving(cxx) as s:
        yield s


def painted(drv: Any) -> int:
    return int(drv.find_element("id", "trace").get_attribute("data-painted") or 0)


def open_trace(drv: Any, url: str) -> None:
    drv.set_window_size(1280, 760)
    load(drv, url)
    wait(drv, lambda: painted(drv) > 0, "the trace to be painted")
    idle(drv)


def test_main_view_labels_ruler_and_pixels(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    open_trace(browser, served.url + "#mode=trace&depth=2")
    meta = served.get("/api/trace/meta")
    procs = open_experiment(cxx).processes
    # the rows' labels are text in the page: process (run) and thread, as the processes module names them
    shown = browser.execute_script(LABELS_JS)
    c = browser.find_element("id", "trace")
    width, height = int(c.get_attribute("width")), int(c.get_attribute("height"))
    assert len(shown) == min(height, meta["rows"])
    labels = {p: procs.label(p) for p in meta["profiles"]}
    for r in shown:
        assert f"{r['process']} {r['label']}" == labels[meta["profiles"][r["row"]]]
        assert r["text"] in ("", r["process"], f"{r['process']} {r['label']}", r["label"])
    assert shown[0]["process"] == "node 0 run 1" and shown[0]["label"] == "core 0 thread 0"
    named = [r["text"] for r in shown if r["text"]]
    assert named[0] == "node 0 run 1" and len(set(named)) == len(named) >= 10  # processes named, in order
    # the ruler: seconds from the start of the run, covering the whole 80.3 s
    ruler = browser.find_element("id", "trace-ruler")
    ticks = ruler.get_attribute("data-ticks").split("|")
    assert ruler.get_attribute("data-unit") == "s" and ticks[0] == "0 s" and ticks[-1] == "80 s"
    span_s = (meta["t_max"] - meta["t_min"]) / 1e9
    assert float(ticks[-1].split()[0]) <= span_s < float(ticks[-1].split()[0]) + 10
    # the painted share is the server's busy share of its colour runs
    px = served.get("/api/trace/pixels", width=width, height=height, depth=2, first=0, count=meta["rows"])
    busy = sum(n for r in px["rows"] for v, n in zip(r["runs"][0::2], r["runs"][1::2], strict=True) if v >= 0)
    got = browser.execute_script(PAINTED_JS, "trace")
    assert got > 0.002 and got == pytest.approx(busy / (width * len(px["rows"])), rel=0.2)  # one process at a time
    # the legend: short names with the full one on hover, the same colours as the server's
    keys = browser.find_elements("css selector", "#trace-legend .key")
    assert {k.get_attribute("data-color") for k in keys} == set(px["legend"])
    for k in keys:
        entry = px["legend"][k.get_attribute("data-color")]
        assert k.get_attribute("data-name") == entry["name"] and len(entry["name"]) <= 80
    # the summary view is drawn
    assert browser.execute_script(PAINTED_JS, "trace-summary-view") > 0.2
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280  # no sideways scroll
    browser.save_screenshot(str(shots / "trace.png"))
    # the side pane is resizable: dragging the splitter 200 px left widens it, the trace repaints narrower
    from selenium.webdriver.common.action_chains import ActionChains

    before = painted(browser)
    bar = browser.find_element("id", "split-trace")
    ActionChains(browser).click_and_hold(bar).move_by_offset(-200, 0).release().perform()
    wait(browser, lambda: painted(browser) > before, "the repaint")
    idle(browser)
    assert int(c.get_attribute("width")) == pytest.approx(width - 200, abs=4)
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    browser.execute_script("localStorage.clear()")  # the next page opens with the default widths
    no_errors(browser)


def test_hover_window_statistics_and_depth_view(browser: Any, served: Served, cxx: Path, shots: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    open_trace(browser, served.url + "#mode=trace&depth=2")
    canvas = browser.find_element("id", "trace")
    w = canvas.size["width"]
    # hover: the call path under the pointer, outermost first, as the top-down view labels it
    ActionChains(browser).move_to_element_with_offset(canvas, -int(w * 0.45), -int(canvas.size["height"] * 0.45)) \
        .perform()
    cursor = browser.find_element("id", "trace-cursor")
    wait(browser, lambda: cursor.get_attribute("data-nodes") is not None, "a call path")
    lines = cursor.text.splitlines()
    assert re.fullmatch(r"node 0 run \d+ core 0 thread \d+ at [0-9.]+ s", lines[0]), lines[0]
    nodes = [int(n) for n in cursor.get_attribute("data-nodes").split(",") if n]
    if nodes:
        labels = served.get("/api/rows", view="top-down", nodes=",".join(map(str, nodes)))["rows"]
        assert [x.strip() for x in lines[1:]] == [r["label"] for r in labels]
    # a drag selects a window: its statistics are the API's, and never more than rows x window
    ActionChains(browser).move_to_element_with_offset(canvas, -int(w * 0.3), 0).click_and_hold() \
        .move_by_offset(int(w * 0.3), 5).release().perform()
    stats = browser.find_element("id", "trace-stats")
    wait(browser, lambda: stats.get_attribute("data-t0"), "the window statistics")
    idle(browser)
    t0, t1 = int(stats.get_attribute("data-t0")), int(stats.get_attribute("data-t1"))
    api = served.get("/api/trace/window", t0=t0, t1=t1, depth=2)
    got = {k: int(stats.get_attribute(f"data-{k}")) for k in ("present", "capacity", "busy", "idle", "rows")}
    assert got == {k: api[k] for k in got}
    assert got["busy"] + got["idle"] == got["present"] <= got["capacity"] == got["rows"] * (t1 - t0)
    assert got["present"] <= 16 * (t1 - t0) * 1.01  # one process (16 threads) runs at a time
    shown = [(tr.get_attribute("data-proc"), float(tr.find_element("css selector", "td.v").get_attribute("data-v")))
             for tr in stats.find_elements("css selector", "tr[data-proc]")]
    assert shown == [(p["name"], p["time"]) for p in api["procedures"]] and shown
    browser.save_screenshot(str(shots / "trace-window.png"))
    click(browser, "#t-window")
    state = dict(kv.split("=", 1) for kv in browser.current_url.split("#", 1)[1].split("&"))
    assert state["mode"] == "trace" and abs(float(state["t0"]) - t0) <= 1 and abs(float(state["t1"]) - t1) <= 1
    # a click on a row: that line's depth view, one band per call-path depth, as the API gives it
    wait(browser, lambda: painted(browser) > 0, "the zoomed trace")
    idle(browser)
    # click the middle of the block of rows of the process running at the window's middle
    exp = open_experiment(cxx)
    start, end = exp.db.trace.line_bounds()
    bounds = {int(p): (int(a), int(b)) for p, a, b in zip(exp.db.trace.prof_index.tolist(), start, end, strict=True)}
    mid = (int(state["t0"]) + int(state["t1"])) // 2
    profiles = served.get("/api/trace/meta")["profiles"]
    drawn = [r["row"] for r in browser.execute_script(LABELS_JS)]
    live = [k for k, r in enumerate(drawn) if bounds[profiles[r]][0] <= mid < bounds[profiles[r]][1]]
    assert live, "no line is active in the middle of the window"
    k = live[len(live) // 2]
    h = canvas.size["height"]
    y = int((k + 0.5) * h / len(drawn))
    ActionChains(browser).move_to_element_with_offset(canvas, 0, y - h // 2).click().perform()
    depth = browser.find_element("id", "trace-depth")
    wait(browser, lambda: depth.get_attribute("data-row") is not None, "the depth view")
    idle(browser)
    row = int(depth.get_attribute("data-row"))
    dv = served.get("/api/trace/depth", row=row, t0=state["t0"], t1=state["t1"], width=int(depth.get_attribute("width")))
    assert int(depth.get_attribute("data-depths")) == len(dv["depths"]) >= 2
    assert browser.find_element("id", "depth-title").text == dv["label"]
    busy = sum(n for d in dv["depths"] for v, n in zip(d["runs"][0::2], d["runs"][1::2], strict=True) if v >= 0)
    share = busy / (int(depth.get_attribute("width")) * len(dv["depths"]))
    assert share > 0.001 and browser.execute_script(PAINTED_JS, "trace-depth") == pytest.approx(share, rel=0.25)
    browser.save_screenshot(str(shots / "trace-depth.png"))
    no_errors(browser)


def test_vendor_streams_colour_by_kernel_and_empty_rows(browser: Any, hpctoolkit_data: Path, shots: Path) -> None:
    """A CUDA database: its CPU row has no trace activity, its GPU stream ran ``kernmain``. Colour by depth
    shows the stream's outer frame; colour by leaf names the kernel; hiding empty rows leaves the stream."""
    db = hpctoolkit_data / "dbase" / "loops-cuda-nvidia-t.d"
    with serving(db) as s:
        open_trace(browser, s.url + "#mode=trace&depth=1")
        labels = [r["text"] for r in browser.execute_script(LABELS_JS)]
        assert labels == ["node 0 thread 0", "GPU context 1 stream 7"]
        by_depth = {k.get_attribute("data-name") for k in browser.find_elements("css selector", "#trace-legend .key")}
        assert by_depth == {v["name"] for v in s.get("/api/trace/pixels", width=300, height=2, depth=1)["legend"]
                            .values()}
        before = painted(browser)
        browser.find_element("css selector", "#color-mode option[value=leaf]").click()
        wait(browser, lambda: painted(browser) > before, "the repaint")
        idle(browser)
        by_leaf = [k.get_attribute("data-name") for k in browser.find_elements("css selector", "#trace-legend .key")]
        assert by_leaf == ["kernmain()"] and "color=leaf" in browser.current_url
        before = painted(browser)
        browser.find_element("id", "hide-empty").click()
        wait(browser, lambda: painted(browser) > before, "the repaint")
        idle(browser)
        assert [r["text"] for r in browser.execute_script(LABELS_JS)] == ["node 0 GPU context 1 stream 7"]
        assert "of 2" in browser.find_element("id", "trace-range").text
        browser.save_screenshot(str(shots / "trace-gpu-leaf.png"))
        no_errors(browser)
