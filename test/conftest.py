"""Test-wide DDS hygiene: loopback-only discovery and the fast discovery profile are set
before anything can start rclpy; each test that uses ROS gets its own domain id."""

import itertools
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edge_roofline.suite.env import localhost_environment  # noqa: E402

localhost_environment()

import pytest  # noqa: E402

# Domain ids 1..100 by pid and counter, so parallel pytest runs and tests don't cross-talk.
_domain_ids = itertools.count((os.getpid() * 7) % 100)


@pytest.fixture
def ros_env():
    """An environment for ROS subprocesses of one test: a fresh domain id, loopback only."""
    env = dict(os.environ)
    localhost_environment(env, domain_id=1 + next(_domain_ids) % 100)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    return env
