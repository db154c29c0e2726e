"""A Jetson's sysfs/procfs tree, written from a ``BoardState`` in the board's real layout and
file formats, so the real Jetson backend and jetson-stats' own path-taking readers read it
unchanged.

Three entry points:

- ``render_tree(root, device, state)`` writes the whole tree once (control files included:
  caps, online flags, nvpmodel.conf, the nvpmodel launcher);
- ``update_tree(root, device, state)`` rewrites only *measurements* (current clocks, loads,
  rails, temperatures, /proc/stat), atomically per file (rails: in place, see ``hwmon.py``),
  so a concurrent reader never sees a half-written value and caps a client wrote are never
  overwritten;
- ``sysfs_read.read_state(root, device)`` reads everything back, so the physics can follow the
  caps, online flags and nvpmodel mode a client (the real backend, the nvpmodel emulation) wrote.

Layout notes (as on an AGX Orin with JetPack 6): ``/proc/device-tree`` links to
``/sys/firmware/devicetree/base``; ``cpuN/cpufreq`` links to the cluster's
``cpufreq/policyF``; ``/sys/class/devfreq/<gpu>`` links to the GPU device's devfreq directory,
whose ``device/of_node`` links to the GPU's device-tree node; ``/sys/devices/gpu.0`` links to the
GPU device (nvpmodel's ``tpc_pg_mask`` path); INA3221 devices appear under
``/sys/bus/i2c/devices`` and ``/sys/bus/i2c/drivers/ina3221``. Thor's layout (PCI GPU with
``gpu-gpc-0``, EMC ``bwmgr``, the INA238 total) is rendered by ``thor_tree.py``; where each
thing lives in either layout is ``tree_paths.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from edge_roofline.platforms.jetson.identify import BOARDS, compatible_strings
from edge_roofline.platforms.jetson.nvpmodel import STATUS_FILE
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.virtual import thor_tree
from edge_roofline.virtual.hwmon import chip_attributes, write_rails
from edge_roofline.virtual.params import PhysicsParams
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.tree_paths import (ACTMON_MC_ALL, CPU_DIR, EMC_CLK_DIR, EMC_ISO_CAP,  # noqa: F401 (re-exported)
                                              NV_TEGRA_RELEASE, THERMAL_DIR, TreePaths, is_thor,
                                              zone_temperatures, zone_types)
from edge_roofline.virtual.tree_paths import hz as _hz
from edge_roofline.virtual.tree_paths import link as _link
from edge_roofline.virtual.tree_paths import write as _write
from edge_roofline.virtual.tree_paths import write_devfreq

NVPMODEL_LAUNCHER = "usr/bin/nvpmodel"
NVPMODEL_STATUS = STATUS_FILE.lstrip("/")
NVPMODEL_CONF_LINK = "etc/nvpmodel.conf"
USER_HZ = 100  # /proc/stat jiffies per second
_DT_BASE = "sys/firmware/devicetree/base"
_RAIL_WARN_MA = 20000
_RAIL_CRIT_MA = 32760
_PG_MASK_PARAM = {False: ("TPC_POWER_GATING", "TPC_PG_MASK"), True: ("GPU_POWER_GATING", "GPC_PG_MASK")}
_CPU_CLOCK_NAMES = {"Cortex-A78AE": "CPU_A78", "Carmel": "CPU_DENVER", "Cortex-A57": "CPU_A57",
                    "Neoverse-V3AE": "CPU_V3AE"}


# ---- small file helpers ------------------------------------------------------------------------


# Last text written per measurement file, so an update skips values that did not change
# (most rails and temperatures between two physics steps). render_tree forgets a root's entries.
_LAST_WRITTEN: dict[Path, str] = {}


def _write_atomic(root: Path, rel: str, text: str) -> None:
    """Replace a measurement file in one step (readers see the old or the new value)."""
    path = root / rel
    if _LAST_WRITTEN.get(path) == text:
        return
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="ascii")
    except FileNotFoundError:  # first write of this file (render_tree); later updates skip this
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="ascii")
    os.replace(tmp, path)
    _LAST_WRITTEN[path] = text


def _khz(freq_hz: float) -> str:
    return f"{int(round(freq_hz / 1e3))}\n"


def _cpu_range(cores: list[int]) -> str:
    """Kernel cpulist format: ``0-3,8``."""
    spans, start = [], None
    for i, core in enumerate(cores):
        if start is None:
            start = core
        if i + 1 == len(cores) or cores[i + 1] != core + 1:
            spans.append(str(start) if start == core else f"{start}-{core}")
            start = None
    return ",".join(spans) + "\n"


# ---- render -------------------------------------------------------------------------------------
def render_tree(root: str | Path, device: DeviceSpec, state: BoardState,
                ina_window_s: float = PhysicsParams.ina_window_s, shunt_ohm: float = PhysicsParams.shunt_ohm) -> None:
    """Write the complete tree for ``device`` in ``state`` under ``root``."""
    root = Path(root)
    for path in [p for p in _LAST_WRITTEN if p.is_relative_to(root)]:
        del _LAST_WRITTEN[path]
    paths = TreePaths.of(device)
    _render_device_tree(root, device, paths)
    _render_cpus(root, device, state, paths)
    if is_thor(device):
        thor_tree.render(root, device, state, paths)
    else:
        _render_gpu(root, device, state, paths)
        _render_emc(root, device, state)
    _render_rails(root, device, paths, ina_window_s, shunt_ohm)
    _render_thermal(root, device)
    _render_nvpmodel(root, device, state, paths)
    update_tree(root, device, state)


def _render_device_tree(root: Path, device: DeviceSpec, paths: TreePaths) -> None:
    board = BOARDS[device.key]
    _write(root, f"{_DT_BASE}/model", board.model + "\x00")
    _write(root, f"{_DT_BASE}/compatible", "\x00".join(compatible_strings(board)) + "\x00")
    _link(root, "proc/device-tree", _DT_BASE)
    _write(root, NV_TEGRA_RELEASE, f"# {device.l4t_release}, GCID: 0, BOARD: generic, EABI: aarch64, "
                                   "DATE: (virtual Jetson, SIMULATION)\n")
    if is_thor(device):
        return  # Thor's GPU is a PCI device: no device-tree node (thor_tree.py)
    gpu_node = f"{_DT_BASE}/bus@0/{device.gpu_of_node_name}@{device.gpu_devfreq_name.split('.')[0]}"
    _write(root, f"{gpu_node}/name", device.gpu_of_node_name + "\x00")
    _link(root, f"{paths.gpu_device}/of_node", gpu_node)


def _render_cpus(root: Path, device: DeviceSpec, state: BoardState, paths: TreePaths) -> None:
    cores = list(range(device.cpu_cores))
    for name in ("possible", "present"):
        _write(root, f"{CPU_DIR}/{name}", _cpu_range(cores))
    table_khz = " ".join(str(int(round(f / 1e3))) for f in sorted(device.cpu_freqs_hz)) + "\n"
    for cluster in device.cpu_clusters:
        policy, lead = paths.policy_dir(cluster[0]), cluster[0]
        _write(root, f"{policy}/scaling_available_frequencies", table_khz)
        _write(root, f"{policy}/scaling_available_governors", "schedutil performance userspace\n")
        _write(root, f"{policy}/scaling_governor", "schedutil\n")
        _write(root, f"{policy}/cpuinfo_min_freq", _khz(min(device.cpu_freqs_hz)))
        _write(root, f"{policy}/cpuinfo_max_freq", _khz(device.cpu_max_freq_hz))
        _write(root, f"{policy}/related_cpus", " ".join(map(str, cluster)) + "\n")
        _write(root, f"{policy}/affected_cpus", " ".join(map(str, cluster)) + "\n")
        _write(root, f"{policy}/scaling_min_freq", _khz(state.cpu_min_freq_hz[lead]))
        _write(root, f"{policy}/scaling_max_freq", _khz(state.cpu_max_freq_hz[lead]))
        for core in cluster:
            _link(root, f"{CPU_DIR}/cpu{core}/cpufreq", policy)
    for core in cores:
        _write(root, f"{CPU_DIR}/cpu{core}/online", "1\n" if state.cpu_online[core] else "0\n")


def _render_gpu(root: Path, device: DeviceSpec, state: BoardState, paths: TreePaths) -> None:
    devfreq = paths.gpu_devfreq
    write_devfreq(root, devfreq, device.gpu_freqs_hz, state.gpu_min_freq_hz, state.gpu_max_freq_hz)
    _link(root, f"{devfreq}/device", paths.gpu_device)
    _link(root, f"sys/class/devfreq/{device.gpu_devfreq_name}", devfreq)
    _link(root, "sys/devices/gpu.0", paths.gpu_device)
    _write(root, paths.pg_mask_file, f"{state.tpc_pg_mask}\n")
    _write(root, f"{paths.gpu_device}/railgate_enable", "1\n")
    _write(root, f"{paths.gpu_device}/power/control", "auto\n")


def _render_emc(root: Path, device: DeviceSpec, state: BoardState) -> None:
    # The hardware range lives in debugfs; nvpmodel's cap is emc_iso_cap (0 = no cap).
    _write(root, f"{EMC_CLK_DIR}/min_rate", _hz(state.emc_min_hz))
    _write(root, f"{EMC_CLK_DIR}/max_rate", _hz(device.emc_max_freq_hz))
    _write(root, f"{EMC_CLK_DIR}/mrq_rate_locked", "0\n")
    capped = state.emc_max_hz < device.emc_max_freq_hz
    _write(root, EMC_ISO_CAP, _hz(state.emc_max_hz) if capped else "0\n")


def _render_rails(root: Path, device: DeviceSpec, paths: TreePaths, ina_window_s: float, shunt_ohm: float) -> None:
    total = device.input_power_monitor.i2c_device if device.input_power_monitor else None
    for dev, hwmon in paths.hwmon_of_i2c.items():
        chip = "ina238" if dev == total else "ina3221"
        if chip == "ina3221":
            for name, text in chip_attributes(ina_window_s).items():
                _write(root, f"{hwmon}/{name}", text)
        device_dir = str(Path(hwmon).parent.parent)
        _write(root, f"{device_dir}/name", f"{chip}\n")
        _write(root, f"{hwmon}/name", f"{chip}\n")
        _link(root, f"sys/bus/i2c/devices/{dev}", device_dir)
        _link(root, f"sys/bus/i2c/drivers/{chip}/{dev}", device_dir)
        _link(root, f"sys/class/hwmon/{Path(hwmon).name}", hwmon)
    for rail in device.rails:
        hwmon, k = paths.hwmon_of_i2c[rail.i2c_device], rail.channel
        _write(root, f"{hwmon}/in{k}_label", rail.label + "\n")
        _write(root, f"{hwmon}/shunt{k}_resistor", f"{round(shunt_ohm * 1e6)}\n")  # uOhm, as the driver shows it
        _write(root, f"{hwmon}/curr{k}_max", f"{_RAIL_WARN_MA}\n")
        _write(root, f"{hwmon}/curr{k}_crit", f"{_RAIL_CRIT_MA}\n")
        _write(root, f"{hwmon}/curr{k}_max_alarm", "0\n")
        _write(root, f"{hwmon}/curr{k}_crit_alarm", "0\n")


def _render_thermal(root: Path, device: DeviceSpec) -> None:
    for index, zone_type in enumerate(zone_types(device)):
        zone = f"{THERMAL_DIR}/thermal_zone{index}"
        _write(root, f"{zone}/type", zone_type + "\n")
        _link(root, f"sys/class/thermal/thermal_zone{index}", zone)


def _render_nvpmodel(root: Path, device: DeviceSpec, state: BoardState, paths: TreePaths) -> None:
    conf_rel = f"etc/nvpmodel/{device.nvpmodel_conf_name}"
    _write(root, conf_rel, nvpmodel_conf_text(device, paths))
    _link(root, NVPMODEL_CONF_LINK, conf_rel)
    write_nvpmodel_status(root, state.nvpmodel_mode_id)
    write_nvpmodel_launcher(root)
    write_launcher(root, "tegrastats", "edge_roofline.virtual.tegrastats_emu")


def write_nvpmodel_status(root: str | Path, mode_id: int) -> None:
    _write(Path(root), NVPMODEL_STATUS, f"pmode:{mode_id:04d} fmode:quiet\n")


def write_launcher(root: str | Path, tool: str, module: str) -> Path:
    """``<root>/usr/bin/<tool>``: runs ``module`` (an emulation) on this tree with this
    interpreter. ``exec`` keeps a single process, so a caller's timeout kill reaches it."""
    root = Path(root).resolve()
    package_parent = Path(__file__).resolve().parents[2]
    script = root / "usr" / "bin" / tool
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH='{package_parent}'${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n"
        f"exec '{sys.executable}' -m {module} --root '{root}' \"$@\"\n",
        encoding="utf-8")
    script.chmod(0o755)
    return script


def write_nvpmodel_launcher(root: str | Path) -> Path:
    return write_launcher(root, "nvpmodel", "edge_roofline.virtual.nvpmodel_emu")


def cpu_clock_param(device: DeviceSpec, cluster_index: int) -> str:
    return f"{_CPU_CLOCK_NAMES.get(device.cpu_core_name, 'CPU')}_{cluster_index}"


def nvpmodel_conf_text(device: DeviceSpec, paths: TreePaths | None = None) -> str:
    """The device's presets in nvpmodel.conf syntax; paths are board paths (``/sys/...``),
    which the emulation resolves under its root. No-cap values are written as nvpmodel's
    conf does: -1 for CPU/GPU, 0 for EMC."""
    paths = paths or TreePaths.of(device)
    gpu = f"/sys/class/devfreq/{device.gpu_devfreq_name}"
    out = [f"# nvpmodel configuration for {device.name}, generated from the edge_roofline device",
           "# catalogue (same sections and syntax as NVIDIA's files)."]
    if is_thor(device):
        out += ["# Thor: the GPU power-gating PARAM's name and file are this emulation's own (UNVERIFIED);",
                "# a change takes effect at the next boot, so nvpmodel asks for a reboot."]
    out += ["",
           "< PARAM TYPE=FILE NAME=CPU_ONLINE >"]
    out += [f"CORE_{c} /{CPU_DIR}/cpu{c}/online" for c in range(device.cpu_cores)]
    gating, mask = _PG_MASK_PARAM[is_thor(device)]
    out += ["", f"< PARAM TYPE=FILE NAME={gating} >", f"{mask} /{paths.pg_mask_file}"]
    for index, cluster in enumerate(device.cpu_clusters):
        policy = f"/{CPU_DIR}/cpu{cluster[0]}/cpufreq"
        out += ["", f"< PARAM TYPE=CLOCK NAME={cpu_clock_param(device, index)} >",
                f"FREQ_TABLE {policy}/scaling_available_frequencies",
                f"MAX_FREQ {policy}/scaling_max_freq", f"MIN_FREQ {policy}/scaling_min_freq"]
    out += ["", "< PARAM TYPE=CLOCK NAME=GPU >", f"FREQ_TABLE {gpu}/available_frequencies",
            f"MAX_FREQ {gpu}/max_freq", f"MIN_FREQ {gpu}/min_freq",
            "", "< PARAM TYPE=CLOCK NAME=EMC >", f"MAX_FREQ /{EMC_ISO_CAP}"]
    cpu_min_khz = int(round(min(device.cpu_freqs_hz) / 1e3))
    for preset in device.presets:
        out += ["", f"< POWER_MODEL ID={preset.mode_id} NAME={preset.name} >"]
        out += [f"CPU_ONLINE CORE_{c} {int(c < preset.cpu_online_cores)}" for c in range(device.cpu_cores)]
        out.append(f"{gating} {mask} {preset.tpc_pg_mask}")
        cpu_max = -1 if preset.cpu_max_freq_hz is None else int(round(preset.cpu_max_freq_hz / 1e3))
        for index, cluster in enumerate(device.cpu_clusters):
            if cluster[0] < preset.cpu_online_cores:  # as NVIDIA's files: online clusters only
                name = cpu_clock_param(device, index)
                out += [f"{name} MIN_FREQ {cpu_min_khz}", f"{name} MAX_FREQ {cpu_max}"]
        gpu_max = -1 if preset.gpu_max_freq_hz is None else int(round(preset.gpu_max_freq_hz))
        emc_max = 0 if preset.emc_max_freq_hz is None else int(round(preset.emc_max_freq_hz))
        out += ["GPU MIN_FREQ 0", f"GPU MAX_FREQ {gpu_max}", f"EMC MAX_FREQ {emc_max}"]
    out += ["", f"< PM_CONFIG DEFAULT={device.default_mode_id} >", ""]
    return "\n".join(out)


# ---- update (measurements only) -----------------------------------------------------------------
def rail_value_files(device: DeviceSpec) -> list[tuple[str, str, str, str | None]]:
    """(label, ``inK_input``, ``currK_input``, ``power1_input`` or None) of every channel,
    relative to the tree's root; only the INA238 total has a power file (uW)."""
    paths = TreePaths.of(device)
    total = device.input_power_monitor
    return [(r.label, f"{paths.hwmon_of_i2c[r.i2c_device]}/in{r.channel}_input",
             f"{paths.hwmon_of_i2c[r.i2c_device]}/curr{r.channel}_input",
             f"{paths.hwmon_of_i2c[r.i2c_device]}/power1_input" if r == total else None)
            for r in device.power_monitors]


def update_tree(root: str | Path, device: DeviceSpec, state: BoardState, rails: bool = True) -> None:
    """Rewrite the measurement files from ``state``; caps and flags are left as they are.
    ``rails=False``: not the rail values (a live board writes them at the sensor's own rate)."""
    root = Path(root)
    paths = TreePaths.of(device)
    for cluster in device.cpu_clusters:
        _write_atomic(root, f"{paths.policy_dir(cluster[0])}/scaling_cur_freq",
                      _khz(state.cpu_cur_freq_hz[cluster[0]]))
        _write_atomic(root, f"{paths.policy_dir(cluster[0])}/cpuinfo_cur_freq",
                      _khz(state.cpu_cur_freq_hz[cluster[0]]))
    _write_atomic(root, "proc/stat", _proc_stat_text(state))
    _write_atomic(root, "proc/uptime", f"{state.uptime_s:.2f} {sum(state.cpu_idle_time_s):.2f}\n")
    _write_atomic(root, "proc/meminfo", _meminfo_text(device, state))
    _write_atomic(root, f"{paths.gpu_devfreq}/cur_freq", _hz(state.gpu_cur_freq_hz))
    _write_atomic(root, paths.gpu_load, f"{int(round(min(max(state.gpu_load, 0.0), 1.0) * 1000))}\n")
    _write_atomic(root, paths.emc_file("rate"), _hz(state.emc_rate_hz))
    for rel, text in thor_tree.measurements(device, state, paths) if is_thor(device) else ():
        _write_atomic(root, rel, text)
    # jetson-stats reads utilisation percent as mc_all / rate_kHz, so mc_all = pct * rate_kHz.
    _write_atomic(root, ACTMON_MC_ALL,
                  f"{int(round(min(max(state.emc_util, 0.0), 1.0) * 100 * state.emc_rate_hz / 1e3))}\n")
    if rails:
        write_rails(root, rail_value_files(device), state.rails, create=True)
    temperatures = zone_temperatures(device, state.temperatures_c)
    for index, zone_type in enumerate(zone_types(device)):  # render_tree numbers them in this order
        if zone_type in temperatures:
            _write_atomic(root, f"{THERMAL_DIR}/thermal_zone{index}/temp",  # 1/32 C steps, as Orin shows
                          f"{int(round(temperatures[zone_type] * 32) * 1000 / 32)}\n")


def _proc_stat_text(state: BoardState) -> str:
    """user nice system idle iowait irq softirq steal guest guest_nice; offline cores are
    absent, as in the kernel's file."""
    def line(name: str, busy_s: float, idle_s: float) -> str:
        return f"{name} {round(busy_s * USER_HZ)} 0 0 {round(idle_s * USER_HZ)} 0 0 0 0 0 0\n"
    online = [c for c, up in enumerate(state.cpu_online) if up]
    text = line("cpu ", sum(state.cpu_busy_time_s), sum(state.cpu_idle_time_s))
    text += "".join(line(f"cpu{c}", state.cpu_busy_time_s[c], state.cpu_idle_time_s[c]) for c in online)
    return text + f"btime 0\nprocesses 1\nprocs_running {max(1, len(online))}\n"


def _meminfo_text(device: DeviceSpec, state: BoardState) -> str:
    total_kb = device.ram_mb * 1024
    free_kb = max(total_kb - state.ram_used_mb * 1024, 0)
    return (f"MemTotal: {total_kb:>14} kB\nMemFree: {free_kb:>15} kB\nMemAvailable: {free_kb:>10} kB\n"
            f"Buffers: {0:>15} kB\nCached: {0:>16} kB\nSwapTotal: {0:>13} kB\nSwapFree: {0:>14} kB\n")
