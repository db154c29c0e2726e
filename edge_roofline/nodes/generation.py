"""generation: a language model served on ROS. Prompts in (generation/request), tokens streamed out
(generation/tokens), per-request GenerationStats (TTFT, TPOT p50/p95, tokens/s, energy per token),
one InferenceStats per step (inference/stats, with its phase and context) and a RooflineReport
per phase (inference/roofline). The server (queue, steps, reports, model switch) lives in
edge_roofline.inference.generation_serving; this node wires it to topics and parameters.
Beside an inference node, run it in a namespace of its own (the suite uses /llm)."""

from __future__ import annotations

import concurrent.futures
import sys

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage

from edge_roofline.inference.config import generation_config, report_ceilings
from edge_roofline.inference.generation_requests import COMPLETED, Request, RequestEnd, not_measured
from edge_roofline.inference.generation_serving import GenerationServer, PhaseReport
from edge_roofline.inference.worker import SupervisedWorker, worker_status
from edge_roofline.msg import GeneratedToken, GenerationRequest, GenerationStats, InferenceStats, PowerTelemetry
from edge_roofline.msg import RooflineReport
from edge_roofline.nodes import convert
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.nodes.serving import ModelSwitch, ServingPlatform
from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_s
from edge_roofline.telemetry.energy_meter import AwaitingEnergy, EnergyMeter
from edge_roofline.viz.chart_image import phase_roofline_png

PARAMETERS = {
    "model": ("zoo:tiny_decoder", "decoder ONNX file with a KV cache, or zoo:tiny_decoder (switchable at runtime)"),
    "backend": ("ort", "ort (ONNX Runtime, this machine) | virtual (times from the live virtual Jetson)"),
    "precision": ("fp32", "fp32 | fp16 | int8 (cost model, and the virtual board's timing)"),
    "device": ("", "catalogue device for the roofs (e.g. agx_orin_64gb); empty: this machine's CPU, measured"),
    "engine": ("gpu", "engine the model runs on, for the roofs: gpu | cpu | dla (ignored for the host CPU)"),
    "platform": ("", "platform to read the operating point from (virtual:DEVICE for the virtual backend), empty: none"),
    "sysfs_root": ("/", "sysfs root for the platform (a live virtual Jetson's root)"),
    "ort_threads": (0, "ONNX Runtime's intra-op threads (backend ort; 0: its default, one per core; 1 avoids "
                       "stalls of a few ms on a CPU shared with other work)"),
    "tokenizer": ("bytes", "bytes (built in: UTF-8 bytes are ids 0-255) | none (prompt_token_ids only)"),
    "max_new_tokens": (64, "tokens generated when a request asks for 0"),
    "max_new_tokens_limit": (1024, "a request asking for more is rejected"),
    "max_prompt_tokens": (1024, "a longer prompt is rejected"),
    "max_context": (0, "tokens in the KV cache at most; generation stops there (stop_reason context); 0: no limit"),
    "eos_token_id": (-1, "generation stops after this token unless a request names its own (-1: none)"),
    "temperature": (0.0, "0: greedy; above: sampled (seeded per request)"),
    "queue_depth": (8, "requests waiting before the oldest is dropped (and told so)"),
    "profile_every_requests": (50, "roofline reports of both phases every N requests (0: off)"),
    "profile_every_s": (10.0, "and every T seconds (0: off); also at start, after a model switch and when the "
                              "operating point changes"),
    "profile_budget_fraction": (0.02, "the most of the worker's wall-clock time profiled steps may take"),
    "report_prompt_tokens": (32, "prompt length (and decode context) of the reports before the first request"),
    "power_topic": ("power/telemetry", "PowerTelemetry topic whose energy counter gives energy per token"),
    "energy_wait_s": (1.0, "how long a request's stats wait for power telemetry covering its end (then NaN)"),
    "publish_chart": (True, "publish the phases' roofline chart (PNG) with every pair of reports"),
    "diagnostics_rate_hz": (1.0, "/diagnostics publish rate (worker, roofs)"),
}
SWITCHABLE = {"model", "backend", "precision"}


def _latched(depth: int) -> QoSProfile:
    """The last reports (both phases) and chart stay available to a subscriber that joins later."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class GenerationNode(Node):
    def __init__(self) -> None:
        super().__init__("generation")
        p = declare_parameters(self, PARAMETERS, runtime=SWITCHABLE)
        self.serving = ServingPlatform(self, p)
        self.platform, self.device_name = self.serving.platform, self.serving.device_name
        self.server = GenerationServer(generation_config(p, self.platform), report_ceilings(p, self.platform),
                                       point_source=self.serving.point_source)
        self.server.loaded.roofs_note = self.serving.roofs_note(p, self.server.loaded)
        self.meter = EnergyMeter()
        self.awaiting = AwaitingEnergy(self.meter, p["energy_wait_s"])
        # Every token must arrive: reliable, with room for a burst of fast tokens.
        self.token_pub = self.create_publisher(GeneratedToken, topics.GENERATION_TOKENS, 200)
        self.request_stats_pub = self.create_publisher(GenerationStats, topics.GENERATION_STATS, 50)
        self.stats_pub = self.create_publisher(InferenceStats, topics.INFERENCE_STATS, 200)
        self.report_pub = self.create_publisher(RooflineReport, topics.ROOFLINE_REPORT, _latched(2))
        self.chart_pub = (self.create_publisher(CompressedImage, topics.ROOFLINE_CHART, _latched(1))
                          if p["publish_chart"] else None)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        self.create_subscription(GenerationRequest, topics.GENERATION_REQUEST, self.on_request, 50)
        self.create_subscription(PowerTelemetry, p["power_topic"], self.on_power, 20)
        self.create_timer(0.05, self.publish_measured)
        self.create_timer(1.0 / p["diagnostics_rate_hz"], self.publish_diagnostics)
        self.switch = ModelSwitch(self, PARAMETERS, SWITCHABLE, self._prepare, self.server.hand_over, "request",
                                  self.serving)
        self._background = concurrent.futures.ThreadPoolExecutor(max_workers=1)  # chart rendering
        self.worker = SupervisedWorker(self._serve_once, name="generation-worker", on_restart=self._on_restart).start()
        self.get_logger().info(f"serving {p['model']} on {p['backend']} ({self.device_name}); prompts on "
                               f"{self.resolve_topic_name(topics.GENERATION_REQUEST)}")
        if self.server.loaded.roofs_note:
            self.get_logger().warning(self.server.loaded.roofs_note)

    # ---- input --------------------------------------------------------------------------
    def on_request(self, msg: GenerationRequest) -> None:
        now = self.get_clock().now()
        stamp = msg.header.stamp
        request = Request(arrival_s=self.server.clock.now_s(), arrival_wall_s=stamp_s(now), stamp=stamp,
                          frame_id=msg.header.frame_id,
                          request_id=msg.request_id or f"{stamp.sec}.{stamp.nanosec:09d}", prompt=msg.prompt,
                          prompt_token_ids=list(msg.prompt_token_ids), max_new_tokens=msg.max_new_tokens,
                          stop_token_id=msg.stop_token_id)
        for end in self.server.submit(request):
            self._publish_end(end)
            self.get_logger().warning(f"request {end.request.request_id}: {end.error}", throttle_duration_sec=5.0)

    def on_power(self, msg: PowerTelemetry) -> None:
        self.meter.add(stamp_s(msg.header.stamp), msg.energy_j, msg.source)

    def _prepare(self, p: dict):
        return self.server.prepare(generation_config(p, self.platform), report_ceilings(p, self.platform))

    # ---- worker -------------------------------------------------------------------------
    def _on_restart(self, message: str) -> None:
        self.get_logger().error(message)
        for end in self.server.worker_died(message):
            self._publish_end(end)

    def _serve_once(self) -> None:
        items = self.server.process_next(timeout_s=0.1)
        reports = [item for item in items if isinstance(item, PhaseReport)]
        for item in items:
            if isinstance(item, RequestEnd):
                self._publish_end(item)
            elif not isinstance(item, PhaseReport):
                self.token_pub.publish(convert.generated_token_msg(item))
                self.stats_pub.publish(convert.step_stats_msg(item))
        if reports:
            self._publish_reports(reports)

    def _publish_end(self, end: RequestEnd) -> None:
        if end.outcome != COMPLETED:
            self.token_pub.publish(convert.request_done_msg(end))
            self.get_logger().error(end.error, throttle_duration_sec=2.0)
        if end.stats is None:
            self.request_stats_pub.publish(convert.generation_stats_msg(not_measured(end)))
        else:  # published once the power telemetry covers it (publish_measured)
            self.awaiting.add(end)

    def publish_measured(self) -> None:
        for end in self.awaiting.ready(stamp_s(self.get_clock().now())):
            self.request_stats_pub.publish(convert.generation_stats_msg(end))

    def _publish_reports(self, reports: list[PhaseReport]) -> None:
        stamp = self.get_clock().now().to_msg()
        for r in reports:
            self.report_pub.publish(convert.roofline_report_msg(
                r.analysis, stamp, model_id=r.served.model_id, backend=r.served.backend, device=self.device_name,
                simulated=r.served.simulated, point=r.point, sample_count=r.runs,
                warnings=[r.roofs_note] if r.roofs_note else [], phase=r.phase.phase,
                context_tokens=r.phase.context, new_tokens=r.phase.new_tokens))
        if self.chart_pub is not None:
            self._background.submit(self._publish_chart, reports)

    def _publish_chart(self, reports: list[PhaseReport]) -> None:
        first = reports[0]
        title = self.serving.chart_title(first.served.model_id, first.served.simulated, first.roofs_note)
        msg = CompressedImage(format="png", data=phase_roofline_png([r.phase for r in reports], title))
        msg.header.stamp = self.get_clock().now().to_msg()
        self.chart_pub.publish(msg)

    def publish_diagnostics(self) -> None:
        now = self.get_clock().now()
        statuses = [worker_status(f"{self.get_name()}: worker", self.worker),
                    self.serving.roofs_status(self.get_name(), self.server.loaded.roofs_note)]
        self.diagnostics_pub.publish(convert.diagnostic_array_msg(statuses, now.to_msg(), self.serving.hardware_id))

    def destroy_node(self) -> None:
        self.worker.stop()  # ends after the step in hand
        self._background.shutdown(wait=True, cancel_futures=True)
        for end in self.awaiting.ready(float("inf")):  # the last requests' stats, energy or not
            self.request_stats_pub.publish(convert.generation_stats_msg(end))
        self.switch.discard()
        self.server.close()
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    return run_node(GenerationNode, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
