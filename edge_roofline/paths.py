"""Where the shipped config files are: ``config/`` beside the package in a source checkout,
``share/edge_roofline/config`` when installed (pip venv or colcon install space); and how a config
file that is not text, or not valid YAML, reads on one line (here, in the bottom layer, because
every layer reads them)."""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE_CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"


def config_dirs() -> list[Path]:
    dirs = [SOURCE_CONFIG_DIR, Path(sys.prefix) / "share" / "edge_roofline" / "config"]
    try:
        from ament_index_python.packages import get_package_share_directory
        dirs.append(Path(get_package_share_directory("edge_roofline")) / "config")
    except Exception:  # no ament index (plain pip) or package not in it: the other dirs remain
        pass
    return [d for d in dirs if d.is_dir()]


def config_file(name: str) -> Path:
    """A shipped config file by name (e.g. ``virtual_agx_orin.yaml``), or FileNotFoundError
    listing where it was looked for."""
    if Path(name).is_file():
        return Path(name)
    for d in config_dirs():
        if (d / name).is_file():
            return d / name
    raise FileNotFoundError(f"config file {name!r} not found in {[str(d) for d in config_dirs()]}")


def yaml_problem(exc: BaseException) -> str:
    """A YAML parser's error as ``not valid YAML at line L, column C: problem``: PyYAML's own
    text spans several lines, quotes the source as "<unicode string>" and draws a caret."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"not valid YAML{where}: {getattr(exc, 'problem', None) or ' '.join(str(exc).split())}"


class NotTextError(ValueError):
    """A file given as text (YAML, JSON) that is not: a binary, another encoding."""


def read_text_file(path: str | Path) -> str:
    """A user's text file; one that does not decode is a NotTextError naming it (UnicodeDecodeError
    names only the codec and the offset, not the file)."""
    try:
        return Path(path).read_text()
    except UnicodeDecodeError as exc:
        raise NotTextError(f"{path}: not {exc.encoding} text (byte {exc.object[exc.start]:#04x} at offset "
                           f"{exc.start}: {exc.reason}); give a text file (YAML, JSON)") from None
