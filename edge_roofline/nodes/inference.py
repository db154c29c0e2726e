"""inference: images (or tensors) in, outputs, per-frame InferenceStats and per-layer
RooflineReports out. The pipeline (queueing, preprocessing, profiling, model switch) lives in
edge_roofline.inference.pipeline and its worker's supervision in edge_roofline.inference.worker;
this node wires them to topics and parameters."""

from __future__ import annotations

import concurrent.futures
import sys

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image

from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_s
from edge_roofline.inference.config import inference_config, report_ceilings
from edge_roofline.inference.worker import SupervisedWorker, worker_status
from edge_roofline.msg import InferenceStats, RooflineReport, TensorArray
from edge_roofline.nodes import convert
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.nodes.serving import ModelSwitch, ServingPlatform
from edge_roofline.nodes.image_input import InputLossMonitor, input_qos
from edge_roofline.inference.pipeline import Frame, InferencePipeline, ProfileReport
from edge_roofline.telemetry.stream_health import StreamHealth
from edge_roofline.viz.chart_image import roofline_png

PARAMETERS = {
    "model": ("zoo:tiny_cnn", "ONNX file, TensorRT engine, or zoo:NAME (switchable at runtime)"),
    "onnx_model": ("", "with a TensorRT engine as model (backend tensorrt): the ONNX file (or zoo:NAME) it was built "
                       "from, for the cost model and the layer mapping (switchable; not read with an ONNX model)"),
    "backend": ("ort", "ort | tensorrt | virtual (times from the live virtual Jetson: needs platform virtual:DEVICE)"),
    "precision": ("fp32", "fp32 | fp16 | int8 | mixed (cost model, the virtual board's timing and TensorRT's build, "
                          "neither mixed; a prebuilt engine keeps its own: refused if its sidecar says another, else "
                          "the cost model only)"),
    "calibration_cache": ("", "TensorRT int8 calibration cache file (backend tensorrt building int8 from ONNX "
                              "needs one; replayed, not recomputed; a prebuilt engine needs none)"),
    "device": ("", "catalogue device for the roofs (e.g. agx_orin_64gb); empty: this machine's CPU, measured"),
    "engine": ("gpu", "engine the model runs on, for the roofs: gpu | cpu | dla (ignored for the host CPU; it moves "
                      "nothing: backend tensorrt builds for the GPU, a prebuilt engine runs where it was built)"),
    "platform": ("", "platform to read current clocks from (as power_monitor's; virtual:DEVICE for the virtual "
                     "backend), empty: none"),
    "sysfs_root": ("/", "sysfs root for the platform (a live virtual Jetson's root)"),
    "image_topic": ("image", "sensor_msgs/Image input"),
    "image_reliability": ("best_effort", "input QoS: best_effort (matches every camera) | reliable (lost fragments "
                                         "are re-sent; matches only a reliable camera)"),
    "image_depth": (5, "input QoS history depth: frames held before the oldest is replaced"),
    "lost_frames_warn_fraction": (0.01, "/diagnostics WARN when more of the last 10 s of frames were lost upstream"),
    "tensor_topic": ("", "edge_roofline/TensorArray input instead of images (empty: off)"),
    "input_name": ("", "model input fed with the image (empty: the only input)"),
    "width": (0, "model input width (0: from the model)"),
    "height": (0, "model input height (0: from the model)"),
    "color_order": ("rgb", "rgb | bgr | mono"),
    "resize": ("stretch", "stretch | letterbox"),
    "mean": ([0.0, 0.0, 0.0], "per-channel mean, after dividing by scale"),
    "std": ([1.0, 1.0, 1.0], "per-channel std"),
    "scale": (255.0, "raw pixel values are divided by this first"),
    "layout": ("nchw", "nchw | nhwc"),
    "queue_depth": (2, "frames queued before the oldest is dropped"),
    "profile_every_frames": (300, "a profiled run every N frames (0: off)"),
    "profile_every_s": (10.0, "a profiled run every T seconds (0: off); also one at start, after a model switch "
                              "and when the operating point changes"),
    "profile_budget_fraction": (0.02, "the most of the worker's wall-clock time profiled runs may take (a report "
                                      "waits until the last one's extra cost is within it)"),
    "publish_outputs": (True, "publish raw outputs as TensorArray"),
    "publish_chart": (True, "publish the roofline chart (PNG) with every report"),
    "diagnostics_rate_hz": (1.0, "/diagnostics publish rate (inference/stats frequency and timestamp health)"),
}
SWITCHABLE = {"model", "onnx_model", "backend", "precision", "calibration_cache"}


class InferenceNode(Node):
    def __init__(self) -> None:
        super().__init__("inference")
        p = declare_parameters(self, PARAMETERS, runtime=SWITCHABLE)
        qos = input_qos(p["image_reliability"], p["image_depth"], p["lost_frames_warn_fraction"])
        self.serving = ServingPlatform(self, p)
        self.platform, self.device_name = self.serving.platform, self.serving.device_name
        # The point in force is read from the board at every report (and polled between frames:
        # a change asks for a report), never cached: another process (the governor) moves it.
        self.pipeline = InferencePipeline(inference_config(p, self.platform), report_ceilings(p, self.platform),
                                          point_source=self.serving.point_source)
        self.pipeline.loaded.roofs_note = self.serving.roofs_note(p, self.pipeline.loaded)
        self.stats_pub = self.create_publisher(InferenceStats, topics.INFERENCE_STATS, 50)
        # The last report and chart stay available to a subscriber that joins later and asks for
        # them (transient local); volatile subscribers get the next ones, as before.
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.report_pub = self.create_publisher(RooflineReport, topics.ROOFLINE_REPORT, latched)
        self.output_pub = (self.create_publisher(TensorArray, topics.INFERENCE_OUTPUT, 5)
                           if p["publish_outputs"] else None)
        self.chart_pub = (self.create_publisher(CompressedImage, topics.ROOFLINE_CHART, latched)
                          if p["publish_chart"] else None)
        # No expected rate (the camera sets it): a stalled stream is what this catches.
        self.stats_health = StreamHealth(f"edge_roofline: {topics.INFERENCE_STATS}", stamp_s(self.get_clock().now()))
        topic = p["tensor_topic"] or p["image_topic"]
        self.input_loss = InputLossMonitor(self, self.pipeline.counters, topic, p["lost_frames_warn_fraction"])
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        self.create_timer(1.0 / p["diagnostics_rate_hz"], self.publish_diagnostics)
        self.create_subscription(TensorArray if p["tensor_topic"] else Image, topic,
                                 self.on_tensors if p["tensor_topic"] else self.on_image, qos,
                                 event_callbacks=self.input_loss.event_callbacks())
        self.switch = ModelSwitch(self, PARAMETERS, SWITCHABLE, self._prepare, self.pipeline.hand_over, "frame",
                                  self.serving)
        # Chart rendering runs here, off the serving thread, and is waited for at teardown.
        self._background = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.worker = SupervisedWorker(self._serve_once, name="inference-worker", on_restart=self._on_restart).start()
        self.get_logger().info(f"serving {p['model']} on {p['backend']} ({self.device_name})")
        if self.pipeline.loaded.roofs_note:
            self.get_logger().warning(self.pipeline.loaded.roofs_note)

    # ---- input callbacks: enqueue only ------------------------------------------------
    def _now_s(self) -> float:
        return self.pipeline.clock.now_s()

    def on_image(self, msg: Image) -> None:
        self.input_loss.observe(msg.header.stamp)
        self.pipeline.submit(Frame(arrival_s=self._now_s(), stamp=msg.header.stamp, frame_id=msg.header.frame_id,
                                   encoding=msg.encoding, width=msg.width, height=msg.height, step=msg.step,
                                   data=msg.data, is_bigendian=bool(msg.is_bigendian)))

    def on_tensors(self, msg: TensorArray) -> None:
        self.input_loss.observe(msg.header.stamp)
        try:
            tensors, problem = convert.tensors_from_msg(msg), ""
        except ValueError as exc:
            # Rejected by the worker like a bad image: its stats message shows the count and why.
            tensors, problem = None, f"bad tensor input: {exc}"
        self.pipeline.submit(Frame(arrival_s=self._now_s(), stamp=msg.header.stamp, frame_id=msg.header.frame_id,
                                   tensors=tensors, problem=problem))

    # ---- runtime model switch (nodes/model_switch.py: validate on set, act after) ---------
    def _prepare(self, p: dict):
        """New frames wait while it loads (docs/nodes.md)."""
        return self.pipeline.prepare(inference_config(p, self.platform), report_ceilings(p, self.platform))

    # ---- worker ------------------------------------------------------------------------
    def _on_restart(self, message: str) -> None:
        self.pipeline.note_error(message, worker_died=True)
        self.get_logger().error(message)

    def _serve_once(self) -> None:
        """One step of the supervised worker: a frame (its stats, outputs, maybe a report), or,
        with no frame at hand, a report that is due."""
        result = self.pipeline.process_next(timeout_s=0.1)
        if result is None:
            report = self.pipeline.profile_idle()
            if report is not None:
                self._publish_report(report)
            return
        if result.error:
            self.get_logger().error(result.error, throttle_duration_sec=2.0)
        stats = convert.inference_stats_msg(result)
        if self.output_pub is not None and result.outputs:
            self.output_pub.publish(convert.tensor_array_msg(result.outputs, stats.header))
        self.stats_pub.publish(stats)
        self.stats_health.tick(stamp_s(self.get_clock().now()), stamp_s(stats.header.stamp))
        if result.report is not None:
            self._publish_report(result.report)

    def _publish_report(self, report: ProfileReport) -> None:
        self.report_pub.publish(convert.roofline_report_msg(
            report.analysis, self.get_clock().now().to_msg(), model_id=report.model_id, backend=report.backend,
            device=self.device_name, simulated=report.simulated, point=report.point, sample_count=report.runs,
            warnings=[report.roofs_note] if report.roofs_note else []))
        if self.chart_pub is not None:
            # Rendering takes ~0.1-0.3 s: off the serving thread.
            self._background.submit(self._publish_chart, report)

    def publish_diagnostics(self) -> None:
        now = self.get_clock().now()
        statuses = [*self.stats_health.statuses(stamp_s(now)), self.input_loss.status(),
                    worker_status(f"{self.get_name()}: worker", self.worker),
                    self.serving.roofs_status(self.get_name(), self.pipeline.loaded.roofs_note)]
        self.diagnostics_pub.publish(convert.diagnostic_array_msg(statuses, now.to_msg(), self.serving.hardware_id))

    def _publish_chart(self, report: ProfileReport) -> None:
        title = self.serving.chart_title(report.model_id, report.simulated, report.roofs_note)
        msg = CompressedImage(format="png", data=roofline_png(report.analysis, title))
        msg.header.stamp = self.get_clock().now().to_msg()
        self.chart_pub.publish(msg)

    def destroy_node(self) -> None:
        self.worker.stop()  # ends after the frame in hand
        # No thread may touch the node or the model once they are gone (a C++ terminate otherwise).
        self._background.shutdown(wait=True, cancel_futures=True)
        self.switch.discard()
        self.pipeline.close()
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    return run_node(InferenceNode, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
