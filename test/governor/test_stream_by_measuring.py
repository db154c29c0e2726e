"""A stream learned by measuring (its model has no roofline here: a node that is not ours) beside
one with a roofline. Before its first window it has no prediction and no known GPU share; that
unknown must not make every stream's prediction NaN, which held the board at the fastest point for
good ("no point is predicted to meet the target") and kept the stream's own window from ever
calibrating it."""

import math

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import GovernorConfig
from edge_roofline.governor.core import Governor

from .fake_law import LawPlatform
from .test_governor import analysis
from .test_multistream import STREAMS, drive


def test_a_stream_without_roofline_beside_one_with_it_is_governed(tmp_path):
    clock = SimClock(100.0)
    platform = LawPlatform()
    config = GovernorConfig.from_dict({
        "state_path": str(tmp_path / "state.json"),
        "streams": [{"name": n, "target_latency_ms": t} for n, (_, _, t) in STREAMS.items()]})
    gov = Governor(platform, config, {"det": analysis(), "seg": None}, clock)
    # What the node does when the stream's model cannot be analysed (ModelFollower's note).
    gov.set_model(None, "vendor_net", "no roofline for vendor_net: learning each point by measuring", stream="seg")
    decisions = drive(gov, platform, clock, 30.0)
    last = decisions[-1]
    by_name = {s.name: s for s in last.streams}
    assert all(math.isfinite(s.predicted_latency_s) for s in last.streams), (last.reason, last.streams)
    assert platform.current != platform.found, last.reason
    assert by_name["seg"].model_note.startswith("no roofline") and by_name["det"].model_note == ""
    for name, (_, _, target_ms) in STREAMS.items():
        assert by_name[name].met and by_name[name].measured_latency_s < target_ms / 1e3, by_name[name]
