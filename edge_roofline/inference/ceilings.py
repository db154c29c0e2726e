"""The roofs in force *now*: spec ceilings of the catalogued device at the clocks the platform
reports (so a power-mode or cap change moves the roofs), or measured (ERT) ceilings of the host
CPU when the model runs on this machine's CPU and it is not a catalogued device."""

from __future__ import annotations

import logging
from typing import Callable

from edge_roofline.platforms.base import Platform
from edge_roofline.roofline.ceilings import Ceilings, CeilingsCache, CeilingsError, spec_ceilings
from edge_roofline.roofline.devices import get_device


def device_ceilings(device_key: str, precision: str, engine: str,
                    platform: Platform | None) -> Callable[[], Ceilings]:
    spec = get_device(device_key)
    memo: dict[tuple, Ceilings] = {}

    def current() -> Ceilings:
        clocks = (None, None, None, None, 0)
        if platform is not None:
            sample = platform.sample()
            point = platform.current_operating_point()
            mask = 0
            if point.nvpmodel_id is not None:
                try:
                    mask = spec.preset(point.nvpmodel_id).tpc_pg_mask
                except KeyError:
                    mask = 0
            cpu_hz = max(sample.cpu_freq_hz) if sample.cpu_freq_hz else None
            cores = len(sample.cpu_freq_hz) or None
            clocks = (sample.gpu_freq_hz, sample.emc_freq_hz, cpu_hz, cores, mask)
        if clocks not in memo:
            gpu_hz, emc_hz, cpu_hz, cores, mask = clocks
            memo[clocks] = spec_ceilings(spec, precision, gpu_freq_hz=gpu_hz, emc_freq_hz=emc_hz,
                                         cpu_freq_hz=cpu_hz, cpu_cores=cores, tpc_pg_mask=mask, engine=engine)
        return memo[clocks]

    return current


def host_cpu_ceilings(cache: CeilingsCache | None = None) -> Callable[[], Ceilings]:
    """Measured fp32 ceilings of this machine's CPU, measured once (a few seconds) and cached."""
    from edge_roofline.roofline import ert

    cache = cache or CeilingsCache()
    key, point = ert.cpu_identity()
    try:
        found = cache.get(key, point, "cpu", "fp32")
    except CeilingsError as exc:
        logging.getLogger(__name__).warning("%s", exc)  # and measures again below
        found = None
    if found is None:
        found = ert.measure_cpu_ceilings(quick=True).ceilings  # logs its own DRAM warning
        cache.put(key, point, found)
    elif found.dram_warning:
        logging.getLogger(__name__).warning(found.dram_warning)
    return lambda: found
