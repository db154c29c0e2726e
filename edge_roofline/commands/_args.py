"""Argument types for numbers a command cannot use outside a range (a negative count, a NaN
or infinite time): argparse's one-line usage error names the option, instead of a traceback, a
silent exit 0 or a run that never ends further on."""

from __future__ import annotations

import argparse
import math


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
