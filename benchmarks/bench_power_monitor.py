"""Power sampling rate achieved and the CPU time it costs, on the code path a robot runs: the
real Jetson backend (sysfs readers) over a live virtual AGX Orin's tree (the board itself runs
in another process, so its cost is not counted here). SIMULATION board, real sampler.

Prints numbers; asserts nothing. Goal: >= 200 Hz sampling using < 2 % of one core.

    python benchmarks/bench_power_monitor.py [--seconds S] [--rate HZ]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edge_roofline.suite.env import localhost_environment  # noqa: E402
from edge_roofline.platforms import create_platform  # noqa: E402
from edge_roofline.telemetry.sampler import PowerSampler  # noqa: E402

localhost_environment()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=200.0)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_power_"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    board = subprocess.Popen([sys.executable, "-m", "edge_roofline.cli", "virtual-jetson", "--root", str(root),
                              "--mode", "0", "--duration", str(args.seconds + 30)],
                             env=env, stdout=subprocess.PIPE, text=True)
    try:
        board.stdout.readline()  # "virtual ... live at ..." once the tree exists
        platform = create_platform("virtual:agx_orin_64gb", sysfs_root=str(root))
        sampler = PowerSampler(platform, rate_hz=args.rate)
        sampler.start()
        time.sleep(1.0)
        sampler.take_window()
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(args.seconds)
        window = sampler.take_window()
        cpu_s, wall_s = time.process_time() - cpu0, time.monotonic() - wall0
        sampler.stop()
        platform.close()
    finally:
        board.terminate()
        board.wait(10)
    per_sample_us = 1e6 * cpu_s / max(window.samples, 1)
    print(f"virtual AGX Orin (SIMULATION board), JetsonPlatform sysfs readers, asked {args.rate:.0f} Hz")
    print(f"achieved sampling rate: {window.samples / wall_s:.1f} Hz ({window.samples} samples in {wall_s:.1f} s, "
          f"{window.errors} errors)")
    print(f"CPU time: {100 * cpu_s / wall_s:.2f} % of one core ({per_sample_us:.0f} us per sample)")
    print(f"energy integrated over the window: {window.window_energy_j:.1f} J "
          f"(mean {window.average_power_w:.2f} W)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
