"""A full 96-point sweep of resnet18 (fp16) on a virtual AGX Orin, run once per session and
shared by the tests that read its results (SIMULATION)."""

import io

import pytest

from edge_roofline.models import zoo
from edge_roofline.characterise.plan import sweep_points
from edge_roofline.characterise.store import Store
from edge_roofline.characterise.sweep import Sweep, SweepSettings, virtual_rig

DEVICE = "agx_orin_64gb"
# Short windows: simulated time is free, but each inference still costs real CPU here.
FAST = SweepSettings(runs=30, warmup=5, settle_s=0.05, idle_s=0.05, min_window_s=0.1)


@pytest.fixture(scope="session")
def resnet18_model():
    return zoo.build("resnet18")


def make_sweep(rig, store, **kwargs):
    settings = kwargs.pop("settings", FAST)
    return Sweep(rig.platform, rig.backend, store, rig.backend.cost, clock=rig.clock, settings=settings,
                 threaded_sampling=rig.threaded_sampling, precision="fp16",
                 progress_stream=kwargs.pop("progress_stream", io.StringIO()),
                 extra_settings={"model_source": "zoo:resnet18"}, **kwargs)


def loaded_rig(model, **kwargs):
    rig = virtual_rig(DEVICE, "fp16", **kwargs)
    rig.backend.load(model)
    return rig


@pytest.fixture(scope="session")
def full_sweep(tmp_path_factory, resnet18_model):
    """(rig, store, points, summary) after sweeping all 96 grid points."""
    out = tmp_path_factory.mktemp("full_sweep")
    rig = loaded_rig(resnet18_model)
    store = Store(out)
    points = sweep_points(rig.platform, "grid")
    summary = make_sweep(rig, store).run(points)
    yield rig, store, points, summary
    store.close()
