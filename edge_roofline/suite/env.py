"""DDS hygiene for every process we start: loopback-only discovery and the shipped Fast DDS
profile (shared memory big enough for camera frames, fast discovery). Applied by the CLI, the
demo and the tests *before* rclpy starts; every node's main applies the profile alone."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from edge_roofline.paths import config_file

FASTDDS_PROFILE_NAME = "fastdds_localhost.xml"
# Fast DDS 3 (Jazzy, Kilted) reads the first, Fast DDS 2 (Humble) the second; without either it
# loads DEFAULT_FASTDDS_PROFILES.xml from the working directory.
PROFILE_VARIABLES = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")


def default_fastdds_profile(env: dict[str, str] | None = None) -> str | None:
    """Point Fast DDS at the shipped profile unless the user chose one (either variable, or a
    DEFAULT_FASTDDS_PROFILES.xml in the working directory). Fast DDS reads it when the first
    participant is created, so this must run before rclpy.init. Returns the profile in force."""
    env = os.environ if env is None else env
    chosen = next((env[v] for v in PROFILE_VARIABLES if v in env), None)
    if chosen is not None or Path("DEFAULT_FASTDDS_PROFILES.xml").is_file():
        return chosen
    try:
        profile = str(config_file(FASTDDS_PROFILE_NAME))
    except FileNotFoundError:  # Fast DDS defaults still work: slower discovery, 512 KB shared memory
        return None
    env[profile_variable(env)] = profile
    return profile


def profile_variable(env: dict[str, str] | None = None) -> str:
    """The variable the Fast DDS in use reads its profile from: FASTRTPS_DEFAULT_PROFILES_FILE for
    Fast DDS 2 (Humble, Jazzy: it reads only that one), FASTDDS_DEFAULT_PROFILES_FILE for Fast DDS
    3 (Kilted on: it warns that the old one is deprecated). By the sourced ROS distro, else (PyPI
    wheels: the venv is the ROS prefix) by the library there, libfastrtps (2.x) or libfastdds."""
    env = os.environ if env is None else env
    distro = env.get("ROS_DISTRO")
    fast_dds_2 = distro in ("humble", "jazzy") if distro else any((Path(sys.prefix) / "lib").glob("libfastrtps.so*"))
    return "FASTRTPS_DEFAULT_PROFILES_FILE" if fast_dds_2 else "FASTDDS_DEFAULT_PROFILES_FILE"


def localhost_environment(env: dict[str, str] | None = None, domain_id: int | None = None) -> dict[str, str]:
    """Return ``env`` (default: this process's environment, changed in place) with discovery
    forced to loopback and the shipped profile (unless the user names another)."""
    env = os.environ if env is None else env
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    # Humble has no discovery range: ROS_LOCALHOST_ONLY is its loopback switch. Later distros
    # deprecate it, warn on every start (a second line before a node's one-line error) and let it
    # override the range, so there it is removed.
    if env.get("ROS_DISTRO") == "humble":
        env["ROS_LOCALHOST_ONLY"] = "1"
    else:
        env.pop("ROS_LOCALHOST_ONLY", None)
    default_fastdds_profile(env)
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    return env
