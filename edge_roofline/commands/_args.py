"""Argument types for values a command cannot use (a negative count, a NaN or infinite time, a
file it could not write or read): argparse's one-line usage error names the option, instead of a
traceback, a silent exit 0, a run that never ends or results lost further on; and the options
commands share (TensorRT's calibration cache)."""

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


def file_to_write(*, formats: tuple[str, ...] = (), what: str = "files", example: str = "",
                  folder_made: bool = False):
    """A file a command writes when its run ends, checked before the run instead of lost after it:
    a directory is refused (``example``: a name to suggest in it); ``formats``: the suffixes
    ``what`` can be written as (matplotlib would add .png to a name without one, and the command
    would report the name it was given); a folder that does not exist is refused unless the writer
    makes it (``folder_made``). An empty text is none."""
    def parse(text: str) -> str:
        if not text:
            return text
        path = Path(text).expanduser()
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a directory; give a file name in it"
                                             + (f", e.g. {path / example}" if example else ""))
        if formats and path.suffix.lower() not in formats:
            raise argparse.ArgumentTypeError(f"{text}: {what} are written as {' or '.join(formats)}")
        if not folder_made and not path.parent.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: folder {path.parent} does not exist; create it first")
        return text
    return parse


output_file = file_to_write()  # --json, --record
chart_file = file_to_write(formats=(".png", ".svg"), what="charts", example="chart.png", folder_made=True)


def existing_file(text: str) -> str:
    """A file the command reads, checked before the run instead of failing inside it; given back
    with ~ expanded, as checked (the reader would take ``~`` for a folder of that name)."""
    path = Path(text).expanduser()
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text} is not a file: give the path of an existing file")
    return str(path)


def add_calibration_cache(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calibration-cache", metavar="FILE", type=existing_file, default=None,
                        help="TensorRT int8 calibration cache of the model (--backend tensorrt --precision int8 "
                             "needs one: replayed, not recomputed)")


def calibration_options(backend: str, precision: str, calibration_cache: str | None, *, built: bool = False) -> dict:
    """The backend's ``calibration_cache`` option: an int8 TensorRT build replays one (the backend does
    not calibrate), so one is asked for there in one line, and refused where nothing would read it
    (another backend or precision, or an engine ``built`` already)."""
    from edge_roofline.backends.tensorrt_backend import calibration_problem

    int8_build = backend == "tensorrt" and precision == "int8" and not built
    if int8_build and (problem := calibration_problem(precision, calibration_cache, cache="--calibration-cache FILE",
                                                      fp16="--precision fp16")) is not None:
        raise ValueError(problem)
    if calibration_cache and not int8_build:
        this = "a prebuilt engine" if built else f"{backend} at {precision}"
        raise ValueError(f"--calibration-cache is read only by an int8 TensorRT build (this one: {this}): leave it out")
    return {"calibration_cache": calibration_cache} if int8_build else {}
