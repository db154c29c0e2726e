"""The runnable example in docs/governor.md stays runnable and moves off MAXN; the streams file in
docs/governor_node.md parses as written."""

import re
from pathlib import Path


def test_docs_example_runs(capsys):
    src = (Path(__file__).resolve().parents[2] / "docs" / "governor.md").read_text()
    code = re.search(r"```python\n(.*?)```", src, re.S).group(1)
    scope = {}
    exec(compile(code, "docs/governor.md", "exec"), scope)
    assert scope["decision"].point.name != "MAXN"
    assert scope["board"].point.name == "MAXN"  # shutdown restored it


def test_the_streams_file_in_docs_parses_as_written(tmp_path):
    """docs/governor_node.md's streams file, as a user would save it, gives the streams it says."""
    from edge_roofline.governor.config import parse_streams
    src = (Path(__file__).resolve().parents[2] / "docs" / "governor_node.md").read_text()
    path = tmp_path / "streams.yaml"
    path.write_text(re.search(r"```yaml\n(# streams\.yaml.*?)```", src, re.S).group(1))
    streams = {s.name: s for s in parse_streams(str(path))}
    assert list(streams) == ["detector", "segmenter", "vendor"]
    assert (streams["segmenter"].target_latency_ms, streams["segmenter"].percentile) == (100.0, 90.0)
    assert streams["detector"].stats_topic == "/det/inference/stats" and streams["detector"].percentile == 95.0
    assert streams["vendor"].model == "/robot/models/vendor_net.onnx"
