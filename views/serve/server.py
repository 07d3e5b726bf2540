"""The HTTP side of ``hpcsa serve``: a read-only JSON API and the page, behind a random token.

Every request must carry the token (``?token=``, the ``X-Hpcsa-Token`` header, or the cookie the page
sets); it is compared with :func:`hmac.compare_digest`. A request without it gets a page that says how to
get in (the URL ``hpcsa serve`` printed), or a JSON error for the API. Only GET and HEAD are answered. The
database is opened read-only by the views' API and nothing is ever written. Answers are JSON (``/api/...``)
or CSV (``/api/csv``), the page's own files (``/``, ``/static/...``, from the package), and source copies
(``/src/<path>``, only files inside the database's ``src/``, see :mod:`hpcsa.views.serve.source`); anything
else is a 404.

The API is a table of *modes*, each answering the paths under its prefix (:class:`ApiMode`): the tree
views (:mod:`hpcsa.views.serve.tree_api`, ``/api/``) and the trace views (:mod:`hpcsa.views.serve.trace_api`,
``/api/trace/``). Another mode (a comparison of two databases, say) is one more entry in
:attr:`App.modes`, with its own prefix and its own page module.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, unquote, urlsplit

from hpcsa.core.errors import HpcsaError
from hpcsa.views.experiment import Experiment
from hpcsa.views.names import FULL_NAMES
from hpcsa.views.serve.model import Model
from hpcsa.views.serve.source import read_source
from hpcsa.views.serve.trace_api import TraceApi
from hpcsa.views.serve.tree_api import TreeApi

#: The page's files: the page, its style sheet and its script modules.
STATIC = {"index.html": "text/html; charset=utf-8", "style.css": "text/css; charset=utf-8",
          **{f"{m}.js": "text/javascript; charset=utf-8"
             for m in ("app", "util", "tree", "tools", "panes", "trace", "tracedraw")}}
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY",
           "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                                      "base-uri 'none'; frame-ancestors 'none'"}
NO_TOKEN = "this server needs its access token: open the URL hpcsa serve printed"
#: The page for a missing or wrong token: styled by its own <style> block, which its Content-Security-Policy
#: allows by hash (nothing else: no script, no other source).
TOKEN_STYLE = ("body { font: 15px/1.5 system-ui, sans-serif; max-width: 40em; margin: 3em auto; color: #1d2329; }"
               " h1 { font-size: 1.4em; }")
TOKEN_CSP = (f"default-src 'none'; style-src 'sha256-{base64.b64encode(hashlib.sha256(TOKEN_STYLE.encode()).digest()).decode()}'; "
             "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
TOKEN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hpcsa serve: access token needed</title>
<link rel="icon" href="data:,"><style>{style}</style></head>
<body>
<h1>This hpcsa serve page needs its access token</h1>
<p>{problem}</p>
<p>Open the URL that <code>hpcsa serve</code> printed when it started: it ends in
<code>/?token=&hellip;</code>. Each start of the server makes a new token, so a link from an earlier
start does not work; copy the new one from the terminal where the server runs.</p>
<p>From another machine, forward the port first (<code>ssh -L PORT:127.0.0.1:PORT host</code>), then open the
same URL there.</p>
</body></html>
"""


def new_token() -> str:
    return secrets.token_urlsafe(24)


class ApiMode(Protocol):
    """One mode of the API: answers the paths under its prefix (``name`` is the rest of the path) with
    JSON-ready data, or (body bytes, content type, extra headers) for another format."""

    def answer(self, name: str, q: dict[str, str]) -> Any: ...


class App:
    """The database, its model, the token and the API's modes; shared by the handler threads."""

    def __init__(self, exp: Experiment, token: str | None = None) -> None:
        self.exp = exp
        self.model = Model(exp)
        self.token = token or new_token()
        self.trace_api = TraceApi(exp)
        #: (prefix, mode): the longest prefix that starts a path answers it
        self.modes: list[tuple[str, ApiMode]] = [("/api/trace/", self.trace_api), ("/api/", TreeApi(self.model))]
        self._lock = threading.Lock()

    def add_mode(self, prefix: str, mode: ApiMode) -> None:
        """Answer the API paths under ``prefix`` (``/api/<name>/``) with another mode."""
        with self._lock:
            self.modes.insert(0, (prefix, mode))
            self.modes.sort(key=lambda pm: -len(pm[0]))

    def allowed(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self.token.encode())


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
        offered = self._offered_token(query)
        if not self.app.allowed(offered):
            self._refuse_token(parts.path, offered)
            return
        token = FULL_NAMES.set(query.get("names") == "full")
        try:
            self._route(parts.path, query)
        except LookupError as exc:
            self._error(404, str(exc.args[0]) if exc.args else "not found")
        except (HpcsaError, ValueError, KeyError) as exc:
            self._error(400, str(exc))
        except BrokenPipeError:
            pass
        finally:
            FULL_NAMES.reset(token)

    def _refuse_token(self, path: str, offered: str | None) -> None:
        """403: a page that says how to get in where a person looks (the page's paths), JSON elsewhere."""
        if path.startswith(("/api/", "/src/", "/static/")):
            self._error(403, NO_TOKEN)
            return
        problem = ("The link has no access token." if not offered else
                   "The access token in the link is not this server's (it may be from an earlier start).")
        self._send(403, TOKEN_PAGE.format(style=TOKEN_STYLE, problem=html.escape(problem)).encode(),
                   "text/html; charset=utf-8", {"Content-Security-Policy": TOKEN_CSP})

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
        elif path.startswith("/api/"):
            for prefix, mode in self.app.modes:
                if path.startswith(prefix):
                    self._answer(mode.answer(path[len(prefix):], q))
                    return
            raise LookupError("not found")
        else:
            raise LookupError("not found")

    def _answer(self, got: Any) -> None:
        if isinstance(got, tuple) and len(got) == 3 and isinstance(got[0], bytes):
            body, ctype, extra = got
            self._send(200, body, ctype, extra)
        else:
            self._json(got)

    def _static(self, name: str, extra: dict[str, str] | None = None) -> None:
        if name not in STATIC:
            raise LookupError("not found")
        data = resources.files("hpcsa.views.serve").joinpath("static", name).read_bytes()
        self._send(200, data, STATIC[name], extra)


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
