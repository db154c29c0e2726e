"""When roofline reports come (issue 23, finding 4): the first one soon after start even before a
frame arrives, one when the operating point changes, and the configured cadence held for a light
model at a low frame rate, with profiling inside its budget of wall-clock time."""

from edge_roofline.backends.onnxruntime_backend import OnnxRuntimeBackend
from edge_roofline.clock import SimClock
from edge_roofline.inference.pipeline import InferenceConfig, InferencePipeline
from edge_roofline.inference.schedule import ProfileSchedule
from test.inference.test_pipeline import CEILINGS, image_frame

RUN_S, PROFILE_S = 0.001, 0.050  # a light model: 1 ms a frame, a profiled run 50 ms


class TimedBackend(OnnxRuntimeBackend):
    """Real ONNX Runtime outputs; time on a simulated clock (a frame 1 ms, a profile 50 ms)."""

    def __init__(self, clock: SimClock, **opts) -> None:
        super().__init__(**opts)
        self.sim = clock

    def run(self, feeds):
        result = super().run(feeds)
        self.sim.advance(RUN_S)
        result.latency_s = RUN_S
        return result

    def profile(self, feeds, runs=1):
        profile = super().profile(feeds, runs)
        self.sim.advance(PROFILE_S)
        return profile


def timed_pipeline(clock, point_source=None, **cfg):
    return InferencePipeline(InferenceConfig(model="zoo:tiny_cnn", **cfg), lambda: CEILINGS, clock=clock,
                             backend_factory=lambda kind, **opts: TimedBackend(clock, **opts),
                             point_source=point_source)


def serve_for(p, clock, seconds, rate_hz=30.0):
    """Frames at ``rate_hz`` for ``seconds`` of simulated time; the reports made, with their times."""
    reports, end_s = [], clock.now_s() + seconds
    while clock.now_s() < end_s:
        p.submit(image_frame(clock.now_s()))
        result = p.process_next(timeout_s=0.0)
        if result.report is not None:
            reports.append((clock.now_s(), result.report))
        clock.advance(max(0.0, 1.0 / rate_hz - RUN_S))
    return reports


def test_the_cadence_holds_for_a_light_model_at_30_hz():
    clock = SimClock()
    p = timed_pipeline(clock, profile_every_frames=0, profile_every_s=5.0)
    reports = serve_for(p, clock, 60.0)
    p.close()
    times = [t for t, _ in reports]
    # Before: the budget counted inference time served (30 ms a second here), so after the first
    # report the next waited about 5 minutes.
    assert len(reports) >= 11, times
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) < 5.0 + 0.2, gaps
    # Within budget: profiled runs took at most the budget's share of the time served.
    spent_s = sum(r.cost_s for _, r in reports)
    assert spent_s <= p.config.profile_budget_fraction * 60.0 + PROFILE_S


def test_the_budget_spaces_reports_when_profiling_is_expensive():
    clock = SimClock()
    p = timed_pipeline(clock, profile_every_frames=1, profile_every_s=0, profile_budget_fraction=0.01)
    reports = serve_for(p, clock, 30.0)
    p.close()
    times = [t for t, _ in reports]
    assert all(b - a >= PROFILE_S / 0.01 - 0.1 for a, b in zip(times, times[1:])), times


def test_the_first_report_comes_without_a_frame_and_a_point_change_brings_another():
    clock = SimClock()
    board = {"point": "MAXN"}
    p = timed_pipeline(clock, point_source=lambda: board["point"], profile_every_frames=0, profile_every_s=0)
    assert p.process_next(timeout_s=0.0) is None
    first = p.profile_idle()  # no camera yet: the model's own dummy input
    assert first is not None and first.reason == "start" and first.point == "MAXN"
    assert p.profile_idle() is None  # nothing new is due (no cadence here)
    reports = serve_for(p, clock, 3.0)
    assert not reports
    board["point"] = "MODE_30W/c4-cpu1498-gpu612-emc2133"  # the governor moved the board
    reports = serve_for(p, clock, 1.0)
    assert [(r.reason, r.point) for _, r in reports] == [("operating point change", board["point"])]
    board["point"] = "MAXN"
    clock.advance(10.0)
    assert p.process_next(timeout_s=0.0) is None
    idle = p.profile_idle()  # idle, the board moved: a report from the dummy input
    assert idle is not None and idle.reason == "operating point change" and idle.point == "MAXN"
    p.close()


def test_a_failed_profile_is_not_retried_at_every_frame():
    s = ProfileSchedule(every_frames=0, every_s=5.0, budget_fraction=0.02, now_s=0.0)
    assert s.due(0.0) == "start"
    s.done(0.0, 0.5, 0.5)  # failed after 0.5 s: that is its cost
    assert s.due(1.0) == "" and s.due(24.0) == ""
    assert s.due(25.0) == "every 5 s"


def test_without_frames_reports_keep_the_time_cadence():
    """No camera yet: a Foxglove client connecting a minute in still gets a report within the
    cadence (issue 23: the layout's panels sat empty for 40 s and more)."""
    clock = SimClock()
    p = timed_pipeline(clock, profile_every_frames=100, profile_every_s=5.0)
    made = []
    for _ in range(600):  # 60 s, idle
        clock.advance(0.1)
        assert p.process_next(timeout_s=0.0) is None
        report = p.profile_idle()
        if report is not None:
            made.append((clock.now_s(), report.reason))
    p.close()
    assert made[0][1] == "start" and all(reason == "every 5 s" for _, reason in made[1:])
    assert 11 <= len(made) <= 13 and max(b - a for (a, _), (b, _) in zip(made, made[1:])) <= 5.2
