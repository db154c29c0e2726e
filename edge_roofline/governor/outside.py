"""Someone else switched the board's preset while the governor ran (nvpmodel -m, the power
monitor's set_mode): the point in force is read at every step, not assumed."""

from __future__ import annotations


def moved_outside(gov, now_s: float) -> bool:
    """Mode advise follows the point in force. Mode active yields rather than fight a person: mode
    off, the reason on ``gov.yielded``, and what they set becomes what a shutdown leaves (no crash
    record: nothing the governor set is in force). True: it yielded now."""
    if gov.mode == "off" or gov._in_doubt:  # a failed apply: the fallback puts the safe point back
        return False
    live = gov.platform.current_operating_point()
    # Only a preset switched outside is told: caps read back can differ from those written without
    # anyone moving them (a thermal limit lowers scaling_max_freq), and yielding to that would
    # leave the board ungoverned. A cap written by hand under the same preset is not seen.
    if None in (live.nvpmodel_id, gov.current.nvpmodel_id) or live.nvpmodel_id == gov.current.nvpmodel_id:
        return False
    if gov.mode == "advise":
        gov._moved_to(live, now_s)
        return False
    gov.yielded = (f"the operating point was changed outside the governor to {live.name} (it had set "
                   f"{gov.current.name}): yielded, leaving it as set; enable the governor to take control again")
    gov.platform.refind()
    if gov.safe_point == gov.found:
        gov.safe_point = live
    gov.found, gov.current, gov.mode = live, live, "off"
    gov.store.clear()
    return True
