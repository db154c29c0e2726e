"""Fixtures of the node tests."""

from test.nodes.virtual_rig import board  # noqa: F401 (a live virtual Jetson per test, as a fixture)
