"""The thicket side of ``bench_compare.py``, run by the Python of a venv that holds ``llnl-thicket`` (not
hpcsa's): load every database of a folder as one thicket, time it, and write each profile's inclusive time
per node, the node named by the path of hatchet's frames (type and name, separated by \x1e; steps by \x1f)
from the root.

    thicket-venv/bin/python benchmarks/thicket_side.py FOLDER OUT.json
"""

import json
import resource
import sys
import time
import warnings

warnings.simplefilter("ignore")
t0 = time.perf_counter()
import thicket as th  # noqa: E402

t1 = time.perf_counter()
tk = th.Thicket.from_hpctoolkit_latest(sys.argv[1], disable_tqdm=True)
t2 = time.perf_counter()
df = tk.dataframe["time (inc)"]
paths = {}
for node in tk.graph.traverse():
    paths[node] = "\x1f".join(f"{n.frame['type']}\x1e{n.frame['name']}" for n in node.path())
files = tk.metadata["file_path"].to_dict()
out = {}
for (node, profile), value in df.items():
    if value == value:  # not NaN
        d = out.setdefault(files[profile], {})
        key = paths[node]
        d[key] = d.get(key, 0.0) + float(value)
t3 = time.perf_counter()
json.dump({"import_s": t1 - t0, "load_s": t2 - t1, "extract_s": t3 - t2, "nodes": len(paths),
           "profiles": len(files), "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           "values": out}, open(sys.argv[2], "w"))
