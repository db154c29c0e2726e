"""Argument types for numbers a command cannot use outside a range (a negative count, a NaN
or infinite time): argparse's one-line usage error names the option, instead of a traceback, a
silent exit 0 or a run that never ends further on."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def count(minimum: int):
    """A whole number >= minimum."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    return parse


def finite(minimum: float = 0.0, *, above: bool = False):
    """A finite number >= minimum (> minimum with ``above``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(f"must be a finite number {'>' if above else '>='} {minimum:g}, "
                                             f"got {text}")
        return value
    return parse


SECONDS = finite(0.0)  # a duration or wait; 0 where the help says what 0 means
POSITIVE_MS = finite(0.0, above=True)  # a latency target


def output_file(text: str) -> str:
    """A file a command writes when its run ends (--json): a directory, or a folder that does not
    exist, is refused before the run instead of losing its results after it."""
    path = Path(text).expanduser()
    if not text:  # none
        return text
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file name in it")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: folder {path.parent} does not exist; create it first")
    return text


def chart_file(text: str) -> str:
    """A chart to write (.png or .svg; its folder is made): matplotlib would add .png to a name
    without one, and the command would report the name it was given."""
    path = Path(text).expanduser()
    if not text:  # none
        return text
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file name, e.g. {path / 'chart.png'}")
    if path.suffix.lower() not in (".png", ".svg"):
        raise argparse.ArgumentTypeError(f"{text}: charts are written as .png or .svg")
    return text
