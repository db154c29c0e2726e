"""Frames lost before they reached a subscriber, counted from the stream itself.

A camera stamps every frame; consecutive stamps sit one frame period apart. A gap of k periods
means k - 1 frames never arrived: lost by the transport, overwritten in the reader's queue, or
never published. ``StampGapCounter`` learns the period from the stamps (no nominal rate needed)
and counts those frames. ``LossWindow`` turns running totals into a loss fraction over the last
seconds, for /diagnostics. ROS-free: the inference node feeds it header stamps in nanoseconds.
"""

from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass

from edge_roofline.telemetry.diagnostics import OK, WARN, Status

GRID_SPAN_FRAMES = 30  # frames the grid must span before its period replaces the intervals' median
GRID_AGREEMENT = 0.05  # ... and within this fraction of it


class StampGapCounter:
    """Counts frames missing between consecutive stamps of one periodic stream.

    The period is first the median of the intervals that look like one period (within 0.5-1.5x of
    the window's 25th percentile), right while up to three quarters of the frames are lost; then
    the slope of the stamps over their frame numbers across the window. A gap longer than
    ``gap_factor`` periods means ``round(gap / period) - 1`` frames missing; jitter under half a
    period means none. A publisher that stamps when it publishes and stalls sends its frames
    late, back to back: for ``catch_up_s`` after a gap the missing count is the frames due on
    the period grid less the frames seen, so late frames take it back, and only then is it
    counted as lost. A gap longer than ``pause_s`` is a paused stream, not loss; a stamp that
    goes back (a restarted camera, a replayed bag) restarts the estimate. One publisher per
    topic: interleaved streams have no single period.
    """

    def __init__(self, window: int = 300, min_intervals: int = 8, gap_factor: float = 1.5,
                 pause_s: float = 2.0, catch_up_s: float = 1.0) -> None:
        if window < min_intervals or min_intervals < 2:
            raise ValueError(f"need window >= min_intervals >= 2, got window={window}, min_intervals={min_intervals}")
        if gap_factor <= 1.0 or pause_s <= 0:
            raise ValueError(f"need gap_factor > 1 and pause_s > 0, got {gap_factor}, {pause_s}")
        self.min_intervals = min_intervals
        self.gap_factor = gap_factor
        self.pause_ns = int(pause_s * 1e9)
        self.catch_up_ns = int(catch_up_s * 1e9)
        self._window: _CatchUpWindow | None = None
        self._grid: collections.deque[tuple[int, int]] = collections.deque(maxlen=window)  # (frame k, stamp)
        self._intervals_ns: collections.deque[int] = collections.deque(maxlen=window)
        self._last_ns: int | None = None
        self.lost = 0  # frames counted lost so far
        self.pauses = 0  # gaps longer than pause_s
        self.restarts = 0  # stamps that went back

    @property
    def period_s(self) -> float | None:
        """The stream's frame period, or None until ``min_intervals`` intervals were seen."""
        if len(self._intervals_ns) < self.min_intervals:
            return None
        ordered = sorted(self._intervals_ns)
        low = ordered[len(ordered) // 4]
        median_s = statistics.median(i for i in ordered if 0.5 * low <= i <= 1.5 * low) / 1e9
        if len(self._grid) >= 2 and self._grid[-1][0] - self._grid[0][0] >= GRID_SPAN_FRAMES:
            # Stamps placed on the frame grid: the period from the window's two ends is exact to
            # a jitter over hundreds of periods. A grid that strays from the median (a publisher
            # that fell behind for long) is not trusted.
            (k0, t0_ns), (k1, t1_ns) = self._grid[0], self._grid[-1]
            grid_s = (t1_ns - t0_ns) / (k1 - k0) / 1e9
            if abs(grid_s / median_s - 1) <= GRID_AGREEMENT:
                return grid_s
        return median_s

    @property
    def pending(self) -> int:
        """Frames missing in gaps younger than ``catch_up_s``: not counted as lost yet."""
        return self._window.missing if self._window else 0

    def observe(self, stamp_ns: int) -> int:
        """Feed the next frame's stamp; returns how many frames became counted as lost."""
        last, self._last_ns = self._last_ns, stamp_ns
        if last is None:
            return 0
        interval_ns = stamp_ns - last
        if interval_ns == 0:  # the same frame again (two subscriptions, a republisher): not a gap
            return 0
        committed = 0
        if self._window and (interval_ns < 0 or stamp_ns - self._window.start_ns > self.catch_up_ns):
            committed, self._window = self._window.missing, None
            self.lost += committed
        if interval_ns < 0:
            self.restarts += 1
            self._intervals_ns.clear()
            self._grid.clear()
            return committed
        if interval_ns > self.pause_ns:
            self.pauses += 1
            self._grid.clear()
            return committed
        period_s = self.period_s
        self._intervals_ns.append(interval_ns)
        if period_s is None:
            return committed
        period_ns = period_s * 1e9
        steps = round(interval_ns / period_ns)  # 0 for a late frame sent right after another
        k = self._grid[-1][0] + steps if self._grid else 0
        self._grid.append((k, stamp_ns))
        gap = interval_ns > self.gap_factor * period_ns
        if gap and self._window is None:
            self._window = _CatchUpWindow(start_ns=last)
        if self._window:
            # Frames due since the gap began on the period grid, less frames seen: late frames
            # sent back to back bring it down; jitter does not add up along the grid.
            w = self._window
            w.seen += 1
            w.cap += steps - 1 if gap else 0
            w.missing = min(w.cap, max(0, round((stamp_ns - w.start_ns) / period_ns) - w.seen))
        return committed


@dataclass
class _CatchUpWindow:
    start_ns: int  # the last stamp before the first gap
    seen: int = 0  # frames since
    cap: int = 0  # frames the gaps in the window miss
    missing: int = 0  # of those, not made up by late frames so far


@dataclass(frozen=True)
class LossSample:
    time_s: float
    received: int
    lost_upstream: int
    lost_transport: int


class LossWindow:
    """Running totals in, the share of frames lost over the last ``window_s`` out."""

    def __init__(self, window_s: float = 10.0) -> None:
        self.window_s = window_s
        self._samples: collections.deque[LossSample] = collections.deque()

    def add(self, sample: LossSample) -> None:
        self._samples.append(sample)
        while len(self._samples) > 2 and sample.time_s - self._samples[1].time_s >= self.window_s:
            self._samples.popleft()

    def recent(self) -> tuple[int, int, int]:
        """(received, lost upstream, lost in transport) over the window."""
        if not self._samples:
            return 0, 0, 0
        first, last = self._samples[0], self._samples[-1]
        return (last.received - first.received, last.lost_upstream - first.lost_upstream,
                last.lost_transport - first.lost_transport)


def input_status(name: str, window: LossWindow, totals: LossSample, warn_fraction: float) -> Status:
    """OK, or WARN when more than ``warn_fraction`` of the frames of the last window were lost
    before the node (upstream: stamp gaps; transport: what DDS itself reports lost)."""
    received, lost_upstream, lost_transport = window.recent()
    lost = max(lost_upstream, lost_transport)  # transport losses are upstream losses too: not summed
    fraction = lost / (received + lost) if received + lost else 0.0
    values = {"frames_received": str(totals.received), "frames_lost_upstream": str(totals.lost_upstream),
              "frames_lost_transport": str(totals.lost_transport),
              f"lost_fraction_last_{window.window_s:g}s": f"{fraction:.4f}"}
    if fraction > warn_fraction:
        return Status(name, WARN, f"{100 * fraction:.1f} % of frames lost before the node in the last "
                                  f"{window.window_s:g} s ({lost} of {received + lost}); "
                                  f"see docs/nodes.md 'Lost frames'",
                      values)
    return Status(name, OK, f"{received} frames in the last {window.window_s:g} s, {lost} lost", values)
