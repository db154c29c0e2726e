"""Sweeps on the virtual AGX Orin (SIMULATION): a full grid, energy against the board's true
energy, restore on interrupt and on errors, resume without redoing points, failures recorded."""

import io

import pytest

from edge_roofline.characterise.plan import PlanError, load_points_file, sweep_points
from edge_roofline.characterise.store import Store, StoreError
from edge_roofline.characterise.sweep import Progress, SweepAborted, SweepSettings
from edge_roofline.platforms.base import ApplyError, OperatingPoint

from .conftest import loaded_rig, make_sweep


def _caps(board):
    s = board.state
    return (s.nvpmodel_mode_id, tuple(s.cpu_online), tuple(s.cpu_max_freq_hz), s.gpu_max_freq_hz, s.emc_max_hz)


def test_full_grid_sweep_measures_all_96_points_and_restores(full_sweep):
    rig, store, points, summary = full_sweep
    results = store.results("resnet18", "fp16")
    assert len(points) == 96 and summary.measured == 96 and summary.failed == 0
    assert {r.name for r in results} == {p.name for p in points}
    for r in results:
        assert r.ok and r.runs >= 30 and r.power_samples >= 2
        assert r.latency_ms_p50 <= r.latency_ms_p95 <= r.latency_ms_p99
        assert 0 < r.idle_power_w < r.power_w  # running costs more than idling
        # Back to back, energy per inference is average power times mean latency.
        assert r.energy_per_inference_j == pytest.approx(r.power_w * r.latency_ms_mean / 1e3, rel=0.02)
    # Physics sanity: at fixed other caps a higher GPU cap is never slower.
    by_key = {}
    for r in results:
        p = r.point
        by_key.setdefault((p.cpu_online_cores, p.cpu_max_freq_hz, p.emc_max_freq_hz), []).append(
            (p.gpu_max_freq_hz, r.latency_ms_mean))
    for series in by_key.values():
        lat = [t for _, t in sorted(series)]
        assert lat == sorted(lat, reverse=True)
    assert rig.platform.current_operating_point().name == summary.original_point == "MAXN"


def test_measured_energy_matches_the_boards_true_energy(resnet18_model, tmp_path):
    """The integrated INA3221 samples against the simulator's ground truth at two points."""
    rig = loaded_rig(resnet18_model)
    points = sweep_points(rig.platform, "grid")
    chosen = [points[0], points[-1]]
    with Store(tmp_path) as store:
        make_sweep(rig, store, settings=SweepSettings(runs=200, warmup=20, settle_s=0.05, idle_s=0.05,
                                                      min_window_s=0.5)).run(chosen)
        for point, result in zip(chosen, store.results("resnet18", "fp16")):
            rig.platform.apply(point)
            rig.clock.sleep(0.05)
            for _ in range(20):
                rig.backend.run(rig.backend.dummy_feeds())
            # Ground truth: the board's own energy and latency, averaged over runs as they jitter.
            truth = [rig.platform.board.run_inference(rig.backend.cost, "fp16") for _ in range(200)]
            assert result.energy_per_inference_j == pytest.approx(
                sum(t.energy_j for t in truth) / len(truth), rel=0.03)
            assert result.latency_ms_mean == pytest.approx(1e3 * sum(t.latency_s for t in truth) / len(truth),
                                                           rel=0.01)


def test_interrupt_restores_the_point_and_resume_skips_finished_points(resnet18_model, tmp_path):
    rig = loaded_rig(resnet18_model)
    board = rig.platform.board
    found = _caps(board)
    points = sweep_points(rig.platform, "grid")
    seen = []

    def interrupt_after_ten(result):
        seen.append(result.name)
        if len(seen) == 10:
            raise KeyboardInterrupt  # what Ctrl-C (or SIGTERM in the CLI) does mid-sweep

    with Store(tmp_path) as store:
        with pytest.raises(KeyboardInterrupt):
            make_sweep(rig, store, after_point=interrupt_after_ten).run(points)
        assert _caps(board) == found and rig.platform.current_operating_point().name == "MAXN"
        first = {r.name: r.measured_at for r in store.results("resnet18", "fp16")}
        assert len(first) == 10
        with pytest.raises(StoreError, match="--resume"):
            make_sweep(rig, store).run(points)
        resumed = []
        summary = make_sweep(rig, store, after_point=lambda r: resumed.append(r.name)).run(points, resume=True)
        assert summary.skipped == 10 and summary.measured == 86
        assert set(resumed).isdisjoint(first) and len(resumed) == 86
        after = {r.name: r.measured_at for r in store.results("resnet18", "fp16")}
        assert len(after) == 96 and all(after[n] == t for n, t in first.items())
        with pytest.raises(StoreError, match="other settings"):
            make_sweep(rig, store, settings=SweepSettings(runs=31)).run(points, resume=True)
    assert _caps(board) == found


class _FailsAt(object):
    """Wraps a VirtualPlatform so that applying one named point raises ApplyError."""

    def __init__(self, inner, bad_names):
        self.inner, self.bad = inner, set(bad_names)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def apply(self, point):
        if point.name in self.bad:
            raise ApplyError(f"{point.name}: nvpmodel failed (injected)")
        self.inner.apply(point)


def test_failing_points_are_recorded_and_the_sweep_goes_on(resnet18_model, tmp_path):
    rig = loaded_rig(resnet18_model)
    grid = sweep_points(rig.platform, "grid")[:6]
    invalid = OperatingPoint("not-in-table", nvpmodel_id=0, gpu_max_freq_hz=777e6)
    points = grid[:3] + [invalid] + grid[3:]
    rig.platform = _FailsAt(rig.platform, {grid[4].name})
    with Store(tmp_path) as store:
        summary = make_sweep(rig, store).run(points)
        assert (summary.measured, summary.failed) == (5, 2)
        failed = {r.name: r.error for r in store.results("resnet18", "fp16", status="failed")}
        assert "777" in failed["not-in-table"] and "OperatingPointError" in failed["not-in-table"]
        assert "ApplyError" in failed[grid[4].name]
        assert store.finished_names("resnet18", "fp16") == {p.name for p in grid} - {grid[4].name}
    assert rig.platform.current_operating_point().name == "MAXN"


def test_many_failures_in_a_row_abort_and_still_restore(resnet18_model, tmp_path):
    rig = loaded_rig(resnet18_model)
    found = _caps(rig.platform.board)
    points = sweep_points(rig.platform, "grid")[:8]
    rig.platform = _FailsAt(rig.platform, {p.name for p in points[1:]})
    aborted = f"5 points failed in a row .last: {points[5].name}:"
    with Store(tmp_path) as store, pytest.raises(SweepAborted, match=aborted):
        make_sweep(rig, store).run(points)
    assert _caps(rig.platform.board) == found


def test_a_sweep_that_measures_no_point_fails_with_the_first_reason(resnet18_model, tmp_path):
    """Fewer failures than abort a sweep, but all of them: before, a summary of 0 measured (exit 0)."""
    rig = loaded_rig(resnet18_model)
    found = _caps(rig.platform.board)
    rig.platform.fail_apply = True
    points = sweep_points(rig.platform, "grid")[:2]
    with Store(tmp_path) as store:
        with pytest.raises(SweepAborted, match=rf"no point could be measured \(2 tried; the first, {points[0].name}, "
                                               r"failed: ApplyError: .*simulated failure"):
            make_sweep(rig, store).run(points)
        assert len(store.results("resnet18", "fp16", status="failed")) == 2  # kept for the report
    assert _caps(rig.platform.board) == found
    # Eight in a row: the same reason, not only the abort after five.
    with Store(tmp_path / "eight") as store, pytest.raises(SweepAborted, match=r"no point .*\(5 tried"):
        make_sweep(rig, store).run(sweep_points(rig.platform, "grid")[:8])


def test_points_file_is_validated(tmp_path):
    bad = tmp_path / "points.json"
    bad.write_text('[{"name": "a", "gpu_max_freq_mhz": 600}]')
    with pytest.raises(PlanError, match="unknown key.*gpu_max_freq_mhz"):
        load_points_file(bad)
    bad.write_text('[{"name": "a"}, {"name": "a"}]')
    with pytest.raises(PlanError, match="twice"):
        load_points_file(bad)
    good = tmp_path / "points.yaml"
    good.write_text("points:\n  - {name: slow, nvpmodel_id: 0, gpu_max_freq_hz: 612000000}\n")
    assert load_points_file(good) == [OperatingPoint("slow", nvpmodel_id=0, gpu_max_freq_hz=612e6)]
    with pytest.raises(PlanError, match="not presets, grid"):
        load_points_file(tmp_path / "missing.json")

    # A value of the wrong type failed only when applied: the sweep ended 'done', exit 0, nothing measured.
    for text in ("[{name: a, cpu_max_freq_hz: fast}]", "[{name: a, gpu_max_freq_hz: -5}]",
                 "[{name: a, cpu_online_cores: 2.5}]", "[{name: a, nvpmodel_id: true}]", "[{name: 7}]"):
        good.write_text(text)
        with pytest.raises(PlanError, match=r"point .* has .*; a name is text, nvpmodel_id a whole number"):
            load_points_file(good)
    good.write_text("[{name: fast, cpu_max_freq_hz: 1.2e9, cpu_online_cores: 4}]")  # YAML 1.1: 1.2e9 is text
    assert load_points_file(good) == [OperatingPoint("fast", cpu_online_cores=4, cpu_max_freq_hz=1.2e9)]


def test_settings_are_checked_and_progress_shows_an_eta():
    with pytest.raises(ValueError, match="runs=0"):
        SweepSettings(runs=0)
    stream = io.StringIO()
    progress = Progress(4, "sweep m", stream)
    progress.update("p0")
    progress.done = 2
    progress.update("p2")
    lines = stream.getvalue().splitlines()
    assert "0/4" in lines[0] and "ETA --" in lines[0]
    assert "2/4" in lines[1] and "ETA 0m00s" in lines[1] and "p2" in lines[1]
