"""``meta.db`` v4.0: the database's metadata (metrics, modules, files, functions, the context tree).

The one name the rest of hpcsa imports (``from hpcsa.formats.db import metadb``);
the format lives in three modules with one job each:

- :mod:`.metadb_model`: the record layouts (``*_FIELDS`` tables, declared once
  and used by both directions), the enumerations and the model
  (:class:`.MetaDB`, :class:`.ContextTree` in pre-order);
- :mod:`.metadb_read`: :func:`.metadb_read.read_metadb`;
- :mod:`.metadb_write`: :func:`.write_metadb` / :func:`.encode_metadb`.

The tree algorithms over parent arrays are in :mod:`.treeorder`.
"""

from __future__ import annotations

from hpcsa.formats.db.metadb_model import (
    CALL,
    COMBINE,
    COMBINE_CODE,
    CONTEXT_COLUMNS,
    CONTEXTS_HDR,
    CONTEXTS_HDR_FIELDS,
    CTX,
    CTX_FIELDS,
    DEFAULT_ID_NAMES,
    ENTRY_FIELDS,
    ENTRY_POINT,
    ENTRY_PRETTY,
    FILE_COPIED,
    FILE_FIELDS,
    FUNCTION,
    FUNCTION_FIELDS,
    GENERAL,
    GENERAL_FIELDS,
    HAS_FUNCTION,
    HAS_POINT,
    HAS_SRCLOC,
    HEADER_SIZE,
    ID_NAMES,
    ID_NAMES_FIELDS,
    INLINED_CALL,
    INSTRUCTION,
    LEXICAL,
    LEXICAL_TYPE,
    LINE,
    LOOP,
    METRIC_FIELDS,
    METRICS_HDR,
    METRICS_HDR_FIELDS,
    MODULE_FIELDS,
    PRE_RELEASE_METRIC_SIZES,
    RELATION,
    SCOPE_FIELDS,
    SCOPE_INST_FIELDS,
    SCOPE_TYPE,
    SECTIONS,
    SUMMARY_FIELDS,
    SZ_CONTEXTS_HDR,
    SZ_CTX,
    SZ_ENTRY,
    SZ_FILE,
    SZ_FUNCTION,
    SZ_GENERAL,
    SZ_ID_NAMES,
    SZ_METRIC,
    SZ_METRICS_HDR,
    SZ_MODULE,
    SZ_SCOPE,
    SZ_SCOPE_INST,
    SZ_SUMMARY,
    SZ_TABLE_HDR,
    TABLE_HDR,
    TABLE_HDR_FIELDS,
    TAG,
    ContextTree,
    EntryPoint,
    Functions,
    MetaDB,
    Metric,
    Scope,
    ScopeInstance,
    Summary,
    describe_context,
    standard_scopes,
)
from hpcsa.formats.db.metadb_read import read_metadb
from hpcsa.formats.db.metadb_write import check_references, elided, encode_metadb, write_metadb

__all__ = [
    "CALL", "COMBINE", "COMBINE_CODE", "CONTEXTS_HDR", "CONTEXTS_HDR_FIELDS", "CONTEXT_COLUMNS", "CTX",
    "CTX_FIELDS", "ContextTree", "DEFAULT_ID_NAMES", "ENTRY_FIELDS", "ENTRY_POINT", "ENTRY_PRETTY",
    "EntryPoint", "FILE_COPIED", "FILE_FIELDS", "FUNCTION", "FUNCTION_FIELDS", "Functions", "GENERAL", "GENERAL_FIELDS",
    "HAS_FUNCTION", "HAS_POINT", "HAS_SRCLOC", "HEADER_SIZE", "ID_NAMES", "ID_NAMES_FIELDS", "INLINED_CALL",
    "INSTRUCTION", "LEXICAL", "LEXICAL_TYPE", "LINE", "LOOP", "METRICS_HDR", "METRICS_HDR_FIELDS",
    "METRIC_FIELDS", "MODULE_FIELDS", "MetaDB", "Metric", "PRE_RELEASE_METRIC_SIZES", "RELATION",
    "SCOPE_FIELDS", "SCOPE_INST_FIELDS", "SCOPE_TYPE", "SECTIONS", "SUMMARY_FIELDS", "SZ_CONTEXTS_HDR",
    "SZ_CTX", "SZ_ENTRY", "SZ_FILE", "SZ_FUNCTION", "SZ_GENERAL", "SZ_ID_NAMES", "SZ_METRIC",
    "SZ_METRICS_HDR", "SZ_MODULE", "SZ_SCOPE", "SZ_SCOPE_INST", "SZ_SUMMARY", "SZ_TABLE_HDR", "Scope",
    "ScopeInstance", "Summary", "TABLE_HDR", "TABLE_HDR_FIELDS", "TAG", "check_references",
    "describe_context", "elided", "encode_metadb", "read_metadb", "standard_scopes", "write_metadb",
]
