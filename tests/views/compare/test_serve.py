"""``hpcsa serve DB1 DB2``: the compare mode's API answers, and its page in Chromium (per-run columns, the
change highlighted, the catalog as a table)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpcsa.views.compare import compare
from hpcsa.views.compare.serve import PREFIX, CompareApi
from hpcsa.views.experiment import open_experiment
from hpcsa.views.serve.server import make_server
from tests.views.compare.builders import METRIC, write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d = tmp_path_factory.mktemp("serve")
    return [str(write_run(d / "base.d", loop=10, tail=2, own=1, io=3)),
            str(write_run(d / "slow.d", loop=11, tail=2, own=1, io=None))]


@pytest.fixture(scope="module")
def server(runs: list[str]) -> Iterator[str]:
    """A running ``hpcsa serve base.d slow.d``; yields the compare page's URL."""
    srv, app = make_server(open_experiment(runs[0]), "127.0.0.1", 0)
    app.add_mode(PREFIX, CompareApi(compare(runs)))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}{PREFIX}page?token={app.token}"
    finally:
        srv.shutdown()
        srv.server_close()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def test_api_children_carry_each_run_and_the_change(server: str):
    base = server.replace("page?", "children?node=-1&")
    roots = _get(base)["children"]
    assert len(roots) == 1
    node = roots[0]
    path = []
    while True:  # down the tree to the line a.c:21 (10 in the baseline, 11 in the other run)
        kids = _get(server.replace("page?", f"children?node={node['id']}&"))["children"]
        match = [k for k in kids if k["label"] in ("main thread", "main", "a.c:10 → solve", "a.c:10", "→ solve",
                                                   "loop at a.c:20", "a.c:21")]
        if not match:
            break
        node = match[0]
        path.append(node["label"])
        if node["label"] == "a.c:21":
            break
    assert node["label"] == "a.c:21", path
    assert node["values"] == [10, 11] and node["ratio"] == pytest.approx(1.1)
    io = next(k for k in _get(server.replace("page?", f"children?node={_main(server)}&"))["children"]
              if "io" in k["label"] or k["label"] == "a.c:14")
    assert io["present"] == [True, False] and io["values"][1] is None


def _main(server: str) -> int:
    cmp_paths = _get(server.replace("page?", "children?node=-1&"))["children"][0]
    kids = _get(server.replace("page?", f"children?node={cmp_paths['id']}&"))["children"]
    mt = next(k for k in kids if k["label"] == "main thread")
    kids = _get(server.replace("page?", f"children?node={mt['id']}&"))["children"]
    return int(next(k for k in kids if k["label"] == "main")["id"])


def test_api_info_and_errors(server: str):
    info = _get(server.replace("page?", "info?"))
    assert [r["label"] for r in info["runs"]] == ["base", "slow"] and info["baseline"] == 0
    assert info["metrics"][0]["name"] == METRIC
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(server.replace("page?", "children?node=99999&"))
    assert err.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(server.replace("page?token=", "info?token=wrong"))
    assert err.value.code == 403


def test_the_page_in_chromium(server: str, browser: Any, shots: Path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server)
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    catalog = browser.find_elements(By.CSS_SELECTOR, "#catalog tr.run")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in catalog] == ["base (baseline)", "slow"]
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#tree thead th")]
    assert heads[:2] == ["base", "slow"] and "Δ" in heads

    def row(label: str) -> Any:
        for tr in browser.find_elements(By.CSS_SELECTOR, "#tree tbody tr"):
            if tr.find_element(By.CSS_SELECTOR, ".label").text == label:
                return tr
        return None

    # the first levels open along the costliest path; open down to a.c:21
    for label in ("a.c:10", "→ solve", "a.c:10 → solve", "loop at a.c:20"):
        tr = row(label)
        if tr is not None and tr.get_attribute("data-open") != "1":
            tr.find_element(By.CSS_SELECTOR, ".toggle").click()
            WebDriverWait(browser, 10).until(lambda d, t=tr: t.get_attribute("data-open") == "1")
    leaf = row("a.c:21")
    assert leaf is not None
    cells = leaf.find_elements(By.TAG_NAME, "td")
    assert [c.text for c in cells[:2]] == ["10", "11"]
    change = leaf.find_element(By.CSS_SELECTOR, "td.change")
    assert change.text == "+10.0%" and "up" in change.get_attribute("class").split()
    own = row("a.c:12")  # unchanged: not highlighted
    assert own is not None and own.find_element(By.CSS_SELECTOR, "td.change").get_attribute("class").split() == \
        ["v", "change"]
    browser.save_screenshot(str(shots / "compare.png"))
