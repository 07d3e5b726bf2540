"""The HTTP side of ``hpcsa serve``: a read-only JSON API and the page, behind a random token.

Every request must carry the token (``?token=``, the ``X-Hpcsa-Token`` header, or the cookie the page
sets); it is compared with :func:`hmac.compare_digest`. Only GET and HEAD are answered. The database is
opened read-only by the views' API and nothing is ever written. Answers are JSON (``/api/...``), the
page's own files (``/``, ``/static/...``, from the package), and source copies (``/src/<path>``, only
files inside the database's ``src/``, see :mod:`hpcsa.views.serve.source`); anything else is a 404.
"""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

from hpcsa.core.errors import HpcsaError
from hpcsa.views.experiment import Experiment
from hpcsa.views.filters import parse_filters
from hpcsa.views.forest import DEFAULT_THRESHOLD
from hpcsa.views.imbalance import KINDS
from hpcsa.views.serve.model import Model
from hpcsa.views.serve.source import read_source
from hpcsa.views.serve.trace import TraceModel

if TYPE_CHECKING:
    from hpcsa.views.forest import Forest
    from hpcsa.views.metrics import Column

STATIC = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8",
          "index.html": "text/html; charset=utf-8"}
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY",
           "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                                      "base-uri 'none'; frame-ancestors 'none'"}


def new_token() -> str:
    return secrets.token_urlsafe(24)


class App:
    """The database, its model, the token; shared by the handler threads."""

    def __init__(self, exp: Experiment, token: str | None = None) -> None:
        self.exp = exp
        self.model = Model(exp)
        self.token = token or new_token()
        self._trace: TraceModel | None = None
        self._trace_error: str | None = None
        self._lock = threading.Lock()

    def trace(self) -> TraceModel:
        with self._lock:
            if self._trace is None and self._trace_error is None:
                try:
                    self._trace = TraceModel(self.exp)
                except LookupError as exc:
                    self._trace_error = str(exc)
            if self._trace is None:
                raise LookupError(self._trace_error)
            return self._trace

    def allowed(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self.token.encode())


def _int(q: dict[str, str], name: str, default: int | None = None) -> int:
    v = q.get(name)
    if v is None or v == "":
        if default is None:
            raise ValueError(f"missing parameter {name!r}")
        return default
    return int(v)


class Handler(BaseHTTPRequestHandler):
    app: App  # set on the subclass made per server
    server_version = "hpcsa"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: URLs carry the token

    def setup(self) -> None:
        super().setup()
        # headers and body go out as two writes: without this, Nagle's algorithm and the client's delayed
        # ACK hold every keep-alive answer back by ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- plumbing ------------------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in {**HEADERS, **(extra or {})}.items():
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(),
                   "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def _cookie_name(self) -> str:
        return f"hpcsa_token_{cast(tuple[Any, ...], self.server.server_address)[1]}"  # (host, port, ...)

    def _offered_token(self, query: dict[str, str]) -> str | None:
        if "token" in query:
            return query["token"]
        if self.headers.get("X-Hpcsa-Token"):
            return self.headers["X-Hpcsa-Token"]
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self._cookie_name():
                return value
        return None

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self.do_GET()

    def _refuse(self) -> None:
        self._error(405, "hpcsa serve is read-only: only GET and HEAD")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        if not self.app.allowed(self._offered_token(query)):
            self._error(403, "this server needs its access token: open the URL hpcsa serve printed")
            return
        try:
            self._route(parts.path, query)
        except LookupError as exc:
            self._error(404, str(exc.args[0]) if exc.args else "not found")
        except (HpcsaError, ValueError, KeyError) as exc:
            self._error(400, str(exc))
        except BrokenPipeError:
            pass

    # -- routes ------------------------------------------------------------------------------------------

    def _route(self, path: str, q: dict[str, str]) -> None:
        if path in ("/", "/index.html"):
            cookie = f"{self._cookie_name()}={self.app.token}; HttpOnly; SameSite=Strict; Path=/"
            self._static("index.html", {"Set-Cookie": cookie})
        elif path.startswith("/static/"):
            self._static(path[len("/static/"):])
        elif path.startswith("/src/"):
            data = read_source(self.app.exp.path, unquote(path[len("/src/"):]))
            if data is None:
                raise LookupError("no such source file in the database")
            self._send(200, data, "text/plain; charset=utf-8")
        elif path.startswith("/api/trace/"):
            self._trace(path[len("/api/trace/"):], q)
        elif path.startswith("/api/"):
            self._api(path[len("/api/"):], q)
        else:
            raise LookupError("not found")

    def _static(self, name: str, extra: dict[str, str] | None = None) -> None:
        if name not in STATIC:
            raise LookupError("not found")
        data = resources.files("hpcsa.views.serve").joinpath("static", name).read_bytes()
        self._send(200, data, STATIC[name], extra)

    def _forest(self, q: dict[str, str]) -> Forest:
        filters = parse_filters(q.get("filters", "").split("\n"))
        nodes = [int(x) for x in (q.get("nodes", "") + "," + q.get("node", "")).split(",") if x.strip()]
        return self.app.model.deepened(q.get("view", "top-down"), _int(q, "flatten", 0), filters,
                                       max(nodes, default=-1))

    def _columns(self, q: dict[str, str]) -> list[Column]:
        specs = [s for s in q.get("columns", "").split(",") if s.strip()]
        m = self.app.model
        return [m.column(f"${s}" if s.isdigit() else s) for s in specs] or \
            [m.column(f"${i}") for i in m.info()["default_columns"]]

    def _sort(self, q: dict[str, str], columns: list[Column]) -> tuple[Column, str]:
        spec = q.get("sort", "")
        if not spec:
            return columns[0], "inclusive"
        name, _, side = spec.partition(":")
        side = "exclusive" if side.startswith("e") else "inclusive"
        return self.app.model.column(f"${name}" if name.isdigit() else name), side

    def _api(self, name: str, q: dict[str, str]) -> None:
        m = self.app.model
        if name == "info":
            self._json(m.info())
            return
        forest = self._forest(q)
        columns = self._columns(q)
        if name == "children":
            self._json(m.children(forest, _int(q, "node", -1), columns, self._sort(q, columns),
                                  _int(q, "offset", 0), min(_int(q, "limit", 200), 2000)))
        elif name == "rows":
            nodes = [int(x) for x in q.get("nodes", "").split(",") if x.strip()]
            for n in nodes:
                m.path(forest, n)  # checks the node
            self._json({"rows": m.rows(forest, nodes, columns)})
        elif name == "path":
            self._json({"path": m.path(forest, _int(q, "node"))})
        elif name == "hotpath":
            threshold = float(q.get("threshold", DEFAULT_THRESHOLD))
            node = _int(q, "node", -1)
            self._json({"path": m.hot_path(forest, self._sort(q, columns)[0], None if node < 0 else node,
                                           threshold)})
        elif name == "search":
            self._json({"nodes": m.search(forest, q.get("q", ""), columns[0])})
        elif name == "source":
            self._json(m.source(forest, _int(q, "node")))
        elif name == "distribution":
            kind = q.get("profiles", "auto")
            if kind not in KINDS:
                raise ValueError(f"profiles must be one of {', '.join(KINDS)}")
            col, side = self._sort(q, columns)
            self._json(m.distribution(forest, _int(q, "node"), col, side, kind, bins=_int(q, "bins", 20)))
        else:
            raise LookupError(f"no API {name!r}")

    def _trace(self, name: str, q: dict[str, str]) -> None:
        tm = self.app.trace()
        t0, t1 = _int(q, "t0", tm.t_min), _int(q, "t1", tm.t_max)
        if name == "meta":
            self._json(tm.meta())
        elif name == "pixels":
            self._json(tm.pixels(t0, t1, _int(q, "width", 800), _int(q, "depth", 1), _int(q, "first", 0),
                                 _int(q, "count", len(tm.order)), _int(q, "height", 400)))
        elif name == "window":
            self._json(tm.window(t0, t1, _int(q, "depth", 1), _int(q, "first", 0), _int(q, "count", len(tm.order))))
        elif name == "callpath":
            self._json(tm.call_path(_int(q, "row"), _int(q, "t")))
        else:
            raise LookupError(f"no trace API {name!r}")


def make_server(exp: Experiment, host: str = "127.0.0.1", port: int = 0, token: str | None = None
                ) -> tuple[ThreadingHTTPServer, App]:
    """A server (not yet serving) for one experiment; port 0 picks a free port."""
    app = App(exp, token)
    handler = type("BoundHandler", (Handler,), {"app": app})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server, app


def url_of(server: ThreadingHTTPServer, app: App, host: str | None = None) -> str:
    h, port = cast(tuple[Any, ...], server.server_address)[:2]  # an IP socket's (host, port, ...)
    shown = host or (h if h not in ("0.0.0.0", "::", "") else "127.0.0.1")
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/?token={app.token}"
