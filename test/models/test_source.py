"""models/source.py: ``zoo:NAME`` builds in memory, anything else is a path (loaded on demand)."""

import onnx
import pytest

from edge_roofline.models import zoo
from edge_roofline.models.source import load_model, load_model_source


def test_zoo_names_build_in_memory_and_paths_pass_through(tmp_path):
    assert isinstance(load_model_source("zoo:tiny_cnn"), onnx.ModelProto)
    assert load_model_source(str(tmp_path / "m.onnx")) == str(tmp_path / "m.onnx")


def test_load_model_reads_a_file_and_builds_a_zoo_model_alike(tmp_path):
    path = zoo.save("tiny_cnn", tmp_path / "tiny_cnn.onnx")
    from_file, from_zoo = load_model(str(path)), load_model("zoo:tiny_cnn")
    assert [n.name for n in from_file.graph.node] == [n.name for n in from_zoo.graph.node]


def test_an_unknown_zoo_model_names_the_known_ones():
    with pytest.raises(KeyError, match="unknown zoo model 'nope'; known: resnet18"):
        load_model_source("zoo:nope")
