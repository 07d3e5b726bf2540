"""rocprofv2 (rocprofiler v2) text traces: one record per line, ``Key(value), Key(value), ...``.

Record lines: ``Dispatch_ID(...)`` kernel dispatches (with ``--kernel-trace`` or
counters; ``Grid_Size`` in work-items, ``Queue_ID`` as the stream, counter
values after the end timestamp), ``Domain(HIP_API_DOMAIN)`` / ``Domain(HSA_API_DOMAIN)``
API calls (``Function``, start, end, ``Correlation_ID``), ``Domain(HSA_OPS_DOMAIN)``
(and ``HIP_OPS_DOMAIN``) asynchronous operations (``Operation_Name(COPY)``: copies,
whose direction and size the line does not give), and ``Domain(ROCTX_DOMAIN)``
roctx records (``Timestamp``, ``ROCTX_ID``, ``ROCTX_Message``). Times are ns.
Other lines are the program's own output (banners, results) and are skipped.
Record lines of a domain hpcsa does not know are refused by name.

roctx: the line does not say which roctx call made it. A record with an id > 0
is ``roctxRangeStart`` (with a message) or ``roctxRangeStop`` (without); with id 0,
a record without a message is a ``roctxRangePop``, closing the latest open record
with a message (``roctxRangePushA``); records with a message that no pop closes
are marks (``roctxMarkA``). A mark made between a push and its pop cannot be told
from a push in this format (rocprofv3 records the call). API lines carry no
thread id: the calls and ranges belong to the process, one CPU thread.
"""

from __future__ import annotations

import re

import numpy as np

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.core.fileio import input_error
from hpcsa.ingest import model as M
from hpcsa.ingest.vendors import Probe, VendorReader, register
from hpcsa.ingest.vendors.rocpd import waits_as_sync_ops

DOMAINS = ("HIP_API_DOMAIN", "HSA_API_DOMAIN", "HIP_OPS_DOMAIN", "HSA_OPS_DOMAIN", "ROCTX_DOMAIN")
_DOMAIN_LINE = re.compile(r"^Domain\(([A-Za-z0-9_]+)\), [A-Za-z_]+\(")
_DISPATCH_LINE = re.compile(r"^Dispatch_ID\(\d+\), [A-Za-z_]+\(")
_KEY = re.compile(r"(?:^|, )([A-Za-z_][A-Za-z0-9_]*)\(")
SCAN_BYTES = 1 << 18  # how far recognition looks for a record line past the program's own output


def _record_line(line: str) -> bool:
    return bool(_DISPATCH_LINE.match(line) or (_DOMAIN_LINE.match(line) and "_DOMAIN" in line[:64]))


def recognise(probe: Probe) -> bool:
    path, head = probe.path, probe.head
    if b"\0" in head:
        return False
    text = head.decode("utf-8", errors="replace")
    if any(_record_line(ln) for ln in text.splitlines()):
        return True
    if len(head) < 4096:
        return False
    try:
        with open(path, "rb") as fh:
            more = fh.read(SCAN_BYTES)
    except OSError:
        return False
    if b"\0" in more:
        return False
    return any(_record_line(ln) for ln in more.decode("utf-8", errors="replace").splitlines())


def fields(line: str) -> dict[str, str]:
    """``Key(value), ...`` -> {key: value}; quoted values (kernel names) may hold parentheses and commas."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(line):
        m = _KEY.match(line, pos)
        if not m:
            break
        key, start = m.group(1), m.end()
        if line.startswith('"', start):
            close = line.find('")', start + 1)
            if close < 0:
                raise ValueError(f"unterminated quoted value of {key}")
            out[key] = line[start + 1:close]
            pos = close + 2
            continue
        nxt = _KEY.search(line, start)
        while nxt and not line[: nxt.start()].endswith(")"):
            nxt = _KEY.search(line, nxt.start() + 1)
        stop = nxt.start() if nxt else len(line.rstrip().rstrip(","))
        value = line[start:stop]
        if not value.endswith(")"):
            raise ValueError(f"value of {key} is not closed")
        out[key] = value[:-1]
        pos = stop
    return out


def _num(rec: dict[str, str], key: str, default: int | None = None) -> int:
    if key not in rec:
        if default is None:
            raise ValueError(f"no {key}")
        return default
    return int(rec[key])


class _Rows:
    def __init__(self) -> None:
        self.apis: list[tuple[int, int, str, int, int, int]] = []
        self.kernels: list[tuple] = []
        self.copies: list[tuple[str, int, int, int]] = []
        self.roctx: list[tuple[int, int, str | None]] = []
        self.pids: set[int] = set()


def _parse(path: str) -> _Rows:
    rows = _Rows()
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise input_error(path, exc) from None
    with fh:
        for no, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not _record_line(line):
                continue
            try:
                _record(path, no, line, rows)
            except (ValueError, OverflowError) as exc:
                raise FormatError(path, f"line {no}: malformed rocprofv2 record ({exc})") from None
    return rows


def _record(path: str, no: int, line: str, rows: _Rows) -> None:
    rec = fields(line)
    if "Dispatch_ID" in rec:
        pid = _num(rec, "Process_ID", 0)
        rows.pids.add(pid)
        rows.kernels.append((pid, _num(rec, "Thread_ID", -1), _num(rec, "GPU_ID", 0), _num(rec, "Queue_ID", 0),
                             _num(rec, "Grid_Size", 0), _num(rec, "Workgroup_Size", 1), _num(rec, "LDS", 0),
                             _num(rec, "Scratch_Size", 0), _num(rec, "Arch_VGPR", 0), rec.get("Kernel_Name", ""),
                             _num(rec, "Begin_Timestamp"), _num(rec, "End_Timestamp"),
                             _num(rec, "Correlation_ID", 0)))
        return
    domain = rec.get("Domain", "")
    if domain not in DOMAINS:
        raise UnsupportedError(path, f"line {no}: rocprofv2 record domain {domain!r} is not one hpcsa reads "
                               f"({', '.join(DOMAINS)})")
    if domain.endswith("_API_DOMAIN"):
        rows.apis.append((_num(rec, "Process_ID", -1), _num(rec, "Thread_ID", -1), rec["Function"],
                          _num(rec, "Start_Timestamp"), _num(rec, "End_Timestamp"), _num(rec, "Correlation_ID", 0)))
    elif domain.endswith("_OPS_DOMAIN"):
        op = rec.get("Operation_Name", "")
        if "COPY" not in op.upper():
            raise UnsupportedError(path, f"line {no}: rocprofv2 {domain} operation {op!r} is not one hpcsa reads "
                                   "(COPY)")
        rows.copies.append((op, _num(rec, "Start_Timestamp"),
                            _num(rec, "End_Timestamp"), _num(rec, "Correlation_ID", 0)))
    else:
        rows.roctx.append((_num(rec, "Timestamp"), _num(rec, "ROCTX_ID", 0), rec.get("ROCTX_Message")))


def roctx_ranges(records: list[tuple[int, int, str | None]]) -> tuple[list[tuple[int, int, str]], int]:
    """roctx records in file order -> ([(start, end, message)], number of marks); see the module doc."""
    out: list[tuple[int, int, str]] = []
    started: dict[int, tuple[int, str]] = {}
    pushed: list[tuple[int, str]] = []
    candidates = closed = 0
    for ts, rid, msg in records:
        if rid > 0:
            if msg is not None:
                started[rid] = (ts, msg)
            elif rid in started:
                s, m = started.pop(rid)
                out.append((s, ts, m))
        elif msg is not None:
            pushed.append((ts, msg))
            candidates += 1
        elif pushed:
            s, m = pushed.pop()
            out.append((s, ts, m))
            closed += 1
    return out, candidates - closed


def read(path: str) -> M.GpuTrace:
    rows = _parse(path)
    if not (rows.apis or rows.kernels or rows.copies or rows.roctx):
        raise FormatError(path, "no rocprofv2 records")
    pid = next(iter(rows.pids)) if len(rows.pids) == 1 else 0
    tr = M.GpuTrace(source="rocprofv2 text", path=path, clock="ns (rocprofiler timestamps)", api_domain="HIP",
                    range_domain="roctx")
    if rows.apis:
        a = list(zip(*rows.apis, strict=True))
        tr.apis = M.table(M.API_DTYPE, len(rows.apis), process=np.where(np.array(a[0]) >= 0, np.array(a[0]), pid),
                          thread=np.array(a[1], np.int64), name=tr.intern_many(list(a[2])),
                          start=np.array(a[3], np.int64), end=np.array(a[4], np.int64),
                          corr=np.array(a[5], np.int64).astype(np.uint64))
    parts = [_kernels(tr, rows), _copies(rows, pid), waits_as_sync_ops(tr)]
    tables = [p for p in parts if p is not None and len(p)]
    if tables:
        tr.ops = np.concatenate(tables)
    ranges, _marks = roctx_ranges(rows.roctx)
    if ranges:
        r = list(zip(*ranges, strict=True))
        tr.ranges = M.table(M.RANGE_DTYPE, len(ranges), process=pid, thread=-1, start=np.array(r[0], np.int64),
                            end=np.array(r[1], np.int64), name=tr.intern_many(list(r[2])))
    for p in sorted(rows.pids | {pid} | set(tr.apis["process"].tolist())):
        tr.processes[p] = M.ProcessInfo(p)
    return tr


def _kernels(tr: M.GpuTrace, rows: _Rows) -> np.ndarray | None:
    if not rows.kernels:
        return None
    k = [np.array(c, dtype=object) for c in zip(*rows.kernels, strict=True)]
    ints = {i: k[i].astype(np.int64) for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12)}
    wg = np.maximum(ints[5], 1)
    names = [str(x) for x in k[9]]
    return M.table(M.OP_DTYPE, len(rows.kernels), kind=M.KERNEL, process=ints[0], thread=ints[1], device=ints[2],
                   context=ints[2], stream=ints[3], corr=ints[12].astype(np.uint64), start=ints[10], end=ints[11],
                   name=tr.intern_many(names), blocks=-(-np.maximum(ints[4], 0) // wg), block_threads=wg,
                   smem_dynamic=ints[6], regs=ints[8], local_total=ints[7] * np.maximum(ints[4], 0))


def _copies(rows: _Rows, pid: int) -> np.ndarray | None:
    if not rows.copies:
        return None
    c = list(zip(*rows.copies, strict=True))
    return M.table(M.OP_DTYPE, len(rows.copies), kind=M.MEMCPY, process=pid, device=0, context=0, stream=0,
                   corr=np.array(c[3], np.int64).astype(np.uint64), start=np.array(c[1], np.int64),
                   end=np.array(c[2], np.int64), sub=M.CP_UNK)


register(VendorReader(name="rocprofv2", label="rocprofv2 text", what="rocprofv2 trace", rank=90,
                      recognise=recognise, read=lambda paths: read(paths[0])))
