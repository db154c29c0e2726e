#!/bin/sh
# The nearest this project's machines get to JetPack 7 (Ubuntu 24.04, Python 3.12, ROS 2 Jazzy
# from apt): a Python 3.12 venv with ROS 2 Jazzy's cp312 PyPI wheels, this package built into it
# (pip, as `make setup` does) and with colcon in a fresh workspace, and the tests that cover
# Thor, the messages, a node, the demo on a virtual Thor and the crash record run on 3.12.
#   scripts/python312_check.sh [PYTHON3.12]       (VENV=.venv-py312 by default)
# Not covered: Jazzy from apt (no Ubuntu 24.04 or ROS apt repository here), aarch64, JetPack 7's
# TensorRT 10.13 / CUDA 13 (docs/packaging.md).
set -eu
PY=${1:-python3.12}
VENV=${VENV:-.venv-py312}
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version'
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q -r requirements/ros-jazzy-build.txt -r requirements/runtime.txt \
    pytest pytest-timeout websockets colcon-common-extensions
"$VENV/bin/pip" install -q --no-build-isolation .
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    test/platforms test/virtual test/commands/test_new_devices.py test/test_python312.py \
    test/nodes/test_messages.py test/nodes/test_power_monitor_node.py test/suite/test_demo_device.py \
    test/governor/test_crash_record.py test/nodes/test_colcon_build.py
