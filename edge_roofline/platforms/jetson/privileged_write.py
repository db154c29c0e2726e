"""``edge-roofline-write PATH VALUE``: the only command the governor may run as root.

It writes one decimal value to one clock-cap or core-online file and nothing else: the path
must match the allow-list after symlinks are resolved, and the value must be digits.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ALLOWED_PATHS = (
    re.compile(r"^/sys/devices/system/cpu/cpu\d+/online$"),
    re.compile(r"^/sys/devices/system/cpu/cpu(freq/policy)?\d+(/cpufreq)?/scaling_(min|max)_freq$"),
    re.compile(r"^/sys/devices/(platform/)?(bus@0/)?[0-9a-f]+\.(gpu|ga10b|gv11b|gp10b)/devfreq/[^/]+/(min|max)_freq$"),
    # Thor: the PCI GPU's gpu-gpc-0 and the EMC's bwmgr (their parent directories: UNVERIFIED)
    re.compile(r"^/sys/devices/[\w@:.,/-]+/devfreq/(gpu-gpc-0|bwmgr)/(min|max)_freq$"),
    re.compile(r"^/sys/kernel/debug/bpmp/debug/clk/emc/(min|max)_rate$"),
    re.compile(r"^/sys/kernel/nvpmodel_emc_cap/emc_iso_cap$"),
)
_VALUE_RE = re.compile(r"^\d{1,12}$")


def allowed(path: str, value: str) -> bool:
    real = str(Path(path).resolve())
    return bool(_VALUE_RE.match(value)) and any(p.match(real) for p in ALLOWED_PATHS)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: edge-roofline-write PATH VALUE", file=sys.stderr)
        return 2
    path, value = args
    if not allowed(path, value):
        print(f"refused: {path} {value!r} is not an allowed cap write", file=sys.stderr)
        return 1
    try:
        Path(path).write_text(value)
    except OSError as exc:
        print(f"write failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
