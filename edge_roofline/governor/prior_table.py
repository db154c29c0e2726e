"""The operating-point table a sweep writes (``edge-roofline sweep`` / ``report``;
docs/characterise.md) read back as the governor's prior. It lives here, below characterise/,
because the governor reads it and characterise/ writes it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.paths import yaml_problem

from .config import ConfigError
from .predictor import Observation, Predictor, sustained_rate

TABLE_FORMAT = "edge_roofline.operating_points/1"


@dataclass(frozen=True)
class OperatingPointTable:
    device: str
    model: str
    precision: str
    simulated: bool
    points: list[dict[str, Any]]

    def observations(self):
        """Measured rows as ``Observation`` (back to back), ready for
        ``Predictor(RooflineWorkload(analysis, device)).fit(table.observations())``."""
        out = []
        for p in self.points:
            if p["source"] != "measured":
                continue
            point = OperatingPoint(**{k: p[k] for k in OperatingPoint.__dataclass_fields__ if k in p})
            out.append(Observation(point, p["latency_ms"] / 1e3, p["energy_per_inference_j"],
                                   None, max(int(p.get("runs", 1)), 1),
                                   (p.get("latency_std_ms", 0.0) / 1e3) ** 2))
        return out


def load_table(path: str | Path) -> OperatingPointTable:
    """Read a table written by ``characterise.results.write_table`` (JSON; YAML accepted too)."""
    path = Path(path)
    text = path.read_text()
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:  # not a ValueError: fit_prior_table would pass its traceback on
            raise ValueError(f"{path} is {yaml_problem(exc)}") from None
    else:
        data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != TABLE_FORMAT:
        raise ValueError(f"{path}: not an operating-point table (expected format {TABLE_FORMAT!r}); "
                         "write one with `edge-roofline sweep` or `edge-roofline report`")
    return OperatingPointTable(data["device"], data["model"], data["precision"], bool(data["simulated"]),
                               list(data["points"]))


def fit_prior_table(path: str, predictor, energy, device: DeviceSpec | None, on_simulation: bool) -> None:
    """Fit a stream's predictor and the power model (``joint.JointEnergy``) to a sweep's table:
    the points it measured start known instead of from the roofline prior. The table must be of
    this model on this device, and a simulated one cannot stand in for a real board."""
    if device is None or not isinstance(predictor, Predictor):
        raise ConfigError("prior_table needs a catalogued device and the model's roofline analysis")
    try:
        table = load_table(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"prior_table {path}: {exc}") from None
    model = predictor.workload.name
    if table.device != device.key or table.model != model:
        raise ConfigError(f"prior_table {path} is for {table.model} on {table.device}, not {model} on "
                          f"{device.key}; sweep this model on this device (edge-roofline sweep)")
    if table.simulated and not on_simulation:
        raise ConfigError(f"prior_table {path} was measured on a virtual Jetson (SIMULATION); on a real "
                          f"board sweep the board itself")
    observations = table.observations()
    if not observations:
        raise ConfigError(f"prior_table {path} has no measured points")
    predictor.fit(observations)
    for obs in observations:  # the sweep measured back to back (input rate None)
        energy.update(obs.point, obs.energy_j * sustained_rate(obs.input_rate_hz, obs.latency_s),
                      [(predictor, obs.latency_s, obs.input_rate_hz)])
