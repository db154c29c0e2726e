"""Messages written through the Foxglove sink come back intact from the MCAP file, decoded
by an independent reader (mcap + mcap-ros2-support) using only the embedded schema."""

import math

from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rclpy.serialization import serialize_message

from edge_roofline.msg import LayerRoofline, PowerRail, PowerTelemetry, RooflineReport
from edge_roofline.viz.foxglove_sink import FoxgloveSink


def test_mcap_roundtrip_with_embedded_schema(tmp_path):
    path = tmp_path / "rec.mcap"
    sink = FoxgloveSink(serve=False, mcap_path=path)
    report = RooflineReport(model_id="resnet18", layers=[
        LayerRoofline(name="conv1", flops=2.0e9, bound=LayerRoofline.BOUND_COMPUTE),
        LayerRoofline(name="relu1", flops=1.0e6, bound=LayerRoofline.BOUND_MEMORY)])
    power = PowerTelemetry(total_power_w=21.5, rails=[PowerRail(name="VDD_GPU_SOC", power_w=9.25)],
                           cpu_freq_hz=[2.2016e9] * 12, temperature_names=["gpu-thermal"], temperatures_c=[51.5])
    sink.log("/roofline/report", "edge_roofline/msg/RooflineReport", serialize_message(report), 1_000)
    sink.log("/power/telemetry", "edge_roofline/msg/PowerTelemetry", serialize_message(power), 2_000)
    sink.close()

    with open(path, "rb") as f:
        decoded = {channel.topic: msg for _, channel, _, msg in
                   make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()}
    got_report = decoded["/roofline/report"]
    assert got_report.model_id == "resnet18"
    assert [l.name for l in got_report.layers] == ["conv1", "relu1"]
    assert got_report.layers[0].flops == 2.0e9 and got_report.layers[1].bound == "memory"
    got_power = decoded["/power/telemetry"]
    assert got_power.total_power_w == 21.5 and got_power.rails[0].name == "VDD_GPU_SOC"
    assert list(got_power.cpu_freq_hz) == [2.2016e9] * 12
    assert math.isclose(got_power.temperatures_c[0], 51.5)
