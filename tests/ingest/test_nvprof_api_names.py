"""Every API call that issued GPU work is named, even where no CUPTI header is installed."""

from __future__ import annotations

import sqlite3

from hpcsa.ingest.vendors import nvprof


def test_gpu_issuing_calls_have_names(shared_data, monkeypatch):
    monkeypatch.setattr(nvprof, "cbid_names", lambda domain: {})  # as on a machine without CUDA
    path = shared_data / "gpu-records" / "nvidia" / "nvprof-cupti-timeline-titanv" / "timeline.nvprof"
    con = sqlite3.connect(path)
    cbids = set()
    for table in ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION"):
        cbids |= {row[0] for row in con.execute(
            f"SELECT DISTINCT r.cbid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_{table} k "
            "ON k.correlationId = r.correlationId")}
    assert cbids >= {211, 31, 131, 165}  # the file exercises launches, copies and waits
    names = {cbid: nvprof._api_name("runtime", cbid) for cbid in cbids}
    assert all("#" not in name for name in names.values()), names
    assert names[131] == "cudaStreamSynchronize_v3020" and names[165] == "cudaDeviceSynchronize_v3020"
