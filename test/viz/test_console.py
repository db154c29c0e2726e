"""The console's summary says where the board is (from the power monitor's reading), where the
per-layer table was profiled, and the governor's own point, so a stale table reads as stale."""

from edge_roofline.viz.console import ConsoleSnapshot, GenerationLine, LayerLine, render


def test_the_console_names_the_board_point_and_where_the_table_was_profiled():
    snap = ConsoleSnapshot(device="virtual Jetson AGX Orin 64GB", operating_point="MAXN/c6-cpu1498-gpu612-emc2133",
                           report_point="MAXN", governor_mode="active", governor_state="holding",
                           governor_point="MAXN/c6-cpu1498-gpu612-emc2133",
                           layers=[LayerLine("conv0", "Conv", 1e-3, "compute", 0.5)])
    text = render(snap)
    assert "point MAXN/c6-cpu1498-gpu612-emc2133" in text
    assert "profiled at MAXN; the board is at MAXN/c6-cpu1498-gpu612-emc2133 now, a new report is due" in text
    assert "governor active/holding  point MAXN/c6-cpu1498-gpu612-emc2133" in text
    snap.report_point = snap.operating_point
    assert "a new report is due" not in render(snap)


def test_a_language_model_gets_its_line_with_energy_or_why_not():
    line = GenerationLine("zoo:tiny_decoder", "completed", 1.6, 0.84, 0.88, 1141.0, 0.0326, "", 5, 3, 1, 1, 0, 0)
    text = render(ConsoleSnapshot(generation=line))
    assert "llm zoo:tiny_decoder: last request completed  TTFT 1.60 ms  TPOT p50 0.84 ms p95 0.88 ms" in text
    assert "energy/token 32.60 mJ" in text and "requests 5 = 3 completed + 1 dropped + 1 rejected" in text
    none = GenerationLine("m", "completed", 1.0, 1.0, 1.0, 1.0, float("nan"), "no power telemetry received", 1, 1,
                          0, 0, 0, 0)
    assert "energy/token n/a (no power telemetry received)" in render(ConsoleSnapshot(generation=none))
    assert "llm" not in render(ConsoleSnapshot())


def test_before_any_message_each_line_says_what_it_waits_for_and_on_which_topic():
    text = render(ConsoleSnapshot(stats_topic="/robot/inference/stats", stats_publishers=1,
                                  power_topic="/robot/power/telemetry"))
    assert text.splitlines() == ["edge_roofline",
                                 "model: waiting for the first InferenceStats on /robot/inference/stats",
                                 "power: waiting for the first PowerTelemetry on /robot/power/telemetry"]
    nobody = render(ConsoleSnapshot(stats_topic="/inference/stats"))
    assert "waiting for the first InferenceStats on /inference/stats (nothing publishes it yet)" in nobody


def test_stats_without_a_governor_show_no_empty_target():
    text = render(ConsoleSnapshot(stats_received=True, model="zoo:mobilenetv2", backend="virtual",
                                  latency_p50_ms=1.0, latency_p95_ms=2.0, fps=30.0))
    assert "model zoo:mobilenetv2 on virtual" in text and "target" not in text and "n/a" not in text


def test_a_language_model_before_its_first_request_says_where_to_send_one():
    snap = ConsoleSnapshot(stats_topic="/inference/stats", power_topic="/power/telemetry",
                           generation_request_topic="/robot/planner/generation/request", generation_publishers=1)
    text = render(snap)
    assert ("llm: no request served yet: send a GenerationRequest to /robot/planner/generation/request "
            "(README: Language models; docs/nodes.md#language-models-the-generation-node)") in text
    assert "InferenceStats" not in text  # nothing publishes it: a language model alone, no pipeline to wait for
    snap.stats_publishers = 1
    assert "waiting for the first InferenceStats on /inference/stats" in render(snap)


def test_a_layer_faster_than_its_roof_shows_why_not_an_efficiency_over_100_percent():
    layer = LayerLine("block1.dw.conv", "Conv", 5e-6, "memory", 3.2, "above the DRAM roof: served from cache")
    text = render(ConsoleSnapshot(layers=[layer]))
    assert "memory   above the DRAM roof: served from cache" in text and "320" not in text
