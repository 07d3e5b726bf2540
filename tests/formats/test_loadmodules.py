"""The load modules a measurement records (what ``hpcsa struct MEASDIR`` analyses), against the structure
files HPCToolkit's own hpcstruct made for the same measurements."""

from __future__ import annotations

import os
import shutil

import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.loadmodules import measurement_load_modules


def structs_made_by_hpcstruct(measdir) -> set[str]:
    """The binaries hpcstruct analysed: its structs/ names without ``.hpcstruct`` (and the GPU suffix)."""
    return {n.removesuffix(".hpcstruct").removesuffix("-gpucfg-yes")
            for n in os.listdir(measdir / "structs") if n.endswith(".hpcstruct")}


@pytest.mark.parametrize("name", ["loops-cputime-t.m", "loops-cuda-nvidia-t.m"])
def test_modules_with_samples_are_the_ones_hpcstruct_analysed(hpctoolkit_data, name):
    measdir = hpctoolkit_data / "meas" / name
    listed = measurement_load_modules(str(measdir))
    assert listed == sorted(listed)
    # hpcstruct leaves out hpcrun's own library, which the load maps flag like any other
    assert {os.path.basename(p) for p in listed} - {"libhpcrun.so"} == structs_made_by_hpcstruct(measdir)


def test_all_modules_adds_the_ones_without_samples(hpctoolkit_data):
    measdir = str(hpctoolkit_data / "meas" / "loops-cputime-t.m")
    used, every = measurement_load_modules(measdir), measurement_load_modules(measdir, all_modules=True)
    assert set(used) < set(every) and "/usr/lib/x86_64-linux-gnu/libm-2.31.so" in set(every) - set(used)
    assert not any(p.startswith("[") or not p for p in every)


def test_gpubins_no_load_map_names_are_listed_once(hpctoolkit_data, tmp_path):
    src = hpctoolkit_data / "meas" / "loops-cuda-nvidia-t.m"
    copy = tmp_path / "m"
    copy.mkdir()
    for f in src.glob("*.hpcrun"):
        shutil.copy(f, copy / f.name)
    (copy / "gpubins").mkdir()
    recorded = "1165a3eeddeea5ea3616d1cdbc6faa59.gpubin"  # the load maps name it under the original path
    (copy / "gpubins" / recorded).write_bytes(b"")
    (copy / "gpubins" / ("0" * 32 + ".gpubin")).write_bytes(b"")
    listed = measurement_load_modules(str(copy))
    named = [p for p in listed if p.endswith(recorded)]
    assert len(named) == 1 and named[0].startswith("/")  # the load maps' own path, not gpubins/ again
    assert f"gpubins/{'0' * 32}.gpubin" in listed


def test_a_directory_without_profiles_is_refused(tmp_path):
    with pytest.raises(HpcsaError, match="no .hpcrun files"):
        measurement_load_modules(str(tmp_path))
