"""Roofs that do not match where the model runs are said (issue 23, finding 7): CPU times
against a GPU's roofs read as 0.0-0.2 % efficiency, and nothing said so."""

import pytest

from edge_roofline.inference.ceilings import roofs_mismatch
from edge_roofline.platforms.base import DeviceIdentity

CPU_HOST = DeviceIdentity("cpu", "x86_64 host", None)
ORIN = DeviceIdentity("jetson", "Jetson AGX Orin 64GB", "agx_orin_64gb")
VIRTUAL_ORIN = DeviceIdentity("virtual", "virtual Jetson AGX Orin 64GB", "agx_orin_64gb", simulated=True)


@pytest.mark.parametrize("device,engine,target,machine,fix", [
    # the case: platform cpu, device agx_orin_64gb, ONNX Runtime on this host's CPU
    ("agx_orin_64gb", "gpu", (None, "cpu"), CPU_HOST, "-p device:=''"),
    ("agx_orin_64gb", "cpu", (None, "cpu"), CPU_HOST, "-p device:=''"),  # the Orin's CPU is not this one
    ("agx_orin_64gb", "gpu", (None, "cpu"), None, "-p engine:=cpu"),  # no platform: at least the engine
    ("agx_orin_64gb", "gpu", (None, "cpu"), ORIN, "-p engine:=cpu"),  # ORT on the Orin's CPU
    ("orin_nx_16gb", "gpu", (None, "gpu"), ORIN, "-p device:=agx_orin_64gb"),
    ("", "gpu", ("agx_orin_64gb", "gpu"), VIRTUAL_ORIN, "-p device:=DEVICE"),  # virtual times, host roofs
    ("agx_orin_64gb", "gpu", (None, "cpu"), VIRTUAL_ORIN, "-p device:=''"),  # ORT beside a virtual Orin
    ("", "gpu", (None, "gpu"), None, "-p engine:=gpu"),  # ORT on a GPU with the host CPU's roofs
])
def test_a_mismatch_is_one_line_naming_the_fix(device, engine, target, machine, fix):
    note = roofs_mismatch(device, engine, target, machine)
    assert note.startswith("the roofs (") and "do not match where the model runs" in note and fix in note, note
    assert "\n" not in note


@pytest.mark.parametrize("device,engine,target,machine", [
    ("", "gpu", (None, "cpu"), CPU_HOST),  # the host CPU, measured: the default
    ("", "gpu", (None, "cpu"), None),
    ("agx_orin_64gb", "gpu", ("agx_orin_64gb", "gpu"), VIRTUAL_ORIN),  # the virtual backend on its board
    ("agx_orin_64gb", "gpu", (None, "gpu"), ORIN),  # TensorRT on the Orin
    ("agx_orin_64gb", "dla", (None, "dla"), ORIN),
    ("agx_orin_64gb", "gpu", (None, "gpu"), None),  # no platform: nothing known against it
])
def test_matching_roofs_say_nothing(device, engine, target, machine):
    assert roofs_mismatch(device, engine, target, machine) == ""
