"""The virtual INA3221s: the hwmon chip attributes from the physics' conversion window, rail
values written in place so a reader holding the files open sees each new one and never a torn
one, and a live board that converts at its update_interval."""

from __future__ import annotations

import os
import threading
import time

import pytest

from edge_roofline.platforms.jetson import power
from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.hwmon import VALUE_BYTES, value_bytes, write_value
from edge_roofline.virtual.live import LiveVirtualJetson
from edge_roofline.virtual.params import PhysicsParams
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.sysfs_tree import render_tree, update_tree

ORIN = get_device("agx_orin_64gb")


def hwmon_dirs(root):
    return sorted(root.glob("sys/bus/i2c/drivers/ina3221/*/hwmon/hwmon*"))


@pytest.mark.parametrize("window_s, interval_ms, samples", [(PhysicsParams.ina_window_s, "13", "4"),
                                                           (0.0066, "7", "2")])
def test_tree_has_the_chip_attributes_of_the_physics_window(tmp_path, window_s, interval_ms, samples):
    render_tree(tmp_path, ORIN, BoardState.initial(ORIN), ina_window_s=window_s)
    dirs = hwmon_dirs(tmp_path)
    assert len(dirs) == 2
    for d in dirs:
        assert (d / "update_interval").read_text() == interval_ms + "\n"
        assert (d / "samples").read_text() == samples + "\n"
    assert power.update_interval_s(power.find_rails(tmp_path)) == pytest.approx(int(interval_ms) / 1e3)


def test_live_board_presents_its_params_window(tmp_path):
    board = LiveVirtualJetson(tmp_path, "agx_orin_64gb", perturbation=0.0)
    assert board.conversion_s == board.board.params.ina_window_s
    assert {(d / "update_interval").read_text() for d in hwmon_dirs(tmp_path)} == {"13\n"}


def test_reader_holding_the_files_sees_each_tree_update(tmp_path):
    state = BoardState.initial(ORIN)
    state.rails = {"VIN_SYS_5V0": (5.0, 1.0)}
    render_tree(tmp_path, ORIN, state)
    reader = power.RailReader(power.find_rails(tmp_path))
    for amps in (1.0, 2.5, 0.75):
        state.rails = {"VIN_SYS_5V0": (5.0, amps)}
        update_tree(tmp_path, ORIN, state)
        rails, errors = reader.read()
        assert errors == () and {r.name: r.current_a for r in rails}["VIN_SYS_5V0"] == pytest.approx(amps)
    vin = next(c for c in reader.channels if c.label == "VIN_SYS_5V0")
    assert len(vin.current_path.read_bytes()) == VALUE_BYTES
    reader.close()


def test_no_torn_rail_values(tmp_path):
    """A writer flipping between two values that differ in every byte; a reader preading the
    open file sees only whole values, and both of them."""
    path = tmp_path / "curr1_input"
    low, high = 1111111, 2222222
    write_value(path, low, create=True)
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            write_value(path, high)
            write_value(path, low)

    writer = threading.Thread(target=flip)
    writer.start()
    fd = os.open(path, os.O_RDONLY)
    seen: dict[bytes, int] = {}
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            for _ in range(500):
                data = os.pread(fd, 64, 0)
                seen[data] = seen.get(data, 0) + 1
    finally:
        stop.set()
        writer.join()
        os.close(fd)
    assert set(seen) == {value_bytes(low), value_bytes(high)}, {k: v for k, v in seen.items()}


def test_a_removed_rail_file_stays_removed(tmp_path):
    board = LiveVirtualJetson(tmp_path, "agx_orin_64gb")
    board.step(0.0)
    gone = next(tmp_path.glob("sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon*/curr3_input"))
    gone.unlink()
    board.convert()
    board.step(0.02)
    assert not gone.exists()  # as an unbound driver's files: a fault test's removal sticks


def test_each_conversion_is_a_new_reading_between_physics_steps(tmp_path):
    board = LiveVirtualJetson(tmp_path, "agx_orin_64gb", mode_id=0, seed=3)
    board.step(0.0)
    reader = power.RailReader(power.find_rails(tmp_path))
    readings = []
    board.conversions = 0
    for _ in range(10):  # no physics step in between: the same window mean, each with its own noise
        board.convert()
        rails, _ = reader.read()
        readings.append(tuple((r.voltage_v, r.current_a) for r in rails))
    reader.close()
    assert len(set(readings)) >= 8 and board.conversions == 10 and board.steps == 1


def test_live_board_converts_at_its_update_interval(tmp_path):
    board = LiveVirtualJetson(tmp_path, "agx_orin_64gb", mode_id=0).start()
    try:
        time.sleep(0.2)
        conversions0, steps0, t0 = board.conversions, board.steps, time.monotonic()
        time.sleep(1.5)
        elapsed = time.monotonic() - t0
        conversions, steps = board.conversions - conversions0, board.steps - steps0
    finally:
        board.stop()
    expected = elapsed / PhysicsParams.ina_window_s
    assert 0.6 * expected <= conversions <= 1.05 * expected, (conversions, expected)  # slower only if loaded
    assert steps <= 1.05 * elapsed / board.tick_s  # the physics keeps its own 20 ms step
