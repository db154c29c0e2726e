"""Which operating points a sweep measures: the platform's reboot-free presets, its caps grid
inside the current preset, or a list from a file; and, for few-sample mode, which K of them to
profile so that they span the clock space."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path

from edge_roofline.platforms.base import OperatingPoint, Platform
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.paths import read_text_file, yaml_problem

POINT_SETS = ("presets", "grid", "all")
_POINT_KEYS = {f.name for f in fields(OperatingPoint)}


class PlanError(ValueError):
    """A point list or budget cannot be used; the message names the problem and the fix."""


def sweep_points(platform: Platform, spec: str) -> list[OperatingPoint]:
    """The points of ``spec``:

    - ``grid``: the governor's candidate caps grid inside the current preset (96 points on AGX
      Orin MAXN: 4 CPU x 4 GPU x 3 EMC caps x 2 core counts, from a quarter of each table top
      up), so the sweep's table is a prior for exactly the points the governor chooses from;
    - ``presets``: the nvpmodel presets reachable without a reboot;
    - ``all``: both;
    - anything else: a JSON or YAML file of points (``load_points_file``).
    On a device outside the catalogue (NVML) ``grid`` and ``all`` are the platform's points.
    """
    if spec not in POINT_SETS:
        return load_points_file(spec)
    from edge_roofline.governor.config import PointGridConfig
    from edge_roofline.governor.points import candidate_points

    reachable = platform.operating_points()
    points = {"presets": [p for p in reachable if not p.has_caps],
              "grid": [p for p in candidate_points(platform, PointGridConfig(include_presets=False))
                       if p.has_caps],
              "all": candidate_points(platform, PointGridConfig(include_presets=True))}[spec]
    if not points:
        raise PlanError(f"the platform offers no {spec} points; try --points all or a file")
    return points


def load_points_file(path: str | Path) -> list[OperatingPoint]:
    """A JSON or YAML list of points (or ``{"points": [...]}``), each a mapping of
    ``OperatingPoint`` fields: ``name`` plus any of ``nvpmodel_id``, ``cpu_online_cores``,
    ``cpu_max_freq_hz``, ``gpu_max_freq_hz``, ``emc_max_freq_hz``, ``power_limit_w``."""
    path = Path(path)
    if not path.is_file():
        raise PlanError(f"--points {path}: not presets, grid, all or an existing file")
    text = read_text_file(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PlanError(f"--points {path} is {yaml_problem(exc)}") from None
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise PlanError(f"--points {path} is not valid JSON ({exc})") from None
    if isinstance(data, dict) and "points" in data:
        data = data["points"]
    if not isinstance(data, list) or not data:
        raise PlanError(f"{path}: expected a non-empty list of points (mappings with a name)")
    points, names = [], set()
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not item.get("name"):
            raise PlanError(f"{path}: point #{i} must be a mapping with a name")
        unknown = sorted(set(item) - _POINT_KEYS)
        if unknown:
            raise PlanError(f"{path}: point {item['name']!r} has unknown key(s) {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(_POINT_KEYS))}")
        item = {key: value if key == "name" else _yaml_number(value) for key, value in item.items()}
        if bad := next((f"{key}: {value!r}" for key, value in item.items() if not _point_value(key, value)), None):
            raise PlanError(f"{path}: point {item['name']!r} has {bad}; a name is text, nvpmodel_id a whole number "
                            f">= 0, cpu_online_cores one >= 1, a clock (Hz) or power_limit_w a number > 0, null: "
                            f"the preset's own")
        if item["name"] in names:
            raise PlanError(f"{path}: point name {item['name']!r} appears twice; names key the results")
        names.add(item["name"])
        points.append(OperatingPoint(**item))
    return points


def _yaml_number(value):
    """YAML 1.1 reads 1.2e9 (no sign after the e) as text: a number as the user meant it."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def _point_value(key: str, value) -> bool:
    """Whether ``value`` can stand for OperatingPoint field ``key`` (else the point only fails
    when applied, and the sweep ends 'done' with nothing measured)."""
    if key == "name":
        return isinstance(value, str)
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    if key in ("nvpmodel_id", "cpu_online_cores"):
        return isinstance(value, int) and value >= (key == "cpu_online_cores")
    return value > 0


def _coordinates(device: DeviceSpec, point: OperatingPoint) -> tuple[float, ...]:
    """A point in the unit box of clock space (fractions of the table tops)."""
    from edge_roofline.governor.points import effective_clocks

    c = effective_clocks(device, point)
    return (0.5 * c.cpu_online_cores / device.cpu_cores,  # cores move latency least: half weight
            c.cpu_freq_hz / device.cpu_max_freq_hz, c.gpu_freq_hz / device.gpu_max_freq_hz,
            c.emc_freq_hz / device.emc_max_freq_hz)


def choose_few(points: list[OperatingPoint], device: DeviceSpec, budget: int) -> list[OperatingPoint]:
    """``budget`` points spanning the clock space: the fastest and the slowest corner first,
    then greedy maximin (each next point is the one farthest from all chosen), which takes the
    remaining corners before filling the inside. Deterministic (ties go to list order)."""
    if budget < 2:
        raise PlanError(f"--budget {budget}: few-sample mode needs at least 2 points (10-15 is typical)")
    if budget >= len(points):
        return list(points)
    coords = [_coordinates(device, p) for p in points]
    chosen = [max(range(len(points)), key=lambda i: sum(coords[i])),
              min(range(len(points)), key=lambda i: sum(coords[i]))]

    def gap(i: int) -> float:
        return min(sum((a - b) ** 2 for a, b in zip(coords[i], coords[j])) for j in chosen)

    while len(chosen) < budget:
        rest = [i for i in range(len(points)) if i not in chosen]
        chosen.append(max(rest, key=gap))
    return [points[i] for i in sorted(chosen)]
