"""agentsum installs as users install packages: the wheel carries the presets, the web page and the
shipped model, and ``python -m agentsum`` is the command."""

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_contains_presets_web_page_and_shipped_model(tmp_path):
    import setuptools

    # pyproject.toml's SPDX licence string needs setuptools >= 77; an older one here means pip
    # builds in an isolated environment with a current setuptools instead
    isolation = [] if int(setuptools.__version__.split(".")[0]) < 77 else ["--no-build-isolation"]
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
                           "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("agentsum-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    presets = {p.name for p in (REPO / "agentsum" / "configs").glob("*.yaml")}
    assert {f"agentsum/configs/{p}" for p in presets} <= names
    assert {f"agentsum/web/{p.name}" for p in (REPO / "agentsum" / "web").iterdir()} <= names
    assert "agentsum/pretrained/samsum-en.pt" in names
    assert "agentsum/__main__.py" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "runs/")) for n in names)
    assert "deprecat" not in done.stderr.lower(), done.stderr


def test_python_dash_m_agentsum_from_another_directory(tmp_path):
    done = subprocess.run([sys.executable, "-m", "agentsum", "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "summarize" in done.stdout and "export" in done.stdout
