"""The Extra-P side of ``bench_compare.py``, run by the Python of a venv that holds ``extrap`` (it needs
numpy < 2, hpcsa numpy 2): fit each series of a JSON file with Extra-P's basic single-parameter modeler and
write the chosen term per series.

    extrap-venv/bin/python benchmarks/extrap_side.py IN.json OUT.json
"""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
from extrap.entities.callpath import Callpath  # noqa: E402
from extrap.entities.coordinate import Coordinate  # noqa: E402
from extrap.entities.measurement import Measurement  # noqa: E402
from extrap.entities.metric import Metric  # noqa: E402
from extrap.modelers.single_parameter.basic import SingleParameterModeler  # noqa: E402

doc = json.load(open(sys.argv[1]))
out = []
t = time.perf_counter()
for ys in doc["y"]:
    ms = [Measurement(Coordinate(p), Callpath("c"), Metric("m"), [y]) for p, y in zip(doc["p"], ys, strict=True)]
    f = SingleParameterModeler().create_model(ms).hypothesis.function
    terms = getattr(f, "compound_terms", [])
    if not terms:
        out.append({"poly": None, "log": None, "c0": f.constant_coefficient, "c1": 0.0})
        continue
    poly, log = 0.0, 0
    for st in terms[0].simple_terms:
        if st.term_type == "polynomial":
            poly = float(st.exponent)
        else:
            log = int(st.exponent)
    out.append({"poly": poly, "log": log, "c0": f.constant_coefficient, "c1": terms[0].coefficient})
json.dump({"fits": out, "seconds": time.perf_counter() - t}, open(sys.argv[2], "w"))
