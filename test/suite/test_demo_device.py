"""`edge-roofline demo --device agx_thor_t5000` (`make demo DEVICE=agx_thor_t5000`): the demo's
parameters on a virtual Jetson AGX Thor, started as the demo starts them; the governor moves
the board and Ctrl-C puts back the mode and every cap it found. SIMULATION."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from edge_roofline.commands.demo import DEMO_DEVICE, device_config
from edge_roofline.virtual.live import LiveVirtualJetson

CAPS = ("sys/devices/system/cpu/cpu*/online", "sys/devices/system/cpu/cpufreq/policy*/scaling_m??_freq",
        "sys/class/devfreq/*/m??_freq", "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "var/lib/nvpmodel/status")


def cap_files(root: Path) -> dict[str, str]:
    files = {str(p.relative_to(root)): p.read_text().strip() for pattern in CAPS for p in sorted(root.glob(pattern))}
    assert "sys/class/devfreq/gpu-gpc-0/max_freq" in files and "sys/class/devfreq/bwmgr/max_freq" in files
    return files


def test_device_config_points_every_node_at_the_device(tmp_path):
    params = yaml.safe_load(Path(device_config("agx_thor_t5000", tmp_path)).read_text())
    for node in params.values():
        values = node["ros__parameters"]
        for key in ("platform", "device", "sysfs_root"):
            assert DEMO_DEVICE not in str(values.get(key, "")), (key, values)
    assert params["governor"]["ros__parameters"]["platform"] == "virtual:agx_thor_t5000"
    assert params["inference"]["ros__parameters"]["device"] == "agx_thor_t5000"


def test_demo_on_a_virtual_thor_moves_and_restores_it(ros_env, tmp_path):
    root = tmp_path / "virtual_agx_thor"
    fresh = cap_files(LiveVirtualJetson(tmp_path / "fresh", "agx_thor_t5000").root)
    params = yaml.safe_load(Path(device_config("agx_thor_t5000", tmp_path)).read_text())
    for node in params.values():
        if "sysfs_root" in node["ros__parameters"]:
            node["ros__parameters"]["sysfs_root"] = str(root)
    params["inference"]["ros__parameters"].update(model="zoo:tiny_cnn", profile_every_s=1.0)
    params["governor"]["ros__parameters"].update(model="zoo:tiny_cnn", dwell_s=1.0)
    params["synthetic_camera"]["ros__parameters"].update(width=64, height=64)
    cfg = tmp_path / "params.yaml"
    cfg.write_text(yaml.safe_dump(params))
    up = subprocess.Popen([sys.executable, "-m", "edge_roofline.cli", "up", "--config", str(cfg),
                           "--with", "synthetic_camera", "--log-dir", str(tmp_path / "logs")],
                          env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    moved = False
    try:
        deadline = time.monotonic() + 150
        while not moved and time.monotonic() < deadline and up.poll() is None:
            time.sleep(0.5)
            moved = root.exists() and (root / "var/lib/nvpmodel/status").exists() and cap_files(root) != fresh
    finally:
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=90)
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted((tmp_path / "logs").glob("*.log")))
    assert "virtual Jetson agx_thor_t5000 (SIMULATION) live" in out, out
    assert moved, "the governor never changed the virtual Thor's operating point\n" + out + logs
    assert up.returncode == 0, out + logs
    assert cap_files(root) == fresh, out + logs  # Ctrl-C put back the mode and every cap
