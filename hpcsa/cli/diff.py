"""``hpcsa diff DB1 DB2``: two databases compared as HPCToolkit's own accuracy test compares them
(:mod:`hpcsa.formats.db.compare`); exit status 1 where they differ."""

from __future__ import annotations

import argparse

from hpcsa.formats.db.compare import compare_databases, iter_report


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("first", metavar="DB1", help="a database directory (e.g. the reference)")
    parser.add_argument("second", metavar="DB2", help="the database to compare with it")
    parser.add_argument("--limit", type=int, default=50, help="differences shown per kind (default 50)")
    parser.add_argument("--no-traces", action="store_true", help="do not compare trace.db")


def run(args: argparse.Namespace) -> int:
    cmp = compare_databases(args.first, args.second, limit=args.limit, traces=not args.no_traces)
    for line in iter_report(cmp):
        print(line)
    print(cmp.summary())
    return 0 if cmp.same else 1
