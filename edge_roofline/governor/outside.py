"""Someone else switched the board's preset while the governor ran (nvpmodel -m, the power
monitor's set_mode): the point in force is read at every step, not assumed. What the governor
does about it (mode advise follows, mode active yields) is its own: Governor._follow_outside.
The one who switched is told what that means for a governor on the board (switch_note)."""

from __future__ import annotations

from pathlib import Path

from edge_roofline.platforms.base import OperatingPoint, Platform

from .board_lock import holder


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


def switch_note(lock_path: Path, before: OperatingPoint | None, after: OperatingPoint | None) -> str:
    """What a preset switched by another program (the power monitor's set_mode; ``before`` -> ``after``, None:
    not read) means to a governor on this board, as its lock shows (board_lock.holder): "" where none holds it.
    The lock does not say the governor's mode, so each mode's answer is given."""
    held = holder(lock_path)
    if held is None:
        return ""
    who = f"a governor holds this board ({held.partition(';')[0]})"
    if before is not None and after is not None and before.nvpmodel_id == after.nvpmodel_id:
        return (f"; {who}; the preset did not change, which it does not yield to: in mode active it goes on "
                f"governing and may set its own caps again")
    return (f"; {who}: in mode active it yields to this preset (mode off) and its shutdown leaves it; enable it "
            f"again (governor/enable) to hand it control; in mode advise it follows it")
