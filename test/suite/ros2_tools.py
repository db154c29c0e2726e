"""The ROS 2 launch system and `ros2` command line for the tests that run them as users do.

They have no wheels on PyPI; ``shared/ros2-tools`` beside the checkout holds wheels built from
upstream source and ``install.sh VENV`` (a user's own clone has no ``shared/``: the tests that
need them skip, saying so). Found at ``$EDGE_ROOFLINE_ROS2_TOOLS``, else ``../shared/ros2-tools``
next to the checkout, else next to the main checkout of a git worktree. Installed into the
test venv (``sys.prefix``) once per version of the wheels: a stamp in the venv records the
SHA256SUMS it installed. ``make test`` runs ``python -m test.suite.ros2_tools`` first; the
session fixture calls the same ``ensure_installed()``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

ENV_VAR = "EDGE_ROOFLINE_ROS2_TOOLS"
REPO = Path(__file__).resolve().parents[2]
STAMP = ".ros2-tools-installed"


def _main_checkout() -> Path | None:
    """The main checkout when REPO is a git worktree (its ``shared/`` is beside that one)."""
    try:
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=REPO,
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(common).parent if common else None


def find_tools() -> tuple[Path | None, str]:
    """(folder, '') when found, else (None, why not)."""
    if os.environ.get(ENV_VAR):
        folder = Path(os.environ[ENV_VAR]).expanduser()
        if (folder / "install.sh").is_file():
            return folder.resolve(), ""
        return None, f"${ENV_VAR}={folder} has no install.sh"
    looked = []
    for checkout in dict.fromkeys(c for c in (REPO, _main_checkout()) if c is not None):
        folder = checkout.parent / "shared" / "ros2-tools"
        if (folder / "install.sh").is_file():
            return folder.resolve(), ""
        looked.append(str(folder))
    return None, (f"the ROS 2 launch/CLI tools are not here (looked in {', '.join(looked)}; a clone of its own "
                  f"has no shared/; set {ENV_VAR} to a ros2-tools folder)")


def ensure_installed(venv: Path | None = None) -> tuple[bool, str]:
    """Install the tools into ``venv`` (default: this interpreter's) unless the stamp says this
    version already is. (True, where from) or (False, why they are absent). A failing install
    raises: the folder is there, so the tests must not quietly skip."""
    venv = Path(venv or sys.prefix)
    folder, why = find_tools()
    if folder is None:
        return False, why
    if venv == Path(sys.prefix) and not _is_jazzy():
        return False, "the ros2-tools wheels are ROS 2 Jazzy's; this venv runs another distro (make test-kilted)"
    version = hashlib.sha256((folder / "wheels" / "SHA256SUMS").read_bytes()).hexdigest()
    stamp = venv / STAMP
    with open(venv / f"{STAMP}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two pytest runs in one venv install once
        if stamp.exists() and stamp.read_text() == version and (venv / "bin" / "ros2").exists():
            return True, str(folder)
        done = subprocess.run(["bash", str(folder / "install.sh"), str(venv)], capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{folder}/install.sh {venv} failed ({done.returncode}):\n"
                               f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
        stamp.write_text(version)
    return True, str(folder)


def _is_jazzy() -> bool:
    from importlib import metadata
    try:
        metadata.version("ros-jazzy-rclpy")
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    installed, where = ensure_installed()
    print(f"ROS 2 launch/CLI tools: installed from {where}" if installed
          else f"ROS 2 launch/CLI tools: none ({where}); the tests that need them skip")
