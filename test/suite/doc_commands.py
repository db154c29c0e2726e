"""Every `ros2 ...` command README.md and docs/ show, and what running one "as written" needs
here: the user's own files they name (a model under /models, ...) made in a tmp folder, and the
commands that cannot succeed on this machine because they are written for a real Jetson."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from test.test_readme_commands import DOCS, REPO, shown_commands

# Absolute paths of a user's files in the docs -> the zoo model (or file) made in their place.
USER_FILES = {
    "/models/yolo.onnx": "yolo_tiny",
    "/models/net.onnx": "tiny_cnn",
    "/models/other.onnx": "mobilenetv2",
    "/models/peoplesemsegnet.onnx": "tiny_cnn",
}
# Relative files a command expects in the directory it runs in (where the user launched).
RELATIVE_FILES = {"other.onnx": "mobilenetv2"}

# Written for a real Jetson: on this machine each named node refuses to start with one line
# (exit 2) and the rest must run. {regex on the command: {node: why}}
ONLY_ON_A_JETSON = {
    r"^ros2 run edge_roofline governor$": {"governor": "default platform: a real Jetson"},
    r"params_file:=(src/edge_roofline/)?config/agx_(orin|thor)\.yaml": {"inference": "backend tensorrt",
                                                                        "governor": "platform jetson"},
}

LONG_RUNNING = (("launch",), ("run",), ("topic", "echo"), ("topic", "hz"), ("topic", "bw"))


def inline_commands(path: Path) -> list[str]:
    """`ros2 ...` in the prose (outside ``` blocks) and in $(ros2 ...), synopses left out
    (`ros2 run edge_roofline <node>`, `NODE`, a bare `ros2 run`)."""
    text, found = path.read_text(), []
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    found += re.findall(r"`(ros2 [^`]+)`", prose)
    found += re.findall(r"\$\((ros2 [^)]+)\)", text)
    return [" ".join(c.split()) for c in found if _is_command(c.split())]


def _is_command(w: list[str]) -> bool:
    if any(re.search(r"<|\.\.\.|^[A-Z]{3,}$", word) for word in w):
        return False
    return len(w) >= (4 if w[:2] == ["ros2", "run"] else 3)


def doc_commands() -> list[tuple[str, str]]:
    """(document, command) for every `ros2` command, each once, in document order."""
    seen, commands = set(), []
    for path in DOCS:
        for cmd in [c for c in shown_commands(path) if c.startswith("ros2 ")] + inline_commands(path):
            if cmd.startswith("ros2 ") and cmd not in seen:
                seen.add(cmd)
                commands.append((str(path.relative_to(REPO)), cmd))
    return commands


def words(cmd: str, files: Path) -> list[str]:
    """The command's words, the user's absolute files replaced by the ones made under ``files``."""
    out = []
    for word in shlex.split(cmd):
        for user_path in USER_FILES:
            word = word.replace(user_path, str(files / Path(user_path).name))
        out.append(word)
    return out


def make_user_files(files: Path, cwd: Path) -> None:
    import onnx

    from edge_roofline.models import zoo
    files.mkdir(parents=True, exist_ok=True)
    for user_path, model in USER_FILES.items():
        onnx.save(getattr(zoo, model)(), files / Path(user_path).name)
    for name, model in RELATIVE_FILES.items():
        onnx.save(getattr(zoo, model)(), cwd / name)


def kind(cmd: str) -> str:
    """launch | run | long (a CLI command that runs until Ctrl-C) | once."""
    parts = shlex.split(cmd)[1:]
    if parts[0] == "launch" and ({"--show-args", "-s"} & set(parts)):
        return "once"
    if parts[0] in ("launch", "run"):
        return parts[0]
    if any(tuple(parts[:len(k)]) == k for k in LONG_RUNNING) and "--once" not in parts:
        return "long"
    return "once"


def refusals(cmd: str) -> dict[str, str]:
    for pattern, nodes in ONLY_ON_A_JETSON.items():
        if re.search(pattern, cmd):
            return nodes
    return {}
