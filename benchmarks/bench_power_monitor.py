"""Power sampling rate achieved and the CPU time it costs, on the code path a robot runs: the
real Jetson backend (sysfs readers, rail files kept open) and ``PowerSampler`` over a live
virtual AGX Orin's tree (the board runs in another process, so its cost is not counted here).
SIMULATION board, real sampler.

Each run measures, one after the other in this process, for ``--seconds`` each:
- the sampler at the rate in force (the INA3221s' ``update_interval``, capped at ``--rate``);
- a bare sleep loop at that rate (the same schedule, no reads): the floor on this machine now;
- the same two at the old fixed ``--rate`` (the sensor's interval hidden from the sampler).
The machine is shared, so compare the sampler with the bare loop of the same run (the ratio).

Also the cost of reading the operating point in force from the board
(``Platform.current_operating_point``: nvpmodel's status file and the cap files), which the power
monitor does at every publish and the inference node at every report and twice a second.

Prints numbers; asserts nothing. Goal: < 2 % of one core at the rate in force.

    python benchmarks/bench_power_monitor.py [--seconds S] [--rate HZ] [--runs N] [--point-only]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edge_roofline.suite.env import localhost_environment  # noqa: E402
from edge_roofline.platforms import create_platform  # noqa: E402
from edge_roofline.telemetry.sampler import PowerSampler  # noqa: E402

localhost_environment()


def cpu_pct(seconds: float, start, stop) -> tuple[float, float]:
    """(% of one core this process used while ``start()`` .. ``stop()`` ran, wall seconds)."""
    start()
    time.sleep(0.5)  # settle (first full sample, caches)
    cpu0, wall0 = time.process_time(), time.monotonic()
    time.sleep(seconds)
    cpu_s, wall_s = time.process_time() - cpu0, time.monotonic() - wall0
    stop()
    return 100 * cpu_s / wall_s, wall_s


def bare_loop(rate_hz: float, seconds: float) -> float:
    """A thread that only keeps the sampler's schedule (time.sleep to the next tick)."""
    done = threading.Event()

    def run():
        period_s, next_s = 1.0 / rate_hz, time.monotonic()
        while not done.is_set():
            next_s += period_s
            delay_s = next_s - time.monotonic()
            if delay_s > 0:
                time.sleep(delay_s)
    thread = threading.Thread(target=run)
    pct, _ = cpu_pct(seconds, thread.start, lambda: (done.set(), thread.join()))
    return pct


def sampler_run(platform, cap_hz: float, seconds: float, follow_sensor: bool) -> tuple[float, float, PowerSampler]:
    if not follow_sensor:
        platform.power_update_interval_s = lambda: None  # the old behaviour: sample at the cap
    sampler = PowerSampler(platform, rate_hz=cap_hz)
    holder = {}

    def stop():
        holder["window"] = sampler.take_window()
        sampler.stop()
    pct, wall_s = cpu_pct(seconds, lambda: (sampler.start(), time.sleep(0.5), sampler.take_window()), stop)
    if not follow_sensor:
        del platform.power_update_interval_s
    window = holder["window"]
    return pct, window.samples / window.duration_s, sampler


def point_read_cost(platform, reads: int = 2000) -> list[float]:
    """Seconds per ``current_operating_point()`` read, ``reads`` times."""
    times = []
    for _ in range(reads):
        start = time.perf_counter()
        platform.current_operating_point()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=200.0, help="the sampler's cap (sample_rate_hz)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--point-only", action="store_true", help="only the operating-point read")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_power_"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    total_s = args.runs * 4 * (args.seconds + 1.5) + 30
    board = subprocess.Popen([sys.executable, "-m", "edge_roofline.cli", "virtual-jetson", "--root", str(root),
                              "--mode", "0", "--duration", str(total_s)],
                             env=env, stdout=subprocess.PIPE, text=True)
    results = {"sensor": [], "fixed": []}
    try:
        board.stdout.readline()  # "virtual ... live at ..." once the tree exists
        platform = create_platform("virtual:agx_orin_64gb", sysfs_root=str(root))
        reads = sorted(point_read_cost(platform))
        median_s, p95_s = statistics.median(reads), reads[int(0.95 * len(reads))]
        print(f"operating point read from the board: {median_s * 1e6:.0f} us median, {p95_s * 1e6:.0f} us p95 "
              f"({len(reads)} reads); at the power monitor's 20 Hz {100 * 20 * median_s:.3f} % of one core")
        if args.point_only:
            args.runs = 0
        print(f"virtual AGX Orin (SIMULATION board), JetsonPlatform sysfs readers, cap {args.rate:.0f} Hz, "
              f"{args.runs} runs of {args.seconds:.0f} s per measurement")
        for run in range(1, args.runs + 1):
            for key, follow in (("sensor", True), ("fixed", False)):
                pct, achieved_hz, sampler = sampler_run(platform, args.rate, args.seconds, follow)
                bare = bare_loop(sampler.rate_hz, args.seconds)
                results[key].append((pct, bare, achieved_hz))
                label = f"rate in force ({sampler.rate_reason})" if follow else "old fixed rate"
                print(f"run {run}, {label}: asked {sampler.rate_hz:.1f} Hz, achieved {achieved_hz:.1f} Hz; "
                      f"sampler {pct:.2f} % of one core, bare sleep loop {bare:.2f} %, ratio {pct / bare:.1f}x")
        platform.close()
    finally:
        board.terminate()
        board.wait(10)
    for key, label in (("sensor", "rate in force"), ("fixed", f"fixed {args.rate:.0f} Hz")):
        if not results[key]:
            continue
        pcts, bares, rates = zip(*results[key])
        print(f"median, {label}: {statistics.median(rates):.1f} Hz, sampler {statistics.median(pcts):.2f} % "
              f"of one core (range {min(pcts):.2f}-{max(pcts):.2f}), bare loop {statistics.median(bares):.2f} %, "
              f"ratio {statistics.median(p / b for p, b in zip(pcts, bares)):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
