"""The inference node's flat parameters as the pipeline's config and the roofs its reports are
drawn against. ROS-free (tested without rclpy), as governor/runtime.py is for the governor node."""

from __future__ import annotations

from dataclasses import fields
from typing import Callable, Mapping

from edge_roofline.inference.ceilings import device_ceilings, host_cpu_ceilings
from edge_roofline.inference.generation_requests import GenerationConfig
from edge_roofline.inference.pipeline import InferenceConfig
from edge_roofline.inference.preprocess import PreprocessConfig
from edge_roofline.inference.serving import is_tensorrt
from edge_roofline.platforms.base import Platform
from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.virtual.params import CALIBRATION

PREPROCESSING = ("color_order", "resize", "mean", "std", "scale", "layout")  # parameters used with width, height


def inference_config(p: Mapping, platform: Platform | None) -> InferenceConfig:
    """The validated InferenceConfig; preprocessing from the parameters when width and height
    are set (else from the model's input), and what the backend is made with."""
    return _validated(p, _backend_options(p, platform))


def check_settings(p: Mapping) -> None:
    """Raise ValueError for what the node refuses at start without its platform or a model file
    (InferenceConfig.validate: an engine without onnx_model, int8 TensorRT without
    calibration_cache, mixed on the virtual board or TensorRT, preprocessing without the input
    size, ...), rclpy-free: the suite runs it on a parameter file before it starts anything. The
    virtual backend's board comes with the platform: checked once the node has it."""
    _validated(p, {} if p["backend"] == "virtual" else _backend_options(p, None))


def _validated(p: Mapping, backend_options: dict) -> InferenceConfig:
    pre = None
    if p["width"] or p["height"]:
        pre = PreprocessConfig(width=p["width"], height=p["height"], color_order=p["color_order"],
                               resize=p["resize"], mean=tuple(p["mean"]), std=tuple(p["std"]),
                               scale=p["scale"], layout=p["layout"])
    else:
        # The model's own size and a plain [0, 1] input: preprocessing set without the size would
        # otherwise be dropped in silence (an ImageNet mean and std never applied).
        defaults = {f.name: f.default for f in fields(PreprocessConfig)}
        ignored = [name for name in PREPROCESSING if _as_default(p[name]) != defaults[name]]
        if ignored:
            raise ValueError(f"parameter(s) {', '.join(ignored)} are used only with the input size: set -p width:=W "
                             f"-p height:=H too (the model's input size), or leave them at their defaults")
    config = InferenceConfig(model=p["model"], onnx_model=p["onnx_model"], backend=p["backend"],
                             precision=p["precision"], input_name=p["input_name"], preprocess=pre,
                             queue_depth=p["queue_depth"], profile_every_frames=p["profile_every_frames"],
                             profile_every_s=p["profile_every_s"],
                             profile_budget_fraction=p["profile_budget_fraction"],
                             backend_options=backend_options)
    config.validate()
    return config


def _backend_options(p: Mapping, platform: Platform | None) -> dict:
    """The precision in force goes to every backend that runs at one: the virtual board times at it,
    TensorRT builds at it (int8 from the calibration cache). ONNX Runtime runs the model's own types."""
    if p["backend"] == "virtual":
        return {"platform": _virtual_board(p, platform), "precision": p["precision"]}
    if is_tensorrt(p["backend"]):
        return {"precision": p["precision"], "calibration_cache": p["calibration_cache"] or None}
    return {}


def _virtual_board(p: Mapping, platform: Platform | None) -> Platform:
    """The platform whose board the virtual backend times runs on. Without one the backend would
    make a private board: times at clocks no power monitor reads and no governor moves, so a
    closed loop that looks whole and is not; refused instead, naming the parameters."""
    if getattr(platform, "board", None) is None:
        given = f"platform {p['platform']!r} gives no virtual Jetson" if p["platform"] else "no platform is set"
        # The board the roofs are drawn for (device), where the virtual Jetson has one.
        device = p["device"] if p["device"] in CALIBRATION else "agx_orin_64gb"
        raise ValueError(f"backend virtual times the model on a live virtual Jetson, and {given}: set -p "
                         f"platform:=virtual:{device} -p sysfs_root:=DIR (the root of `edge-roofline "
                         f"virtual-jetson --device {device} --root DIR`), or use backend ort")
    return platform


def _as_default(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


def report_ceilings(p: Mapping, platform: Platform | None) -> Callable[[], Ceilings]:
    """The catalogued device's roofs at the clocks in force, or this machine's CPU, measured."""
    precision = p["precision"] if p["precision"] != "mixed" else "fp16"
    if p["device"]:
        return device_ceilings(p["device"], precision, p["engine"], platform)
    return host_cpu_ceilings()


def generation_config(p: Mapping, platform: Platform | None) -> GenerationConfig:
    """The generation node's validated GenerationConfig (the platform for the virtual backend)."""
    options = _backend_options(p, platform) if p["backend"] == "virtual" else {"intra_op_threads": p["ort_threads"]}
    config = GenerationConfig(
        model=p["model"], backend=p["backend"], precision=p["precision"], tokenizer=p["tokenizer"],
        max_new_tokens=p["max_new_tokens"], max_new_tokens_limit=p["max_new_tokens_limit"],
        max_prompt_tokens=p["max_prompt_tokens"], max_context=p["max_context"], eos_token_id=p["eos_token_id"],
        temperature=p["temperature"], queue_depth=p["queue_depth"], profile_every_requests=p["profile_every_requests"],
        profile_every_s=p["profile_every_s"], profile_budget_fraction=p["profile_budget_fraction"],
        report_prompt_tokens=p["report_prompt_tokens"], backend_options=options)
    config.validate()
    return config
