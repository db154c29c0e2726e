"""Real rclpy on a live virtual AGX Orin 64GB (SIMULATION) started in MAXN: the synthetic
camera feeds the inference node (virtual backend, tiny_cnn), the power monitor reads the
virtual rails, and the governor (active, loose target) moves the operating point. It must lower
energy per inference against MAXN while meeting the target, and put every control file back
(mode, GPU/CPU/EMC caps, online cores) on SIGTERM, and after kill -9 on the next start."""

import signal
import time

import numpy as np

from edge_roofline.ros import topics
from edge_roofline.msg import GovernorState, InferenceStats, PowerTelemetry
from test.nodes.rosutil import kill_9_after_a_move, log_text, start_node, stop_node, watcher
from test.nodes.virtual_rig import DEVICE, MODEL, TARGET_MS, cap_files, energy_per_inference_j, governor_params

def test_governor_saves_energy_holds_target_and_restores(board, ros_env, tmp_path):
    found = cap_files(board)
    assert found["var/lib/nvpmodel/status"].startswith("pmode:0000")  # MAXN
    state_path = tmp_path / "governor_state.json"
    platform = {"platform": f"virtual:{DEVICE}", "sysfs_root": str(board)}
    logs = {name: tmp_path / f"{name}.log" for name in ("inference", "power_monitor", "governor", "governor2")}
    power, stats, states = [], [], []
    with watcher(ros_env) as (node, spin_until):
        now = time.monotonic
        node.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, lambda m: power.append((now(), m)), 50)
        node.create_subscription(InferenceStats, topics.INFERENCE_STATS, lambda m: stats.append((now(), m)), 100)
        node.create_subscription(GovernorState, topics.GOVERNOR_STATE, lambda m: states.append((now(), m)), 50)
        procs = [
            start_node("power_monitor", ros_env, platform, logs["power_monitor"]),
            start_node("inference", ros_env, {**platform, "model": MODEL, "backend": "virtual", "precision": "fp16",
                                              "device": DEVICE, "publish_outputs": False, "publish_chart": False,
                                              "profile_every_frames": 0, "profile_every_s": 0.0},
                       logs["inference"]),
            start_node("synthetic_camera", ros_env, {"width": 64, "height": 64, "rate_hz": 30.0},
                       tmp_path / "camera.log"),
        ]
        governor = None
        try:
            # MAXN, no governor: the baseline.
            assert spin_until(lambda: len(stats) >= 30 and len(power) >= 10, timeout_s=120, procs=procs), \
                log_text(logs["inference"]) + log_text(logs["power_monitor"]) + log_text(tmp_path / "camera.log")
            t0 = now()
            spin_until(lambda: now() - t0 >= 6.0, timeout_s=10)
            maxn_j, maxn_n = energy_per_inference_j(power, stats, t0, now())

            governor = start_node("governor", ros_env, governor_params(board, state_path), logs["governor"])
            procs.append(governor)

            def settled():  # explored, then held one point for a while
                if not states:
                    return False
                last_t, last = states[-1]
                changes = [t for (t, a), (_, b) in zip(states, states[1:]) if b.switches != a.switches]
                return last.switches >= 1 and not last.fallback_active and changes and last_t - changes[-1] >= 5.0

            assert spin_until(settled, timeout_s=150, procs=procs), \
                f"{[(s.state, s.reason) for _, s in states[-5:]]}\n{log_text(logs['governor'])}"
            t1 = now()
            spin_until(lambda: now() - t1 >= 6.0, timeout_s=10)
            gov_j, gov_n = energy_per_inference_j(power, stats, t1, now())
            held = [m for t, m in stats if t >= t1]
            last = states[-1][1]
            print(f"energy/inference MAXN {maxn_j * 1e3:.1f} mJ ({maxn_n} frames), governed "
                  f"{gov_j * 1e3:.1f} mJ ({gov_n} frames) at {last.current_point.name}; "
                  f"p95 {np.percentile([m.latency_ms for m in held], 95):.3f} ms (target {TARGET_MS} ms); "
                  f"{last.switches} switches")
            assert gov_j < 0.9 * maxn_j, f"governed {gov_j} J vs MAXN {maxn_j} J per inference"
            assert np.percentile([m.latency_ms for m in held], 95) <= TARGET_MS
            assert last.measured_latency_ms <= TARGET_MS and last.reason
            assert last.current_point.name != "MAXN" and cap_files(board) != found
            assert all(m.simulated for m in held) and all(s.reason and s.simulated for _, s in states)

            # SIGTERM: everything back as found, crash record cleared.
            assert stop_node(governor, signal.SIGTERM, timeout_s=30) == 0, log_text(logs["governor"])
            procs.remove(governor)
            assert cap_files(board) == found
            assert not state_path.exists()

            # kill -9 after it moved the device: the next start puts the found state back.
            kill_9_after_a_move(start_node("governor", ros_env, governor_params(board, state_path, dwell_s=0.5),
                                           logs["governor"]), spin_until, procs, board, found, state_path,
                                logs["governor"])
            states.clear()
            governor = start_node("governor", ros_env, governor_params(board, state_path, mode="off"),
                                  logs["governor2"])
            procs.append(governor)
            assert spin_until(lambda: any(s.mode == "off" for _, s in states), timeout_s=120, procs=procs), \
                log_text(logs["governor2"])
            assert cap_files(board) == found, log_text(logs["governor2"])
            assert "did not shut down" in log_text(logs["governor2"])
        finally:
            for p in reversed(procs):
                stop_node(p)
    assert cap_files(board) == found and not state_path.exists()
