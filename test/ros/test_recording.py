"""A recorded MCAP file is read back and analysed by the CLI."""


import math

import pytest
from rclpy.serialization import serialize_message

from edge_roofline.ros import topics
from edge_roofline.cli import main as cli
from edge_roofline.msg import InferenceStats, LayerRoofline, OperatingPoint, PowerTelemetry, RooflineReport
from edge_roofline.ros.recording import RecordingError, read_recording
from edge_roofline.viz.foxglove_sink import FoxgloveSink


def record(path):
    sink = FoxgloveSink(serve=False, mcap_path=path)
    for i in range(20):  # 1 s: 20 inferences, 10 power windows of 0.1 s at 10 W then 20 W
        stats = InferenceStats(frame_index=i + 1, latency_ms=10.0 + i, model_id="m", backend="virtual", simulated=True)
        sink.log("/inference/stats", topics.TYPES[topics.INFERENCE_STATS], serialize_message(stats), int(i * 0.05e9))
    for k in range(10):
        power_w = 10.0 if k < 5 else 20.0
        msg = PowerTelemetry(average_power_w=power_w, window_energy_j=power_w * 0.1, simulated=True,
                             operating_point=OperatingPoint(name="MAXN" if k < 5 else "MODE_50W"))
        sink.log("/power/telemetry", topics.TYPES[topics.POWER_TELEMETRY], serialize_message(msg), int(k * 0.1e9))
    report = RooflineReport(model_id="m", peak_flop_per_s=1e12, dram_bandwidth_bytes_per_s=1e11, layer_overhead_s=1e-6,
                            ceilings_engine="gpu", ceilings_source="spec", layers=[
                                LayerRoofline(name="conv", op_type="Conv", precision="fp16", flops=1e9, bytes_total=1e7,
                                              arithmetic_intensity_flop_per_byte=100.0, attainable_flop_per_s=1e12,
                                              attainable_time_s=1e-3, measured_time_s=2e-3, bound="compute",
                                              efficiency=0.5)])
    sink.log("/inference/roofline", topics.TYPES[topics.ROOFLINE_REPORT], serialize_message(report), int(0.9e9))
    sink.close()


def test_recording_summary_and_charts(tmp_path, capsys):
    path = tmp_path / "session.mcap"
    record(path)
    summary = read_recording(path)
    assert summary.inferences == 20 and summary.simulated
    assert summary.energy_j == pytest.approx(15.0)
    assert summary.mean_power_w == pytest.approx(15.0)
    assert summary.energy_per_inference_j == pytest.approx(15.0 / 20)
    assert summary.latency_p50_ms == pytest.approx(19.5)
    assert summary.operating_points == ["MAXN", "MODE_50W"]
    plots = ["--plot", str(tmp_path / "r.png"), "--power-plot", str(tmp_path / "p.png")]
    assert cli(["recording", str(path), *plots]) == 0
    out = capsys.readouterr().out
    assert "energy/inference 750.00 mJ" in out and "SIMULATION" in out
    assert (tmp_path / "r.png").stat().st_size > 1000 and (tmp_path / "p.png").stat().st_size > 1000


def test_bad_recordings_name_the_problem(tmp_path):
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap file at all")
    with pytest.raises(RecordingError, match="not a readable MCAP"):
        read_recording(junk)
    with pytest.raises(RecordingError, match="not found"):
        read_recording(tmp_path / "missing.mcap")
    empty = tmp_path / "empty.mcap"
    FoxgloveSink(serve=False, mcap_path=empty).close()
    with pytest.raises(RecordingError, match="holds none of the suite's topics"):
        read_recording(empty)


def test_frames_that_never_ran_and_nan_measurements_are_named_not_averaged(tmp_path, capsys):
    """A rejected frame's stats (latency 0) is no inference; one NaN latency must not make the
    percentiles NaN; a power window the monitor could not measure (NaN, energy 0) or a broken
    sensor's negative one is named, not summed."""
    path = tmp_path / "gaps.mcap"
    sink = FoxgloveSink(serve=False, mcap_path=path)
    for i, latency_ms in enumerate([10.0] * 8 + [0.0, 0.0, math.nan, math.inf]):
        stats = InferenceStats(frame_index=i + 1, latency_ms=latency_ms, simulated=True)
        sink.log("/inference/stats", topics.TYPES[topics.INFERENCE_STATS], serialize_message(stats), int(i * 0.05e9))
    for k, power_w in enumerate([10.0, 10.0, 10.0, math.nan, -1e6]):  # -1e6: a rail file read -99999999 mA
        msg = PowerTelemetry(average_power_w=power_w, window_energy_j=power_w * 0.1 if math.isfinite(power_w) else 0.0,
                             simulated=True)
        sink.log("/power/telemetry", topics.TYPES[topics.POWER_TELEMETRY], serialize_message(msg), int(k * 0.1e9))
    sink.close()
    summary = read_recording(path)
    assert summary.inferences == 10 and summary.frames_not_run == 2 and summary.latency_not_measured == 2
    assert summary.latency_p50_ms == pytest.approx(10.0) and summary.latency_p95_ms == pytest.approx(10.0)
    assert summary.energy_per_inference_j == pytest.approx(3.0 / 10) and summary.power_windows_not_measured == 2
    assert cli(["recording", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 frame(s) never ran" in out and "2 inference(s) with a NaN/Inf latency" in out
    assert "2 power window(s) without a plausible measurement" in out


def test_a_recording_still_being_written_is_summarised_up_to_its_last_complete_chunk(tmp_path, capsys):
    """`edge-roofline recording` on the file of a demo still running (or of a recorder killed): no
    footer yet, but every complete chunk is readable; it was refused as 'not a readable MCAP
    recording ... record one with foxglove_bridge', which it is."""
    path = tmp_path / "live.mcap"
    sink = FoxgloveSink(serve=False, mcap_path=path)
    try:
        for i in range(6000):  # a few of the writer's chunks (~400 KB each)
            stats = InferenceStats(frame_index=i + 1, latency_ms=2.0, model_id="m" * 200, simulated=True)
            sink.log("/inference/stats", topics.TYPES[topics.INFERENCE_STATS], serialize_message(stats), i * 10**7)
            power = PowerTelemetry(average_power_w=10.0, window_energy_j=0.1, simulated=True)
            sink.log("/power/telemetry", topics.TYPES[topics.POWER_TELEMETRY], serialize_message(power), i * 10**7)
        summary = read_recording(path)  # the sink is still open: no footer
        assert summary.cut_off and 0 < summary.inferences < 6000, summary
        assert summary.energy_j == pytest.approx(0.1 * summary.inferences, rel=0.05)
        assert cli(["recording", str(path)]) == 0
        assert "ends without MCAP's footer" in capsys.readouterr().out
        head = tmp_path / "head.mcap"  # cut before its first complete chunk
        head.write_bytes(path.read_bytes()[:4096])
        with pytest.raises(RecordingError, match=r"before its first complete chunk \(still being recorded: read it "
                                                 r"once the recorder stops"):
            read_recording(head)
    finally:
        sink.close()
    assert not read_recording(path).cut_off and read_recording(path).inferences == 6000
