"""Writes a small AGX Orin 64GB sysfs/procfs tree (the real layout) for platform tests."""

from __future__ import annotations

from pathlib import Path

from edge_roofline.platforms.jetson.identify import BOARDS, compatible_strings
from edge_roofline.roofline.devices import get_device

# (i2c device, hwmon index, channel, label, mV, mA); indices differ per device as on a board.
AGX_ORIN_RAIL_READINGS = (
    ("1-0040", 3, 1, "VDD_GPU_SOC", 5000, 478),
    ("1-0040", 3, 2, "VDD_CPU_CV", 5000, 159),
    ("1-0040", 3, 3, "VIN_SYS_5V0", 5000, 704),
    ("1-0041", 4, 1, "NC", 0, 0),
    ("1-0041", 4, 2, "VDDQ_VDD2_1V8AO", 5000, 60),
    ("1-0041", 4, 3, "NC", 0, 0),
)
THERMAL_ZONES = (("cpu-thermal", 41437), ("gpu-thermal", 40500), ("cv0-thermal", -256000),
                 ("tj-thermal", 41656))
GPU_CUR_HZ = 612_000_000
EMC_RATE_HZ = 3_199_000_000


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_agx_orin_tree(root: Path, key: str = "agx_orin_64gb") -> Path:
    device, board = get_device(key), BOARDS[key]
    dt = root / "proc/device-tree"
    write(dt / "model", board.model + "\x00")
    write(dt / "compatible", "\x00".join(compatible_strings(board)) + "\x00")
    write(root / "proc/stat", "cpu  10 0 10 80 0 0 0 0\n" + "".join(
        f"cpu{c} 100 0 100 800 0 0 0 0 0 0\n" for c in range(device.cpu_cores)))
    khz = " ".join(str(int(f / 1e3)) for f in device.cpu_freqs_hz)
    for core in range(device.cpu_cores):
        cpu = root / "sys/devices/system/cpu" / f"cpu{core}"
        if core:
            write(cpu / "online", "1\n")
        write(cpu / "cpufreq/scaling_available_frequencies", khz + "\n")
        write(cpu / "cpufreq/scaling_cur_freq", "1728000\n")
        write(cpu / "cpufreq/scaling_min_freq", str(int(device.cpu_freqs_hz[0] / 1e3)) + "\n")
        write(cpu / "cpufreq/scaling_max_freq", "1728000\n")
        write(cpu / "cpufreq/scaling_governor", "schedutil\n")
    gpu_dev = root / "sys/devices/platform/bus@0/17000000.gpu"
    devfreq = gpu_dev / "devfreq/17000000.gpu"
    write(devfreq / "available_frequencies", " ".join(str(int(f)) for f in device.gpu_freqs_hz) + "\n")
    write(devfreq / "cur_freq", f"{GPU_CUR_HZ}\n")
    write(devfreq / "min_freq", f"{int(device.gpu_freqs_hz[0])}\n")
    write(devfreq / "max_freq", f"{GPU_CUR_HZ}\n")
    write(devfreq / "governor", "nvhost_podgov\n")
    write(gpu_dev / "load", "250\n")
    write(gpu_dev / "of_node/name", "gpu\x00")
    (devfreq / "device").symlink_to(gpu_dev)
    cls = root / "sys/class/devfreq"
    cls.mkdir(parents=True, exist_ok=True)
    (cls / "17000000.gpu").symlink_to(devfreq)
    emc = root / "sys/kernel/debug/bpmp/debug/clk/emc"
    write(emc / "rate", f"{EMC_RATE_HZ}\n")
    write(emc / "min_rate", f"{int(device.emc_freqs_hz[0])}\n")
    write(emc / "max_rate", f"{EMC_RATE_HZ}\n")
    write(root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "0\n")
    write(root / "sys/kernel/actmon_avg_activity/mc_all", f"{25 * (EMC_RATE_HZ // 1000)}\n")
    drv = root / "sys/bus/i2c/drivers/ina3221"
    write(drv / "uevent", "DRIVER=ina3221\n")
    for i2c_dev, index, ch, label, mv, ma in AGX_ORIN_RAIL_READINGS:
        write(drv / i2c_dev / "name", "ina3221x\n")
        hwmon = drv / i2c_dev / "hwmon" / f"hwmon{index}"
        write(hwmon / f"in{ch}_label", label + "\n")
        write(hwmon / f"in{ch}_input", f"{mv}\n")
        write(hwmon / f"curr{ch}_input", f"{ma}\n")
        write(hwmon / f"curr{ch}_max", "32760 ma\n")
        write(hwmon / f"curr{ch}_crit", "32760 ma\n")
    for n, (zone_type, millideg) in enumerate(THERMAL_ZONES):
        zone = root / "sys/devices/virtual/thermal" / f"thermal_zone{n}"
        write(zone / "type", zone_type + "\n")
        write(zone / "temp", f"{millideg}\n")
    return root


FAKE_NVPMODEL = r'''#!/usr/bin/env python3
"""Minimal nvpmodel stand-in: -q, -p --verbose, -m N; a TPC mask change prompts for a reboot
and fails on EOF; a file named HANG next to the status file makes it hang."""
import sys, time
from pathlib import Path
STATE = Path(__file__).with_name("nvpmodel_status")
MODES = {MODES}
if STATE.with_name("HANG").exists():
    time.sleep(60)
mode = int(STATE.read_text()) if STATE.exists() else {DEFAULT}
args = sys.argv[1:]
if args[:1] == ["-q"]:
    print("NVPM WARN: fan mode is not set!")
    print(f"NV Power Mode: {{MODES[mode][0]}}")
    print(mode)
elif args[:1] == ["-p"]:
    print(f"NVPM VERB: PM_CONFIG: DEFAULT={{MODES[{DEFAULT}][0]}}({DEFAULT})")
    for i, (name, _) in sorted(MODES.items()):
        print(f"NVPM VERB: POWER_MODEL: ID={{i}} NAME={{name}}")
elif args[:1] == ["-m"] and int(args[1]) in MODES:
    new = int(args[1])
    if MODES[new][1] != MODES[mode][1]:
        print(f"NVPM WARN: Reboot required for changing to this power mode: {{new}}")
        print("NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:")
        if not sys.stdin.readline():
            print("NVPM ERROR: failed to read input")
            sys.exit(1)
    STATE.write_text(str(new))
else:
    print("NVPM ERROR: bad arguments " + " ".join(args))
    sys.exit(1)
'''


def write_fake_nvpmodel(root: Path, key: str = "agx_orin_64gb") -> Path:
    """``<root>/usr/bin/nvpmodel``; the mode lives in ``nvpmodel_status`` beside it."""
    device = get_device(key)
    modes = {p.mode_id: (p.name, p.tpc_pg_mask) for p in device.presets}
    script = write(root / "usr/bin/nvpmodel",
                   FAKE_NVPMODEL.replace("{MODES}", repr(modes))
                   .replace("{DEFAULT}", str(device.default_mode_id))
                   .replace("{{", "{").replace("}}", "}"))
    script.chmod(0o755)
    return script


# A Jetson AGX Thor dev kit on JetPack 7.1 as jetson-facts.md describes it (written by hand, not
# by the virtual Jetson): (i2c device, hwmon index, channel, label, mV, mA) of the INA3221 rails.
THOR_RAIL_READINGS = (("2-0040", 1, 1, "VDD_GPU", 19800, 99), ("2-0040", 1, 2, "VDD_CPU_SOC_MSS", 19800, 297),
                      ("2-0040", 1, 3, "VIN_SYS_5V0", 5000, 1127))
THOR_VIN_UW, THOR_VIN_MV, THOR_VIN_MA = 19_780_000, 19_536, 1012
THOR_ZONES = (("cpu-thermal", 37343), ("gpu-thermal", 38875), ("soc012-thermal", 37468),
              ("soc345-thermal", 37406), ("tj-thermal", 38875))
THOR_GPU_HZ = 314_000_000
THOR_EMC_HZ = 2_750_000_000
THOR_RELEASE = "# R38 (release), REVISION: 4.0, GCID: 41245768, BOARD: generic, EABI: aarch64, DATE: x\n"


def write_thor_tree(root: Path, release: str = THOR_RELEASE) -> Path:
    device, board = get_device("agx_thor_t5000"), BOARDS["agx_thor_t5000"]
    write(root / "proc/device-tree/model", board.model + "\x00")
    write(root / "proc/device-tree/compatible", "\x00".join(compatible_strings(board)) + "\x00")
    if release:
        write(root / "etc/nv_tegra_release", release)
    write(root / "proc/stat", "cpu  10 0 10 80 0 0 0 0\n" + "".join(
        f"cpu{c} 100 0 100 800 0 0 0 0 0 0\n" for c in range(device.cpu_cores)))
    for core in range(device.cpu_cores):
        cpu = root / "sys/devices/system/cpu" / f"cpu{core}"
        if core:
            write(cpu / "online", "1\n")
        write(cpu / "cpufreq/scaling_cur_freq", "972000\n")
        write(cpu / "cpufreq/scaling_min_freq", "972000\n")
        write(cpu / "cpufreq/scaling_max_freq", "2601600\n")  # no scaling_available_frequencies
    pci = root / "sys/devices/platform/bus@0/a808e00000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0"
    write(pci / "power/control", "auto\n")
    write(pci / "power/runtime_status", "active\n")
    for name, table in (("gpu-gpc-0", "314000000 1000000000 1575000000"), ("gpu-nvd-0", "115200000 1075200000")):
        devfreq = pci / "devfreq" / name
        write(devfreq / "available_frequencies", table + "\n")
        write(devfreq / "cur_freq", f"{table.split()[0]}\n")
        write(devfreq / "min_freq", f"{table.split()[0]}\n")
        write(devfreq / "max_freq", f"{table.split()[-1]}\n")
        write(devfreq / "governor", "nvhost_podgov\n")
        (devfreq / "device").symlink_to(pci)
        (root / "sys/class/devfreq").mkdir(parents=True, exist_ok=True)
        (root / "sys/class/devfreq" / name).symlink_to(devfreq)
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    (root / "sys/bus/pci/devices/0000:01:00.0").symlink_to(pci)
    bwmgr = root / "sys/devices/platform/bwmgr/devfreq/bwmgr"
    write(bwmgr / "available_frequencies", "2133000000 2750000000 4266000000\n")
    write(bwmgr / "cur_freq", f"{THOR_EMC_HZ}\n")
    write(bwmgr / "min_freq", "2133000000\n")
    write(bwmgr / "max_freq", "4266000000\n")
    (root / "sys/class/devfreq/bwmgr").symlink_to(bwmgr)
    write(root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "0\n")
    write(root / "sys/kernel/actmon_avg_activity/mc_all", f"{10 * (THOR_EMC_HZ // 1000)}\n")
    for i2c_dev, index, ch, label, mv, ma in THOR_RAIL_READINGS:
        hwmon = root / "sys/bus/i2c/drivers/ina3221" / i2c_dev / "hwmon" / f"hwmon{index}"
        write(hwmon / f"in{ch}_label", label + "\n")
        write(hwmon / f"in{ch}_input", f"{mv}\n")
        write(hwmon / f"curr{ch}_input", f"{ma}\n")
    ina238 = root / "sys/bus/i2c/drivers/ina238/2-0044/hwmon/hwmon3"
    write(ina238 / "in1_input", f"{THOR_VIN_MV}\n")
    write(ina238 / "curr1_input", f"{THOR_VIN_MA}\n")
    write(ina238 / "power1_input", f"{THOR_VIN_UW}\n")
    for n, (zone_type, millideg) in enumerate(THOR_ZONES):
        zone = root / "sys/devices/virtual/thermal" / f"thermal_zone{n}"
        write(zone / "type", zone_type + "\n")
        write(zone / "temp", f"{millideg}\n")
    return root
