"""The roofs in force *now*: spec ceilings of the catalogued device at the clocks the platform
reports (so a power-mode or cap change moves the roofs), or measured (ERT) ceilings of the host
CPU when the model runs on this machine's CPU and it is not a catalogued device."""

from __future__ import annotations

import logging
from typing import Callable

from edge_roofline.platforms.base import DeviceIdentity, Platform
from edge_roofline.roofline.ceilings import Ceilings, CeilingsCache, CeilingsError, spec_ceilings
from edge_roofline.roofline.devices import get_device


def device_ceilings(device_key: str, precision: str, engine: str,
                    platform: Platform | None) -> Callable[[], Ceilings]:
    spec = get_device(device_key)
    spec_ceilings(spec, precision, engine=engine)  # an unknown engine is refused at start, not at the first report
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


def roofs_mismatch(device_key: str, engine: str, target: tuple[str | None, str],
                   machine: DeviceIdentity | None) -> str:
    """'' when the report's roofs are those of where the model runs; else one line saying how they
    differ and the fix (issue 23: CPU times against a GPU's roofs read as 0.1 % efficiency, quietly).

    ``target``: the backend's (device key or None for this machine, engine); ``machine``: the
    platform's identity (None without a platform: which machine this is stays unknown)."""
    target_key, target_engine = target
    if target_key is None and machine is not None and machine.kind == "jetson":
        target_key = machine.catalogue_key
    if target_key is None:
        where = f"this host's {target_engine.upper()}"
        other_machine = machine is not None  # a platform that is not a Jetson: not a catalogued device
    else:
        where = f"{target_key}'s {target_engine.upper()}"
        other_machine = bool(device_key) and target_key != device_key
    if not device_key:
        if target_engine == "cpu" and target_key is None:
            return ""
        roofs = "this host's CPU, measured"
        fix = (f"set -p device:=DEVICE (a catalogue key such as {target_key or 'agx_orin_64gb'}) and "
               f"-p engine:={target_engine}")
    else:
        if target_engine == engine and not other_machine:
            return ""
        roofs = f"{device_key}'s {engine.upper()}"
        fix = (f"set -p engine:={target_engine}" if not other_machine else
               "leave device empty (-p device:='') for this host's CPU roofs, measured" if target_key is None else
               f"set -p device:={target_key} -p engine:={target_engine}")
    return (f"the roofs ({roofs}) do not match where the model runs ({where}): efficiency and bounds compare "
            f"one's times with the other's roofs; {fix}")
