"""Governor configuration: one dataclass per concern, built from a dict (the node's parameters, a
scenario's ``governor`` mapping) with unknown keys refused by name (a typo must not silently
leave a default in force). Each field is a setting defined once (``setting(default, doc)``): the
governor node's parameters and their docs table come from these fields
(edge_roofline.governor.settings).

The mapping, as YAML (every key optional)::

    target_latency_ms: 50.0
    percentile: 95.0
    mode: active            # off | advise | active
    state_path: /var/lib/edge_roofline/governor_state.json
    prior_table: sweep_out/operating_points_resnet50_fp16.json   # start from a sweep's measurements
    points: {cpu_steps: 4, gpu_steps: 4, emc_steps: 3, core_options: [12, 6]}
    safety: {stale_telemetry_s: 1.0, thermal_limit_c: 95.0}
    # Several networks at once: each stream has its own target; one operating point serves all.
    # Without streams, one stream named "default" holds target_latency_ms at percentile.
    streams:
      - {name: detector, stats_topic: /det/inference/stats, target_latency_ms: 30, percentile: 95}
      - {name: segmenter, stats_topic: /seg/inference/stats, target_latency_ms: 100}
      # A language model: two streams on the generation node's one stats topic, one per phase.
      - {name: llm_ttft, stats_topic: /llm/inference/stats, phase: prefill, target_latency_ms: 300}
      - {name: llm_tpot, stats_topic: /llm/inference/stats, phase: decode, target_latency_ms: 60}
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from edge_roofline.governor.settings import section_class, setting
from edge_roofline.paths import yaml_problem

MODES = ("off", "advise", "active")
PHASES = ("", "prefill", "decode")  # StreamConfig.phase
LATENCIES = ("", "execution", "end_to_end")  # StreamConfig.latency
# A prefill stream's sample is a whole request's first token (one every few seconds for long
# answers): two of them calibrate its mean, where a frame stream waits for min_calibration_samples
# (otherwise every move clears them first and its prior's uncertainty holds the device at MAXN);
# one, where requests come further apart than a dwell (Stream.calibration_window).
PREFILL_CALIBRATION_SAMPLES = 2
DEFAULT_STREAM = "default"  # the one stream of a configuration without ``streams``


class ConfigError(ValueError):
    """A governor configuration value or key is wrong; the message names it."""


def dataclass_from_dict(cls, data: Mapping[str, Any] | None, section: str):
    """``cls(**data)`` with unknown keys refused and numbers coerced to the defaults' types."""
    data = dict(data or {})
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown key(s) in {section} config: {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(known))}")
    out = {}
    for name, value in data.items():
        default = known[name].default
        out[name] = _typed(value, default, f"{section}.{name}", known[name].metadata.get("parse"))
    return cls(**out)


def _typed(value, default, key: str, parse):
    """``value`` as the type of ``default``, or ConfigError naming ``key``: a bool is no number
    and no text (YAML reads a bare off as false), a number no text, a fraction no integer."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if isinstance(default, (int, float)):
        try:
            number = type(default)(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None or (isinstance(default, int) and isinstance(value, float) and number != value):
            kind = "an integer" if isinstance(default, int) else "a number"
            raise ConfigError(f"{key}: expected {kind}, got {value!r}")
        return number
    if isinstance(default, tuple):
        if isinstance(value, str) and parse is not None:
            return parse(value)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        return tuple(value)
    if isinstance(default, str) and not isinstance(value, str):
        hint = " (quote it: YAML reads a bare off, on, yes or no as true or false)" if isinstance(value, bool) else ""
        raise ConfigError(f"{key}: expected text, got {value!r}{hint}")
    return value


def parse_core_options(text: str) -> tuple[int, ...]:
    """Core counts from comma-separated text ("12,6"); "" gives none (the preset's and half)."""
    try:
        return tuple(int(c) for c in text.split(",") if c.strip())
    except ValueError:
        raise ConfigError(f"points.core_options must be comma-separated core counts (e.g. '12,6'), "
                          f"got {text!r}") from None


@dataclass(frozen=True)
class PointGridConfig:
    """How many custom points to lay inside the current preset's envelope.

    The default is the Pagoda-like study grid: 4 CPU x 4 GPU x 3 EMC caps x 2 core settings
    (the preset's online cores and half of them) = 96 points on AGX Orin in MAXN.
    """

    cpu_steps: int = setting(4, "CPU cap steps in the candidate grid")
    gpu_steps: int = setting(4, "GPU cap steps in the candidate grid")
    emc_steps: int = setting(3, "EMC cap steps in the candidate grid")
    core_options: tuple[int, ...] = setting(
        (), "online-core counts to try (node: comma-separated, e.g. 12,6; empty: the preset's and half of them)",
        node_default="", parse=parse_core_options, unparse=lambda cores: ",".join(map(str, cores)))
    include_presets: bool = setting(True, "reboot-free nvpmodel presets are candidates too")

    def __post_init__(self) -> None:
        for name in ("cpu_steps", "gpu_steps", "emc_steps"):
            if getattr(self, name) < 1:
                raise ConfigError(f"points.{name} must be >= 1, got {getattr(self, name)}")
        object.__setattr__(self, "core_options", tuple(int(c) for c in self.core_options))


@dataclass(frozen=True)
class SafetyConfig:
    stale_telemetry_s: float = setting(1.0, "no power sample for this long: fall back to the safe point")
    # Orin throttles near 99 C (tj): stay clear of it.
    thermal_limit_c: float = setting(95.0, "fall back when a zone comes within thermal_margin_c of this")
    thermal_margin_c: float = setting(5.0, "fall back when any zone is within this of thermal_limit_c")
    max_plausible_latency_s: float = setting(30.0, "a latency above this is implausible (NaN and negative always are)")
    max_plausible_power_w: float = setting(500.0, "a power above this is implausible (NaN and negative always are)")
    min_switch_interval_s: float = setting(0.25, "rate limit: at most one change per interval")
    max_switches_per_min: int = setting(60, "rate limit: at most this many changes per minute")
    recovery_hold_s: float = setting(2.0, "checks must pass this long before leaving fallback")
    apply_failures_before_disable: int = setting(2, "a point that failed to apply this often is never tried again")
    implausible_samples: int = setting(3, "this many implausible readings (NaN, negative, absurd) within "
                                          "implausible_window_s: fallback; fewer are a glitch, counted and logged")
    implausible_window_s: float = setting(1.0, "see implausible_samples")

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not math.isfinite(v) or v < 0:
                raise ConfigError(f"safety.{f.name} must be a finite number >= 0, got {v}")
        if self.implausible_samples < 1:
            raise ConfigError(f"safety.implausible_samples must be >= 1, got {self.implausible_samples}")


@dataclass(frozen=True)
class StreamConfig:
    """One network the governor holds a target for. ``stats_topic`` and ``model`` are read by the
    node only: where the stream's InferenceStats come from ("" = ``<name>/inference/stats``) and
    an ONNX path or zoo:NAME whose roofline to use whatever the stream reports ("" = follow
    ``InferenceStats.model_id``). ``phase`` makes the stream one phase of a language model."""

    name: str = ""
    target_latency_ms: float = math.nan
    percentile: float = 95.0
    stats_topic: str = ""
    model: str = ""
    # "" = every message; prefill | decode: only that phase's InferenceStats, judging time to
    # first token (end_to_end_ms) for prefill and time per output token (latency_ms) for decode,
    # so one generation node feeds two streams from one topic.
    phase: str = ""
    # Which InferenceStats latency the target is on: execution (latency_ms, the backend's time) or
    # end_to_end (end_to_end_ms, the frame's arrival to its outputs: the queue's wait included, what
    # the queueing model predicts and what the robot sees); "" = end_to_end for prefill (time to
    # first token), execution otherwise.
    latency: str = ""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]+", self.name or ""):
            raise ConfigError(f"stream name must be letters, digits and _ (it names topics and services), "
                              f"got {self.name!r}")
        if not (self.target_latency_ms > 0 and math.isfinite(self.target_latency_ms)):
            raise ConfigError(f"stream {self.name}: target_latency_ms must be a number > 0, "
                              f"got {self.target_latency_ms}")
        if not 0 < self.percentile <= 100:
            raise ConfigError(f"stream {self.name}: percentile must be in (0, 100], got {self.percentile}")
        if self.phase not in PHASES:
            raise ConfigError(f"stream {self.name}: phase must be prefill or decode (or empty: every message), "
                              f"got {self.phase!r}")
        if self.latency not in LATENCIES:
            raise ConfigError(f"stream {self.name}: latency must be execution or end_to_end (or empty: end_to_end "
                              f"for prefill, execution otherwise), got {self.latency!r}")

    @property
    def target_latency_s(self) -> float:
        return self.target_latency_ms / 1e3

    @property
    def judges_end_to_end(self) -> bool:
        return self.latency == "end_to_end" or (not self.latency and self.phase == "prefill")

    @property
    def engine(self) -> str:
        """The phase streams of one language model share it (their stats topic; phase streams
        without one are taken as one model's): they take turns, never contend, and are silent
        between requests together. "" for a stream that is no phase."""
        return f"phases of {self.stats_topic or 'one model'}" if self.phase else ""

    def calibration_samples(self, min_calibration_samples: int) -> int:
        """Samples at one point before its mean calibrates (PREFILL_CALIBRATION_SAMPLES)."""
        return min(min_calibration_samples, PREFILL_CALIBRATION_SAMPLES) if self.phase == "prefill" \
            else min_calibration_samples

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StreamConfig":
        if not isinstance(data, Mapping):
            raise ConfigError(f"each stream must be a mapping like {{name: detector, target_latency_ms: 30}}, "
                              f"got {data!r}")
        # An unknown key first (a misspelt target is also a missing one): dataclass_from_dict names it.
        if set(data) <= {f.name for f in fields(cls)} and not {"name", "target_latency_ms"} <= set(data):
            raise ConfigError(f"stream {dict(data)!r}: name and target_latency_ms are required")
        return dataclass_from_dict(cls, data, f"stream {data.get('name')!r}")


def parse_streams(text: str) -> tuple[StreamConfig, ...]:
    """Streams from YAML flow text (``[{name: det, target_latency_ms: 30}]``) or from a YAML file
    holding that list or ``{streams: [...]}``; "" gives none."""
    import yaml

    text = (text or "").strip()
    if not text:
        return ()
    where = "streams"
    path = Path(text).expanduser()
    if not text.startswith(("[", "{")) and (path.exists() or path.suffix in (".yaml", ".yml") or "/" in text):
        where = f"streams file {text}"
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
            raise ConfigError(f"cannot read {where}: {why}; give a YAML file holding a list like "
                              f"[{{name: detector, target_latency_ms: 30}}], or that list as text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where} is {yaml_problem(exc)}; write e.g. "
                          f"[{{name: detector, target_latency_ms: 30}}]") from None
    if isinstance(data, Mapping) and "streams" in data:
        if beside := sorted(map(str, set(data) - {"streams"})):
            raise ConfigError(f"{where}: unknown key(s) beside streams: {', '.join(beside)}; "
                              f"give the list, or {{streams: [...]}} alone")
        data = data["streams"]
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{where} must be a non-empty list like [{{name: detector, target_latency_ms: 30}}] "
                          f"(a file path, or YAML text), got {text[:60]!r}")
    return streams_from_list(data)


def format_streams(streams: tuple[StreamConfig, ...]) -> str:
    """Streams as the YAML flow text parse_streams reads ("" for none), keys at their defaults left out."""
    import yaml

    items = [{f.name: getattr(s, f.name) for f in fields(StreamConfig)
              if f.name in ("name", "target_latency_ms") or getattr(s, f.name) != f.default} for s in streams]
    return yaml.safe_dump(items, default_flow_style=True, width=10**6).strip() if items else ""


def streams_from_list(data) -> tuple[StreamConfig, ...]:
    streams = tuple(s if isinstance(s, StreamConfig) else StreamConfig.from_dict(s) for s in data)
    names = [s.name for s in streams]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"stream name(s) used twice: {', '.join(repeated)}; give each stream its own name")
    return streams


@dataclass(frozen=True)
class GovernorConfig:
    """What the governor aims for and how cautiously it moves."""

    target_latency_ms: float = setting(50.0, "latency target at the percentile (of the one stream, without streams)")
    percentile: float = setting(95.0, "latency percentile the target applies to, over the sliding window")
    margin: float = setting(0.05, "predicted percentile must stay under target x (1 - margin)")
    # A node that moves clocks only when asked to: it starts in advise.
    mode: str = setting("active", "off, advise (recommend only) or active (apply); the node starts in advise",
                        node_default="advise")
    window_s: float = setting(5.0, "sliding window of the measured latency percentile")
    min_window_samples: int = setting(12, "fewer samples in the window: no percentile feedback yet")
    min_calibration_samples: int = setting(6, "fewer samples: no calibration of a stream's mean yet")
    settle_s: float = setting(0.3, "the longest a learned settle time of a clock move may grow to (moves.py)")
    # Prior settle times of a move per domain (learned online, moves.py): a latency sample that
    # started before the move settled is the move's, not the point's.
    settle_cpu_s: float = setting(0.02, "prior settle time of a CPU clock move (learned online)")
    settle_cores_s: float = setting(0.02, "prior settle time of a change of online CPU cores (learned online)")
    settle_gpu_s: float = setting(0.04, "prior settle time of a GPU clock move (learned online)")
    settle_emc_s: float = setting(0.08, "prior settle time of an EMC clock move (learned online)")
    settle_preset_s: float = setting(0.3, "added to a move's settle time when the nvpmodel preset changes")
    verdict_ttl_s: float = setting(20.0, "a point ruled out by misses is tried again after this (doubling per "
                                         "repeat)")
    late_window_s: float = setting(30.0, "of a stream's inferences over any this long at most 1 % may be late: a move "
                                         "that may miss is paid from that budget")
    change_grace_s: float = setting(2.0, "late inferences this soon after a workload change (model, rate, target, "
                                         "streams) are the change's: the late budget does not count them")
    grace_excuses_exploring: bool = setting(True, "late inferences at a point explored in a change's grace are the "
                                                  "change's too (the frame criteria); false: counted (criteria that "
                                                  "count every inference, the language models')")
    expected_dwell_s: float = setting(10.0, "a move for energy must save its transients' cost over this long; a "
                                            "stream that joins a running mix is expected to stay at least this "
                                            "long (its late budget)")
    dwell_s: float = setting(3.0, "minimum time at a point before an energy-driven move")
    hysteresis: float = setting(0.03, "move only for a predicted energy saving above this fraction")
    calibration_interval_s: float = setting(1.0, "how often measured windows feed the predictor")
    explore_budget: int = setting(8, "exploration moves per workload (model, target or rate change)")
    explore_min_rel_std: float = setting(0.08, "explore a point only while its energy is this uncertain")
    workload_change_rel: float = setting(0.3, "measured vs predicted mean latency off by this fraction: a new "
                                              "workload (confidence reset)")
    rate_change_rel: float = setting(0.3, "input rate change (fraction) that restarts exploration")
    state_path: str = setting(
        "", "JSON crash record of what was found at start: the point and, on a Jetson, every cap file and the mode "
            "(empty: the node keeps it under sysfs_root, or ~/.ros; GovernorConfig keeps none); one governor per "
            "board whatever its state_path (lock: /run/lock, or sysfs_root/run/lock)")
    prior_table: str = setting(
        "", "operating-point table of this model on this device from `edge-roofline sweep`: the predictor starts "
            "fitted to its measured points (empty: the roofline prior); refused, with the reason, for another "
            "model or device, or a SIMULATION table on a real board")
    stream_timeout_s: float = setting(1.0, "a stream silent this long, and for 10 of its own periods, leaves the "
                                           "constraint set until it publishes again")
    streams: tuple[StreamConfig, ...] = setting(
        (), "several workloads, each with its own target: a list of {name, target_latency_ms, percentile, "
            "stats_topic, model, phase, latency} (phase: prefill judges TTFT, decode TPOT, of one language model; "
            "latency: execution or end_to_end, the queue's wait included; "
            "node: YAML text or a YAML file's path, e.g. "
            "[{name: det, stats_topic: /det/inference/stats, target_latency_ms: 30}]); empty: one stream "
            "default on inference/stats with target_latency_ms, percentile and model; docs/governor_node.md",
        node_default="", parse=parse_streams, unparse=format_streams)
    points: PointGridConfig = field(default_factory=PointGridConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not (self.target_latency_ms > 0 and math.isfinite(self.target_latency_ms)):
            raise ConfigError(f"target_latency_ms must be > 0, got {self.target_latency_ms}")
        if not 0 < self.percentile <= 100:
            raise ConfigError(f"percentile must be in (0, 100], got {self.percentile}")
        if not 0 <= self.margin < 1:
            raise ConfigError(f"margin must be in [0, 1), got {self.margin}")
        if not self.stream_timeout_s > 0:  # not NaN either: every stream would be silent for good
            raise ConfigError(f"stream_timeout_s must be > 0 s, got {self.stream_timeout_s}")
        for f in fields(self):  # a count, a time or a fraction: NaN or negative turns a rule off in silence
            value = getattr(self, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                    math.isfinite(value) and value >= 0):
                raise ConfigError(f"{f.name} must be a finite number >= 0, got {value}")
        if self.min_window_samples < 1 or not self.window_s > 0:
            raise ConfigError(f"min_window_samples must be >= 1 and window_s > 0 s (no percentile otherwise), got "
                              f"{self.min_window_samples} and {self.window_s}")
        object.__setattr__(self, "streams", streams_from_list(self.streams))
        if self.prior_table and len(self.stream_configs) > 1:
            raise ConfigError("prior_table describes one model: use it with one stream (no streams list)")

    @property
    def target_latency_s(self) -> float:
        return self.target_latency_ms / 1e3

    @property
    def stream_configs(self) -> tuple[StreamConfig, ...]:
        return self.streams or (StreamConfig(DEFAULT_STREAM, self.target_latency_ms, self.percentile),)

    def stream_name(self, stream: str | None) -> str:
        """``stream``, checked; ``None`` or "": the only stream (refused when there are several)."""
        names = [s.name for s in self.stream_configs]
        if not stream:
            if len(names) > 1:
                raise ConfigError(f"name the stream: one of {', '.join(names)}")
            return names[0]
        if stream not in names:
            raise ConfigError(f"no stream {stream!r}; streams: {', '.join(names)}")
        return stream

    def analyses_by_stream(self, analyses: Any) -> Mapping[str, Any]:
        """``analyses``: one model analysis for every stream, or one per stream name (each name checked)."""
        names = [s.name for s in self.stream_configs]
        by_stream = analyses if isinstance(analyses, Mapping) else dict.fromkeys(names, analyses)
        unknown = sorted(set(by_stream) - set(names))
        if unknown:
            raise ConfigError(f"model analysis for unknown stream(s) {', '.join(unknown)}; streams: {', '.join(names)}")
        return by_stream

    def with_target(self, latency_ms: float, percentile: float, stream: str | None = None) -> "GovernorConfig":
        name = self.stream_name(stream)
        if not self.streams:
            return replace(self, target_latency_ms=float(latency_ms), percentile=float(percentile))
        return replace(self, streams=tuple(replace(s, target_latency_ms=float(latency_ms), percentile=float(percentile))
                                           if s.name == name else s for s in self.streams))

    def stream(self, name: str) -> StreamConfig:
        return next(s for s in self.stream_configs if s.name == self.stream_name(name))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "GovernorConfig":
        data = dict(data or {})
        sections = {f.name: dataclass_from_dict(section, data.pop(f.name, None), f.name)
                    for f in fields(cls) if (section := section_class(f)) is not None}
        streams = data.pop("streams", None) or ()
        if not isinstance(streams, (list, tuple)):
            raise ConfigError(f"streams must be a list like [{{name: detector, target_latency_ms: 30}}], "
                              f"got {streams!r}")
        return replace(dataclass_from_dict(cls, data, "governor"), **sections, streams=streams_from_list(streams))
