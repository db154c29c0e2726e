"""JetsonPlatform: telemetry from sysfs readers, operating points as reboot-free nvpmodel
presets plus devfreq/cpufreq caps inside the current preset's envelope."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import (DeviceIdentity, OperatingPoint, OperatingPointError, Platform,
                                          RebootRequiredError, TelemetrySample)
from edge_roofline.platforms.grid import caps_grid, preset_envelope
from edge_roofline.platforms.jetson import cpu, emc, gpu, power, thermal
from edge_roofline.platforms.jetson.caps import CapWriter, check_in_table
from edge_roofline.platforms.jetson.files import read_int, read_text, under
from edge_roofline.platforms.jetson.identify import identify
from edge_roofline.platforms.jetson.jtop_source import RailSource, default_client
from edge_roofline.platforms.jetson import nvpmodel
from edge_roofline.platforms.jetson.nvpmodel import Nvpmodel
from edge_roofline.roofline.devices import DeviceSpec, Preset, get_device

log = logging.getLogger(__name__)
_KHZ = 1e3


def reachable_points(device: DeviceSpec, current: Preset) -> list[OperatingPoint]:
    """Points reachable at runtime from ``current``: presets with its TPC mask (any other
    needs a reboot) and the default caps grid inside it."""
    presets = [OperatingPoint(name=p.name, nvpmodel_id=p.mode_id)
               for p in device.presets if p.tpc_pg_mask == current.tpc_pg_mask]
    return presets + caps_grid(device, current)


def validate_point(device: DeviceSpec, current: Preset, point: OperatingPoint) -> Preset:
    """The preset ``point`` runs in, after checking it is reachable from ``current`` without a
    reboot and that its caps are table entries inside that preset's envelope."""
    preset = {p.mode_id: p for p in device.presets}.get(
        current.mode_id if point.nvpmodel_id is None else point.nvpmodel_id)
    if preset is None:
        raise OperatingPointError(f"{point.name}: no nvpmodel mode {point.nvpmodel_id} on {device.name}")
    if preset.tpc_pg_mask != current.tpc_pg_mask:
        raise RebootRequiredError(f"{point.name}: mode {preset.name} changes TPC_PG_MASK; needs a reboot")
    checks = ((point.cpu_max_freq_hz, device.cpu_freqs_hz, preset.cpu_max_freq_hz, "CPU"),
              (point.gpu_max_freq_hz, device.gpu_freqs_hz, preset.gpu_max_freq_hz, "GPU"),
              (point.emc_max_freq_hz, device.emc_freqs_hz, preset.emc_max_freq_hz, "EMC"))
    for value, table, ceiling, what in checks:
        if value is None:
            continue
        check_in_table(value, table, f"{point.name}: {what} cap")
        if ceiling is not None and value > ceiling:
            raise OperatingPointError(f"{point.name}: {what} cap {value / 1e6:.1f} MHz above "
                                      f"{preset.name}'s {ceiling / 1e6:.1f} MHz")
    if point.cpu_online_cores is not None and not 1 <= point.cpu_online_cores <= preset.cpu_online_cores:
        raise OperatingPointError(f"{point.name}: {point.cpu_online_cores} cores outside 1..{preset.cpu_online_cores}")
    return preset


def resolved_caps(device: DeviceSpec, preset: Preset, point: OperatingPoint) -> OperatingPoint:
    """``point`` with every ``None`` ("the preset's own") replaced by the preset's cap, so going
    back from a custom point to a plain preset really lifts the custom caps."""
    cpu_top, gpu_top, emc_top = preset_envelope(device, preset)
    return point.with_caps(cpu_online_cores=point.cpu_online_cores or preset.cpu_online_cores,
                           cpu_max_freq_hz=point.cpu_max_freq_hz or cpu_top,
                           gpu_max_freq_hz=point.gpu_max_freq_hz or gpu_top,
                           emc_max_freq_hz=point.emc_max_freq_hz or emc_top)


class JetsonPlatform(Platform):
    def __init__(self, root: str | Path = "/", nvpmodel_cmd: tuple[str, ...] = ("nvpmodel",),
                 device_key: str | None = None, writer: CapWriter | None = None,
                 clock: Clock | None = None) -> None:
        self.root = Path(root)
        self.device = get_device(device_key or identify(self.root).catalogue_key)
        self.nvpmodel = Nvpmodel(nvpmodel_cmd)
        self.writer = writer or CapWriter()
        self.clock = clock or Clock()
        self._presets = {p.mode_id: p for p in self.device.presets}
        self._cores = cpu.list_cores(self.root)
        self._gpu = gpu.find_gpu(self.root)
        self._zones = thermal.find_zones(self.root)
        self._rails = RailSource(self.root, default_client if self.root == Path("/") else None)
        self._missing_rails: dict[str, str] = {}  # rail -> reason, as last reported
        self._emc_dir = under(self.root, emc.EMC_CLK_DIR)
        self._last_stat = cpu.read_proc_stat(self.root)
        self._preset = self._presets[self.nvpmodel.query().mode_id]
        self._point = self._live_point()
        self.found_state = self._read_cap_files()

    def _live_point(self) -> OperatingPoint:
        """The point in force as the files show it: the plain preset when its caps are the
        preset's own, else the preset with the caps someone set (so a governor that found custom
        caps records, and puts back, exactly those)."""
        plain = OperatingPoint(name=self._preset.name, nvpmodel_id=self._preset.mode_id)
        d = self.device
        online = [s for s in (cpu.read_core(self.root, c) for c in self._cores) if s.online]
        cpu_max = online[0].max_freq_hz if online else None
        gpu_max = gpu.read_gpu(self._gpu).max_freq_hz if self._gpu else None
        emc_file = self._emc_cap_file()
        emc_cap = read_int(emc_file) if emc_file else None
        live = plain.with_caps(cpu_online_cores=len(online) or None, cpu_max_freq_hz=cpu_max,
                               gpu_max_freq_hz=gpu_max, emc_max_freq_hz=float(emc_cap) if emc_cap else None)
        if resolved_caps(d, self._preset, live) == resolved_caps(d, self._preset, plain):
            return plain
        try:
            validate_point(d, self._preset, live)
        except OperatingPointError:  # caps outside the tables: nothing we could put back exactly
            return plain
        return live.with_caps(name=f"{self._preset.name} (custom caps)")

    # -- cap files ---------------------------------------------------------------------------
    def _cap_files(self) -> dict[str, Path]:
        files = {}
        for core in self._cores:
            d = cpu.core_dir(self.root, core)
            if (d / "online").exists():
                files[f"cpu{core}/online"] = d / "online"
            if (d / "cpufreq/scaling_max_freq").exists():
                files[f"cpu{core}/max_khz"] = d / "cpufreq/scaling_max_freq"
        if self._gpu:
            files["gpu/max_hz"] = self._gpu.devfreq_dir / "max_freq"
        emc_file = self._emc_cap_file()
        if emc_file:
            files["emc/max_hz"] = emc_file
        return files

    def _emc_cap_file(self) -> Path | None:
        """nvpmodel's own EMC cap (``emc_iso_cap``) where the kernel has it, else the BPMP
        debugfs ``max_rate`` (older kernels; root only)."""
        for path in (under(self.root, emc.EMC_ISO_CAP), self._emc_dir / "max_rate"):
            if path.exists():
                return path
        return None

    def _read_cap_files(self) -> dict:
        return {"nvpmodel_id": self._preset.mode_id,
                "files": {str(p): read_text(p) for p in self._cap_files().values()}}

    def save_found_state(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.found_state, indent=1))

    def restore_from_state_file(self, path: str | Path) -> None:
        """Put back a state saved by a process that may have crashed."""
        self.found_state = json.loads(Path(path).read_text())
        self.restore()

    # -- Platform ----------------------------------------------------------------------------
    def identity(self) -> DeviceIdentity:
        return DeviceIdentity(kind="jetson", model=self.device.name, catalogue_key=self.device.key)

    def operating_points(self) -> list[OperatingPoint]:
        return reachable_points(self.device, self._preset)

    def current_operating_point(self) -> OperatingPoint:
        return self._point

    def _validate(self, point: OperatingPoint) -> Preset:
        return validate_point(self.device, self._preset, point)

    def apply(self, point: OperatingPoint) -> None:
        preset = self._validate(point)
        if preset.mode_id != self._preset.mode_id:
            self.nvpmodel.set_mode(preset, self._preset)
            self._preset = preset
        caps = resolved_caps(self.device, preset, point)
        for core in self._cores:
            online = cpu.core_dir(self.root, core) / "online"
            if core and online.exists():
                self.writer.write(online, "1" if core < caps.cpu_online_cores else "0")
        for core in self._cores:
            if cpu.is_online(self.root, core):
                self.writer.write(cpu.core_dir(self.root, core) / "cpufreq/scaling_max_freq",
                                  str(int(caps.cpu_max_freq_hz / _KHZ)))
        if self._gpu:
            self.writer.write(self._gpu.devfreq_dir / "max_freq", str(int(caps.gpu_max_freq_hz)))
        emc_file = self._emc_cap_file()
        if emc_file:
            self.writer.write(emc_file, str(int(caps.emc_max_freq_hz)))
        self._point = point

    def _power(self, full: bool):
        """Rails, module power and source; the fast path (``full=False``) reads the total-power
        rails only (the energy integral needs no more) and the full path every rail, after
        checking the rail files are still the ones opened."""
        labels = None if full else self.device.total_power_rails
        rails, errors = self._rails.read(labels, check_paths=full)
        self._note_missing(errors, labels)
        total, reason = power.total_power_w(rails, self.device.total_power_rails)
        source = self._rails.name if reason is None else f"{self._rails.name} ({reason})"
        return rails, total, source

    def _note_missing(self, errors: tuple[power.RailReadError, ...], labels) -> None:
        """One log line when a rail goes missing or reads again; ``labels``: the rails just read."""
        missing = {r: why for r, why in self._missing_rails.items() if labels is not None and r not in labels}
        missing.update((e.rail, e.reason) for e in errors)
        for e in errors:
            if self._missing_rails.get(e.rail) != e.reason:
                log.warning("%s", e)
        for rail in self._missing_rails.keys() - missing.keys():
            log.warning("power rail %s reads again", rail)
        self._missing_rails = missing

    def sample_power(self) -> TelemetrySample:
        rails, total, source = self._power(full=False)
        return TelemetrySample(timestamp_s=self.clock.now_s(), rails=rails, total_power_w=total,
                               nvpmodel_mode=self._preset.name, operating_point=self._point.name, source=source,
                               missing_rails=self._missing_rails)

    def power_update_interval_s(self) -> float | None:
        return self._rails.update_interval_s

    def _follow_mode(self) -> None:
        """Another process (nvpmodel by hand, the governor) may have switched the mode: follow
        nvpmodel's status file, so samples name the mode in force, not the one found at start."""
        mode_id = nvpmodel.read_status_mode(self.root)
        if mode_id is not None and mode_id != self._preset.mode_id and mode_id in self._presets:
            self._preset = self._presets[mode_id]
            self._point = OperatingPoint(name=self._preset.name, nvpmodel_id=mode_id)

    def sample(self) -> TelemetrySample:
        self._follow_mode()
        rails, total, source = self._power(full=True)
        stat = cpu.read_proc_stat(self.root)
        _, cpu_load = cpu.load_pct(self._last_stat, stat)
        self._last_stat = stat
        gpu_status = gpu.read_gpu(self._gpu) if self._gpu else None
        emc_status = emc.read_emc(self.root)
        return TelemetrySample(
            timestamp_s=self.clock.now_s(), rails=rails, total_power_w=total,
            cpu_freq_hz=cpu.read_online_freqs_hz(self.root, self._cores),
            gpu_freq_hz=gpu_status.cur_freq_hz if gpu_status else None,
            gpu_load_pct=gpu_status.load_pct if gpu_status else None,
            emc_freq_hz=emc_status.rate_hz, emc_load_pct=emc_status.util_pct, cpu_load_pct=cpu_load,
            temperatures_c=thermal.read_zones(self._zones), nvpmodel_mode=self._preset.name,
            operating_point=self._point.name, source=source, missing_rails=self._missing_rails)

    def restore(self) -> None:
        """The mode and every cap file as found (cores online first, so their caps can be set)."""
        found = self._presets[self.found_state["nvpmodel_id"]]
        if found.mode_id != self._preset.mode_id:
            self.nvpmodel.set_mode(found, self._preset)
            self._preset = found
        files = sorted(self.found_state["files"].items(), key=lambda kv: not kv[0].endswith("/online"))
        for path, value in files:
            if value is not None:
                self.writer.write(Path(path), value)
        self._point = OperatingPoint(name=found.name, nvpmodel_id=found.mode_id)

    def close(self) -> None:
        try:
            self.restore()
        finally:
            self._rails.close()
