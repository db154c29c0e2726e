"""Real rclpy: requests every 50 ms into the generation node while `model` is switched 8 times
between two decoders, with a corrupt file, a model that is not a decoder and a backend that cannot
generate refused in between. Every good switch replies true and `param get` names the model that
then serves every request sent after the reply; the refused ones name why; every request ends with
a done message and lands in one counter; the worker never dies; each model gets its phase reports."""

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters

from edge_roofline.models import zoo
from edge_roofline.ros.stamps import stamp_s
from test.nodes.llm_client import LlmClient, check_counters
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.test_inference_switch import _call

SWITCHES = 8


def test_switching_decoders_under_load_keeps_serving_and_tells_the_truth(ros_env, tmp_path):
    other = tmp_path / "small_decoder.onnx"
    zoo.save("tiny_decoder", str(other), hidden=64, heads=2, layers=1, vocab=300)
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"this is not protobuf")
    log = tmp_path / "generation.log"
    proc = start_node("generation", ros_env, {"device": "agx_orin_64gb", "engine": "cpu", "max_new_tokens": 12,
                                              "queue_depth": 4, "profile_every_requests": 0, "profile_every_s": 0.0,
                                              "publish_chart": False, "energy_wait_s": 0.2}, log)
    with watcher(ros_env) as (node, spin_until):
        client = LlmClient(node)
        node.create_timer(0.05, lambda: client.send(ids=[5, 6, 7, 8, 9, 10, 11, 12]))
        set_client = node.create_client(SetParameters, "/generation/set_parameters")
        get_client = node.create_client(GetParameters, "/generation/get_parameters")

        def set_param(name: str, value: str):
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
            result = _call(node, spin_until, set_client,
                           SetParameters.Request(parameters=[Parameter(name=name, value=value)])).results[0]
            return result, stamp_s(node.get_clock().now())

        def model_parameter() -> str:
            return _call(node, spin_until, get_client, GetParameters.Request(names=["model"])).values[0].string_value

        def reports_since_first(model: str, before: int):
            after = client.reports[before:]
            first = next((k for k, r in enumerate(after) if r.model_id == model), len(after))
            return after[first:]

        def ended_after(replied_s: float):
            return [s for key, a in client.answers.items() if key * 1e-9 > replied_s for s in a.stats]

        try:
            assert spin_until(lambda: len([a for a in client.answers.values() if a.stats]) >= 5 and client.reports,
                              timeout_s=90, procs=[proc]), log_text(log)
            served = ["zoo:tiny_decoder"]
            for i in range(SWITCHES):
                if i == SWITCHES // 2:
                    for name, value, why in (("model", str(corrupt), "not a valid ONNX model"),
                                             ("model", "zoo:tiny_cnn", "not a decoder with KV-cache inputs"),
                                             ("backend", "tensorrt", "backend must be ort or virtual")):
                        result, _ = set_param(name, value)
                        assert not result.successful and why in result.reason, result.reason
                    assert model_parameter() == served[-1]
                model = str(other) if i % 2 == 0 else "zoo:tiny_decoder"
                reports_before = len(client.reports)
                result, replied_s = set_param("model", model)
                assert result.successful, f"switch {i} to {model}: {result.reason}\n{log_text(log)}"
                assert model_parameter() == model
                served.append(model)
                assert spin_until(lambda: len(ended_after(replied_s)) >= 3, timeout_s=60, procs=[proc]), \
                    f"no request served after switch {i}\n{log_text(log)}"
                assert {s.model_id for s in ended_after(replied_s)} == {model}, f"switch {i}: param get says {model}"
                # The previous model's reports of its last requests may still arrive (on a loaded
                # machine they did): from the new model's first report on, only its own.
                assert spin_until(lambda: len(reports_since_first(model, reports_before)) >= 2
                                  and {r.model_id for r in reports_since_first(model, reports_before)} == {model},
                                  timeout_s=60, procs=[proc]), [r.model_id for r in client.reports[reports_before:]]
        finally:
            code = stop_node(proc)
    assert code == 0, log_text(log)
    assert "Traceback" not in log_text(log) and "died" not in log_text(log)
    # The reports name the models in the order they served: never one switched away from after the next one's.
    ids = [r.model_id for r in client.reports]
    shown = [m for k, m in enumerate(ids) if k == 0 or m != ids[k - 1]]
    order = iter(served)
    assert all(m in order for m in shown), (shown, served)
    stats = [s for a in client.answers.values() for s in a.stats]
    for s in stats:
        check_counters(s)
        assert s.outcome in ("completed", "dropped"), (s.outcome, s.last_error)
    last = max(stats, key=lambda s: (s.requests_received, s.requests_received - s.requests_in_flight))
    assert last.worker_restarts == 0 and last.errors == 0 and last.requests_failed == 0, last.last_error
    for answer in client.answers.values():
        if answer.stats:  # ended: its last message says so
            assert answer.tokens and answer.tokens[-1].done, answer.tokens
    assert not client.strays
