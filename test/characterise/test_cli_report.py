"""The sweep and report commands end to end on the virtual AGX Orin (SIMULATION): few-sample
mode over three models, the HTML report (in headless Chromium where installed: screenshot, no
console errors, sorting works), and a CLI process killed mid-sweep that resumes."""

import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edge_roofline.characterise.report import REPORT_NAME
from edge_roofline.characterise.store import DB_NAME, Store
from edge_roofline.cli import main

REPO = Path(__file__).resolve().parents[2]
FAST_FLAGS = ["--platform", "virtual:agx_orin_64gb", "--runs", "30", "--warmup", "5", "--settle-s", "0.05",
              "--idle-s", "0.05", "--min-window-s", "0.1"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def budget_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("budget")
    rc = main(["sweep", "zoo:tiny_cnn", "zoo:mobilenetv2", "zoo:lstm", "--budget", "10", "--out", str(out),
               *FAST_FLAGS])
    assert rc == 0
    return out


def test_budget_sweep_measures_k_points_and_predicts_the_rest(budget_dir, capsys):
    with Store(budget_dir) as store:
        for model in ("tiny_cnn", "mobilenetv2", "lstm"):
            assert len(store.results(model, "fp16", status="ok")) == 10
            predictions = store.predictions(model, "fp16")
            assert len(predictions) == 96 and all(len(p.fitted_on) == 10 for p in predictions)
            assert all(p.latency_ms > 0 and p.power_w > 0 for p in predictions)
    assert sorted(p.name for p in budget_dir.glob("operating_points_*.json")) == [
        "operating_points_lstm_fp16.json", "operating_points_mobilenetv2_fp16.json",
        "operating_points_tiny_cnn_fp16.json"]


def test_report_is_self_contained_and_labelled_simulation(budget_dir):
    page = (budget_dir / REPORT_NAME).read_text()  # written by the sweep command
    assert page.count("SIMULATION - virtual Jetson") == 2  # banner at top and bottom
    assert "src=\"data:image/png;base64," in page and "src=\"http" not in page and "<link" not in page
    assert page.count("<img") >= 3 * 4  # Pareto, heatmaps, time and energy rooflines per model
    assert "Energy-optimal point per latency target" in page
    # Three models share the 10 chosen points, so each of them has an energy-roofline fit.
    fits = re.search(r"Energy roofline parameters per point</h2>(.*?)</table>", page, re.S).group(1)
    assert fits.count("<tr>") == 1 + 10


def test_bad_arguments_give_clear_errors(tmp_path, capsys):
    assert main(["sweep", "zoo:tiny_cnn", "--platform", "virtual", "--out", str(tmp_path)]) == 2
    assert "virtual:agx_orin_64gb" in capsys.readouterr().err
    assert main(["sweep", "zoo:tiny_cnn", "--points", str(tmp_path / "nope.json"), "--out", str(tmp_path),
                 *FAST_FLAGS]) == 2
    assert "not presets, grid, all or an existing file" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "holds no sweep" in capsys.readouterr().err


def test_sweep_exits_2_when_no_point_is_measured_and_names_failed_points(tmp_path, capsys):
    bad = "{name: bad, nvpmodel_id: 0, gpu_max_freq_hz: 777000000}"
    points = tmp_path / "points.yaml"
    points.write_text(f"[{bad}]")
    assert main(["sweep", "zoo:tiny_cnn", "--points", str(points), "--out", str(tmp_path / "none"),
                 "--no-report", *FAST_FLAGS]) == 2  # was 0: "0 points measured, 1 failed"
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("edge-roofline sweep: error: no point could be measured (1 tried; the first, bad, "
                          "failed: OperatingPointError: bad: GPU cap 777.0 MHz is not in the available table")
    points.write_text(f"[{bad}, {{name: max, nvpmodel_id: 0}}]")
    assert main(["sweep", "zoo:tiny_cnn", "--points", str(points), "--out", str(tmp_path / "some"),
                 "--no-report", *FAST_FLAGS]) == 0
    out, err = capsys.readouterr()
    assert "1 points measured, 1 failed" in out
    assert "tiny_cnn: failed points: bad (first error: OperatingPointError: bad: GPU cap 777.0 MHz" in err
    # No report was written: the line names the command that writes one (was "the report of OUT").
    assert f"`edge-roofline report {tmp_path / 'some'}` lists each error; --resume tries them again)" in err


def _chromium(args, url):
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", *args, url], capture_output=True, text=True, timeout=120)
    console = [l for l in proc.stderr.splitlines() if ":CONSOLE" in l]
    return proc, console


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install chromium)")
def test_report_renders_in_headless_chromium(budget_dir, tmp_path, capsys):
    (budget_dir / REPORT_NAME).unlink()
    assert main(["report", str(budget_dir)]) == 0  # the report command renders it again
    path = budget_dir / REPORT_NAME
    assert f"wrote {path} (SIMULATION)" in capsys.readouterr().out
    # The console check can fail: a page with a script error is caught.
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>notDefined();</script></body></html>")
    assert any("notDefined" in l for l in _chromium(["--dump-dom"], broken.as_uri())[1])

    shot = budget_dir / "report.png"
    proc, console = _chromium([f"--screenshot={shot}", "--window-size=1400,2400"], path.as_uri())
    assert proc.returncode == 0 and console == [], console
    assert shot.stat().st_size > 50_000  # charts drawn, not a blank page

    # Clicking the latency header of the first point table sorts it (descending on a second click).
    page = path.read_text()
    clicker = ("<script>var t = document.querySelectorAll('table.sortable')[1]; var h = t.querySelectorAll('th');"
               "var c = Array.from(h).findIndex(x => x.textContent.startsWith('latency mean')); h[c].click();"
               "h[c].click();</script></body>")
    sorted_page = tmp_path / "sorted.html"
    sorted_page.write_text(page.replace("</body>", clicker, 1))
    proc, console = _chromium(["--dump-dom"], sorted_page.as_uri())
    assert console == [], console
    table = re.findall(r"<table class=\"sortable\">(.*?)</table>", proc.stdout, re.S)[1]
    header = re.findall(r"<th[^>]*>(.*?)</th>", table)
    col = next(i for i, h in enumerate(header) if h.startswith("latency mean"))
    values = [float(re.findall(r"<td[^>]*>(.*?)</td>", row)[col])
              for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table)[1:]]
    assert len(values) == 96 and values == sorted(values, reverse=True) and values[0] > values[-1]


def _count_points(out: Path) -> int:
    db = out / DB_NAME
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as con:
            return con.execute("SELECT COUNT(*) FROM points WHERE status = 'ok'").fetchone()[0]
    except sqlite3.OperationalError:  # schema not written yet
        return 0


def _start(out: Path, *extra) -> subprocess.Popen:
    # A longer energy window makes each point take ~0.1 s of CPU, so the kill lands mid-sweep.
    cmd = [sys.executable, "-m", "edge_roofline.cli", "sweep", "zoo:resnet18", "--out", str(out), "--no-report",
           *FAST_FLAGS, "--min-window-s", "1.5", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_points(proc, out: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while _count_points(out) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "sweep made no progress"
        time.sleep(0.05)


def test_cli_killed_mid_sweep_resumes_without_redoing_points(tmp_path):
    out = tmp_path / "killed"
    proc = _start(out)
    _wait_for_points(proc, out, 3)
    proc.send_signal(signal.SIGTERM)  # handled like Ctrl-C: restore, then exit 130
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err

    proc = _start(out, "--resume")
    before = _count_points(out)
    _wait_for_points(proc, out, before + 3)
    proc.kill()  # SIGKILL: no cleanup at all; the store must still be consistent
    proc.communicate(timeout=60)
    with Store(out) as store:
        done = {r.name: r.measured_at for r in store.results("resnet18", "fp16")}
    assert 0 < len(done) < 96

    proc = _start(out, "--resume")
    stdout, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"{96 - len(done)} points measured, 0 failed, {len(done)} done before" in stdout
    assert "SIMULATION" in stdout
    with Store(out) as store:
        after = {r.name: r.measured_at for r in store.results("resnet18", "fp16")}
    assert len(after) == 96 and all(after[n] == t for n, t in done.items())
