"""``hpcsa serve DB``: browse a database in a web browser (locally, or from a laptop through an ssh tunnel)."""

from __future__ import annotations

import argparse
import errno
import sys
import time
import webbrowser
from typing import TYPE_CHECKING

from hpcsa.core.errors import HpcsaError
from hpcsa.views.experiment import open_experiment
from hpcsa.views.serve.server import make_server, url_of

if TYPE_CHECKING:
    from hpcsa.views.serve.model import Model

DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (f"{parser.epilog or ''}\n\nfrom a laptop, through the login node:\n"
                     f"  ssh -L {DEFAULT_PORT}:127.0.0.1:{DEFAULT_PORT} login-node   "
                     "# then open the printed URL on the laptop")
    parser.add_argument("database", nargs="+", help="database directory (meta.db, profile.db, ...); two or more: "
                        "compare them (hpcsa compare's aligned tree, a column per run; the first is the baseline)")
    parser.add_argument("--port", "-p", type=int, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; the token is still "
                        "required on any other)")
    parser.add_argument("--open", action="store_true", help="open the page in this machine's web browser")
    parser.add_argument("--derive", "-d", action="append", default=[], metavar="NAME=FORMULA",
                        help="add a derived metric column, as hpcsa view -d (e.g. 'ipc=${INST}/${CYC}')")


def warm(model: Model) -> None:
    """Read what the first page needs (summary values, the top-down view) before printing the URL."""
    info = model.info()
    forest = model.forest("top-down")
    cols = [model.column(f"${i}") for i in info["default_columns"]]
    model.children(forest, -1, cols, (cols[0], "inclusive"))


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port < 65536:
        raise HpcsaError(None, f"--port {args.port}: not a port number")
    started = time.perf_counter()
    databases = list(args.database)
    compared = None
    if len(databases) > 1:  # compare mode: the baseline's own views stay at /, the comparison's page beside them
        from hpcsa.views.compare import compare
        compared = compare(databases)
    exp = open_experiment(databases[0])
    for d in args.derive:
        exp.derive(d)
    try:
        server, app = make_server(exp, args.host, args.port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise HpcsaError(None, f"port {args.port} on {args.host} is in use: choose another with --port "
                             "(0: any free port)") from None
        raise HpcsaError(None, f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    warm(app.model)
    url = url_of(server, app)
    if compared is not None:
        from hpcsa.views.compare.serve import PREFIX, CompareApi
        app.add_mode(PREFIX, CompareApi(compared))
        url = url.replace("/?token=", f"{PREFIX}page?token=")
        print(f"hpcsa serve: comparing {len(compared.runs)} runs, {len(compared):,} aligned contexts "
              f"(baseline {compared.runs[compared.baseline].label})")
    port = server.server_address[1]
    print(f"hpcsa serve: {exp.path}: {exp.db.n_contexts():,} contexts, {len(exp.profiles):,} profiles, "
          f"ready in {time.perf_counter() - started:.1f} s")
    print(f"  open {url}")
    if args.host in LOOPBACK:
        print(f"  from another machine: ssh -L {port}:127.0.0.1:{port} THIS-HOST, then open the same URL there")
    else:
        print(f"  listening on {args.host}: anyone who can reach this port and has the URL can read the database",
              file=sys.stderr)
    try:  # from the line that tells the user about Ctrl-C on, Ctrl-C is the normal way out
        print("  Ctrl-C stops the server", flush=True)
        if args.open:
            webbrowser.open(url)
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        print("hpcsa serve: stopped")
    finally:
        server.server_close()
    return 0
