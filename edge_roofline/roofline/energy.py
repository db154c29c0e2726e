"""Energy roofline (Choi, Vuduc et al.): E = eps_flop * W + eps_byte * Q + pi_0 * T.

``eps_flop`` (J/FLOP), ``eps_byte`` (J/byte) and the constant power ``pi_0`` (W) are fitted
per operating point by non-negative least squares from measured (W, Q, T, E) samples: a
negative energy per FLOP or a negative idle power has no physical meaning, so the fit keeps
the best non-negative solution instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Mapping

from edge_roofline.roofline.ceilings import Ceilings


class EnergyFitError(ValueError):
    """Too few or degenerate samples to fit the energy roofline."""


@dataclass(frozen=True)
class EnergySample:
    flops: float
    bytes: float
    time_s: float
    energy_j: float


@dataclass(frozen=True)
class EnergyRooflineFit:
    eps_flop_j: float   # J per FLOP
    eps_byte_j: float   # J per byte of DRAM traffic
    pi0_w: float        # constant power, W
    rmse_j: float
    r2: float
    n_samples: int

    @property
    def energy_balance(self) -> float:
        """FLOP/byte where FLOP energy equals byte energy (eps_byte / eps_flop)."""
        return self.eps_byte_j / self.eps_flop_j if self.eps_flop_j > 0 else float("inf")


def predict(fit: EnergyRooflineFit, flops: float, bytes: float, time_s: float) -> float:
    """Energy in J of a run doing ``flops`` and moving ``bytes`` in ``time_s``."""
    return fit.eps_flop_j * flops + fit.eps_byte_j * bytes + fit.pi0_w * time_s


def _nnls(columns, target):
    """Least squares with non-negative coefficients for a handful of columns: the optimum
    is the unconstrained solution on some subset of columns with the rest at zero, so try
    every subset and keep the best feasible one (8 subsets for 3 terms)."""
    import numpy as np

    a = np.column_stack(columns)
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    a = a / scale  # equalise column norms: FLOPs (1e9) and seconds (1e-3) differ by 1e12
    best, best_res = np.zeros(a.shape[1]), float(np.sum(target ** 2))
    for k in range(1, a.shape[1] + 1):
        for subset in combinations(range(a.shape[1]), k):
            coef, *_ = np.linalg.lstsq(a[:, subset], target, rcond=None)
            if np.any(coef < 0):
                continue
            res = float(np.sum((a[:, subset] @ coef - target) ** 2))
            if res < best_res:
                best = np.zeros(a.shape[1])
                best[list(subset)] = coef
                best_res = res
    return best / scale


def fit_energy_roofline(samples: Iterable[EnergySample]) -> EnergyRooflineFit:
    """Fit eps_flop, eps_byte and pi_0 (all >= 0) to samples of one operating point."""
    import numpy as np

    samples = list(samples)
    if len(samples) < 3:
        raise EnergyFitError(f"the energy roofline has 3 terms; got {len(samples)} samples")
    w = np.array([s.flops for s in samples], float)
    q = np.array([s.bytes for s in samples], float)
    t = np.array([s.time_s for s in samples], float)
    e = np.array([s.energy_j for s in samples], float)
    if not np.all(np.isfinite(np.concatenate([w, q, t, e]))) or np.any(t < 0) or np.any(e < 0):
        raise EnergyFitError("samples must be finite with non-negative time and energy")
    coef = _nnls([w, q, t], e)
    residual = e - np.column_stack([w, q, t]) @ coef
    ss_res = float(np.sum(residual ** 2))
    ss_tot = float(np.sum((e - e.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
    return EnergyRooflineFit(eps_flop_j=float(coef[0]), eps_byte_j=float(coef[1]),
                             pi0_w=float(coef[2]), rmse_j=float(np.sqrt(ss_res / len(samples))),
                             r2=r2, n_samples=len(samples))


def fit_energy_rooflines(samples_by_point: Mapping[str, Iterable[EnergySample]]
                         ) -> dict[str, EnergyRooflineFit]:
    """One fit per operating point name."""
    return {point: fit_energy_roofline(s) for point, s in samples_by_point.items()}


def attainable_flops_per_joule(fit: EnergyRooflineFit, ceilings: Ceilings,
                               arithmetic_intensity: float) -> float:
    """Energy roofline: FLOP/J of a kernel at intensity I running at the time roofline,
    W / E = 1 / (eps_flop + eps_byte / I + pi_0 * max(1 / F, 1 / (I * B)))."""
    i = arithmetic_intensity
    if i <= 0:
        return 0.0
    time_per_flop_s = max(1.0 / ceilings.peak_flops, 1.0 / (i * ceilings.dram_bandwidth_bps))
    return 1.0 / (fit.eps_flop_j + fit.eps_byte_j / i + fit.pi0_w * time_per_flop_s)
