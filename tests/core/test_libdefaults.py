"""Library defaults set before numpy and MPI load: set where the user left them unset, never overridden."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpcsa.core import libdefaults
from tests.conftest import FIXTURES, ROOT


def test_set_defaults_fills_only_what_the_environment_leaves_unset() -> None:
    env = {"OPENBLAS_NUM_THREADS": "8", "OTHER": "x"}
    added = libdefaults.set_defaults({"OPENBLAS_NUM_THREADS": "1", "UCX_MEM_EVENTS": "no"}, env)
    assert added == {"UCX_MEM_EVENTS": "no"}
    assert env == {"OPENBLAS_NUM_THREADS": "8", "OTHER": "x", "UCX_MEM_EVENTS": "no"}
    assert libdefaults.set_defaults({"UCX_MEM_EVENTS": "yes"}, env) == {}
    assert env["UCX_MEM_EVENTS"] == "no"


# The command, then what it saw: the variable when numpy was loaded (numpy is loaded by the subcommand).
_PROBE = """
import os, sys
import hpcsa.cli.main as cli
seen = {}
real = cli.importlib.import_module
def spy(name, *a):
    seen.setdefault("blas", os.environ.get("OPENBLAS_NUM_THREADS"))
    seen.setdefault("numpy_loaded", "numpy" in sys.modules)
    return real(name, *a)
cli.importlib.import_module = spy
cli.main(["stats", "/nonexistent.d"])
print(seen["blas"], seen["numpy_loaded"])
"""


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_the_command_sets_blas_threads_before_a_subcommand_loads_numpy(given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.stdout.split() == [expected, "False"], out.stderr


def test_an_mpi_run_turns_ucx_memory_hooks_off_unless_the_user_chose() -> None:
    pytest.importorskip("mpi4py")
    code = ("import os; from hpcsa.aggregate import mpi; mpi._import_mpi(); "
            "print(os.environ['UCX_MEM_EVENTS'])")
    env = {k: v for k, v in os.environ.items() if k != "UCX_MEM_EVENTS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.stdout.strip() == "no", out.stderr
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(env, UCX_MEM_EVENTS="yes"))
    assert out.stdout.strip() == "yes", out.stderr


def test_a_prof_run_starts_without_yaml_or_multiprocessing() -> None:
    """Start-up is serial on every MPI rank: what only rank 0 needs (PyYAML, to write the taxonomy) is loaded
    when needed, and multiprocessing never (workers come from hpcsa.core.forking; see tests/core/test_forking.py)."""
    code = ("import sys; import hpcsa.cli.prof, hpcsa.aggregate.mpi; "
            "print(sorted(m for m in ('yaml', 'multiprocessing') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr
    from hpcsa.formats.db import metricsyaml
    from hpcsa.formats.db.metricsyaml_write import dumps

    assert metricsyaml.dumps is dumps  # the lazy names are the real functions
    with pytest.raises(AttributeError):
        _ = metricsyaml.no_such_name


def test_a_prof_run_never_loads_numpy_ma(tmp_path: Path) -> None:
    """numpy 2's ``np.unique`` without return arrays asks ``np.ma.is_masked``, which imports numpy.ma (25-30
    ms, in every process that calls it): the aggregation uses :func:`hpcsa.core.arrays.sorted_unique` instead."""
    code = ("import sys; from hpcsa.cli.main import main; rc = main(sys.argv[1:]); "
            "print('numpy.ma' in sys.modules); sys.exit(rc)")
    for jobs in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, "prof", str(FIXTURES / "measurements" / "tiny.m"),
                              "-o", str(tmp_path / f"db{jobs}.d"), "-j", jobs], capture_output=True, text=True,
                             cwd=ROOT, env=dict(os.environ, HPCSA_NO_PROGRESS="1"))
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().splitlines()[-1] == "False", out.stdout
