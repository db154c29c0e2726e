"""Sweep results in SQLite (stdlib ``sqlite3``), one row per (model, precision, point),
committed as each point finishes so an interrupted sweep resumes where it stopped.

One database holds one device: every model swept into it must be on the same device and the
same kind of platform (real or SIMULATION), so results compare and fit across models.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from edge_roofline.platforms.base import OperatingPoint

DB_NAME = "sweep.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
    model TEXT NOT NULL, precision TEXT NOT NULL, settings TEXT NOT NULL,
    flops REAL NOT NULL, dram_bytes REAL NOT NULL, started_at REAL NOT NULL,
    sweep_wall_s REAL NOT NULL DEFAULT 0, original_point TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (model, precision));
CREATE TABLE IF NOT EXISTS points (
    model TEXT NOT NULL, precision TEXT NOT NULL, name TEXT NOT NULL, point TEXT NOT NULL,
    status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', runs INTEGER NOT NULL DEFAULT 0,
    latency_ms_mean REAL, latency_ms_std REAL, latency_ms_p50 REAL, latency_ms_p95 REAL,
    latency_ms_p99 REAL, energy_per_inference_j REAL, power_w REAL, idle_power_w REAL,
    window_s REAL, power_samples INTEGER, layer_times_s TEXT NOT NULL DEFAULT '',
    wall_s REAL NOT NULL DEFAULT 0, measured_at REAL NOT NULL,
    PRIMARY KEY (model, precision, name));
CREATE TABLE IF NOT EXISTS predictions (
    model TEXT NOT NULL, precision TEXT NOT NULL, name TEXT NOT NULL, point TEXT NOT NULL,
    latency_ms REAL, latency_std_ms REAL, power_w REAL, energy_per_inference_j REAL,
    energy_std_j REAL, fitted_on TEXT NOT NULL,
    PRIMARY KEY (model, precision, name));
"""


class StoreError(ValueError):
    """The results directory does not fit this sweep; the message says what to do instead."""


def point_to_dict(point: OperatingPoint) -> dict[str, Any]:
    return {k: v for k, v in asdict(point).items() if v is not None}


def point_from_dict(data: dict[str, Any]) -> OperatingPoint:
    return OperatingPoint(**data)


@dataclass(frozen=True)
class PointResult:
    """What one operating point measured (``status`` "ok") or why it failed ("failed")."""

    model: str
    precision: str
    point: OperatingPoint
    status: str
    error: str = ""
    runs: int = 0
    latency_ms_mean: float | None = None
    latency_ms_std: float | None = None
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    latency_ms_p99: float | None = None
    energy_per_inference_j: float | None = None
    power_w: float | None = None  # average over the measured (back-to-back) window
    idle_power_w: float | None = None
    window_s: float | None = None
    power_samples: int | None = None
    layer_times_s: dict[str, float] | None = None
    wall_s: float = 0.0
    measured_at: float = 0.0

    @property
    def name(self) -> str:
        return self.point.name

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class PredictedPoint:
    model: str
    precision: str
    point: OperatingPoint
    latency_ms: float
    latency_std_ms: float
    power_w: float
    energy_per_inference_j: float
    energy_std_j: float
    fitted_on: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.point.name


@dataclass(frozen=True)
class SweepRecord:
    model: str
    precision: str
    settings: dict[str, Any]
    flops: float
    dram_bytes: float
    started_at: float
    sweep_wall_s: float
    original_point: str


_RESULT_COLUMNS = [f.name for f in fields(PointResult) if f.name not in ("model", "precision", "point")]


class Store:
    """``Store(out_dir)`` opens (creating) ``out_dir/sweep.sqlite``."""

    def __init__(self, out_dir: str | Path) -> None:
        self.dir = Path(out_dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):  # errno's text alone: "[Errno 17] File exists: ..."
            raise StoreError(f"--out {self.dir} is a file (or under one), not a results directory; give a "
                             f"directory (edge-roofline sweep MODEL --out DIR)") from None
        self.path = self.dir / DB_NAME
        self.db = sqlite3.connect(self.path)
        try:
            self.db.executescript(_SCHEMA)
            self.db.commit()
        except sqlite3.DatabaseError as exc:  # a truncated or foreign file: left as it is, for the user to look at
            self.db.close()
            raise StoreError(f"{self.path} is not a readable sweep database ({exc}); move it aside and run "
                             f"the sweep again, or use another --out") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- device and sweep records -----------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta"))

    def bind_device(self, device: str, platform: str, simulated: bool) -> None:
        """Record the device on first use; refuse another one later."""
        wanted = {"device": device, "platform": platform, "simulated": "1" if simulated else "0"}
        have = self.meta()
        clash = {k: (have[k], v) for k, v in wanted.items() if k in have and have[k] != v}
        if clash:
            what = ", ".join(f"{k} {old!r} (asked {new!r})" for k, (old, new) in clash.items())
            raise StoreError(f"{self.path} holds a sweep with {what}; use another --out for this one")
        with self.db:
            self.db.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", wanted.items())

    @property
    def simulated(self) -> bool:
        return self.meta().get("simulated") == "1"

    def begin_sweep(self, record: SweepRecord, resume: bool) -> None:
        """Start or resume the sweep of one model. Without ``resume`` a model that already has
        results is refused (so nothing is silently mixed); with it, the settings must match."""
        old = self.sweep(record.model, record.precision)
        if old is not None:
            done = len(self.results(record.model, record.precision))
            if not resume and done:
                raise StoreError(f"{self.path} already has {done} points of {record.model} "
                                 f"({record.precision}); pass --resume to continue that sweep or "
                                 f"use another --out")
            if resume and old.settings != record.settings:
                changed = sorted(k for k in set(old.settings) | set(record.settings)
                                 if old.settings.get(k) != record.settings.get(k))
                raise StoreError(f"{self.path}: the sweep of {record.model} was run with other "
                                 f"settings ({', '.join(changed)}: {[old.settings.get(k) for k in changed]}); "
                                 f"resume with the same settings or use another --out")
            if resume:
                return
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO sweeps VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (record.model, record.precision, json.dumps(record.settings, sort_keys=True),
                             record.flops, record.dram_bytes, record.started_at, 0.0,
                             record.original_point))

    def add_sweep_time(self, model: str, precision: str, wall_s: float) -> None:
        with self.db:
            self.db.execute("UPDATE sweeps SET sweep_wall_s = sweep_wall_s + ? WHERE model = ? AND "
                            "precision = ?", (wall_s, model, precision))

    def sweep(self, model: str, precision: str) -> SweepRecord | None:
        rows = [r for r in self.sweeps() if (r.model, r.precision) == (model, precision)]
        return rows[0] if rows else None

    def sweeps(self) -> list[SweepRecord]:
        rows = self.db.execute("SELECT model, precision, settings, flops, dram_bytes, started_at, "
                               "sweep_wall_s, original_point FROM sweeps ORDER BY started_at")
        return [SweepRecord(m, p, json.loads(s), f, b, t, w, o) for m, p, s, f, b, t, w, o in rows]

    # ---- measured points ---------------------------------------------------------------
    def put(self, result: PointResult) -> None:
        values = [getattr(result, c) for c in _RESULT_COLUMNS]
        values[_RESULT_COLUMNS.index("layer_times_s")] = json.dumps(result.layer_times_s or {})
        cols = ["model", "precision", "name", "point"] + _RESULT_COLUMNS
        with self.db:  # one transaction per point: a kill loses at most the point in progress
            self.db.execute(f"INSERT OR REPLACE INTO points ({', '.join(cols)}) VALUES "
                            f"({', '.join('?' * len(cols))})",
                            [result.model, result.precision, result.name,
                             json.dumps(point_to_dict(result.point))] + values)

    def results(self, model: str, precision: str, status: str | None = None) -> list[PointResult]:
        query = (f"SELECT model, precision, point, {', '.join(_RESULT_COLUMNS)} FROM points "
                 "WHERE model = ? AND precision = ?")
        params: list[Any] = [model, precision]
        if status is not None:
            query += " AND status = ?"
            params.append(status)
        out = []
        for row in self.db.execute(query + " ORDER BY rowid", params):
            data = dict(zip(_RESULT_COLUMNS, row[3:]))
            data["layer_times_s"] = json.loads(data["layer_times_s"]) or None
            out.append(PointResult(row[0], row[1], point_from_dict(json.loads(row[2])), **data))
        return out

    def finished_names(self, model: str, precision: str) -> set[str]:
        """Points that need no new measurement (failed ones are tried again on resume)."""
        return {r.name for r in self.results(model, precision, status="ok")}

    # ---- predictions -------------------------------------------------------------------
    def put_predictions(self, predictions: list[PredictedPoint]) -> None:
        with self.db:
            for p in predictions:
                self.db.execute("INSERT OR REPLACE INTO predictions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                (p.model, p.precision, p.name, json.dumps(point_to_dict(p.point)),
                                 p.latency_ms, p.latency_std_ms, p.power_w, p.energy_per_inference_j,
                                 p.energy_std_j, json.dumps(list(p.fitted_on))))

    def predictions(self, model: str, precision: str) -> list[PredictedPoint]:
        rows = self.db.execute("SELECT point, latency_ms, latency_std_ms, power_w, energy_per_inference_j, "
                               "energy_std_j, fitted_on FROM predictions WHERE model = ? AND "
                               "precision = ? ORDER BY rowid", (model, precision))
        return [PredictedPoint(model, precision, point_from_dict(json.loads(pt)), lat, lat_std, pw, e,
                               e_std, tuple(json.loads(fit))) for pt, lat, lat_std, pw, e, e_std, fit in rows]


def now_wall_s() -> float:
    """Wall-clock time stamp for records (when a point was measured, not how long it took)."""
    return time.time()
