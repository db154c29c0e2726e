"""JetsonPlatform: telemetry from sysfs readers, operating points as reboot-free nvpmodel
presets plus devfreq/cpufreq caps inside the current preset's envelope.

One class for every layout (Orin on JetPack 5/6/7.2, Thor on JetPack 7): the readers find the
GPU's devfreq (``17000000.gpu`` or Thor's ``gpu-gpc-0``), the EMC clock (BPMP debugfs or Thor's
``bwmgr``) and the power monitors (INA3221, plus Thor's INA238 total). The device's modes and
clock tables are the board's own where it shows them (``board_facts.py``)."""

from __future__ import annotations

import logging
from pathlib import Path

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import (ApplyError, DeviceIdentity, OperatingPoint, OperatingPointError, Platform,
                                          PlatformError, RebootRequiredError, TelemetrySample)
from edge_roofline.platforms.grid import caps_grid, caps_point_name, preset_envelope
from edge_roofline.platforms.jetson import cpu, emc, gpu, power, thermal
from edge_roofline.platforms.jetson.caps import CapWriter, check_in_table
from edge_roofline.platforms.jetson.files import read_hz, read_int, read_text, under
from edge_roofline.platforms.jetson.board_facts import board_device
from edge_roofline.platforms.jetson.identify import identify
from edge_roofline.platforms.jetson.jtop_source import RailOfflineError, RailSource, default_client
from edge_roofline.platforms.jetson import nvpmodel
from edge_roofline.platforms.jetson.nvpmodel import Nvpmodel
from edge_roofline.platforms.nvml import NvmlUtilisation
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


RECORD_KIND = "jetson-cap-files"


def _write_order(path: str, value: str | None, current: str | None) -> int:
    """Online flags first; then every write that widens a min..max range, then max caps
    lowered, then min raised, so min <= max holds after every single write."""
    if path.endswith("/online"):
        return 0
    try:
        lower = int(value) < int(current)
    except (TypeError, ValueError):
        return 1
    if path.endswith("min_freq"):
        return 1 if lower else 3
    return 2 if lower and path.endswith("max_freq") else 1


def _short(path: str, value: str) -> str:
    """``cpu8/online=1``, ``cpu0/scaling_max_freq=2201600``: a cap file named for a log line."""
    p = Path(path)
    parent = p.parent.parent if p.parent.name == "cpufreq" else p.parent
    return f"{parent.name}/{p.name}={value}"


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
        found = identify(self.root) if device_key is None else None
        self._gpu = gpu.find_gpu(self.root)
        self.facts = board_device(self.root, get_device(device_key or found.catalogue_key), self._gpu)
        self.device = self.facts.device
        for note in found.notes if found else ():
            log.warning("%s", note)
        log.info("%s%s; %s", self.device.name, f" on {found.software}" if found else "", self.facts.summary())
        # Modes whose power-gating mask is only the catalogue's guess are never switched to.
        self._switch_modes = not self.device.is_unverified("presets")
        self._nvml_load: NvmlUtilisation | None = None  # made at the first sample without a load file
        self.nvpmodel = Nvpmodel(nvpmodel_cmd)
        self.writer = writer or CapWriter()
        self.clock = clock or Clock()
        self._presets = {p.mode_id: p for p in self.device.presets}
        self._cores = cpu.list_cores(self.root)
        self._zones = thermal.find_zones(self.root)
        self._rails = RailSource(self.root, default_client if self.root == Path("/") else None)
        self._missing_rails: dict[str, str] = {}  # rail -> reason, as last reported
        self._emc_dir = emc.emc_clock_files(self.root)[1]
        self._last_stat = cpu.read_proc_stat(self.root)
        self._preset = self._presets[self.nvpmodel.query().mode_id]
        self._point = self._live_point()
        if self._point.has_caps:  # caps found at start are named as what they are to this process
            self._point = self._point.with_caps(name=f"{self._preset.name} (custom caps)")
        self.found_state = self._read_cap_files()
        self._found_point = self._point

    def _live_point(self) -> OperatingPoint:
        """The point in force as the files show it: the plain preset when its caps are the
        preset's own, else the preset with the caps someone set (so a governor that found custom
        caps records, and puts back, exactly those), named as the caps grid names it, so a point
        the governor set reads back under the governor's name in another process. A lean read:
        the online flags, one core's cpufreq cap, the GPU's devfreq cap and the EMC cap."""
        plain = OperatingPoint(name=self._preset.name, nvpmodel_id=self._preset.mode_id)
        d = self.device
        online_files, max_files = self._point_files()
        online = [c for c in self._cores if online_files[c] is None or read_int(online_files[c]) in (None, 1)]
        cpu_max = read_hz(max_files[online[0]], _KHZ) if online else None
        gpu_max = read_hz(self._gpu.devfreq_dir / "max_freq") if self._gpu else None
        emc_file = self._emc_cap_file()
        emc_cap = read_int(emc_file) if emc_file else None
        live = plain.with_caps(cpu_online_cores=len(online) or None, cpu_max_freq_hz=cpu_max,
                               gpu_max_freq_hz=gpu_max, emc_max_freq_hz=float(emc_cap) if emc_cap else None)
        resolved = resolved_caps(d, self._preset, live)
        if resolved == resolved_caps(d, self._preset, plain):
            return plain
        try:
            validate_point(d, self._preset, live)
        except OperatingPointError:  # caps outside the tables: nothing we could put back exactly
            return plain
        return live.with_caps(name=caps_point_name(self._preset, resolved.cpu_online_cores, resolved.cpu_max_freq_hz,
                                                   resolved.gpu_max_freq_hz, resolved.emc_max_freq_hz))

    def _point_files(self) -> tuple[dict, dict]:
        """Each core's online flag (None: cpu0 has none) and cpufreq cap, as paths built once:
        building them costs more than reading them."""
        if not hasattr(self, "_point_paths"):
            dirs = {c: cpu.core_dir(self.root, c) for c in self._cores}
            self._point_paths = ({c: d / "online" if (d / "online").exists() else None for c, d in dirs.items()},
                                 {c: d / "cpufreq/scaling_max_freq" for c, d in dirs.items()})
        return self._point_paths

    # -- cap files ---------------------------------------------------------------------------
    def _cap_files(self) -> list[Path]:
        """Every file ``apply`` or a restore may write: core online flags, cpufreq min/max per
        core (an offline core has no cpufreq files), the GPU's devfreq min/max, the EMC cap."""
        files = []
        for core in self._cores:
            d = cpu.core_dir(self.root, core)
            files += [f for f in (d / "online", d / "cpufreq/scaling_min_freq", d / "cpufreq/scaling_max_freq")
                      if f.exists()]
        if self._gpu:
            files += [self._gpu.devfreq_dir / "min_freq", self._gpu.devfreq_dir / "max_freq"]
        emc_file = self._emc_cap_file()
        return files + [emc_file] if emc_file else files

    def _emc_cap_file(self) -> Path | None:
        """nvpmodel's own EMC cap (``emc_iso_cap``, 0 = uncapped) where the kernel has it, else
        Thor's ``bwmgr`` devfreq ``max_freq``, else the BPMP debugfs ``max_rate`` (older kernels;
        root only)."""
        for path in (under(self.root, emc.EMC_ISO_CAP), self._emc_dir / "max_freq", self._emc_dir / "max_rate"):
            if path.exists():
                return path
        return None

    def _read_cap_files(self) -> dict:
        return {"kind": RECORD_KIND, "nvpmodel_id": self._preset.mode_id,
                "files": {str(p): read_text(p) for p in self._cap_files()}}

    def refind(self) -> None:
        self._found_point = self.current_operating_point()  # first: it follows a mode switched by hand
        self.found_state = self._read_cap_files()

    def found_record(self) -> dict:
        """The mode and every cap file's content as found (EMC's ``0`` included)."""
        return self.found_state

    def restore_record(self, record: dict) -> str:
        """Put back the files a process that may have crashed found (``found_record()``)."""
        if record.get("kind") != RECORD_KIND or not isinstance(record.get("files"), dict) \
                or record.get("nvpmodel_id") not in self._presets:
            raise OperatingPointError(f"not a {self.device.name} record of cap files (kind {record.get('kind')!r}, "
                                      f"mode {record.get('nvpmodel_id')!r})")
        self.found_state = record
        restored = self.restore()
        self._found_point = self._point
        return restored

    # -- Platform ----------------------------------------------------------------------------
    def identity(self) -> DeviceIdentity:
        return DeviceIdentity(kind="jetson", model=self.device.name, catalogue_key=self.device.key)

    def device_spec(self) -> DeviceSpec:
        """The catalogue entry with this board's modes and clock tables (``board_facts.py``)."""
        return self.device

    def operating_points(self) -> list[OperatingPoint]:
        points = reachable_points(self.device, self._preset)
        return points if self._switch_modes else [p for p in points if p.nvpmodel_id == self._preset.mode_id]

    def current_operating_point(self) -> OperatingPoint:
        """The point in force, read from the board at every call (nvpmodel's status file, the cap
        files): another process (the governor, nvpmodel by hand) may have moved it since. The
        point this platform applied keeps its name while the board still shows its caps."""
        self._follow_mode()
        self._point = self._known_or_live()
        return self._point

    def _known_or_live(self) -> OperatingPoint:
        """The point the files show, as the point this platform applied or found at start when
        the files show that one (so it keeps its name), else as read."""
        live = self._live_point()
        shown = resolved_caps(self.device, self._preset, live).with_caps(name="")
        for known in (self._point, self._found_point):
            mode = self._preset.mode_id if known.nvpmodel_id is None else known.nvpmodel_id
            if mode == self._preset.mode_id and \
                    resolved_caps(self.device, self._preset, known).with_caps(name="", nvpmodel_id=mode) == shown:
                return known
        return live

    def _validate(self, point: OperatingPoint) -> Preset:
        preset = validate_point(self.device, self._preset, point)
        if preset.mode_id != self._preset.mode_id and not self._switch_modes:
            raise RebootRequiredError(
                f"{point.name}: {self.device.name}'s nvpmodel.conf was not readable ({self.facts.summary()}), "
                f"so mode {preset.name}'s GPU power-gating mask is a guess and a switch might need a reboot; "
                f"only caps inside {self._preset.name} are applied")
        return preset

    def apply(self, point: OperatingPoint) -> None:
        """The mode, then every cap file of ``point``. A refused write does not stop the others
        (a fallback to the safe point gets as far as it can); ApplyError then names each one.
        The point found at start is put back as found, every file: a point holds one CPU cap for
        every cluster, and caps set by hand (one cluster's, a min clock) are more than that."""
        if point == self._found_point:
            self.restore()
            return
        preset = self._validate(point)
        if preset.mode_id != self._preset.mode_id:
            self.nvpmodel.set_mode(preset, self._preset)
            self._preset = preset
        caps = resolved_caps(self.device, preset, point)
        writes = [(cpu.core_dir(self.root, core) / "online", "1" if core < caps.cpu_online_cores else "0")
                  for core in self._cores if core and (cpu.core_dir(self.root, core) / "online").exists()]
        failed = self._write_all(writes)
        failed += self._write_all([(cpu.core_dir(self.root, core) / "cpufreq/scaling_max_freq",
                                    str(int(caps.cpu_max_freq_hz / _KHZ)))
                                   for core in self._cores if cpu.is_online(self.root, core)])
        if self._gpu:
            failed += self._write_all([(self._gpu.devfreq_dir / "max_freq", str(int(caps.gpu_max_freq_hz)))])
        emc_file = self._emc_cap_file()
        if emc_file:
            # A preset without an EMC cap is 0 in nvpmodel's emc_iso_cap ("no cap"), as nvpmodel writes it.
            uncapped = emc_file.name == "emc_iso_cap" and point.emc_max_freq_hz is None \
                and preset.emc_max_freq_hz is None
            failed += self._write_all([(emc_file, "0" if uncapped else str(int(caps.emc_max_freq_hz)))])
        if failed:
            self._point = self._known_or_live()
            raise ApplyError(f"{len(failed)} cap writes failed (the others done): {'; '.join(failed)}")
        self._point = point

    def _write_all(self, writes: list[tuple[Path, str]]) -> list[str]:
        """Each write tried; the errors of those that failed."""
        failed = []
        for path, value in writes:
            try:
                self.writer.write(path, value)
            except ApplyError as exc:
                failed.append(str(exc))
        return failed

    def _power(self, full: bool):
        """Rails, module power and source; the fast path (``full=False``) reads the total-power
        rails only (the energy integral needs no more) and the full path every rail, after
        checking the rail files are still the ones opened."""
        labels = None if full else self.device.total_power_rails
        rails, errors = self._rails.read(labels, check_paths=full)
        read = {r.name for r in rails} | {e.rail for e in errors}
        # A total rail no channel is labelled with (and jtop does not know) is missing too, not only one
        # whose file fails or that jtop reports offline.
        errors += tuple(power.RailNotFoundError(rail, self._rails.labels, self.device.key)
                        for rail in self.device.total_power_rails if rail not in read)
        self._note_missing(errors, labels)
        total, reason = power.total_power_w(rails, self.device.total_power_rails)
        source = self._rails.name if reason is None else f"{self._rails.name} ({reason})"
        return rails, total, source

    def _note_missing(self, errors: tuple[power.RailReadError | power.RailNotFoundError | RailOfflineError, ...],
                      labels) -> None:
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
            gpu_load_pct=self._gpu_load_pct(gpu_status),
            emc_freq_hz=emc_status.rate_hz, emc_load_pct=emc_status.util_pct, cpu_load_pct=cpu_load,
            temperatures_c=thermal.read_zones(self._zones), nvpmodel_mode=self._preset.name,
            operating_point=self._point.name, source=source, missing_rails=self._missing_rails)

    def _gpu_load_pct(self, status: gpu.GpuStatus | None) -> float | None:
        """devfreq's load file; on Thor without one, NVML's utilisation (None where it does not answer)."""
        if status is None or status.load_pct is not None or self._gpu.pci_dir is None or self.root != Path("/"):
            return status.load_pct if status else None
        if self._nvml_load is None:
            self._nvml_load = NvmlUtilisation()
        return self._nvml_load.read()

    def restore(self) -> str:
        """The mode as found (nvpmodel first: a mode switch rewrites the caps), then every cap
        file whose content differs from the record (cores online first, so their cpufreq files
        exist). Every file is tried; ApplyError names those that could not be written."""
        record = self.found_state
        found = self._presets[record["nvpmodel_id"]]
        written, failed, tried = [], [], 0
        if found.mode_id != self._preset.mode_id:
            try:
                self.nvpmodel.set_mode(found, self._preset)
                self._preset = found
                written.append(f"nvpmodel {found.name}")
            except PlatformError as exc:
                failed.append(f"nvpmodel {found.name}: {exc}")
        online = {path: v for path, v in record["files"].items() if path.endswith("/online")}
        for files in (online, {path: v for path, v in record["files"].items() if path not in online}):
            known = {str(f) for f in self._cap_files()}
            current = {path: read_text(Path(path)) for path in files}
            for path, value in sorted(files.items(), key=lambda kv: _write_order(*kv, current[kv[0]])):
                if value is None or value == read_text(Path(path)):  # re-read: cores share a policy's files
                    continue
                tried += 1
                try:
                    if path not in known:
                        raise ApplyError(f"{path} is missing or not a cap file of this board")
                    self.writer.write(Path(path), value)
                    written.append(_short(path, value))
                except ApplyError as exc:
                    failed.append(str(exc))
        self._point = self._known_or_live()
        summary = f"{', '.join(written) or 'nothing'}; {len(record['files']) - tried} cap files already were"
        if failed:
            raise ApplyError(f"could not restore as found: {'; '.join(failed)}; restored {found.name} as found "
                             f"except that: wrote {summary}")
        return f"restored {found.name} as found: wrote {summary}"

    def close(self) -> None:
        try:
            self.restore()
        finally:
            self._rails.close()
