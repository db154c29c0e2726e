"""Every command turns a user's error into one line, ``edge-roofline CMD: error: ...``, and exit
2 (one place: cli.main); an unexpected exception is a bug and keeps its traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

from edge_roofline.cli import main
from edge_roofline.commands import analyze

REPO = Path(__file__).resolve().parent.parent

STATIC_BATCH_SCENARIO = """\
description: a static-batch model asked for batch 4
device: agx_orin_64gb
model: {model}
precision: fp16
phases:
  - {{duration_s: 2, input_rate_hz: 30, target_latency_ms: 15, batch: 4}}
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A one-layer ONNX model whose batch dimension is static (1)."""
    import onnx
    from onnx import TensorProto, helper

    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 8, 8]) for n in "xy")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "static_batch", [x], [y])
    path = tmp_path_factory.mktemp("model") / "static_batch.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return str(path)


def _cases(tmp_path, model):
    scenario = tmp_path / "static_batch.yaml"
    scenario.write_text(STATIC_BATCH_SCENARIO.format(model=model))
    unknown_key = tmp_path / "unknown_key.yaml"
    unknown_key.write_text("inference:\n  ros__parameters:\n    model: zoo:tiny_cnn\n    profile_every_frame: 10\n")
    beside = tmp_path / "beside.yaml"
    beside.write_text("inference:\n  model: zoo:tiny_cnn\n  ros__parameters:\n    backend: virtual\n")
    missing = str(tmp_path / "missing")
    empty_model = tmp_path / "empty.onnx"
    empty_model.write_bytes(b"")
    malformed = tmp_path / "malformed.yaml"
    malformed.write_text("phases: [{duration_s: 2\n")
    binary = tmp_path / "binary.yaml"  # a file given as YAML that is not text at all
    binary.write_bytes(b"phases: \xff\xfe\n")
    corrupt_sweep, empty_sweep = tmp_path / "corrupt_sweep", tmp_path / "empty_sweep"
    for sweep_dir, content in ((corrupt_sweep, "not a database"), (empty_sweep, "")):
        sweep_dir.mkdir()
        (sweep_dir / "sweep.sqlite").write_text(content)
    return [
        # argv, what the line must say
        (["analyze", missing + ".onnx"], "missing.onnx: no such file; give an existing ONNX file, or zoo:NAME"),
        (["analyze", str(tmp_path)], f"{tmp_path}: a directory, not a file; give an existing ONNX file"),
        (["analyze", str(empty_model)], f"{empty_model}: not an ONNX model (no IR version, opset or nodes); give"),
        (["analyze", model, "--operating-point", "MODE_99W"], "MODE_99W"),
        (["ceilings", "--device", "no_such_board"], "unknown device 'no_such_board'"),
        (["ceilings", "--cached", "--cache-dir", missing], "no cached cpu fp32 ceilings in "),
        (["governor-eval", str(scenario)], "batch=4 asked, but every input's leading dimension is static"),
        (["governor-eval", missing + ".yaml"], "not found"),
        (["governor-eval", str(malformed)], f"scenario {malformed} is not valid YAML at line 2, column 1: expected"),
        (["governor-eval", str(binary)], f"{binary}: not utf-8 text (byte 0xff at offset 8: invalid start byte); "
                                         "give a text file"),
        (["up", "--config", str(binary)], f"{binary}: not utf-8 text"),
        (["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--points", str(binary),
          "--out", str(tmp_path / "refused")], f"{binary}: not utf-8 text (byte 0xff at offset 8"),
        (["profile", missing + ".onnx", "--device", "agx_orin_64gb"], "missing.onnx"),
        (["recording", missing + ".mcap"], "not found"),
        (["report", missing], "holds no sweep"),
        (["report", str(corrupt_sweep)], "sweep.sqlite is not a readable sweep database (file is not a database); "
                                         "move it aside"),
        (["report", str(empty_sweep)], "holds no sweep (sweep.sqlite is empty)"),
        (["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--out", str(malformed)],
         f"--out {malformed} is a file (or under one), not a results directory; give a directory"),
        (["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--runs", "0", "--out", str(tmp_path / "s")],
         "invalid sweep settings: runs=0"),
        (["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--points", str(malformed),
          "--out", str(tmp_path / "refused")], f"--points {malformed} is not valid YAML at line 2, column 1"),
        (["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--idle-s", "inf",
          "--out", str(tmp_path / "s")], "invalid sweep settings: idle_s=inf"),
        (["up", "--config", str(unknown_key)], f"parameter file {unknown_key}: inference: unknown key "
                                                "'profile_every_frame' (did you mean 'profile_every_frames'?)"),
        (["up", "--with", "camera"], "unknown extra node(s) ['camera']"),
        (["up", "--config", str(beside)],
         f"parameter file {beside}: node 'inference' has model beside ros__parameters; move it under ros__parameters"),
        (["up", "--config", missing + ".yaml"], "not found"),
        (["up", "--with", "foxglove_bridge", "--foxglove-port", "70000"], "Foxglove port 70000 is not a TCP port"),
        (["virtual-jetson", "--device", "agx_orin_64gb"], "--root DIR is required"),
        (["virtual-jetson", "--root", f"{malformed}/tree"],
         f"cannot write a virtual Jetson's tree under {malformed}/tree (Not a directory: {malformed}/tree); give a "
         "writable directory (edge-roofline virtual-jetson --root DIR"),
    ]


def test_each_command_reports_a_user_error_on_one_line(tmp_path, model, capsys):
    for argv, expected in _cases(tmp_path, model):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith(f"edge-roofline {argv[0]}: error: "), (argv, err)
        assert expected in err, (argv, err)
    assert not (tmp_path / "refused").exists()  # a sweep refused before it began leaves no empty --out


# A number out of its range is argparse's usage error (edge_roofline.commands._args), before anything runs:
# each of these was a traceback, a silent exit 0 or a run that never ended.
OUT_OF_RANGE = [
    (["profile", "zoo:tiny_cnn", "--runs", "0"], "argument --runs: must be at least 1, got 0"),
    (["profile", "zoo:tiny_cnn", "--runs", "x"], "argument --runs: expected a whole number, got 'x'"),
    (["ceilings", "--threads", "-2"], "argument --threads: must be at least 1, got -2"),
    (["analyze", "zoo:tiny_cnn", "--top", "-1"], "argument --top: must be at least 0, got -1"),
    (["governor-eval", "agx_steady", "--seeds", "-2"], "argument --seeds: must be at least 1, got -2"),
    (["report", "sweep_out", "--targets-ms", "nan"], "argument --targets-ms: must be a finite number > 0, got nan"),
    (["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_orin_64gb", "--targets-ms", "-5"],
     "argument --targets-ms: must be a finite number > 0, got -5"),
    (["virtual-jetson", "--root", "vj", "--tick", "0"], "argument --tick: must be a finite number > 0, got 0"),
    (["virtual-jetson", "--root", "vj", "--duration", "nan"], "argument --duration: must be a finite number >= 0"),
    (["up", "--duration", "-3"], "argument --duration: must be a finite number >= 0, got -3"),
    (["demo", "--duration", "inf"], "argument --duration: must be a finite number >= 0, got inf"),
    # An output file is checked before the run: governor-eval ran for minutes, then lost its results
    # to a missing folder, or wrote DIR.png from --plot DIR and said "wrote DIR", exit 0.
    (["analyze", "zoo:tiny_cnn", "--json", "/"], "argument --json: / is a directory; give a file name"),
    (["governor-eval", "agx_steady", "--json", "/no/such/folder/out.json"],
     "argument --json: /no/such/folder/out.json: folder /no/such/folder does not exist; create it first"),
    (["governor-eval", "agx_steady", "--plot", "/"], "argument --plot: / is a directory; give a file name"),
    (["governor-eval", "agx_steady", "--plot", "plot"], "argument --plot: plot: charts are written as .png or .svg"),
    (["recording", "x.mcap", "--power-plot", "power.txt"], "argument --power-plot: power.txt: charts are written"),
    (["up", "--record", "/"], "argument --record: / is a directory; give a file name in it"),  # after nodes started
]


@pytest.mark.parametrize("argv, expected", OUT_OF_RANGE, ids=[" ".join(a[:1] + a[-2:]) for a, _ in OUT_OF_RANGE])
def test_a_number_out_of_range_is_a_usage_error(argv, expected, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and err[-1].startswith(f"edge-roofline {argv[0]}: error: {expected}"), err


def test_a_file_that_is_not_text_is_named_by_the_code_that_read_it(tmp_path):
    from edge_roofline.paths import NotTextError, read_text_file
    from edge_roofline.suite.errors import is_user_error, one_line

    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"a: \xff\n")
    with pytest.raises(NotTextError) as refused:
        read_text_file(binary)
    assert is_user_error(refused.value) and one_line(refused.value) == (
        f"{binary}: not utf-8 text (byte 0xff at offset 3: invalid start byte); give a text file (YAML, JSON)")


def test_a_decode_error_never_blames_a_file_that_happens_to_be_open(tmp_path):
    """The name was guessed from the frames' open text files: bytes decoded beside one named it."""
    from edge_roofline.suite.errors import is_user_error, one_line

    notes = tmp_path / "notes.txt"
    notes.write_text("fine\n")
    with open(notes) as unrelated:
        try:
            b"\xff".decode("utf-8")
        except UnicodeDecodeError as exc:
            line = one_line(exc)
            assert is_user_error(exc) and not unrelated.closed
    assert str(notes) not in line and "can't decode byte 0xff" in line, line


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    monkeypatch.setattr(analyze, "run", lambda args: {}["missing"])
    with pytest.raises(KeyError):
        main(["analyze", "x.onnx"])
    # A library's ValueError (raised outside edge_roofline) is a bug too, not a user's input error.
    monkeypatch.setattr(analyze, "run", lambda args: int("not a number"))
    with pytest.raises(ValueError):
        main(["analyze", "x.onnx"])


def test_the_process_prints_one_line_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("inference:\n  ros__parameters:\n    model: [zoo:tiny_cnn\n")
    proc = subprocess.run([sys.executable, "-m", "edge_roofline.cli", "up", "--config", str(bad)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == (f"edge-roofline up: error: parameter file {bad} is not valid YAML at line 4, "
                                   "column 1: expected ',' or ']', but got '<stream end>'")


# The edge-roofline executable, with a signal (or three: launch forwards the terminal's Ctrl-C
# and follows with SIGTERM) landing inside the import of a module.
SIGNAL_IN_IMPORT = """
import importlib.machinery, os, signal, sys, time
from edge_roofline import cli
execute = importlib.machinery.SourceFileLoader.exec_module
def exec_module(self, module):
    if module.__name__ == sys.argv[1]:
        for name in sys.argv[2].split(","):
            os.kill(os.getpid(), getattr(signal, name))
            time.sleep(0.2)  # the handler runs here, inside the import
    return execute(self, module)
importlib.machinery.SourceFileLoader.exec_module = exec_module
sys.exit(cli.console_main(sys.argv[3:]))
"""


@pytest.mark.parametrize("module, said", [
    # reading the command line, then the command's own start
    ("edge_roofline.commands.virtual_jetson", "edge-roofline: stopped by {} while starting"),
    ("edge_roofline.virtual.live", "edge-roofline virtual-jetson: stopped by {} while starting"),
])
@pytest.mark.parametrize("signals", ["SIGINT", "SIGTERM", "SIGINT,SIGINT,SIGTERM"])
def test_a_signal_while_a_command_starts_stops_it_cleanly(tmp_path, module, said, signals):
    # virtual-jetson runs under ros2 launch beside the nodes: a Ctrl-C while it starts is a clean
    # stop (exit 0, one line), as a node's is; it was a KeyboardInterrupt traceback and exit -2.
    proc = subprocess.run([sys.executable, "-c", SIGNAL_IN_IMPORT, module, signals, "virtual-jetson", "--root",
                           str(tmp_path / "board")], cwd=REPO, capture_output=True, text=True, timeout=120)
    said = {said.format(name) for name in signals.split(",")}  # the one held last is raised
    assert proc.returncode == 0 and proc.stderr.strip() in said, (proc.returncode, proc.stderr)
    assert not (tmp_path / "board").exists(), "the command ran"


def test_a_signal_while_a_command_runs_interrupts_it():
    # A command that does not take the signals itself (analyze, sweep's Ctrl-C) is interrupted: 130.
    code = ("import os, signal, sys\nfrom edge_roofline import cli\nfrom edge_roofline.commands import analyze\n"
            "analyze.run = lambda args: [os.kill(os.getpid(), signal.SIGINT), __import__('time').sleep(5)]\n"
            "sys.exit(cli.console_main(['analyze', 'x.onnx']))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130 and proc.stderr.strip() == "interrupted", (proc.returncode, proc.stderr)


def test_the_executable_handles_signals_from_its_first_line():
    scripts = (REPO / "pyproject.toml").read_text().split("[project.scripts]", 1)[1]
    assert 'edge-roofline = "edge_roofline.cli:console_main"' in scripts.splitlines()
