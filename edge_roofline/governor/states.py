"""The governor's states and the named transitions between them (``Governor.step``, core.py).

=========== ================================================================================
state       meaning
=========== ================================================================================
disabled    mode off: nothing is read or applied
waiting     no model, no publishing stream, or no energy measured yet: holding
fallback    a safety check failed: the safe point is applied and held
settling    a move has not settled yet (its transient): holding, no verdict, no calibration
measuring   at a stopgap point (the point found at start, an escape from a miss, the safe
            point after a fallback, the point held when a stream's model or target changed):
            left as soon as it is measured
exploring   at a point tried to learn it (its transient, then its first window): left as soon
            as it is measured
settled     at the point chosen as the best: held for dwell_s, then the choice is made again
advising    mode advise: the choice is reported, not applied
=========== ================================================================================

Transitions, checked in this order at each step (each has its own test):

============== ==================================== =============================================
transition     from -> to                           when
============== ==================================== =============================================
off            any -> disabled                      mode off
fall_back      any -> fallback                      a safety check fails (the only move allowed
                                                    before the last one settled)
wait           any -> waiting                       no model's roofline, no stream, no energy yet
settle         settling, exploring -> same          the last move has not settled
escape         measuring, exploring, settled        the point misses a target with evidence: a
               -> settling                          faster point (the point is ruled out)
measure        measuring, exploring, settled        the point is being measured, or the dwell
               -> same (settling -> measuring or    is not over
               settled once the move settled)
explore        measuring, exploring, settled        an uncertain point may save energy, worth
               -> exploring                         the move's cost
improve        measuring, exploring, settled        a point predicted cheaper, worth the move's
               -> settling                          cost
hold           measuring, exploring, settled        no move pays: this point is the choice; or
               -> settled (same while a stream is   a stream's latest inference was late (its
               late)                                backlog drains before a move for energy)
advise         any -> advising                      mode advise and a move would be made
============== ==================================== =============================================
"""

from __future__ import annotations

from enum import Enum


class State(str, Enum):
    DISABLED = "disabled"
    WAITING = "waiting"
    FALLBACK = "fallback"
    SETTLING = "settling"
    MEASURING = "measuring"
    EXPLORING = "exploring"
    SETTLED = "settled"
    ADVISING = "advising"


class Transition(str, Enum):
    OFF = "off"
    FALL_BACK = "fall_back"
    WAIT = "wait"
    SETTLE = "settle"
    ESCAPE = "escape"
    MEASURE = "measure"
    EXPLORE = "explore"
    IMPROVE = "improve"
    HOLD = "hold"
    ADVISE = "advise"


# A point held as a stopgap is left as soon as it is measured (hysteresis does not protect it).
PROVISIONAL = frozenset({State.MEASURING, State.EXPLORING})


def unpaid_hold(state: State) -> State:
    """The state a point is held in when the move away does not pay its transients yet: settled,
    unless a stopgap, which stays one (the move pays as the horizon grows; hysteresis would hold
    the stopgap for good)."""
    return state if state in PROVISIONAL else State.SETTLED


def resumed(state: State) -> State:
    """The state a step past the waits goes on from: after a wait or an advice, the point held is a stopgap."""
    return State.MEASURING if state in (State.WAITING, State.ADVISING) else state
