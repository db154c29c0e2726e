"""The live virtual Jetson: the real Jetson backend drives it through its tree and the nvpmodel
emulation, the board follows, and work reported by a client process shows up on the rails."""

import json
import os
import subprocess
import sys
import threading
from dataclasses import replace

import pytest

from edge_roofline.platforms.base import OperatingPoint, PlatformInitError, RebootRequiredError
from edge_roofline.platforms import create_platform
from edge_roofline.virtual.live import RUN_DIR, LiveBoardClient, LiveVirtualJetson, TreeRootError, set_background_load


@pytest.fixture
def live(tmp_path):
    jetson = LiveVirtualJetson(tmp_path / "board", "agx_orin_64gb", mode_id=0)
    jetson.step(0.0)
    return jetson


def steps(jetson, seconds, start_s, tick_s=0.02):
    t = start_s
    while t < start_s + seconds:
        t += tick_s
        jetson.step(t)
    return t


def test_real_backend_caps_and_nvpmodel_reach_the_board(live):
    platform = create_platform("virtual:agx_orin_64gb", sysfs_root=str(live.root))
    try:
        assert platform.identity().simulated and "SIMULATION" in platform.sample().source
        low = next(p for p in platform.operating_points() if p.gpu_max_freq_hz == 408e6 and p.cpu_online_cores == 6)
        platform.apply(low)
        t = steps(live, 0.1, 0.0)
        silicon = json.loads((live.root / RUN_DIR / "silicon.json").read_text())
        assert silicon["gpu_freq_hz"] == 408e6 and silicon["cpu_online_cores"] == 6
        platform.apply(OperatingPoint("MODE_50W", nvpmodel_id=3))  # through the nvpmodel emulation
        t = steps(live, 0.1, t)
        assert live.board.state.nvpmodel_mode_id == 3
        assert live.board.actuator.in_transition()  # a preset change takes 100-300 ms
        steps(live, 0.3, t)
        assert live.board.silicon_clocks().gpu_freq_hz == 816e6
        with pytest.raises(RebootRequiredError):
            platform.apply(OperatingPoint("MODE_15W", nvpmodel_id=1))
    finally:
        platform.close()
    steps(live, 0.4, 1.0)
    assert live.board.state.nvpmodel_mode_id == 0 and live.board.silicon_clocks().gpu_freq_hz == 1300.5e6


def test_a_node_started_before_the_board_waits_for_its_tree(tmp_path):
    """One launch starts the board and its nodes together; a node that looks first must not
    degrade for good (CI: a power monitor without power for a whole run)."""
    root = tmp_path / "board"
    later = threading.Timer(0.5, LiveVirtualJetson, (root, "agx_orin_64gb"))
    later.start()
    try:
        platform = create_platform("virtual:agx_orin_64gb", sysfs_root=str(root), live_board_wait_s=30.0)
    finally:
        later.join()
    try:
        assert platform.identity().simulated and platform.sample_power().total_power_w > 0
    finally:
        platform.close()


def test_no_board_at_all_is_one_line_naming_the_fix(tmp_path):
    with pytest.raises(PlatformInitError, match="no live virtual Jetson at .* after waiting 0 s: start one with"):
        create_platform("virtual:agx_orin_64gb", sysfs_root=str(tmp_path / "nothing"), live_board_wait_s=0.2)


def test_client_work_shows_up_on_the_rails_and_leaves_when_it_stops(live, tmp_path):
    from edge_roofline.models import zoo
    from edge_roofline.roofline.costs import analyze_model

    cost = analyze_model(zoo.build("resnet18"), precision="fp16")
    slept = []
    client = LiveBoardClient(live.root, sleep=slept.append)
    platform = create_platform("virtual:agx_orin_64gb", sysfs_root=str(live.root))
    try:
        t = steps(live, 0.5, 0.0)
        idle_w = platform.sample().total_power_w
        for _ in range(5):  # 5 steps of 20 ms, each with 30 back-to-back inferences
            for _ in range(30):
                result = client.run_inference(cost, "fp16")
            t += 0.02
            live.step(t)
        busy = platform.sample()
        assert len(slept) == 150 and slept[-1] == pytest.approx(result.latency_s)
        assert busy.total_power_w > idle_w + 10, (idle_w, busy.total_power_w)
        assert busy.gpu_load_pct > 50
        set_background_load(live.root, gpu_load=0.5)
        t += 0.02
        live.step(t)
        slow = client.run_inference(cost, "fp16")
        assert slow.latency_s > 1.3 * result.latency_s
        client.close()
        set_background_load(live.root)
        steps(live, 0.5, t)
        assert platform.sample().total_power_w < idle_w + 2
    finally:
        platform.close()


def test_a_root_without_a_live_board_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="virtual-jetson"):
        LiveBoardClient(tmp_path)
    with pytest.raises(ValueError, match="background GPU load"):
        set_background_load(tmp_path, gpu_load=1.5)


def test_emulated_tegrastats_command_reports_the_live_board(live):
    """``<root>/usr/bin/tegrastats`` prints lines that jtop's own parser reads, with the
    board's rails and the GPU at its busy clock."""
    import subprocess

    from jtop.core import tegra_parse

    set_background_load(live.root, gpu_load=0.6)
    steps(live, 0.3, 0.0)
    out = subprocess.run([str(live.root / "usr/bin/tegrastats"), "--interval", "50", "--count", "2"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert len(out) == 2
    text = tegra_parse.DATE(out[-1])
    watts = tegra_parse.WATTS(text)
    volts, amps = live.board.state.rails["VDD_GPU_SOC"]
    assert watts["VDD_GPU_SOC"]["cur"] == round(volts * amps * 1000) > 10000
    assert tegra_parse.VALS(text)["GR3D"] == {"val": 60, "frq": 1300000}
    assert len(tegra_parse.CPUS(text)) == 12


def test_a_client_stalls_on_its_first_inference_after_an_emc_change(tmp_path):
    from edge_roofline.models import zoo
    from edge_roofline.roofline.costs import analyze_model
    from edge_roofline.virtual.actuation import PRESETS

    knobs = replace(PRESETS["instant"], emc_stall_s=(0.003, 0.003))
    jetson = LiveVirtualJetson(tmp_path / "board", "agx_orin_64gb", mode_id=0, actuation=knobs)
    jetson.step(0.0)
    cost = analyze_model(zoo.build("resnet18"), precision="fp16")
    client = LiveBoardClient(jetson.root, sleep=lambda s: None)
    before_s = client.run_inference(cost).latency_s
    jetson.board.set_caps(emc_max_freq_hz=3199e6 / 2)
    jetson.step(0.02)
    first_s, second_s = client.run_inference(cost).latency_s, client.run_inference(cost).latency_s
    assert first_s > second_s + 0.0025 and second_s < before_s + 0.0025


def test_the_tree_is_held_from_construction_to_stop(tmp_path):
    """The lock was taken to check, dropped, and taken again in start(): between the two another
    board (here or in another process) could take the tree and the first rendered over it."""
    board = LiveVirtualJetson(tmp_path, "agx_orin_64gb")  # rendered, not started
    held = rf"a virtual Jetson already runs at {tmp_path} \(pid {os.getpid()}\): stop it"
    try:
        with pytest.raises(TreeRootError, match=held):
            LiveVirtualJetson(tmp_path, "orin_nx_16gb")
        other = subprocess.run([sys.executable, "-c", "import fcntl, os, sys\n"
                                "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                                "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)",
                                str(tmp_path / RUN_DIR / "live.lock")], capture_output=True, text=True, timeout=30)
        assert other.returncode != 0 and "BlockingIOError" in other.stderr, other.stderr
        board.start()
        assert json.loads((tmp_path / RUN_DIR / "physics.json").read_text())["device"] == "agx_orin_64gb"
    finally:
        board.stop()
    LiveVirtualJetson(tmp_path, "orin_nx_16gb").stop()  # free once it stopped


def test_a_second_board_on_a_running_one_s_tree_is_refused(tmp_path):
    # It rendered its own tree (another device too) over the running board's, and both then raced
    # over the files: FileNotFoundError tracebacks, a tree that was neither board's.
    running = LiveVirtualJetson(tmp_path, "agx_orin_64gb").start()
    try:
        with pytest.raises(TreeRootError, match=rf"a virtual Jetson already runs at {tmp_path} \(pid \d+\): stop it"):
            LiveVirtualJetson(tmp_path, "orin_nx_16gb")
        assert json.loads((tmp_path / RUN_DIR / "physics.json").read_text())["device"] == "agx_orin_64gb"
    finally:
        running.stop()
    LiveVirtualJetson(tmp_path, "orin_nx_16gb").start().stop()  # free once it stopped
