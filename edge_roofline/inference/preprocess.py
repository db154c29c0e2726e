"""Camera image -> model input tensor, with OpenCV.

Handles the ``sensor_msgs/Image`` layout (encoding, row padding via ``step``, endianness)
without cv_bridge (not installable from PyPI), then resize or letterbox, channel order,
mean/std normalisation, layout (NCHW/NHWC) and dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

# encoding -> (channels, numpy dtype, channel order of the data)
ENCODINGS = {
    "rgb8": (3, np.uint8, "rgb"), "bgr8": (3, np.uint8, "bgr"),
    "rgba8": (4, np.uint8, "rgba"), "bgra8": (4, np.uint8, "bgra"),
    "mono8": (1, np.uint8, "mono"), "8UC1": (1, np.uint8, "mono"),
    "rgb16": (3, np.uint16, "rgb"), "bgr16": (3, np.uint16, "bgr"),
    "rgba16": (4, np.uint16, "rgba"), "bgra16": (4, np.uint16, "bgra"),
    "mono16": (1, np.uint16, "mono"), "16UC1": (1, np.uint16, "mono"),
}


class ImageError(ValueError):
    """An input image that cannot be used; the message says what is wrong and what is expected."""


@dataclass(frozen=True)
class PreprocessConfig:
    width: int
    height: int
    color_order: str = "rgb"  # channel order the model expects: rgb | bgr | mono
    resize: str = "stretch"  # stretch | letterbox
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)  # in units of the scaled input (after / scale)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    scale: float = 255.0  # divide raw 8-bit values by this first (16-bit inputs are brought to 8-bit range)
    layout: str = "nchw"  # nchw | nhwc
    dtype: str = "float32"
    letterbox_value: int = 114

    def validate(self) -> None:
        problems = []
        if self.width <= 0 or self.height <= 0:
            problems.append(f"input size must be positive, got {self.width}x{self.height}")
        if self.color_order not in ("rgb", "bgr", "mono"):
            problems.append(f"color_order must be rgb, bgr or mono, got {self.color_order!r}")
        if self.resize not in ("stretch", "letterbox"):
            problems.append(f"resize must be stretch or letterbox, got {self.resize!r}")
        if self.layout not in ("nchw", "nhwc"):
            problems.append(f"layout must be nchw or nhwc, got {self.layout!r}")
        channels = 1 if self.color_order == "mono" else 3
        if len(self.mean) not in (1, channels) or len(self.std) not in (1, channels):
            problems.append(f"mean/std need 1 or {channels} values, got {len(self.mean)}/{len(self.std)}")
        if any(s == 0 for s in self.std):
            problems.append("std values must be non-zero")
        # Each would make every input NaN or Inf: the frames would all fail as NaN outputs.
        if not all(math.isfinite(v) for v in (*self.mean, *self.std, self.scale)) or self.scale == 0:
            problems.append(f"mean, std and scale must be finite and scale non-zero, got mean {list(self.mean)}, "
                            f"std {list(self.std)}, scale {self.scale}")
        try:
            np.dtype(self.dtype)
        except TypeError:
            problems.append(f"dtype {self.dtype!r} is not a numpy dtype")
        if problems:
            raise ValueError("invalid preprocessing parameters: " + "; ".join(problems))


def image_to_array(encoding: str, width: int, height: int, step: int, data: bytes | memoryview,
                   is_bigendian: bool = False) -> tuple[np.ndarray, str]:
    """Decode a sensor_msgs/Image payload to an HxWxC array (no copy where possible) and its
    channel order."""
    if encoding not in ENCODINGS:
        raise ImageError(f"unsupported image encoding {encoding!r}; supported: {', '.join(ENCODINGS)}")
    if width <= 0 or height <= 0:
        raise ImageError(f"empty image ({width}x{height})")
    channels, dtype, order = ENCODINGS[encoding]
    item = np.dtype(dtype).itemsize
    row_bytes = width * channels * item
    if step < row_bytes:
        raise ImageError(f"step {step} is smaller than one row of {width} x {encoding} ({row_bytes} bytes)")
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size < step * (height - 1) + row_bytes:
        raise ImageError(f"image data has {buf.size} bytes, {encoding} {width}x{height} with step {step} "
                         f"needs {step * (height - 1) + row_bytes}")
    # A strided view skips row padding without copying.
    rows = np.lib.stride_tricks.as_strided(buf, shape=(height, row_bytes), strides=(step, 1))
    array = rows.view(np.dtype(dtype).newbyteorder(">" if is_bigendian else "<")) if item > 1 else rows
    return array.reshape(height, width, channels), order


_TO_RGB = {"rgb": None, "bgr": cv2.COLOR_BGR2RGB, "rgba": cv2.COLOR_RGBA2RGB, "bgra": cv2.COLOR_BGRA2RGB,
           "mono": cv2.COLOR_GRAY2RGB}
_TO_MONO = {"rgb": cv2.COLOR_RGB2GRAY, "bgr": cv2.COLOR_BGR2GRAY, "rgba": cv2.COLOR_RGBA2GRAY,
            "bgra": cv2.COLOR_BGRA2GRAY, "mono": None}


def _convert_color(array: np.ndarray, order: str, target: str) -> np.ndarray:
    if target == "mono":
        code = _TO_MONO[order]
        out = array if code is None else cv2.cvtColor(np.ascontiguousarray(array), code)
        return out.reshape(out.shape[0], out.shape[1], 1)
    code = _TO_RGB[order]
    rgb = array if code is None else cv2.cvtColor(np.ascontiguousarray(array), code)
    return rgb[..., ::-1] if target == "bgr" else rgb


def _resize(array: np.ndarray, cfg: PreprocessConfig) -> np.ndarray:
    h, w = array.shape[:2]
    if (w, h) == (cfg.width, cfg.height):
        return array
    if cfg.resize == "stretch":
        out = cv2.resize(np.ascontiguousarray(array), (cfg.width, cfg.height), interpolation=cv2.INTER_LINEAR)
    else:
        scale = min(cfg.width / w, cfg.height / h)
        new_w, new_h = max(1, round(w * scale)), max(1, round(h * scale))
        resized = cv2.resize(np.ascontiguousarray(array), (new_w, new_h), interpolation=cv2.INTER_LINEAR)
        fill = cfg.letterbox_value * (257 if array.dtype == np.uint16 else 1)
        out = np.full((cfg.height, cfg.width, array.shape[2]), fill, dtype=array.dtype)
        top, left = (cfg.height - new_h) // 2, (cfg.width - new_w) // 2
        out[top:top + new_h, left:left + new_w] = resized.reshape(new_h, new_w, -1)
    return out.reshape(cfg.height, cfg.width, -1)


def preprocess(array: np.ndarray, order: str, cfg: PreprocessConfig) -> np.ndarray:
    """HxWxC image -> a batch of one input tensor (1xCxHxW or 1xHxWxC)."""
    image = _resize(_convert_color(array, order, cfg.color_order), cfg)
    values = image.astype(np.float32)
    if image.dtype == np.uint16:
        values *= 1.0 / 257.0  # 16-bit full scale onto the 8-bit range the scale/mean refer to
    mean = np.asarray(cfg.mean, dtype=np.float32)
    inv_std = 1.0 / np.asarray(cfg.std, dtype=np.float32)
    values = (values / cfg.scale - mean) * inv_std
    if cfg.layout == "nchw":
        values = values.transpose(2, 0, 1)
    return np.ascontiguousarray(values[np.newaxis]).astype(cfg.dtype, copy=False)
