"""DDS hygiene for every process we start: loopback-only discovery and a fast discovery
profile. Applied by the CLI, the demo and the tests *before* rclpy starts."""

from __future__ import annotations

import os

from edge_roofline.paths import config_file

FASTDDS_PROFILE_NAME = "fastdds_localhost.xml"


def localhost_environment(env: dict[str, str] | None = None, domain_id: int | None = None) -> dict[str, str]:
    """Return ``env`` (default: this process's environment, changed in place) with discovery
    forced to loopback and the fast-discovery profile (unless the user names another)."""
    env = os.environ if env is None else env
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_LOCALHOST_ONLY"] = "1"
    try:
        env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(config_file(FASTDDS_PROFILE_NAME)))
    except FileNotFoundError:  # Fast DDS defaults still work, only discovery is slower
        pass
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    return env
