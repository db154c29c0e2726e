"""Choosing the next point among the predictions: what the late budget and a move's transients allow.

A mixin of ``Governor`` (core.py): the loop decides when to move, this decides where to, within what
exploring may cost (verdicts.py) and what a move must save to pay for itself (moves.py).
"""

from __future__ import annotations

import math

from .moves import domains_changed, unpaid
from .policy import Choice, ChoiceSettings, Evidence, JointPrediction, Steps, choose
from .states import PROVISIONAL, State
from .rules import no_faster_than
from .streams import Stream
from .verdicts import MoveBet, held_power_w, near_bets, unaffordable_miss


class Selection:
    def _choose_affordable(self, preds: list[JointPrediction], current: JointPrediction, violations: dict[str, float],
                           state: State, met: frozenset[str], active: list[Stream], now_s: float,
                           horizon_s: float) -> tuple[Choice, float]:
        """The choice and its transient (s); no exploration the late budget cannot pay for, nor a probe saving nothing
        (verdicts.py). One whose saving over ``horizon_s`` would not pay its transients (moves.py) is passed over.
        None while a stream's queue drains a backlog: a point tried then may drain it slower (agx_saturated@seed25:
        a step down from a point near saturation in a burst's backlog, 21 -> 31 late); the best known point may. A
        workload change's late ones (its grace) are the change's: exploring the new work starts at once."""
        explore = self._explore_left > 0 and not (now_s >= self._counted_from_s and any(s.late_now for s in active))
        unpaid_here, cap_w, held_w = set(), math.inf, held_power_w(preds, current, met)
        # Measured to miss, a verdict expired: where the model still predicts no faster, its "meets" was shown wrong.
        doubted = no_faster_than(self.findings.missed_once, {q.point.name: q for q in preds}) - {self.current.name}
        self.learned.probe_candidates = self._probes(met)  # what a choice may probe: _choose, _bet_on, _apply read it
        while True:
            choice = self._choose(preds, current, violations, state, explore, met, frozenset(unpaid_here))
            bet = self._bet_on(choice, doubted, held_w, second_best=bool(unpaid_here))
            if (choice.exploring or bet.doubted) and unaffordable_miss(
                    bet, active, now_s, self.config.late_window_s, self._counted_from_s, self.config.expected_dwell_s):
                # A probe saving nothing over the point held (it buys only information) refused is passed over, not
                # every exploration with it: a probe that saves (one step below the point held) is still weighed.
                info_only = bet.held_w is not None and choice.prediction.power_w >= bet.held_w
                explore = explore and (info_only or not choice.exploring)
                preds = [q for q in preds if not (bet.doubted and q.point.name in doubted)
                         and not (info_only and q is choice.prediction)] or [current]
            elif choice.exploring and not violations and (current.meets() or self.current.name in met) and (
                    choice.prediction.power_w >= cap_w or unpaid(current, choice.prediction, True, horizon_s,
                                                                 bet.settle_s)):
                unpaid_here.add(choice.prediction.point.name)
                cap_w = min(cap_w, choice.prediction.power_w)
            elif choice.exploring or violations or not (bets := near_bets(preds, met, self.findings,
                                                                         self.config.hysteresis)):
                return choice, bet.settle_s
            else:  # exploring done: a point inside the margin is a bet where it saves more than a move's worth
                held = met | bets
                self.learned.probe_candidates = self._probes(held)
                near = self._choose(preds, current, violations, state, False, held, frozenset(unpaid_here))
                return near, self.learned.settle.of(domains_changed(self.device, self.current, near.prediction.point))

    def _bet_on(self, choice: Choice, doubted: set[str], held_w: float | None, second_best: bool) -> MoveBet:
        """The move to ``choice``'s point as a bet (verdicts.MoveBet): its transients, and what is known of the point.
        ``held_w`` (verdicts.held_power_w) is a probe's only (policy.py: a step down an axis not isolated)."""
        point = choice.prediction.point
        domains = domains_changed(self.device, self.current, point)
        # Its transients run at each clock's lower value (moves.py): a third point, maybe one a miss rules out.
        via = self.dominance.transient(self.current.name, point.name)
        probe = point.name in self.learned.probe_candidates and not choice.descent
        return MoveBet(choice.prediction, settle_s=self.learned.settle.of(domains),
                       clocks_settle_s=self.learned.settle.of(domains - {"preset"}), domains=domains,
                       safe=frozenset(self.dominance.dominated_by({point.name}) & self.findings.meets_targets),
                       doubted=point.name in doubted,
                       through_miss=via is not None and via in self.dominance.dominated_by(self.findings.missed_once),
                       second_best=second_best, held_w=held_w if probe else None)

    def _probes(self, met: frozenset[str]) -> frozenset[str]:
        """The axis probes (policy.py) one step below a point of ``met``: on an axis no two points tried isolate."""
        return frozenset(self.dominance.probes(met, self.findings.tried | self.learned.probed))

    def _choose(self, preds: list[JointPrediction], current: JointPrediction, violations: dict[str, float],
                state: State, explore: bool, met: frozenset[str], passed: frozenset[str] = frozenset()) -> Choice:
        # passed: not explored now, yet not measured (they isolate no probe's axis)
        found, fastest = self.findings, self.dominance.fastest
        evidence = Evidence(measured=frozenset(found.tried | passed), met=met, near=frozenset(found.near),
                            under_near=frozenset(self.dominance.dominated_by(found.near)),
                            probes=self.learned.probe_candidates)
        return choose(preds, current, violations=violations,
                      settings=ChoiceSettings(self.config.hysteresis, explore, self.config.explore_min_rel_std),
                      evidence=evidence, steps=Steps(self.dominance.step_below, self.dominance.step_above),
                      provisional=state in PROVISIONAL,
                      fastest=next((q for q in preds if fastest and q.point == fastest), None))
