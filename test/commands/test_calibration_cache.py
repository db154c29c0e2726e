"""``--calibration-cache`` (commands/_args.py, shared by profile and sweep): TensorRT's int8 build
replays a calibration cache, it does not calibrate. Before, both commands took ``--precision int8``
with the tensorrt backend and had no way to give one: the run ended in the backend's ValueError.
TensorRT is the stand-in runtime (test/backends/fake_tensorrt_runtime.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from edge_roofline.cli import main
from test.backends import fake_tensorrt_runtime as fake


@pytest.fixture
def runtime(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the engine cache
    return fake.install(monkeypatch)


@pytest.fixture
def cache(tmp_path):
    path = tmp_path / "tiny_cnn.cache"
    path.write_bytes(b"TRT-calibration")
    return path


def _one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"edge-roofline {command}: error: "), err
    return err


def test_profile_builds_int8_from_the_calibration_cache(runtime, cache, capsys):
    assert main(["profile", "zoo:tiny_cnn", "--backend", "tensorrt", "--precision", "int8", "--runs", "1",
                 "--calibration-cache", str(cache)]) == 0
    assert runtime.builds == 1 and runtime.last_config["flags"] == {"fp16", "int8"}
    assert runtime.last_config["int8_calibrator"].read_calibration_cache() == b"TRT-calibration"
    assert "% roof" in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["--precision", "int8"], "error: TensorRT builds int8 from a calibration cache (it replays one, it does not "
                              "calibrate) and none is given: set --calibration-cache FILE"),
    (["--precision", "fp16", "--calibration-cache", "CACHE"], "error: --calibration-cache is read only by an int8 "
                                                              "TensorRT build (this one: tensorrt at fp16)"),
], ids=["int8 without", "fp16 with"])
def test_profile_asks_for_the_cache_or_refuses_an_unread_one_in_one_line(runtime, cache, capsys, argv, expected):
    argv = [str(cache) if a == "CACHE" else a for a in argv]
    assert main(["profile", "zoo:tiny_cnn", "--backend", "tensorrt", *argv]) == 2
    assert expected in _one_line_error(capsys, "profile") and runtime.builds == 0


@pytest.mark.parametrize("command", [["profile", "zoo:tiny_cnn", "--backend", "tensorrt"],
                                     ["sweep", "zoo:tiny_cnn", "--platform", "jetson"]], ids=["profile", "sweep"])
def test_a_missing_cache_file_is_a_usage_error(tmp_path, capsys, command):
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--precision", "int8", "--calibration-cache", str(tmp_path / "none.cache")])
    assert exit_.value.code == 2
    assert f"argument --calibration-cache: {tmp_path / 'none.cache'} is not a file" in capsys.readouterr().err


def test_sweep_gives_the_tensorrt_backend_the_calibration_cache(runtime, cache, tmp_path, monkeypatch):
    import edge_roofline.characterise.sweep as characterise_sweep
    import edge_roofline.platforms as platforms

    device_rig, given = characterise_sweep.device_rig, {}

    def stop(*args, **kwargs):  # a real device is not the point here
        given.update(kwargs)
        raise platforms.PlatformError("no device here")

    monkeypatch.setattr(characterise_sweep, "device_rig", stop)
    assert main(["sweep", "zoo:tiny_cnn", "--platform", "jetson", "--precision", "int8", "--calibration-cache",
                 str(cache), "--out", str(tmp_path / "out")]) == 2
    assert given["calibration_cache"] == str(cache)
    # and device_rig hands it to the backend
    board = SimpleNamespace(identity=lambda: SimpleNamespace(simulated=False, catalogue_key="agx_orin_64gb"),
                            close=lambda: None)
    monkeypatch.setattr(platforms, "create_platform", lambda spec, sysfs_root: board)
    rig = device_rig("jetson", "tensorrt", "int8", calibration_cache=str(cache))
    try:
        assert rig.backend.precision == "int8" and rig.backend.calibration_cache == cache
    finally:
        rig.backend.close()


@pytest.mark.parametrize("argv, expected", [
    (["zoo:tiny_cnn"], "error: TensorRT builds int8 from a calibration cache (it replays one, it does not "
                       "calibrate) and none is given: set --calibration-cache FILE (a TensorRT calibration cache of "
                       "the model), or --precision fp16"),
    # A cache holds one model's scales, by its tensors' names: one for several would be wrong for all but one.
    (["zoo:tiny_cnn", "zoo:mobilenetv2", "--calibration-cache", "CACHE"],
     "error: --backend tensorrt builds each model at int8 from that model's calibration cache: sweep them one at a "
     "time, each with its --calibration-cache FILE"),
], ids=["without", "several models"])
def test_sweep_refuses_before_anything_starts_in_one_line(runtime, cache, tmp_path, capsys, argv, expected):
    argv = [str(cache) if a == "CACHE" else a for a in argv]
    out = tmp_path / "out"
    assert main(["sweep", *argv, "--platform", "jetson", "--precision", "int8", "--out", str(out)]) == 2
    assert expected in _one_line_error(capsys, "sweep") and not out.exists()


def test_a_virtual_sweep_reads_no_cache(tmp_path, cache, capsys):
    assert main(["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--precision", "int8",
                 "--calibration-cache", str(cache), "--out", str(tmp_path / "out")]) == 2
    assert "--calibration-cache is read only by an int8 TensorRT build (this one: virtual at int8)" in \
        _one_line_error(capsys, "sweep")


def test_a_resume_matches_the_cache_by_its_file_and_bytes(cache, tmp_path, monkeypatch, capsys):
    """Before, the path as typed was recorded: the same file named another way was refused, and one
    rewritten in place was taken. The sweep runs on a virtual board here (only its settings matter)."""
    import edge_roofline.characterise.sweep as characterise_sweep

    monkeypatch.setattr(characterise_sweep, "device_rig",
                        lambda *args, **kwargs: characterise_sweep.virtual_rig("agx_orin_64gb", "int8"))
    monkeypatch.chdir(tmp_path)

    def sweep(cache_text: str, *more: str) -> int:
        return main(["sweep", "zoo:tiny_cnn", "--platform", "jetson", "--precision", "int8", "--calibration-cache",
                     cache_text, "--points", "presets", "--runs", "5", "--warmup", "1", "--settle-s", "0",
                     "--idle-s", "0", "--min-window-s", "0", "--no-report", "--out", str(tmp_path / "out"), *more])

    assert sweep(str(cache)) == 0
    assert sweep(cache.name, "--resume") == 0  # the same file, relative to the folder it is in
    cache.write_bytes(b"TRT-calibration, another")
    capsys.readouterr()
    assert sweep(str(cache), "--resume") == 2
    assert "was run with other settings (calibration_sha256:" in capsys.readouterr().err
