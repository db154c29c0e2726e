"""A language model's two phases in the virtual Jetson's physics: a decode step is memory-bound
(matrix-vector products and small streaming kernels), so it barely slows when the GPU clock halves
(published: 1-6 %) and slows at once when the EMC clock halves; prefill's tiled GEMMs follow the
GPU clock; each decode step reads the KV cache from DRAM, so it grows with the context."""

from dataclasses import replace

import pytest

from edge_roofline.models import zoo
from edge_roofline.roofline.decoder import DecoderCostModel
from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.params import device_params
from edge_roofline.virtual.physics import Clocks, inference_timing

DEVICES = ("agx_orin_64gb", "orin_nano_8gb", "agx_thor_t5000")


@pytest.fixture(scope="module")
def decoder():
    """134 M parameters (docs/roofline.md, "Language models")."""
    return DecoderCostModel(zoo.build("tiny_decoder", hidden=768, layers=12, heads=12, vocab=32000,
                                      max_positions=2048), precision="fp16")


def top_clocks(device) -> Clocks:
    return Clocks(device.cpu_max_freq_hz, device.cpu_cores, device.gpu_max_freq_hz, 0, device.emc_max_freq_hz)


def slowdown(cost, key: str, **halved) -> float:
    """Latency at the top clocks with the named clocks halved, over latency at the top clocks."""
    device = get_device(key)
    p, top = device_params(device), top_clocks(device)
    low = replace(top, **{name: getattr(top, name) / 2 for name in halved})
    return inference_timing(cost, device, p, low, "fp16").latency_s / inference_timing(cost, device, p, top,
                                                                                        "fp16").latency_s


@pytest.mark.parametrize("key", DEVICES)
@pytest.mark.parametrize("context", [128, 1024])
def test_decode_barely_slows_at_half_the_gpu_clock_and_slows_at_once_at_half_the_emc_clock(decoder, key, context):
    step = decoder.decode_cost(context)
    gpu = slowdown(step, key, gpu_freq_hz=True)
    emc = slowdown(step, key, emc_freq_hz=True)
    assert 1.0 <= gpu <= 1.06, f"decode @ {context} on {key}: x{gpu:.3f} at half the GPU clock"
    assert emc >= 1.5, f"decode @ {context} on {key}: x{emc:.3f} at half the EMC clock"


@pytest.mark.parametrize("key", ["agx_orin_64gb", "orin_nano_8gb"])
def test_prefill_follows_the_gpu_clock(decoder, key):
    prefill = decoder.prefill_cost(256)
    decode = decoder.decode_cost(256)
    prefill_x = slowdown(prefill, key, gpu_freq_hz=True)
    assert prefill_x >= 1.4, f"prefill of 256 tokens on {key}: x{prefill_x:.3f} at half the GPU clock"
    assert prefill_x - 1 > 10 * (slowdown(decode, key, gpu_freq_hz=True) - 1)


def test_decode_steps_grow_with_the_kv_cache_read_from_dram(decoder):
    device = get_device("agx_orin_64gb")
    p, top = device_params(device), top_clocks(device)
    short, long = (inference_timing(decoder.decode_cost(c), device, p, top, "fp16") for c in (128, 2048))
    # The KV cache grows by 2 x 12 layers x 768 x 2 B per token of context, all read from DRAM.
    kv_growth_bytes = decoder.kv_cache_bytes(2048) - decoder.kv_cache_bytes(128)
    assert long.dram_bytes - short.dram_bytes >= 0.99 * kv_growth_bytes
    assert long.latency_s > short.latency_s * 1.2
