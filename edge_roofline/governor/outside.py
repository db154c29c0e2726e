"""Someone else switched the board's preset while the governor ran (nvpmodel -m, the power
monitor's set_mode): the point in force is read at every step, not assumed. What the governor
does about it (mode advise follows, mode active yields) is its own: Governor._follow_outside."""

from __future__ import annotations

from edge_roofline.platforms.base import OperatingPoint, Platform


def switched_outside(platform: Platform, current: OperatingPoint) -> OperatingPoint | None:
    """The point in force, where its preset is not ``current``'s (the governor's last); else None."""
    live = platform.current_operating_point()
    # Only a preset switched outside is told: caps read back can differ from those written without
    # anyone moving them (a thermal limit lowers scaling_max_freq), and yielding to that would
    # leave the board ungoverned. A cap written by hand under the same preset is not seen.
    if None in (live.nvpmodel_id, current.nvpmodel_id) or live.nvpmodel_id == current.nvpmodel_id:
        return None
    return live


def yield_reason(live: OperatingPoint, current: OperatingPoint) -> str:
    """Why mode active gave the board up to ``live`` (Governor.yielded)."""
    return (f"the operating point was changed outside the governor to {live.name} (it had set "
            f"{current.name}): yielded, leaving it as set; enable the governor to take control again")
