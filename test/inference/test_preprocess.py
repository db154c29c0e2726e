import numpy as np
import pytest

from edge_roofline.inference.preprocess import ImageError, PreprocessConfig, image_to_array, preprocess

RNG = np.random.default_rng(0)
RGB = RNG.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)


def padded(array, pad_bytes):
    h = array.shape[0]
    rows = array.reshape(h, -1).view(np.uint8)
    out = np.zeros((h, rows.shape[1] + pad_bytes), dtype=np.uint8)
    out[:, :rows.shape[1]] = rows
    return out.tobytes(), rows.shape[1] + pad_bytes


def decode(encoding, array, pad_bytes=0, bigendian=False):
    data, step = padded(array, pad_bytes)
    return image_to_array(encoding, array.shape[1], array.shape[0], step, data, bigendian)


CFG = PreprocessConfig(width=5, height=6, mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3))


def test_row_padding_is_skipped():
    array, order = decode("rgb8", RGB, pad_bytes=7)
    assert order == "rgb"
    np.testing.assert_array_equal(array, RGB)


@pytest.mark.parametrize("encoding,data", [
    ("bgr8", RGB[..., ::-1]),
    ("rgba8", np.concatenate([RGB, np.full((6, 5, 1), 9, np.uint8)], axis=2)),
    ("bgra8", np.concatenate([RGB[..., ::-1], np.full((6, 5, 1), 9, np.uint8)], axis=2)),
    ("rgb16", RGB.astype(np.uint16) * 257),
])
def test_every_colour_encoding_gives_the_same_tensor(encoding, data):
    want = preprocess(*decode("rgb8", RGB), CFG)
    got = preprocess(*decode(encoding, np.ascontiguousarray(data), pad_bytes=4), CFG)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_normalisation_and_layout_by_hand():
    out = preprocess(RGB, "rgb", CFG)
    assert out.shape == (1, 3, 6, 5) and out.dtype == np.float32
    expected = (RGB[2, 3, 1] / 255.0 - 0.4) / 0.25
    assert out[0, 1, 2, 3] == pytest.approx(expected, rel=1e-5)
    nhwc = preprocess(RGB, "rgb", PreprocessConfig(width=5, height=6, layout="nhwc"))
    assert nhwc.shape == (1, 6, 5, 3)


def test_big_endian_mono16():
    mono = np.array([[1000, 2000], [3000, 65535]], dtype=">u2")
    array, order = image_to_array("mono16", 2, 2, 4, mono.tobytes(), is_bigendian=True)
    assert order == "mono"
    assert array[1, 1, 0] == 65535 and array[0, 1, 0] == 2000


def test_letterbox_keeps_aspect_and_pads():
    wide = np.full((10, 20, 3), 200, np.uint8)
    cfg = PreprocessConfig(width=8, height=8, resize="letterbox", scale=1.0, layout="nhwc")
    out = preprocess(wide, "rgb", cfg)[0]
    assert out.shape == (8, 8, 3)
    assert out[0, 0, 0] == 114 and out[7, 7, 0] == 114  # pad rows top and bottom
    assert out[4, 0, 0] == 200  # image spans the full width


def test_mono_model_from_colour_camera():
    cfg = PreprocessConfig(width=5, height=6, color_order="mono", mean=(0.0,), std=(1.0,))
    assert preprocess(RGB, "rgb", cfg).shape == (1, 1, 6, 5)


@pytest.mark.parametrize("kwargs,message", [
    (dict(encoding="yuv422", width=2, height=2, step=4, data=b"\0" * 8), "unsupported image encoding 'yuv422'"),
    (dict(encoding="rgb8", width=0, height=0, step=0, data=b""), "empty image"),
    (dict(encoding="rgb8", width=4, height=2, step=6, data=b"\0" * 24), "step 6 is smaller"),
    (dict(encoding="rgb8", width=4, height=2, step=12, data=b"\0" * 20), "needs 24"),
])
def test_bad_images_name_the_problem(kwargs, message):
    with pytest.raises(ImageError, match=message):
        image_to_array(**kwargs)


def test_bad_config_is_rejected_with_all_problems():
    with pytest.raises(ValueError, match="layout must be nchw or nhwc.*std values must be non-zero"):
        PreprocessConfig(width=4, height=4, layout="chw", std=(0.0, 1.0, 1.0)).validate()


@pytest.mark.parametrize("kwargs", [{"scale": 0.0}, {"scale": float("nan")}, {"mean": (float("nan"), 0.0, 0.0)},
                                    {"std": (float("inf"), 1.0, 1.0)}])
def test_a_normalisation_that_makes_every_input_nan_is_rejected(kwargs):
    # Each started: every frame then failed as NaN/Inf outputs, the model blamed.
    with pytest.raises(ValueError, match="mean, std and scale must be finite and scale non-zero"):
        PreprocessConfig(width=4, height=4, **kwargs).validate()
