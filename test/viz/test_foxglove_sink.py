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


def test_a_taken_port_is_one_line_naming_the_ways_out(tmp_path):
    import socket

    import pytest

    from edge_roofline.suite.errors import is_user_error
    from edge_roofline.viz.foxglove_sink import FoxgloveServerError
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(FoxgloveServerError) as caught:
            FoxgloveSink(port=port, mcap_path=tmp_path / "never.mcap")
    message = str(caught.value)
    assert f"Foxglove port {port} on 127.0.0.1 is in use" in message and "\n" not in message
    assert "-p port:=0" in message and "serve:=false" in message and "--no-foxglove" in message
    assert is_user_error(caught.value)  # a node prints it as its one "cannot start" line, exit 2


def test_a_recording_says_what_it_holds_and_when_it_is_nothing(tmp_path):
    empty = FoxgloveSink(serve=False, mcap_path=tmp_path / "empty.mcap")
    empty.channel("/power/telemetry", "edge_roofline/msg/PowerTelemetry")
    empty.close()
    assert empty.recording_summary().startswith(f"recorded NOTHING to {tmp_path / 'empty.mcap'}: no message arrived")
    full = FoxgloveSink(serve=False, mcap_path=tmp_path / "full.mcap")
    full.channel("/inference/stats", "edge_roofline/msg/InferenceStats")
    for stamp in (1, 2):
        full.log("/power/telemetry", "edge_roofline/msg/PowerTelemetry", serialize_message(PowerTelemetry()), stamp)
    full.close()
    assert full.recording_summary() == f"recorded 2 messages on 1 of 2 topics to {tmp_path / 'full.mcap'}"
    assert FoxgloveSink(serve=True, port=0).recording_summary() is None


def test_a_path_it_cannot_record_to_names_the_path_and_the_fix(tmp_path):
    import pytest

    from edge_roofline.viz.foxglove_sink import RecordPathError
    with pytest.raises(RecordPathError, match=f"cannot record to {tmp_path}: Is a directory .*; give a file"):
        FoxgloveSink(serve=True, port=0, mcap_path=tmp_path)
