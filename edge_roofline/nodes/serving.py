"""What the serving nodes (inference, generation) share: the board they read and the roofs their
reports name (``ServingPlatform``), and the runtime model switch (``ModelSwitch``): validate on set,
act after. The on-set callback loads the new model beside the one serving, so the reply is the
truth (a model that cannot load is refused with the reason, and the old one keeps serving); the
post-set callback, once the parameters hold the new values, hands it to the worker and waits for
it (briefly), so the reply goes out once the new model serves."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node

from edge_roofline.inference.ceilings import roofs_mismatch
from edge_roofline.nodes.common import start_only_refusal
from edge_roofline.platforms import create_platform_or_degraded
from edge_roofline.suite.errors import one_line
from edge_roofline.telemetry.diagnostics import OK, WARN, Status


class ServingPlatform:
    """The platform a serving node reads the operating point from (None without one; a platform
    that cannot start degrades to the CPU one, said in the log), the roofs' device name, and how
    the roofs differ from where a model runs."""

    def __init__(self, node: Node, p: dict) -> None:
        self.platform = None
        if p["platform"]:
            self.platform, problem = create_platform_or_degraded(p["platform"], sysfs_root=p["sysfs_root"])
            if problem:
                node.get_logger().error(problem)
        self.device_name = p["device"] or "host CPU"
        self.hardware_id = self.platform.identity().model if self.platform else self.device_name
        # Read from the board whenever asked, never cached: another process (the governor) moves it.
        self.point_source = self.platform.current_operating_point if self.platform else None

    def roofs_note(self, p: dict, loaded: Any) -> str:
        identity = self.platform.identity() if self.platform else None
        return roofs_mismatch(p["device"], p["engine"], loaded.backend.execution_target(), identity)

    @staticmethod
    def roofs_status(node_name: str, note: str) -> Status:
        return Status(f"{node_name}: roofs", WARN if note else OK, note or "the roofs match where the model runs")

    def chart_title(self, model_id: str, simulated: bool, roofs_note: str) -> str:
        sim = " (SIMULATION)" if simulated else ""
        warning = " - ROOFS DO NOT MATCH WHERE IT RUNS" if roofs_note else ""
        return f"{model_id} on {self.device_name}{sim}{warning}"


class ModelSwitch:
    def __init__(self, node: Node, names: Iterable[str], switchable: set[str], prepare: Callable[[dict], Any],
                 hand_over: Callable[[Any, float], bool], in_hand: str, serving: ServingPlatform,
                 wait_s: float = 5.0) -> None:
        """``prepare(parameters)``: a loaded model (raises when it cannot load); ``hand_over(loaded,
        wait_s)``: True once it serves; ``in_hand``: what the worker finishes first ("frame")."""
        self.node, self.names, self.switchable, self.serving = node, tuple(names), switchable, serving
        self.prepare, self.hand_over, self.in_hand, self.wait_s = prepare, hand_over, in_hand, wait_s
        self._prepared = None
        node.add_on_set_parameters_callback(self.on_parameters)
        node.add_post_set_parameters_callback(self.after_parameters)

    def on_parameters(self, params) -> SetParametersResult:
        # Refused before any load: this callback runs before declare_parameters' own.
        refused = start_only_refusal(self.node.get_name(), params, set(self.names) - self.switchable, self.switchable)
        if refused:
            return refused
        changed = {p.name: p.value for p in params}
        p = {name: self.node.get_parameter(name).value for name in self.names} | changed
        self.discard()
        try:
            loaded = self.prepare(p)
        except Exception as exc:  # any failure: the old model keeps serving and the caller is told why
            reason = f"not switched to {p['model']} on {p['backend']}: {one_line(exc)}"
            self.node.get_logger().error(reason)
            return SetParametersResult(successful=False, reason=reason)
        loaded.roofs_note = self.serving.roofs_note(p, loaded)
        self._prepared = loaded
        return SetParametersResult(successful=True)

    def after_parameters(self, params) -> None:
        loaded, self._prepared = self._prepared, None
        if loaded is None:
            return
        log = self.node.get_logger()
        if not self.hand_over(loaded, self.wait_s):
            log.warning(f"{loaded.config.model} is handed over; the worker takes it after the {self.in_hand} in hand")
        log.info(f"switched to {loaded.config.model} on {loaded.config.backend}")
        if loaded.roofs_note:
            log.warning(loaded.roofs_note)

    def discard(self) -> None:
        """A model loaded for a change that was never set (another callback refused it)."""
        stale, self._prepared = self._prepared, None
        if stale is not None:
            stale.close()
