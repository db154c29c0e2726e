"""console: prints a compact live summary of the suite once a second (latency vs target,
power, energy per inference, operating point, governor, top layers and their bound)."""

from __future__ import annotations

import collections
import sys

import numpy as np
from rclpy.node import Node

from edge_roofline.ros import topics
from edge_roofline.msg import GenerationStats, GovernorState, InferenceStats, PowerTelemetry, RooflineReport
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.ros.analysis import roofline_analysis_from_msg
from edge_roofline.ros.stamps import stamp_s
from edge_roofline.viz.console import ConsoleSnapshot, GenerationLine, LayerLine, render

PARAMETERS = {
    "period_s": (1.0, "refresh period"),
    "window_frames": (200, "frames in the latency percentile window"),
    "top_layers": (5, "layers listed"),
    "generation_namespace": ("llm", "namespace of the generation node (relative: under the console's) whose "
                                    "generation/stats the llm line shows (and whose generation/request it "
                                    "points to before the first request)"),
}


class Console(Node):
    def __init__(self, out=sys.stdout) -> None:
        super().__init__("console")
        p = declare_parameters(self, PARAMETERS)
        if not (p["period_s"] > 0 and p["window_frames"] >= 1 and p["top_layers"] >= 0):  # 0 s: prints nonstop
            raise ValueError(f"console: period_s must be > 0 (got {p['period_s']}), window_frames >= 1 (got "
                             f"{p['window_frames']}) and top_layers >= 0 (got {p['top_layers']})")
        self.out, self.top_layers = out, p["top_layers"]
        self.latencies_ms = collections.deque(maxlen=p["window_frames"])
        self.stamps_s = collections.deque(maxlen=p["window_frames"])
        self.snap = ConsoleSnapshot()
        stats = self.create_subscription(InferenceStats, topics.INFERENCE_STATS, self.on_stats, 50)
        power = self.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, self.on_power, 10)
        self.create_subscription(RooflineReport, topics.ROOFLINE_REPORT, self.on_report, 2)
        self.create_subscription(GovernorState, topics.GOVERNOR_STATE, self.on_governor, 10)
        llm = p["generation_namespace"].rstrip("/")
        prefix = f"{llm}/" if llm else ""
        generation = self.create_subscription(GenerationStats, prefix + topics.GENERATION_STATS, self.on_generation, 10)
        s = self.snap  # the names it listens on, resolved, for the lines that wait for them
        s.stats_topic, s.power_topic = stats.topic_name, power.topic_name
        s.generation_request_topic = self.resolve_topic_name(prefix + topics.GENERATION_REQUEST)
        self.watched = stats, generation
        self.create_timer(p["period_s"], self.print_summary)

    def on_stats(self, msg: InferenceStats) -> None:
        self.latencies_ms.append(msg.latency_ms)
        self.stamps_s.append(stamp_s(self.get_clock().now()))
        self.snap.model, self.snap.backend = msg.model_id, msg.backend
        self.snap.stats_received = True
        self.snap.simulated = self.snap.simulated or msg.simulated
        self.snap.frames_dropped, self.snap.errors = msg.frames_dropped, msg.errors + msg.frames_rejected

    def on_power(self, msg: PowerTelemetry) -> None:
        self.snap.simulated = self.snap.simulated or msg.simulated
        self.snap.power_received = True
        self.snap.device, self.snap.power_w = msg.device, msg.average_power_w
        self.snap.nvpmodel_mode = msg.nvpmodel_mode
        self.snap.operating_point = msg.operating_point.name  # read from the board at every publish
        self.snap.gpu_freq_hz, self.snap.emc_freq_hz = msg.gpu_freq_hz, msg.emc_freq_hz

    def on_report(self, msg: RooflineReport) -> None:
        analysis = roofline_analysis_from_msg(msg)  # the core's layers: each says why it beat its roof
        self.snap.layers = [LayerLine(l.name, l.op_type, m.measured_time_s, m.bound, m.efficiency, l.above_roof)
                            for l, m in zip(analysis.layers, msg.layers)]
        self.snap.report_point = msg.operating_point.name

    def on_governor(self, msg: GovernorState) -> None:
        s = self.snap
        s.governor_mode, s.governor_state, s.switches = msg.mode, msg.state, msg.switches
        s.governor_reason = msg.reason
        s.target_latency_ms, s.target_percentile = msg.target_latency_ms, msg.target_percentile
        s.energy_per_inference_j = msg.measured_energy_per_inference_j
        s.governor_point = msg.current_point.name

    def on_generation(self, msg: GenerationStats) -> None:
        self.snap.simulated = self.snap.simulated or msg.simulated
        self.snap.generation = GenerationLine(
            msg.model_id, msg.outcome, msg.ttft_ms, msg.tpot_p50_ms, msg.tpot_p95_ms, msg.tokens_per_s,
            msg.energy_per_output_token_j, msg.energy_note, msg.requests_received, msg.requests_completed,
            msg.requests_dropped, msg.requests_rejected, msg.requests_failed, msg.requests_in_flight)

    def print_summary(self) -> None:
        stats, generation = self.watched
        self.snap.stats_publishers = self.count_publishers(stats.topic_name)
        self.snap.generation_publishers = self.count_publishers(generation.topic_name)
        if self.latencies_ms:
            lat = np.asarray(self.latencies_ms)
            self.snap.latency_p50_ms, self.snap.latency_p95_ms = np.percentile(lat, [50, 95])
            span_s = self.stamps_s[-1] - self.stamps_s[0]
            self.snap.fps = (len(self.stamps_s) - 1) / span_s if span_s > 0 else float("nan")
        print(render(self.snap, self.top_layers) + "\n", file=self.out, flush=True)


def main(argv: list[str] | None = None) -> int:
    return run_node(Console, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
