"""A wheel is a complete install: it builds without a warning, holds the demo's inputs and the page's files, and
``hpcsa demo`` runs from it in a fresh virtual environment outside the source tree (its dependencies taken from
this environment's site-packages, so nothing is downloaded but the build's own requirements)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: pip's own lines about this machine's package index, not about the build.
INDEX_NOTES = re.compile(r"^WARNING: (Location '.*' is ignored|Retrying )")
OFFLINE = ("Could not find a version that satisfies the requirement", "No matching distribution found",
           "Failed to establish a new connection", "Network is unreachable", "Temporary failure in name resolution")


def _source_copy(dest: Path) -> Path:
    """What a build reads of the source tree (pyproject.toml, the README, the package folders), copied, so that
    the build's own outputs (build/, *.egg-info) land outside the checkout."""
    with open(ROOT / "pyproject.toml", "rb") as fh:
        folders = set(tomllib.load(fh)["tool"]["setuptools"]["package-dir"].values())
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    for folder in sorted(folders):
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel ``pip wheel`` builds from the source tree, and what the build printed."""
    work = tmp_path_factory.mktemp("wheel")
    src = _source_copy(work / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(work / "dist")],
                          capture_output=True, text=True, timeout=600, cwd=work)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and any(s in output for s in OFFLINE):
        pytest.skip("the build's requirements (setuptools) cannot be fetched here: " + output.strip()[-300:])
    assert proc.returncode == 0, output
    [built] = (work / "dist").glob("hpcsa-*.whl")
    return built, output


def test_the_build_prints_no_warning(wheel: tuple[Path, str]) -> None:
    lines = [ln for ln in wheel[1].splitlines() if not INDEX_NOTES.match(ln.strip())]
    warned = [ln for ln in lines if re.search(r"warn|deprecat|!!", ln, re.IGNORECASE)]
    assert warned == [], "\n".join(lines)


def test_the_wheel_holds_the_demo_inputs_and_the_page(wheel: tuple[Path, str]) -> None:
    names = set(zipfile.ZipFile(wheel[0]).namelist())
    for data in ("particles.nvprof", "particles-sm75.cubin", "particles.cu", "sample.so"):
        assert f"hpcsa/cli/demo_data/{data}" in names, data
    for page in ("index.html", "app.js", "style.css"):
        assert f"hpcsa/views/serve/static/{page}" in names, page
    assert not any(n.startswith(("fixtures/", "tests/")) for n in names)


def test_demo_runs_from_the_wheel_in_a_fresh_environment(wheel: tuple[Path, str], tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel[0])], check=True, capture_output=True, timeout=300)
    # the dependencies: this environment's site-packages, as a path (its .pth files, the editable install's
    # finder among them, are not run)
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["HPCSA_NO_PROGRESS"] = "1"
    where = subprocess.run([str(python), "-c", "import hpcsa.cli.demo as d; print(d.DATA)"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, check=True).stdout.strip()
    assert Path(where).is_relative_to(env_dir) and Path(where).is_dir(), where
    proc = subprocess.run([str(env_dir / "bin" / "hpcsa"), "demo", "-o", "out"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "hpcsa demo: done in " in proc.stdout and "Traceback" not in proc.stderr
    assert f"$ hpcsa ingest {os.path.relpath(where, tmp_path)}/particles.nvprof " in proc.stdout  # the installed
    assert (tmp_path / "out" / "app.d" / "meta.db").is_file() and (tmp_path / "out" / "sample.hpcstruct").is_file()
