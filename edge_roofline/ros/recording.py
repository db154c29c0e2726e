"""Offline analysis of a recorded MCAP file (from the suite's foxglove_bridge, or rosbag2 with
the MCAP storage plugin): latency, power, energy per inference, operating-point changes, and
the per-layer roofline of the last report. Decoding uses only the schemas in the file."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_s


class RecordingError(ValueError):
    pass


@dataclass
class RecordingSummary:
    path: str
    duration_s: float
    inferences: int  # frames the model ran (rejected or failed frames publish latency 0: not counted)
    latency_p50_ms: float
    latency_p95_ms: float
    mean_power_w: float
    energy_j: float
    energy_per_inference_j: float
    simulated: bool
    operating_points: list[str]  # as the power monitor read them from the board, in order
    report_points: list[str] = field(default_factory=list)  # where the roofline reports were profiled
    power_series: list[tuple[float, float]] = field(default_factory=list)  # (t_s, W)
    last_report: object = None  # the last decoded RooflineReport
    frames_not_run: int = 0  # stats of frames that never ran (latency 0)
    latency_not_measured: int = 0  # ran, but NaN/Inf latency: left out of the percentiles
    power_windows_not_measured: int = 0  # NaN (the monitor measured none) or negative power: no energy there
    cut_off: bool = False  # no MCAP footer (still being written, or the recorder never closed it): read up to the cut

    def lines(self) -> list[str]:
        sim = " [SIMULATION: virtual Jetson]" if self.simulated else ""
        gaps = [f"{self.frames_not_run} frame(s) never ran (rejected or failed: see frames_rejected, "
                f"frames_failed and last_error in {topics.INFERENCE_STATS})" if self.frames_not_run else "",
                f"{self.latency_not_measured} inference(s) with a NaN/Inf latency left out of the percentiles"
                if self.latency_not_measured else "",
                f"{self.power_windows_not_measured} power window(s) without a plausible measurement (NaN, Inf "
                f"or negative): energy and "
                f"energy/inference leave them out (an undercount)" if self.power_windows_not_measured else "",
                "the file ends without MCAP's footer (still being recorded, or its recorder was killed before it "
                "closed the file): summarised up to its last complete chunk" if self.cut_off else ""]
        return [f"{self.path}: {self.duration_s:.1f} s{sim}",
                f"inferences {self.inferences}, latency p50 {self.latency_p50_ms:.2f} ms, "
                f"p95 {self.latency_p95_ms:.2f} ms",
                f"mean power {self.mean_power_w:.2f} W, energy {self.energy_j:.2f} J, "
                f"energy/inference {self.energy_per_inference_j * 1e3:.2f} mJ",
                *(f"note: {gap}" for gap in gaps if gap),
                f"operating points: {' -> '.join(self.operating_points) or 'n/a'}",
                f"roofline reports at: {' -> '.join(self.report_points) or 'n/a'}"]


def _suffix_match(topic: str, wanted: str) -> bool:
    return topic == wanted or topic.endswith("/" + wanted.lstrip("/"))


def _changes(names) -> list[str]:
    """The names in order, each run of repeats once."""
    changes: list[str] = []
    for name in names:
        if name and (not changes or changes[-1] != name):
            changes.append(name)
    return changes


MCAP_MAGIC = b"\x89MCAP0\r\n"  # at both ends of a closed MCAP file


def _decoded_messages(f, cut_off: bool):
    """A closed file through its index; one without its footer (still being written, a recorder
    killed) record by record in file order, up to the first incomplete one."""
    from mcap.exceptions import McapError
    from mcap.reader import NonSeekingReader, make_reader
    from mcap_ros2.decoder import DecoderFactory

    if not cut_off:
        yield from make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()
        return
    try:
        yield from NonSeekingReader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(
            log_time_order=False)
    except (McapError, EOFError, struct.error):  # the cut: everything before it is read
        return


def read_recording(path: str | Path) -> RecordingSummary:
    from mcap.exceptions import McapError

    path = Path(path)
    stats, power, reports = [], [], []
    try:
        with open(path, "rb") as f:
            head = f.read(len(MCAP_MAGIC))
            f.seek(max(0, path.stat().st_size - len(MCAP_MAGIC)))
            cut_off = head == MCAP_MAGIC and f.read() != MCAP_MAGIC
            f.seek(0)
            for _, channel, message, decoded in _decoded_messages(f, cut_off):
                t_s = stamp_s(message.log_time)
                if _suffix_match(channel.topic, topics.INFERENCE_STATS):
                    stats.append((t_s, decoded))
                elif _suffix_match(channel.topic, topics.POWER_TELEMETRY):
                    power.append((t_s, decoded))
                elif _suffix_match(channel.topic, topics.ROOFLINE_REPORT):
                    reports.append(decoded)
    except FileNotFoundError as exc:
        raise RecordingError(f"recording {path} not found") from exc
    except (McapError, ValueError, OSError, struct.error, EOFError, KeyError, IndexError) as exc:
        # mcap reports a damaged file with its own errors, or struct's and Python's
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise RecordingError(f"{path} is not a readable MCAP recording ({why}); "
                             f"record one with foxglove_bridge mcap_path:=FILE") from exc
    times = [t for t, _ in stats] + [t for t, _ in power]
    if not times and cut_off:
        raise RecordingError(f"{path} is not a readable MCAP recording yet: it ends without MCAP's footer and before "
                             f"its first complete chunk (still being recorded: read it once the recorder stops; "
                             f"else its recorder was killed early or the file is damaged)")
    if not times:
        raise RecordingError(f"{path} holds none of the suite's topics ({topics.INFERENCE_STATS}, "
                             f"{topics.POWER_TELEMETRY}); record them with foxglove_bridge mcap_path:=FILE")
    stats.sort(key=lambda tm: tm[0])  # a file read without its index comes in file order
    power.sort(key=lambda tm: tm[0])
    ran = [m.latency_ms for _, m in stats if m.latency_ms != 0.0]  # 0: never ran (convert.latency_s_from_stats)
    measured = [ms for ms in ran if math.isfinite(ms)]  # one NaN would make every percentile NaN
    latencies = np.array(measured or [math.nan])
    # A module draws power, never gives it back: a negative window is a broken sensor reading.
    measured_power = [m for _, m in power if math.isfinite(m.average_power_w) and m.average_power_w >= 0
                      and math.isfinite(m.window_energy_j)]
    energy_j = sum(m.window_energy_j for m in measured_power)
    window_s = sum(m.window_energy_j / m.average_power_w for m in measured_power if m.average_power_w > 0)
    points = _changes(m.operating_point.name or m.nvpmodel_mode for _, m in power)
    return RecordingSummary(
        path=str(path), duration_s=max(times) - min(times), inferences=len(ran),
        latency_p50_ms=float(np.percentile(latencies, 50)), latency_p95_ms=float(np.percentile(latencies, 95)),
        mean_power_w=energy_j / window_s if window_s > 0 else math.nan, energy_j=energy_j,
        energy_per_inference_j=energy_j / len(ran) if ran and energy_j > 0 else math.nan,
        simulated=any(m.simulated for _, m in power) or any(m.simulated for _, m in stats),
        operating_points=points, report_points=_changes(m.operating_point.name for m in reports),
        power_series=[(t, m.average_power_w) for t, m in power],
        last_report=reports[-1] if reports else None, frames_not_run=len(stats) - len(ran),
        latency_not_measured=len(ran) - len(measured),
        power_windows_not_measured=len(power) - len(measured_power), cut_off=cut_off)
