"""Synthetic camera frames for the demo and tests: a moving colour pattern (so consecutive
frames differ and caching can't hide work), in any supported encoding."""

from __future__ import annotations

import numpy as np

from edge_roofline.inference.preprocess import ENCODINGS


def frame(index: int, width: int, height: int, encoding: str = "rgb8") -> np.ndarray:
    """HxWxC array for frame ``index`` in ``encoding``'s channel count and dtype."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unsupported encoding {encoding!r}; supported: {', '.join(ENCODINGS)}")
    channels, dtype, order = ENCODINGS[encoding]
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    phase = 0.15 * index
    rgb = np.stack([
        0.5 + 0.5 * np.sin(x / 17.0 + phase),
        0.5 + 0.5 * np.sin(y / 11.0 - phase),
        0.5 + 0.5 * np.sin((x + y) / 23.0 + 2.0 * phase),
    ], axis=-1)
    full_scale = np.iinfo(dtype).max
    if order == "mono":
        pixels = rgb.mean(axis=-1, keepdims=True)
    else:
        pixels = rgb[..., ::-1] if order.startswith("bgr") else rgb
        if channels == 4:
            pixels = np.concatenate([pixels, np.ones_like(pixels[..., :1])], axis=-1)
    return (pixels * full_scale).astype(dtype)
