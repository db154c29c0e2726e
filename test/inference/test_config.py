"""inference/config.py: the inference node's parameters (its own defaults) as the pipeline's
config and roofs, without rclpy running."""

from types import SimpleNamespace

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.inference.config import generation_config, inference_config, report_ceilings
from edge_roofline.inference.serving import LoadedModel
from edge_roofline.nodes.generation import PARAMETERS as GENERATION_PARAMETERS
from edge_roofline.nodes.inference import PARAMETERS, SWITCHABLE
from edge_roofline.nodes.serving import ModelSwitch
from edge_roofline.roofline.ceilings import spec_ceilings
from edge_roofline.virtual.board import VirtualBoard

DEFAULTS = {name: default for name, (default, _) in PARAMETERS.items()}
GENERATION_DEFAULTS = {name: default for name, (default, _) in GENERATION_PARAMETERS.items()}


def test_defaults_take_the_preprocessing_from_the_model():
    config = inference_config(DEFAULTS, None)
    assert config.model == "zoo:tiny_cnn" and config.backend == "ort" and config.preprocess is None
    assert config.backend_options == {}


def test_width_and_height_set_the_preprocessing_and_virtual_gets_the_platform():
    platform = SimpleNamespace(board=object())  # a virtual Jetson's platform
    p = DEFAULTS | {"width": 64, "height": 48, "layout": "nhwc", "backend": "virtual"}
    config = inference_config(p, platform)
    assert (config.preprocess.width, config.preprocess.height, config.preprocess.layout) == (64, 48, "nhwc")
    assert config.backend_options == {"platform": platform, "precision": "fp32"}


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_the_virtual_backend_times_at_the_precision_in_force(precision):
    """Before, it timed at fp16 whatever the parameter read (only the cost model followed it)."""
    platform = SimpleNamespace(board=VirtualBoard("agx_orin_64gb"))
    p = DEFAULTS | {"backend": "virtual", "precision": precision, "platform": "virtual:agx_orin_64gb"}
    loaded = LoadedModel(inference_config(p, platform), create_backend)
    try:
        assert loaded.backend.precision == precision
        assert {layer.precision for layer in loaded.backend.describe_layers()} == {precision}
    finally:
        loaded.close()


def test_the_virtual_backend_refuses_mixed_rather_than_timing_another_precision():
    platform = SimpleNamespace(board=object())
    with pytest.raises(ValueError, match="backend virtual times the whole model at one precision, not mixed: set "
                                         "precision to fp32, fp16 or int8$"):
        inference_config(DEFAULTS | {"backend": "virtual", "precision": "mixed"}, platform)


@pytest.mark.parametrize("backend", ["tensorrt", "trt"])
def test_tensorrt_builds_at_the_precision_in_force_with_the_calibration_cache(backend):
    """Before, it got no options: every build at its default fp16, whatever the parameter read."""
    assert inference_config(DEFAULTS | {"backend": backend}, None).backend_options == {
        "precision": "fp32", "calibration_cache": None}
    p = DEFAULTS | {"backend": backend, "precision": "int8", "calibration_cache": "/models/yolo.cache"}
    assert inference_config(p, None).backend_options == {"precision": "int8", "calibration_cache": "/models/yolo.cache"}


def test_tensorrt_at_int8_without_a_calibration_cache_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match=r"^invalid inference parameters: TensorRT builds int8 from a calibration "
                                         r"cache \(it replays one, it does not calibrate\) and none is given: set -p "
                                         r"calibration_cache:=FILE \(a TensorRT calibration cache of the model\), "
                                         "or -p precision:=fp16$"):
        inference_config(DEFAULTS | {"backend": "tensorrt", "precision": "int8"}, None)


def test_tensorrt_refuses_mixed_rather_than_building_another_precision():
    with pytest.raises(ValueError, match=r"^invalid inference parameters: backend tensorrt builds at fp32, fp16 or "
                                         r"int8 \(its builder flags\), not mixed: set precision to fp32, fp16 or "
                                         "int8$"):
        inference_config(DEFAULTS | {"backend": "tensorrt", "precision": "mixed"}, None)


def _tensorrt_switch() -> ModelSwitch:
    """The inference node's ModelSwitch on a stand-in node serving backend tensorrt (nothing loads)."""
    node = SimpleNamespace(get_parameter=lambda name: SimpleNamespace(value=(DEFAULTS | {"backend": "tensorrt"})[name]),
                           get_logger=lambda: SimpleNamespace(error=lambda message: None), get_name=lambda: "inference",
                           add_on_set_parameters_callback=lambda callback: None,
                           add_post_set_parameters_callback=lambda callback: None)
    serving = SimpleNamespace(roofs_note=lambda p, loaded: "")
    return ModelSwitch(node, PARAMETERS, SWITCHABLE, lambda p: SimpleNamespace(config=inference_config(p, None)),
                       lambda loaded, wait_s: True, "frame", serving)


def test_a_switch_to_int8_is_refused_in_one_line_until_it_brings_the_calibration_cache():
    """The cache is switchable with the precision (one set_parameters_atomically), not start-only."""
    switch = _tensorrt_switch()
    refused = switch.on_parameters([SimpleNamespace(name="precision", value="int8")])
    assert not refused.successful and "\n" not in refused.reason
    assert refused.reason.startswith("not switched to zoo:tiny_cnn on tensorrt: invalid inference parameters: TensorRT "
                                     "builds int8 from a calibration cache (it replays one, it does not calibrate) "
                                     "and none is given: set -p calibration_cache:=FILE")
    switched = switch.on_parameters([SimpleNamespace(name="precision", value="int8"),
                                     SimpleNamespace(name="calibration_cache", value="/models/tiny.cache")])
    assert switched.successful
    assert switch._prepared.config.backend_options == {"precision": "int8", "calibration_cache": "/models/tiny.cache"}


def test_an_engine_without_the_onnx_it_was_built_from_is_refused_in_one_line_naming_the_parameter():
    """Before, it failed as 'not a readable ONNX model' (the cost model read the engine file)."""
    with pytest.raises(ValueError, match="^invalid inference parameters: model /models/yolo.engine is a TensorRT "
                                         "engine, with no ONNX graph for the cost model and the layer mapping: set -p "
                                         r"onnx_model:=FILE \(the ONNX model it was built from\)$"):
        inference_config(DEFAULTS | {"backend": "tensorrt", "model": "/models/yolo.engine"}, None)
    with pytest.raises(ValueError, match="^invalid inference parameters: model /models/yolo.plan is a TensorRT "
                                         "engine: set -p backend:=tensorrt, or give the ONNX model it was built "
                                         "from as model$"):
        inference_config(DEFAULTS | {"model": "/models/yolo.plan", "onnx_model": "/models/yolo.onnx"}, None)
    config = inference_config(DEFAULTS | {"backend": "tensorrt", "model": "/models/yolo.engine",
                                          "onnx_model": "/models/yolo.onnx"}, None)
    assert config.onnx_model == "/models/yolo.onnx"


def test_a_switch_to_an_engine_is_refused_until_it_brings_its_onnx_model():
    """onnx_model switches with the model (one set_parameters_atomically), not at start only."""
    switch = _tensorrt_switch()
    refused = switch.on_parameters([SimpleNamespace(name="model", value="/models/yolo.engine")])
    assert not refused.successful and "\n" not in refused.reason and "set -p onnx_model:=FILE" in refused.reason
    switched = switch.on_parameters([SimpleNamespace(name="model", value="/models/yolo.engine"),
                                     SimpleNamespace(name="onnx_model", value="/models/yolo.onnx")])
    assert switched.successful and switch._prepared.config.onnx_model == "/models/yolo.onnx"


@pytest.mark.parametrize("make_config", [inference_config, generation_config])
@pytest.mark.parametrize("platform_param, platform", [("", None), ("virtual:agx_orin_64gb", SimpleNamespace())])
def test_the_virtual_backend_without_a_virtual_jetson_is_refused(make_config, platform_param, platform):
    """Before, the backend made a private board of its own: times at clocks no other node sees."""
    params = GENERATION_DEFAULTS if make_config is generation_config else DEFAULTS
    given = "no platform is set" if not platform_param else "platform 'virtual:agx_orin_64gb' gives no virtual Jetson"
    with pytest.raises(ValueError, match=f"backend virtual times the model on a live virtual Jetson, and {given}: "
                                         r"set -p platform:=virtual:agx_orin_64gb -p sysfs_root:=DIR"):
        make_config(params | {"backend": "virtual", "platform": platform_param}, platform)


@pytest.mark.parametrize("device, named", [("orin_nx_16gb", "orin_nx_16gb"), ("", "agx_orin_64gb"),
                                           ("jetson_tx2", "agx_orin_64gb")])
def test_the_virtual_jetson_hint_names_the_nodes_device_where_it_has_one(device, named):
    """Before, it named agx_orin_64gb whatever device the node's roofs were drawn for."""
    with pytest.raises(ValueError, match=f"set -p platform:=virtual:{named} -p sysfs_root:=DIR \\(the root of "
                                         f"`edge-roofline virtual-jetson --device {named} --root DIR`\\)"):
        inference_config(DEFAULTS | {"backend": "virtual", "device": device}, None)


def test_bad_parameters_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="queue_depth must be >= 1"):
        inference_config(DEFAULTS | {"queue_depth": 0}, None)


@pytest.mark.parametrize("given, problem", [
    # Without width and height these were dropped in silence: the model's size, mean 0, std 1.
    ({"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}, r"parameter\(s\) mean, std are used only with "
                                                                      "the input size: set -p width:=W -p height:=H"),
    ({"color_order": "bgr", "scale": 1.0}, r"parameter\(s\) color_order, scale are used only with the input size"),
    ({"width": 64}, "input size must be positive, got 64x0"),  # was the model's size, the width dropped
    ({"width": -3, "height": 48}, "input size must be positive, got -3x48"),
])
def test_preprocessing_that_would_be_ignored_is_refused(given, problem):
    with pytest.raises(ValueError, match=problem):
        inference_config(DEFAULTS | given, None)


def test_a_catalogued_device_gets_its_spec_roofs_mixed_as_fp16():
    roofs = report_ceilings(DEFAULTS | {"device": "agx_orin_64gb", "precision": "mixed"}, None)()
    assert roofs == spec_ceilings("agx_orin_64gb", "fp16", engine="gpu")
