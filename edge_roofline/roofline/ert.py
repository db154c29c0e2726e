"""Empirical ceilings, ERT-style: sweep the working-set size (which memory level serves the
data) and the FLOPs per element (how compute-heavy the kernel is), time each point, and fit
the ceilings from the points.

The kernel is ERT's: every element of a buffer is read, updated ``k / 2`` times with a
multiply-add and written back, ``trials`` times. Bytes = 2 x working set x trials (one read,
one write); FLOPs = k x elements x trials.

- CPU (numpy + threads): the buffer is split among threads (numpy ufuncs release the GIL);
  each thread updates its slice in cache-sized blocks so that for large ``k`` the data stays
  in cache between updates. numpy ufuncs are far from the vector units' peak, so the CPU
  compute ceiling is taken from a BLAS matrix multiply (what DNN runtimes call), and the ERT
  sweep supplies the bandwidths. numpy has no fast fp16/int8 path: the CPU measures fp32.
- NVIDIA GPU (pycuda): ``ert_gpu``, the same sweep and fit with a generated CUDA kernel.
"""

from __future__ import annotations

import logging
import os
import re
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

from edge_roofline.roofline.ceilings import Ceilings

KIB = 1024
MIB = 1024 * KIB

log = logging.getLogger(__name__)

# Where sysfs has no cache hierarchy (some VMs and containers), a typical server L3: DRAM
# working sets then start at 128 MiB, which the memory budget still bounds.
_UNKNOWN_LLC_BYTES = 32 * MIB
# Without /proc/meminfo, what a sweep may allocate: small enough for any board.
_UNKNOWN_MEMORY_BUDGET_BYTES = 256 * MIB


class ErtError(RuntimeError):
    """The measurement cannot run here, or its points do not determine a ceiling."""


class GpuUnavailableError(ErtError):
    """pycuda or a CUDA device is missing."""


@dataclass(frozen=True)
class ErtPoint:
    working_set_bytes: int
    flops_per_element: int
    seconds: float
    bytes_moved: float
    flops: float

    @property
    def bandwidth_bps(self) -> float:
        return self.bytes_moved / self.seconds

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds


@dataclass(frozen=True)
class ErtResult:
    points: tuple[ErtPoint, ...]
    ceilings: Ceilings
    cache_bytes: dict[str, int]   # level -> size the fit used to bin the sweep
    device_key: str               # the ceilings cache's keys for this machine
    operating_point: str

    @property
    def warning(self) -> str | None:
        """Why the DRAM roof is unmeasured and what that means, or None when it was measured."""
        return self.ceilings.dram_warning


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def working_set_sizes(min_bytes: int, max_bytes: int, per_octave: int = 2) -> list[int]:
    """Geometric sweep, ``per_octave`` sizes per doubling, rounded to 4 KiB."""
    sizes, size = [], float(min_bytes)
    while size <= max_bytes * 1.0001:
        sizes.append(int(round(size / (4 * KIB))) * 4 * KIB)
        size *= 2 ** (1 / per_octave)
    return sorted(set(s for s in sizes if s > 0))


def fit_ceilings(points: Iterable[ErtPoint], cache_bytes: dict[str, int], *, engine: str,
                 precision: str, label: str, layer_overhead_s: float,
                 peak_flops: float | None = None) -> Ceilings:
    """Ceilings from sweep points.

    Bandwidths come from the memory-bound points (the smallest FLOPs per element): L1 is the
    best bandwidth with the working set inside ``cache_bytes["l1"]``, L2 the best between L1
    and L2 (a level not faster than the one outside it is ``None``: unresolved), DRAM the
    median over working sets at least 4x the last cache level (``"llc"`` if given, else
    ``"l2"``), where no cache can hold a meaningful share. Without such a working set the DRAM
    roof is unresolved: ``dram_unresolved`` says why, and ``dram_bandwidth_bps`` holds the
    largest working set's bandwidth, an upper bound on DRAM's. The FLOP ceiling is the best FLOP
    rate over all points unless ``peak_flops`` (e.g. from GEMM) is given.
    """
    points = list(points)
    if not points:
        raise ErtError("no ERT points to fit")
    k_min = min(p.flops_per_element for p in points)
    memory_points = [p for p in points if p.flops_per_element == k_min]
    llc = cache_bytes.get("llc", cache_bytes.get("l2", 0))
    dram = sorted(p.bandwidth_bps for p in memory_points if p.working_set_bytes >= 4 * llc)
    unresolved = None
    if dram:
        dram_bps = statistics.median(dram)
    else:
        largest = max(p.working_set_bytes for p in memory_points)
        dram_bps = min(p.bandwidth_bps for p in memory_points if p.working_set_bytes == largest)
        unresolved = (f"the largest working set, {largest / MIB:.0f} MiB, is under 4x the "
                      f"{llc / MIB:.0f} MiB last-level cache")

    def best_within(low: int, high: int) -> float | None:
        values = [p.bandwidth_bps for p in memory_points if low < p.working_set_bytes <= high]
        return max(values) if values else None

    l1 = cache_bytes.get("l1")
    l2 = cache_bytes.get("l2")
    l2_bps = best_within(l1 or 0, l2) if l2 else None
    l1_bps = best_within(0, l1) if l1 else None
    # A cache level slower than the level outside it was not resolved (per-call overhead
    # dominates small working sets, notably with numpy): report it as unknown, not as a roof.
    if l2_bps is not None and l2_bps <= dram_bps:
        l2_bps = None
    if l1_bps is not None and l1_bps <= (l2_bps or dram_bps):
        l1_bps = None
    peak = peak_flops if peak_flops is not None else max(p.flops_per_s for p in points)
    return Ceilings(engine=engine, precision=precision, peak_flops=peak,
                    dram_bandwidth_bps=dram_bps, l2_bandwidth_bps=l2_bps, l1_bandwidth_bps=l1_bps,
                    layer_overhead_s=layer_overhead_s, source="measured", label=label,
                    dram_unresolved=unresolved)


# ---- CPU ---------------------------------------------------------------------------------

def cpu_cache_bytes(sys_root: str | Path = "/") -> dict[str, int]:
    """Data/unified cache sizes of cpu0 from sysfs: l1, l2 and, when there is one, llc (the
    largest level, times its instances: one per socket or cluster, each caching its own cores'
    share of a multi-threaded sweep). Missing sysfs: typical sizes (48 KiB, 1 MiB) and, since a
    larger level may hide there, an assumed 32 MiB llc."""
    cpus = Path(sys_root) / "sys/devices/system/cpu"
    sizes: dict[int, int] = {}
    llc_index = None
    for index in sorted((cpus / "cpu0/cache").glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            sizes[level] = _parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if level == max(sizes):
            llc_index = index.name
    out = {"l1": sizes.get(1, 48 * KIB), "l2": sizes.get(2, MIB)}
    if not sizes:
        out["llc"] = _UNKNOWN_LLC_BYTES
    elif max(sizes) > 2:
        instances = {f.read_text().strip() for f in cpus.glob(f"cpu[0-9]*/cache/{llc_index}/shared_cpu_list")}
        out["llc"] = sizes[max(sizes)] * max(len(instances), 1)
    return out


def memory_budget_bytes(sys_root: str | Path = "/") -> int:
    """What one sweep buffer may take: half of the memory the kernel calls available
    (MemAvailable, else MemFree) or of the room under a cgroup memory limit, whichever is less,
    so a sweep never pushes a small board into swap or the OOM killer."""
    root = Path(sys_root)
    room: list[int] = []
    try:
        meminfo = dict(line.split(":", 1) for line in (root / "proc/meminfo").read_text().splitlines()
                       if ":" in line)
        room.append(int((meminfo.get("MemAvailable") or meminfo["MemFree"]).split()[0]) * KIB)
    except (OSError, KeyError, ValueError, IndexError):
        pass
    for limit, usage in (("memory.max", "memory.current"),  # cgroup v2, then v1
                         ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        try:
            room.append(int((root / "sys/fs/cgroup" / limit).read_text())
                        - int((root / "sys/fs/cgroup" / usage).read_text()))
        except (OSError, ValueError):  # absent, or "max": no limit
            continue
    return max(min(room), 0) // 2 if room else _UNKNOWN_MEMORY_BUDGET_BYTES


def cpu_sweep_sizes(cache_bytes: dict[str, int], budget_bytes: int, quick: bool) -> tuple[list[int], list[int]]:
    """(working sets timed at every FLOPs per element, working sets timed memory-bound only).

    The first climb geometrically up to the L2, where the data stays in cache between the
    kernel's updates and FLOP-heavy points show the compute rate. The second carry on up to the
    last-level cache and then jump to 4x it (one point quick; 4x and 8x full), where DRAM serves
    nearly all the traffic: large arrays, so only the bandwidth kernel runs there and no point
    sits between the LLC and 4x it. Every size stays within ``budget_bytes``; where 4x the LLC
    does not fit, the largest size that does is the last point (the fit then reports DRAM
    unresolved, with that point's bandwidth as the bound).
    """
    l2 = cache_bytes["l2"]
    llc = cache_bytes.get("llc", l2)
    budget = budget_bytes // (4 * KIB) * 4 * KIB
    climb = [s for s in working_set_sizes((128 if quick else 16) * KIB, llc, per_octave=1 if quick else 2)
             if s <= budget]
    page = 4 * KIB
    dram = [-(-n * llc // page) * page for n in ((4,) if quick else (4, 8))]
    dram = [s for s in dram if s <= budget]
    if not dram and budget > max(climb, default=0):
        dram = [budget]
    return [s for s in climb if s <= l2], [s for s in climb if s > l2] + dram


def _parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if not m:
        raise ValueError(f"cache size {text!r}")
    return int(m.group(1)) * {"": 1, "K": KIB, "M": MIB, "G": 1024 * MIB}[m.group(2)]


def cpu_identity(sys_root: str | Path = "/") -> tuple[str, str]:
    """(device key, operating point) of this CPU for the ceilings cache: the model name and
    thread count; the cpufreq governor and max clock (or ``default`` without cpufreq)."""
    root = Path(sys_root)
    model = "cpu"
    try:
        for line in (root / "proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    key = _slug(model) + f"-{os.cpu_count()}t"
    freq_dir = root / "sys/devices/system/cpu/cpu0/cpufreq"
    try:
        point = (f"{(freq_dir / 'scaling_governor').read_text().strip()}-"
                 f"{int((freq_dir / 'scaling_max_freq').read_text()) // 1000}MHz")
    except (OSError, ValueError):
        point = "default"
    return key, point


def _time_best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_cpu_points(sizes: Sequence[int], flops_per_element: Sequence[int], *,
                       threads: int | None = None, block_bytes: int = 256 * KIB,
                       min_bytes_per_point: int = 64 * MIB, repeats: int = 3) -> list[ErtPoint]:
    """Time the ERT kernel on the CPU at every (working set, FLOPs per element)."""
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor

    threads = threads or os.cpu_count() or 1
    if any(k < 2 or k % 2 for k in flops_per_element):
        raise ValueError("FLOPs per element must be even (one multiply-add is 2)")
    buffer = np.ones(max(sizes) // 4, dtype=np.float32)
    alpha, beta = np.float32(0.999999), np.float32(1e-7)
    block = max(block_bytes // 4, 1)
    points = []
    with ThreadPoolExecutor(threads) as pool:
        for size in sizes:
            data = buffer[: size // 4]
            slices = np.array_split(data, threads)
            trials = max(1, min_bytes_per_point // (2 * size))
            for k in flops_per_element:
                def work(part, k=k, trials=trials):
                    for _ in range(trials):
                        for start in range(0, part.size, block):
                            chunk = part[start:start + block]
                            for _ in range(k // 2):
                                np.multiply(chunk, alpha, out=chunk)
                                np.add(chunk, beta, out=chunk)
                seconds = _time_best(lambda: list(pool.map(work, slices)), repeats)
                points.append(ErtPoint(working_set_bytes=size, flops_per_element=k,
                                       seconds=seconds, bytes_moved=2.0 * size * trials,
                                       flops=float(k) * (size // 4) * trials))
    return points


def measure_cpu_gemm_flops(sizes: Sequence[int] = (256, 512, 1024), repeats: int = 3) -> float:
    """Best fp32 FLOP/s of a BLAS matrix multiply (2 n^3 FLOPs) over square sizes."""
    import numpy as np

    best = 0.0
    for n in sizes:
        a = np.ones((n, n), np.float32)
        b = np.ones((n, n), np.float32)
        best = max(best, 2.0 * n ** 3 / _time_best(lambda: a @ b, repeats))
    return best


def measure_cpu_dispatch_s(calls: int = 2000) -> float:
    """Per-call cost of a tiny numpy kernel: the fixed per-layer term of a CPU runtime."""
    import numpy as np

    x = np.ones(16, np.float32)
    zero = np.zeros(16, np.float32)
    return _time_best(lambda: [np.add(x, zero, out=x) for _ in range(calls)], 3) / calls


def measure_cpu_ceilings(quick: bool = True, *, threads: int | None = None,
                         sys_root: str | Path = "/") -> ErtResult:
    """fp32 ceilings of this CPU. ``quick`` (seconds) sweeps fewer sizes and FLOPs per element
    than the full run. The working sets follow the cache hierarchy and the free memory
    (``cpu_sweep_sizes``); where DRAM is out of reach the result says so (``warning``, also
    logged) instead of failing."""
    cache = cpu_cache_bytes(sys_root)
    budget = memory_budget_bytes(sys_root)
    compute_sizes, memory_sizes = cpu_sweep_sizes(cache, budget, quick)
    ks = (2, 8) if quick else (2, 4, 8, 16, 32, 64)
    sweep = {"threads": threads, "min_bytes_per_point": (32 if quick else 256) * MIB,
             "repeats": 2 if quick else 5}
    points = []
    for sizes, sizes_ks in ((compute_sizes, ks), (memory_sizes, ks[:1])):
        if sizes:
            points += measure_cpu_points(sizes, sizes_ks, **sweep)
    key, point = cpu_identity(sys_root)
    ceilings = fit_ceilings(points, cache, engine="cpu", precision="fp32",
                            label=f"{key} {point} cpu fp32 (measured)",
                            layer_overhead_s=measure_cpu_dispatch_s(),
                            peak_flops=measure_cpu_gemm_flops((256, 512) if quick else (256, 512, 1024, 2048)))
    if ceilings.dram_unresolved and budget < 4 * cache.get("llc", cache["l2"]):
        ceilings = replace(ceilings, dram_unresolved=f"{ceilings.dram_unresolved}: the memory budget, "
                           f"half of the free memory, is {budget / MIB:.0f} MiB")
    result = ErtResult(points=tuple(points), ceilings=ceilings, cache_bytes=cache,
                       device_key=key, operating_point=point)
    if result.warning:
        log.warning(result.warning)
    return result
