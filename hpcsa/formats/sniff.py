"""Recognise HPCToolkit files and directories by their content, not their names."""

from __future__ import annotations

import os
import re

from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import read_input
from hpcsa.formats.db import database, dbformat
from hpcsa.formats.measurement import hpcrun, hpctrace

#: Each format's magic, from the module that reads and writes it (the padding is not compared).
HPCRUN_MAGIC = hpcrun.MAGIC.rstrip(b"_")
HPCTRACE_MAGIC = hpctrace.MAGIC.rstrip(b"_")
DB_FORMATS = {tag: name for tag, (name, _footer) in dbformat.FORMATS.items()}


def _magic_name(head: bytes) -> str:
    """The leading ``HPCPROF-cctdb``-style magic of a legacy file, without its padding."""
    magic = re.match(rb"[A-Za-z0-9-]*[A-Za-z0-9]", head[:24])
    if magic is None:
        raise ValueError(f"no magic at the start of {head[:24]!r}")
    return magic.group().decode("ascii")


def identify(path: str | os.PathLike[str]) -> str:
    """One of: hpcrun, hpctrace, meta.db, profile.db, cct.db, trace.db, hpcstruct, metrics-yaml,
    measurement-dir, database-dir."""
    path = os.fspath(path)
    if os.path.isdir(path):
        holds = database.directory_kind(path)  # the one rule for directories, with open_database's messages
        if holds in ("database", "incomplete-database"):
            return "database-dir"  # the database reader names what is missing
        if holds == "measurement":
            return "measurement-dir"
        if holds == "legacy-database":
            raise database.not_a_database(path)
        raise HpcsaError(path, "directory is neither a measurement directory (*.hpcrun) nor a database (meta.db)")
    head = read_input(path, 512)
    if head.startswith(HPCRUN_MAGIC):
        return "hpcrun"
    if head.startswith(HPCTRACE_MAGIC):
        return "hpctrace"
    if head.startswith(b"HPCPROF-") or head.startswith(b"HPCRUN-"):
        raise HpcsaError(path, f"legacy HPCToolkit file ({_magic_name(head)}) from "
                         "before the v4 formats (2022); re-run hpcprof 2022.10 or newer to get a v4 database")
    if head.startswith(dbformat.MAGIC):
        tag = head[len(dbformat.MAGIC):len(dbformat.MAGIC) + 4]
        kind = DB_FORMATS.get(tag)
        if kind:
            return kind
        raise HpcsaError(path, f"HPCToolkit database file of unknown format {tag!r}")
    if b"<HPCToolkitExperiment" in head or b"hpc-experiment" in head:
        raise HpcsaError(path, "legacy experiment.xml database from before the v4 formats (2022); re-run "
                         "hpcprof 2022.10 or newer on the measurements to get a v4 database")
    text = head.lstrip()
    if text.startswith(b"<?xml") or text.startswith(b"<!DOCTYPE") or text.startswith(b"<HPCToolkitStructure"):
        if b"HPCToolkitStructure" in head or b"hpc-structure" in head:
            return "hpcstruct"
        return "hpcstruct"  # let the XML reader give the precise complaint
    if b"version:" in head and (b"inputs:" in head or b"roots:" in head):
        return "metrics-yaml"
    if not head:
        raise HpcsaError(path, "empty file")
    raise HpcsaError(path, "not a file hpcsa recognises (no HPCToolkit magic, not structure XML)")
