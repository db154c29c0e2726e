"""Style as a test (as ros2/examples' test_flake8.py): ruff, configured in pyproject.toml, finds
nothing in the package, the tests, the benchmarks, the scripts or the launch file."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECKED = ["edge_roofline", "test", "benchmarks", "scripts", "launch"]


def ruff() -> str:
    beside = Path(sys.executable).with_name("ruff")  # the venv's, from requirements.txt
    found = str(beside) if beside.exists() else shutil.which("ruff")
    assert found, "ruff is missing: pip install -r requirements.txt (it is listed under tests)"
    return found


def test_ruff_finds_nothing():
    result = subprocess.run([ruff(), "check", "--no-cache", "--output-format", "concise", *CHECKED],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, f"ruff found (fix, or `ruff check --fix`):\n{result.stdout}{result.stderr}"
