import pytest

from edge_roofline.models import zoo
from edge_roofline.roofline.costs import analyze_model


@pytest.fixture(scope="session")
def costs():
    """Cost models of the zoo networks the physics tests use, built once."""
    cache = {}

    def get(name: str, precision: str = "fp16"):
        if (name, precision) not in cache:
            cache[name, precision] = analyze_model(zoo.build(name), precision=precision)
        return cache[name, precision]
    return get


@pytest.fixture(scope="session")
def big_lstm():
    """An LSTM whose weights (17 MB per layer) do not fit in L2: DRAM-bound at batch 1."""
    return analyze_model(zoo.build("lstm", hidden=1024, seq_len=50), precision="fp16")
