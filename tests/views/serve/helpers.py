"""An ``hpcsa serve`` server for tests: in this process, on 127.0.0.1, a free port, stopped on exit."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from hpcsa.views.experiment import open_experiment
from hpcsa.views.serve.server import App, make_server, url_of


@dataclass
class Served:
    app: App
    host: str
    port: int
    url: str

    def request(self, path: str, params: dict[str, Any] | None = None, method: str = "GET", token: bool = True,
                headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        """One request with the raw path as given (nothing normalized), the token added to the query."""
        q = dict(params or {})
        if token:
            q["token"] = self.app.token
        full = f"{path}?{urlencode(q)}" if q else path
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, full, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read(), dict(r.getheaders())
        finally:
            conn.close()

    def get(self, path: str, **params: Any) -> Any:
        status, body, _ = self.request(path, params)
        assert status == 200, (path, params, status, body[:300])
        return json.loads(body)


@contextmanager
def serving(db: str | Path) -> Iterator[Served]:
    server, app = make_server(open_experiment(db), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield Served(app, host, port, url_of(server, app))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def tree_rows(s: Served, depth: int, **params: Any) -> list[tuple[int, dict[str, Any]]]:
    """The API's tree in pre-order to ``depth`` (every child: as ``hpcsa view --top 0``)."""
    out: list[tuple[int, dict[str, Any]]] = []

    def walk(node: int, d: int) -> None:
        got = s.get("/api/children", node=node, limit=2000, **params)
        assert got["total"] == len(got["rows"])
        for rec in got["rows"]:
            out.append((d, rec))
            if d < depth and rec["children"]:
                walk(rec["node"], d + 1)

    walk(-1, 0)
    return out
