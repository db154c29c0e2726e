"""Latency and energy per inference of a model at every candidate operating point, predicted
from the model's per-layer roofline and calibrated online from what the device shows.

Structure (what the roofline knows):

- Latency per inference ``T(p) = th_c * C(p) + th_m * M(p) + th_g * G(p) + th_o * O(p) + th_0``.
  At the clocks of point ``p``, ``C`` sums the roofline compute time of the layers that are
  compute-bound there (it scales with GPU clock x active TPCs), ``M`` the memory time of the
  memory-bound ones at the EMC clock (DRAM traffic), ``G`` that same time scaled with the GPU
  clock instead (traffic that small activations find in L2) and ``O`` the per-layer launch
  overheads (CPU clock). The ``th`` say how far from the roofline this device and runtime really are; a
  real GPU reaches a fraction of peak, so the prior centres them above 1.
- Energy per inference at input rate ``r``:
  ``E = idle(p) / r + T * busy(p) + switching(p)`` with ``idle = s0 + s_e.emc + s_c.cpu + s_n.cores``
  (static power and clock trees at the caps, paid all the time), ``busy`` the extra power while
  the model runs (GPU, EMC, CPU activity) and ``switching`` the per-inference FLOP and byte
  energy. Dynamic power goes as ``f * V(f)^2``; ``V(f)`` is a generic linear DVFS curve
  normalised to the table top, since the real one is not visible. Race-to-idle versus slow-and-
  steady falls out of the ``idle / r`` term: at a low input rate a slow point wastes less idle.

Both are linear in their coefficients, so calibration is Bayesian linear regression (a Kalman
filter on constant coefficients with a forgetting step): a prior from the roofline, updated
with every measured window, with a covariance that gives each prediction an uncertainty. A few
observed points pin the coefficients on a device never seen before.

Only device-visible quantities enter: measured latency and energy, clocks, the model's roofline
analysis and the device catalogue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.roofline.model import RooflineAnalysis

from .points import EffectiveClocks, clocks_ceilings, effective_clocks

# DVFS: voltage at the lowest clock as a fraction of the voltage at the top of the table.
# Jetson rails run roughly 0.6-1.0 V across their DVFS range.
_V_MIN_FRACTION = 0.6
# Relative error the linear models keep even at a perfectly measured point (structure error);
# stops one point from making the fit overconfident elsewhere.
_LATENCY_MODEL_REL_ERR = 0.03
ENERGY_MODEL_REL_ERR = 0.03
# Prior std of the latency model's constant, as a fraction of the roofline time at the default
# preset (governor-eval over 4 seeds x 16 scenarios: 0.3 turns overconfident and misses
# targets, 1.0 and above leaves the DRAM share unidentified; 0.5-0.6 does best).
_CONSTANT_PRIOR_STD_REL = 0.5


@dataclass(frozen=True)
class PointFeatures:
    """What the roofline says about one model at one point, in the units the fits use."""

    compute_s: float  # roofline compute time of the compute-bound layers
    memory_s: float  # roofline memory time of the memory-bound layers
    onchip_s: float  # the same traffic as if served on chip (L2: scales with GPU clock x SMs)
    overhead_s: float  # per-layer launch overheads at this CPU clock
    gpu_dyn: float  # f/f_max * (V/V_max)^2 of the GPU, x active TPC fraction
    emc_dyn: float  # f/f_max of the EMC
    cpu_dyn: float  # cores/cores_max * f/f_max * (V/V_max)^2 of the CPU
    cpu_cores: float  # cores/cores_max: static power of online cores, at any clock
    flop_energy: float  # total GFLOPs * GPU (V/V_max)^2: switching energy shape
    byte_energy: float  # total GB * EMC (V/V_max)^2

    def latency_vector(self) -> np.ndarray:
        return np.array([self.compute_s, self.memory_s, self.onchip_s, self.overhead_s, 1.0])

    def energy_vector(self, latency_s: float, input_rate_hz: float) -> np.ndarray:
        """Per inference: the power terms over one input period."""
        return power_terms(self, 1.0 / input_rate_hz, latency_s, self.flop_energy, self.byte_energy)


def power_terms(shape, idle: float, busy: float, flops: float, bytes_: float) -> np.ndarray:
    """The energy model's terms, in its coefficients' order (``energy_prior``). ``shape``: a
    point's dynamic shapes (``PointFeatures`` or ``PointDynamics``); ``idle``: the time (or, for
    power, 1) the idle terms run; ``busy``: the time (or busy fraction) the busy terms run;
    ``flops``, ``bytes_``: the switching terms."""
    return np.array([idle, idle * shape.emc_dyn, idle * shape.cpu_dyn,
                     busy * shape.gpu_dyn, busy * shape.emc_dyn, busy * shape.cpu_dyn,
                     flops, bytes_, idle * shape.cpu_cores, idle * shape.gpu_dyn])


def busy_power_w(coefficients: np.ndarray, shape) -> float:
    """The power of the busy terms at ``shape`` (what a unit of busy time costs)."""
    return float(coefficients[3:6] @ np.array([shape.gpu_dyn, shape.emc_dyn, shape.cpu_dyn]))


def _v_fraction(freq_hz: float, top_hz: float) -> float:
    return _V_MIN_FRACTION + (1.0 - _V_MIN_FRACTION) * min(1.0, freq_hz / top_hz)


@dataclass(frozen=True)
class PointDynamics:
    """The power shapes of a point, whatever runs on it (see ``PointFeatures``)."""

    gpu_dyn: float
    emc_dyn: float
    cpu_dyn: float
    cpu_cores: float
    gpu_v2: float  # (V/V_max)^2 of the GPU: per-FLOP switching energy
    emc_v2: float  # the same of the EMC: per-byte


def point_dynamics(device: DeviceSpec, clocks: EffectiveClocks) -> PointDynamics:
    d = device
    vg = _v_fraction(clocks.gpu_freq_hz, d.gpu_max_freq_hz)
    vc = _v_fraction(clocks.cpu_freq_hz, d.cpu_max_freq_hz)
    tpcs = d.active_tpcs(clocks.tpc_pg_mask) / d.gpu_tpc_count
    return PointDynamics(
        gpu_dyn=tpcs * clocks.gpu_freq_hz / d.gpu_max_freq_hz * vg ** 2,
        emc_dyn=clocks.emc_freq_hz / d.emc_max_freq_hz,
        cpu_dyn=clocks.cpu_online_cores / d.cpu_cores * clocks.cpu_freq_hz / d.cpu_max_freq_hz * vc ** 2,
        cpu_cores=clocks.cpu_online_cores / d.cpu_cores,
        gpu_v2=vg ** 2, emc_v2=_v_fraction(clocks.emc_freq_hz, d.emc_max_freq_hz) ** 2)


class RooflineWorkload:
    """A model's roofline analysis (at any one operating point) moved to every other point:
    each layer's compute time scales with the engine's peak, its memory time with the bandwidth
    of the level that bounds it, its overhead with the CPU clock. Features are cached per
    distinct set of clocks."""

    def __init__(self, analysis: RooflineAnalysis, device: DeviceSpec) -> None:
        self.analysis = analysis
        self.device = device
        self.name = analysis.model
        self._cache: dict[EffectiveClocks, PointFeatures] = {}
        self._by_point: dict[OperatingPoint, PointFeatures] = {}

    def features(self, point: OperatingPoint) -> PointFeatures:
        # Per point first: snapping caps to the clock tables costs more than the lookup.
        if point not in self._by_point:
            clocks = effective_clocks(self.device, point)
            if clocks not in self._cache:
                self._cache[clocks] = self._compute(clocks)
            self._by_point[point] = self._cache[clocks]
        return self._by_point[point]

    def _compute(self, clocks: EffectiveClocks) -> PointFeatures:
        d, a = self.device, self.analysis
        ref = a.ceilings
        here = clocks_ceilings(d, ref.precision, clocks, engine=ref.engine)
        # flops / peak and bytes / bandwidth: a layer's time here is its time in the analysis
        # times the ratio of ceilings (spec or measured ones alike).
        compute_scale = ref.peak_flops / here.peak_flops
        overhead_scale = d.cpu_max_freq_hz / clocks.cpu_freq_hz
        compute_s = memory_s = onchip_s = overhead_s = 0.0
        for layer in a.layers:
            c = layer.compute_time_s * compute_scale
            ref_bw = ref.bandwidth_bps(layer.memory_level) or ref.dram_bandwidth_bps
            here_bw = here.bandwidth_bps(layer.memory_level) or here.dram_bandwidth_bps
            m = layer.memory_time_s * ref_bw / here_bw
            # Which roof bounds a layer is taken at the analysis' point, not re-decided per point:
            # a layer crossing its ridge would make the features jump between points.
            if layer.compute_time_s >= layer.memory_time_s:
                compute_s += c
            else:
                memory_s += m
                onchip_s += layer.memory_time_s * compute_scale
            overhead_s += layer.overhead_time_s * overhead_scale
        dyn = point_dynamics(d, clocks)
        return PointFeatures(
            compute_s=compute_s, memory_s=memory_s, onchip_s=onchip_s, overhead_s=overhead_s,
            gpu_dyn=dyn.gpu_dyn, emc_dyn=dyn.emc_dyn, cpu_dyn=dyn.cpu_dyn, cpu_cores=dyn.cpu_cores,
            flop_energy=a.total_flops / 1e9 * dyn.gpu_v2, byte_energy=a.total_bytes / 1e9 * dyn.emc_v2)


def energy_prior(power_w: float) -> BayesLinear:
    """The energy coefficients' prior (W; the ``energy_vector`` terms), scaled by the first
    power measured: a typical Jetson budget as fractions of it, broad (std ~ mean) so that a few
    windows dominate. Switching terms start at zero (per GFLOP / per GB)."""
    power_w = max(power_w, 1e-3)
    return BayesLinear(np.array([0.3, 0.1, 0.05, 0.4, 0.15, 0.05, 0.0, 0.0, 0.03, 0.05]) * power_w,
                       np.array([0.3, 0.2, 0.1, 0.6, 0.3, 0.1, 0.02, 0.02, 0.05, 0.1]) * power_w)


def sustained_rate(input_rate_hz: float | None, latency_s: float) -> float:
    """Inferences per second: the input rate, capped by what one point sustains (``None``:
    back to back)."""
    top = 1.0 / max(latency_s, 1e-6)
    return top if input_rate_hz is None else max(min(input_rate_hz, top), 1e-6)


class BayesLinear:
    """Bayesian linear regression y = x . w + noise (a Kalman filter on constant w), with a
    Gaussian prior and a forgetting step so coefficients can move when the workload changes."""

    def __init__(self, prior_mean: Iterable[float], prior_std: Iterable[float],
                 nonnegative: tuple[int, ...] = ()) -> None:
        self.prior_mean = np.asarray(list(prior_mean), dtype=float)
        self.prior_cov = np.diag(np.asarray(list(prior_std), dtype=float) ** 2)
        self.mean = self.prior_mean.copy()
        self.cov = self.prior_cov.copy()
        self.nonnegative = tuple(nonnegative)  # coefficients that physics says cannot be < 0

    def update(self, x: np.ndarray, y: float, noise_var: float) -> None:
        s = float(x @ self.cov @ x) + noise_var
        gain = self.cov @ x / s
        self.mean = self.mean + gain * (y - float(x @ self.mean))
        self.cov = self.cov - np.outer(gain, x @ self.cov)
        self.cov = 0.5 * (self.cov + self.cov.T)  # keep it symmetric against round-off
        self._project()

    def _project(self) -> None:
        """Move the mean to the nearest point (in the posterior's own metric) whose constrained
        coefficients are >= 0: condition it on the negative ones being 0, adding any that turn
        negative on the way. The covariance is kept: the constraint says where the mean may
        lie, not that the data became more certain."""
        active: list[int] = []
        for _ in range(len(self.nonnegative)):
            new = [i for i in self.nonnegative if self.mean[i] < 0 and i not in active]
            if not new:
                return
            active += new
            block = self.cov[np.ix_(active, active)]
            self.mean = self.mean - self.cov[:, active] @ np.linalg.solve(block, self.mean[active])
            self.mean[active] = 0.0

    def forget(self, fraction: float) -> None:
        """Move the covariance ``fraction`` of the way back towards the prior: old evidence
        counts less, the mean stays where the data put it."""
        self.cov = (1.0 - fraction) * self.cov + fraction * self.prior_cov

    def predict(self, x: np.ndarray) -> tuple[float, float]:
        """Mean and variance of x . w."""
        return float(x @ self.mean), float(max(x @ self.cov @ x, 0.0))


@dataclass(frozen=True)
class Observation:
    """One measured window at one point (samples inside settle times already left out)."""

    point: OperatingPoint
    latency_s: float  # mean latency per inference in the window
    energy_j: float  # energy per inference (average power / inference rate); NaN if unmeasured
    input_rate_hz: float | None = None  # inferences per second; None: back to back
    samples: int = 1
    latency_var_s2: float = 0.0  # variance of single latencies in the window


@dataclass(frozen=True)
class Prediction:
    point: OperatingPoint
    latency_s: float  # mean latency per inference
    latency_std_s: float  # uncertainty of that mean (model, not jitter)
    power_w: float  # average power at the input rate
    energy_per_inference_j: float  # idle time between inferences included
    energy_std_j: float
    input_rate_hz: float  # the rate the energy is for (capped by the point's throughput)


class Predictor:
    """Predicts latency and energy of one workload at any point; calibrated online.

    ``update`` folds one measured window in, ``fit`` restarts from the prior and folds a set
    in, ``predict`` answers for any point at ``input_rate_hz`` (the last rate seen, unless
    given; back to back before any). The energy prior is scaled by the first energy measured, so
    it fits any device size.
    """

    def __init__(self, workload: RooflineWorkload) -> None:
        self.workload = workload
        self.input_rate_hz: float | None = None
        self.observations = 0
        self._reset()

    def _reset(self) -> None:
        # The default preset's roofline time sets the scale of the constant term's prior.
        f = self.workload.features(OperatingPoint("default"))
        roof_s = f.compute_s + f.memory_s + f.overhead_s
        # Real kernels reach a fraction of the roofline: coefficients ~ 1 / efficiency. Where
        # memory-bound traffic is really served (DRAM at the EMC clock, or L2 at the GPU clock)
        # only measurements at other clock ratios tell: the prior leans to DRAM, as the roofline does.
        # Time outside every roofline term (syncs, copies) is a small share of it: a loose
        # constant would soak up, with either sign, what the points measured so far cannot
        # attribute (DRAM time while every measured point shares one EMC clock).
        # Compute, DRAM, on-chip and overhead time only add latency: their coefficients are kept
        # >= 0, so a point with every clock >= another's is never predicted slower (features fall
        # with their clocks); the constant may take either sign.
        self.latency = BayesLinear(prior_mean=(2.0, 1.5, 0.5, 1.0, 0.0),
                                   prior_std=(2.0, 1.5, 1.0, 1.0, max(_CONSTANT_PRIOR_STD_REL * roof_s, 1e-4)),
                                   nonnegative=(0, 1, 2, 3))
        self.energy: BayesLinear | None = None
        self.observations = 0

    @property
    def has_energy(self) -> bool:
        """Some energy was measured (the governor waits for it)."""
        return self.energy is not None

    def _init_energy(self, obs: Observation, f: PointFeatures) -> None:
        self.energy = energy_prior(obs.energy_j * sustained_rate(obs.input_rate_hz, obs.latency_s))

    def update(self, point: OperatingPoint, latency_s: float, energy_j: float = math.nan, *,
               input_rate_hz: float | None = None, samples: int = 1,
               latency_var_s2: float = 0.0) -> None:
        """Fold in a measured window: mean latency and energy per inference at ``point``."""
        self.observe(Observation(point, latency_s, energy_j, input_rate_hz, samples, latency_var_s2))

    def observe(self, obs: Observation) -> None:
        if obs.samples <= 0 or not (math.isfinite(obs.latency_s) and obs.latency_s > 0):
            return
        if obs.input_rate_hz is not None:
            self.input_rate_hz = obs.input_rate_hz
        f = self.workload.features(obs.point)
        noise = obs.latency_var_s2 / obs.samples + (_LATENCY_MODEL_REL_ERR * obs.latency_s) ** 2
        self.latency.update(f.latency_vector(), obs.latency_s, noise)
        self.observations += 1
        if math.isfinite(obs.energy_j) and obs.energy_j > 0:
            if self.energy is None:
                self._init_energy(obs, f)
            x = f.energy_vector(obs.latency_s, sustained_rate(obs.input_rate_hz, obs.latency_s))
            self.energy.update(x, obs.energy_j, (ENERGY_MODEL_REL_ERR * obs.energy_j) ** 2)

    def fit(self, observations: Iterable[Observation]) -> "Predictor":
        """Restart from the prior and fold ``observations`` in (few-sample characterisation)."""
        self._reset()
        for obs in observations:
            self.observe(obs)
        return self

    def forget(self, fraction: float) -> None:
        """The workload changed: old evidence counts less (see ``BayesLinear.forget``)."""
        self.latency.forget(fraction)
        if self.energy is not None:
            self.energy.forget(fraction)

    def set_workload(self, workload: RooflineWorkload, forget_fraction: float = 0.3) -> None:
        """A new model: coefficients describe the device and runtime, so they carry over as a
        prior, with part of their certainty taken away."""
        self.workload = workload
        self.forget(forget_fraction)

    def gpu_time_s(self, point: OperatingPoint) -> float:
        """The part of the predicted latency spent in GPU kernels (compute, DRAM and on-chip
        time; not launch overheads or the constant): what other streams' kernels share."""
        f = self.workload.features(point)
        return max(float(f.latency_vector()[:3] @ self.latency.mean[:3]), 0.0)

    def predict(self, point: OperatingPoint, input_rate_hz: float | None = None) -> Prediction:
        f = self.workload.features(point)
        t_mean, t_var = self.latency.predict(f.latency_vector())
        t_mean = max(t_mean, 1e-6)
        t_std = math.sqrt(t_var + (_LATENCY_MODEL_REL_ERR * t_mean) ** 2)
        rate = sustained_rate(input_rate_hz if input_rate_hz is not None else self.input_rate_hz, t_mean)
        if self.energy is None:
            return Prediction(point, t_mean, t_std, math.nan, math.nan, math.inf, rate)
        e_mean, e_var = self.energy.predict(f.energy_vector(t_mean, rate))
        e_mean = max(e_mean, 1e-9)
        # Energy uncertainty: the energy model's, plus the latency's through the busy terms.
        busy_w = busy_power_w(self.energy.mean, f)
        e_std = math.sqrt(e_var + (ENERGY_MODEL_REL_ERR * e_mean) ** 2 + (busy_w * t_std) ** 2)
        return Prediction(point, t_mean, t_std, e_mean * rate, e_mean, e_std, rate)
