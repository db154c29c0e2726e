"""Rules that hold by construction, whatever the fitted model says (issue 13).

- Monotonicity: a point whose clocks and online cores are all >= another's (same TPC mask) is
  never predicted slower. The predictor's latency coefficients are kept >= 0 (predictor.py),
  which makes its mean monotone already; ``Dominance.envelope`` guarantees it for any model by
  raising each point's predicted mean to the slowest among the points that dominate it. Each
  point keeps its own uncertainty (borrowing an unmeasured faster point's would hide a measured
  slow point behind it); a prediction is only ever made more pessimistic.
- The truly fastest point: the candidate that dominates every other one (MAXN's clocks with
  every core), where the governor goes and stays when nothing is predicted to meet the target.
- Power rises with the clocks: a point that dominates a measured one is never predicted to draw
  less power at the same work (``Dominance.power_envelope``).
- Measured misses win: a point measured to miss, and every point it dominates (slower in every
  clock), is out of the choice under the same workload and rate until the verdict expires
  (verdicts.py); the fastest point, and any other no candidate dominates, never is (there is
  nowhere faster to go). So is a point above one measured to miss that the model predicts no
  faster, for every stream (``Dominance.no_gain_over``): a fit with no term for the cores predicts
  a point with more cores as slow as one that missed, and as meeting (thor_chat_detector's c14
  twin of a GPU clock measured 1.2 x over).

These read only the catalogue's clock tables and the candidate list, never the device's physics.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec

from .points import effective_clocks
from .predictor import Prediction


class Dominance:
    """Which candidates dominate which (all clocks and cores >=, same TPC mask)."""

    def __init__(self, device: DeviceSpec | None, points: list[OperatingPoint]) -> None:
        self.points = list(points)
        n = len(self.points)
        keys = None
        if device is None:  # outside the catalogue: no clock tables, no order between points
            self.above = [[] for _ in range(n)]
        else:
            keys = []
            for p in self.points:
                c = effective_clocks(device, p)
                keys.append((c.tpc_pg_mask, (c.cpu_freq_hz, c.gpu_freq_hz, c.emc_freq_hz, c.cpu_online_cores)))
            self.above = [[j for j in range(n) if j != i and keys[j][0] == keys[i][0]
                           and all(a >= b for a, b in zip(keys[j][1], keys[i][1]))] for i in range(n)]
        self._index = {p.name: i for i, p in enumerate(self.points)}
        self._keys = keys
        # One step down and up from each point: per axis (a clock or the cores), the nearest
        # candidate below (above) it on that axis alone.
        self.one_below: list[set[int]] = [set() for _ in range(n)]
        self.one_above: list[set[int]] = [set() for _ in range(n)]
        for i in range(n):
            for j in self.above[i]:  # j dominates i: is it one step up from i on one axis?
                differ = [k for k in range(4) if keys[j][1][k] != keys[i][1][k]]
                if len(differ) != 1:
                    continue
                k = differ[0]
                between = any(keys[m][0] == keys[i][0] and keys[i][1][k] < keys[m][1][k] < keys[j][1][k]
                              and all(keys[m][1][a] == keys[i][1][a] for a in range(4) if a != k) for m in range(n))
                if not between:
                    self.one_above[i].add(j)
                    self.one_below[j].add(i)
        # The point that dominates every other one (the first of equals), if there is one.
        top = [i for i in range(n) if all(i in self.above[j] for j in range(n) if j != i)]
        self.fastest: OperatingPoint | None = self.points[top[0]] if top else None
        # Points with nowhere faster to go (no other candidate is faster in some clock and as
        # fast in all): never ruled out by a miss. Outside the catalogue no point is ordered:
        # the first candidate (the platform's own default) stands for them.
        self.unbeatable: set[str] = {p.name for p in self.points[:1]}
        if device is not None:
            self.unbeatable = {self.points[i].name for i in range(n)
                               if not any(keys[j] != keys[i] for j in self.above[i])}

    def transient(self, a: str, b: str) -> str | None:
        """The candidate a move between ``a`` and ``b`` runs at until it settles: each clock and the
        cores at the lower of both (moves.py); None: not a candidate, another TPC mask, or ``a`` or ``b``."""
        if self._keys is None or a not in self._index or b not in self._index:
            return None
        (mask, ka), (mask_b, kb) = self._keys[self._index[a]], self._keys[self._index[b]]
        low = (mask, tuple(min(x, y) for x, y in zip(ka, kb)))
        name = next((self.points[i].name for i, k in enumerate(self._keys) if k == low), None)
        return None if mask != mask_b or name in (a, b) else name

    def dominated_by(self, names: set[str]) -> set[str]:
        """``names`` and every candidate that one of them dominates."""
        idx = {self._index[n] for n in names if n in self._index}
        return set(names) | {self.points[i].name for i in range(len(self.points))
                             if any(j in idx for j in self.above[i])}

    def no_gain_over(self, names: set[str], preds: Mapping[str, Any]) -> set[str]:
        """The points above one of ``names`` (measured to miss) that ``preds`` predict no faster than
        it (``no_faster_than``): the model sees no gain in the clocks or cores they are higher in, so
        the miss is theirs. (Below, on another axis, its order may be its prior's: an unisolated axis.)"""
        out: set[str] = set()
        for n in names:
            if (i := self._index.get(n)) is not None:
                out |= {self.points[j].name for j in self.above[i]} & no_faster_than({n}, preds)
        return out

    def ruled_out(self, missed: set[str], preds: Mapping[str, Any]) -> set[str]:
        """Measured misses win: the points of ``missed``, every point slower in every clock, and every one above them
        ``preds`` predict no faster (no_gain_over); never an unbeatable one (nowhere faster to go)."""
        return self.dominated_by(missed | self.no_gain_over(missed, preds)) - self.unbeatable

    def step_below(self, name: str) -> set[str]:
        """The candidates one step below ``name`` on a single axis (slower there, the same
        elsewhere): slower in one clock only, so they draw less power."""
        i = self._index.get(name)
        return set() if i is None else {self.points[j].name for j in self.one_below[i]}

    def probes(self, met: set[str], measured: set[str]) -> set[str]:
        """The points one step below a ``met`` point on an axis along which no two ``measured``
        points differ alone: there the model's term for that axis has never been isolated from
        the others (a fit can put its time anywhere), and one such step, measured, isolates it."""
        if self._keys is None:
            return set()
        keys = [self._keys[self._index[n]] for n in measured if n in self._index]
        isolated = {differ[0] for a in keys for b in keys if a[0] == b[0]
                    and len(differ := [k for k in range(4) if a[1][k] != b[1][k]]) == 1}
        out = set()
        for name in met:
            i = self._index.get(name)
            for j in self.one_below[i] if i is not None else ():
                axis = next(k for k in range(4) if self._keys[j][1][k] != self._keys[i][1][k])
                if axis not in isolated:
                    out.add(self.points[j].name)
        return out

    def step_above(self, name: str) -> set[str]:
        """The candidates one step above ``name`` on a single axis: at least as fast anywhere."""
        i = self._index.get(name)
        return set() if i is None else {self.points[j].name for j in self.one_above[i]}

    def power_envelope(self, powers_w: list[float], measured: set[str]) -> list[float]:
        """``powers_w`` (one per candidate) raised where a point dominates a ``measured`` one:
        at the same work, a point with every clock and core >= another's draws at least its
        power (dynamic power goes as f V^2 and busy time as 1 / f, so busy energy rises with the
        clock; idle power does too). A fit from a few windows can extrapolate a faster point
        below a slower one it has measured. Only measured points raise others: an
        extrapolation at a corner never visited would carry its error to every point above."""
        out = list(powers_w)
        for i, above in enumerate(self.above):
            if self.points[i].name in measured and math.isfinite(powers_w[i]):
                for j in above:
                    if not powers_w[i] <= out[j]:
                        out[j] = powers_w[i]
        return out

    def envelope(self, predictions: list[Prediction]) -> list[Prediction]:
        """``predictions`` (one per candidate, in candidate order) made monotone."""
        mean = [p.latency_s for p in predictions]
        out = []
        for i, p in enumerate(predictions):
            m = max([mean[i]] + [mean[j] for j in self.above[i]])
            out.append(p if m == mean[i] else replace(p, latency_s=m))
        return out


def no_faster_than(names: set[str], preds: Mapping[str, Any]) -> set[str]:
    """The points of ``preds`` (name -> policy.JointPrediction) predicted, for every stream,
    no faster than one of ``names`` (measured to miss): by the model's order they miss too."""
    out = set()
    for m in (preds[n] for n in names if n in preds):
        out |= {name for name, q in preds.items() if len(q.streams) == len(m.streams) and all(
            (o := m.stream(s.name)) is not None and s.latency_s >= o.latency_s for s in q.streams)}
    return out

