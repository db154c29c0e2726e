"""The governor policy in a multi-stream run (SIMULATION): targets per stream, and a model switch
that reaches the core through the node path (the model id in the stream's stats ->
ModelFollower -> set_model at the next step)."""

from edge_roofline.governor.eval.policies import GovernorController
from edge_roofline.governor.eval.scenario import scenario_from_dict
from edge_roofline.governor.eval.simulate import STEP_S, maxn_mode_id, simulate


class Recording(GovernorController):
    """Notes when the core's idea of each stream's model changes."""

    def __init__(self) -> None:
        super().__init__()
        self.models: list[tuple[float, str, str]] = []  # (t, stream, model id)
        self.first_seen: dict[str, float] = {}

    def observe_inference(self, latency_s, now_s, stream, model_id) -> None:
        self.first_seen.setdefault(model_id, now_s)
        super().observe_inference(latency_s, now_s, stream, model_id)

    def step(self, now_s) -> None:
        super().step(now_s)
        for name, s in self.gov.streams.items():
            if not any(n == name and m == s.model_id for _, n, m in self.models):
                self.models.append((now_s, name, s.model_id))


class StaleStats(Recording):
    """A serving node whose stats never name its new model."""

    def observe_inference(self, latency_s, now_s, stream, model_id) -> None:
        super().observe_inference(latency_s, now_s, stream, "mobilenetv2" if stream == "tr" else model_id)


def _switch():
    return scenario_from_dict({
        "device": "agx_orin_64gb", "precision": "fp16", "seed": 4, "duration_s": 4, "streams": [
            {"name": "det", "model": "yolo_tiny", "input_rate_hz": 30, "target_latency_ms": 8},
            {"name": "tr", "phases": [
                {"duration_s": 2, "model": "mobilenetv2", "input_rate_hz": 30, "target_latency_ms": 6},
                {"duration_s": 2, "model": "resnet18", "batch": 4, "input_rate_hz": 30, "target_latency_ms": 9}]}]},
        "switch")


def test_a_model_switch_reaches_the_governor_through_the_streams_stats():
    s = _switch()
    controller = Recording()
    simulate(s, maxn_mode_id(s), controller)
    assert [(n, m) for _, n, m in controller.models] == [
        ("det", "yolo_tiny"), ("tr", "mobilenetv2"), ("tr", "resnet18@batch4")]
    switched_at = controller.models[-1][0]
    seen = controller.first_seen["resnet18@batch4"]
    assert 2.0 < seen <= switched_at <= seen + STEP_S + 1e-9  # at the first step after the stats said so
    assert controller.gov.streams["tr"].config.target_latency_ms == 9  # set_target per stream
    assert controller.gov.streams["det"].config.target_latency_ms == 8

    # it is the stats that tell: a node whose stats keep the old id leaves the old model in place
    stale = StaleStats()
    simulate(s, maxn_mode_id(s), stale)
    assert [(n, m) for _, n, m in stale.models] == [("det", "yolo_tiny"), ("tr", "mobilenetv2")]
