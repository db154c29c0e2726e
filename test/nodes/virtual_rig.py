"""What the governor's tests share: a live virtual board, the governor's parameters, the
control files of a virtual Jetson's tree (what a restore must put back) and energy per
inference from the suite's own topics. No rclpy here: the rclpy-free governor tests use it too."""

from pathlib import Path

import pytest

from edge_roofline.virtual.live import LiveVirtualJetson

DEVICE = "agx_orin_64gb"
TARGET_MS = 20.0  # loose: tiny_cnn takes about 1 ms on the virtual board
MODEL = "zoo:tiny_cnn"

CAP_PATTERNS = (
    "sys/devices/system/cpu/cpu*/online",
    "sys/devices/system/cpu/cpufreq/policy*/scaling_m??_freq",
    "sys/devices/platform/*/*.gpu/devfreq/*/m??_freq",
    "sys/kernel/debug/bpmp/debug/clk/emc/max_rate",
    "sys/kernel/nvpmodel_emc_cap/emc_iso_cap",
    "var/lib/nvpmodel/status",
)


@pytest.fixture
def board(tmp_path):
    """A live virtual AGX Orin 64GB in MAXN (SIMULATION), stepped in this process."""
    root = tmp_path / "virtual_agx_orin"
    jetson = LiveVirtualJetson(root, DEVICE, mode_id=0).start()
    yield root
    jetson.stop()


def governor_params(root, state_path, **extra) -> dict:
    return {"platform": f"virtual:{DEVICE}", "sysfs_root": str(root), "model": MODEL, "precision": "fp16",
            "target_latency_ms": TARGET_MS, "mode": "active", "dwell_s": 1.5, "state_path": str(state_path),
            **extra}


def cap_files(root: Path) -> dict[str, str]:
    """{relative path: content} of every file a governor writes (mode, caps, online cores)."""
    root = Path(root)
    files = {str(p.relative_to(root)): p.read_text().strip()
             for pattern in CAP_PATTERNS for p in sorted(root.glob(pattern))}
    assert any("devfreq" in k for k in files) and any("scaling_min_freq" in k for k in files) \
        and {"var/lib/nvpmodel/status", "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"} <= set(files), \
        f"not a virtual Jetson tree: {sorted(files)}"
    return files


def energy_per_inference_j(power: list, stats: list, since_s: float, until_s: float) -> tuple[float, int]:
    """Module energy (the power monitor's cumulative energy_j) over inferences served, between
    two receive times. ``power``/``stats``: (receive time s, msg) in arrival order."""
    window = [(t, m) for t, m in power if since_s <= t <= until_s]
    frames = [(t, m) for t, m in stats if since_s <= t <= until_s]
    assert len(window) >= 2 and len(frames) >= 2, f"too few messages: {len(window)} power, {len(frames)} stats"
    (t0, first), (t1, last) = window[0], window[-1]
    served = [m for t, m in frames if t0 < t <= t1]
    assert served, "no inference between the two power messages"
    return (last.energy_j - first.energy_j) / len(served), len(served)
