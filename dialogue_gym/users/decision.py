"""Decision of the embedded users: when to agree, lean in, hold or refuse.

:class:`ThresholdDecision` is the rule of :class:`~dialogue_gym.users.cognitive.CognitiveUser`:
asked for the goal (or, for tasks whose outcome is the user's own state, on every on-topic
turn), a user agrees once its willingness clears the preset's threshold and — for hard users —
no blocking concern is left; soft users sometimes concede to a bare request, and such a
concession is marked as not justified (the bias RCSR exists to catch). A refusal once nothing
blocks would be blind, so the rule never gives one then. The rule reads the user's state
through a :class:`DecisionContext` and changes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.users.analysis import Perception
from dialogue_gym.users.base import DECISIONS
from dialogue_gym.users.concerns import RESOLVED, ConcernTracking
from dialogue_gym.users.presets import UserPreset

__all__ = ["DecisionContext", "DecisionRule", "ThresholdDecision", "refusal_reason"]

_RANK = {d: i for i, d in enumerate(DECISIONS)}


@dataclasses.dataclass(frozen=True)
class DecisionContext:
    """What the decision reads of the user's state at one exchange.

    Attributes:
        willingness: w ∈ [0, 1].
        drift: The part of w that came from the soft preset's drift (not from reasons).
        blocking: The unresolved concerns that block agreement.
        helped: The user has disclosed something and one of its needs is met.
        disclosed: The user has told the system anything about itself yet.
        asks: Asks heard this episode, this turn's included.
        exchange: This exchange's number (1-based).
    """

    willingness: float
    drift: float
    blocking: tuple[str, ...]
    helped: bool
    disclosed: bool
    asks: int
    exchange: int


class DecisionRule(Protocol):
    """Turns what the user perceived and its state into a stance."""

    def decide(
        self,
        p: Perception,
        reasoned: bool,
        hurt: bool,
        previous: str,
        context: DecisionContext,
        rng: np.random.Generator,
        concede: bool = True,
    ) -> tuple[str, bool]:
        """Returns (stance, justified): one of ``DECISIONS`` and whether a reason earned it."""
        ...


class ThresholdDecision:
    """The embedded users' decision rule (see the module docstring).

    Args:
        card: The task card (its ``decision_trigger``).
        preset: The user preset (thresholds, concession odds).
    """

    def __init__(self, card: TaskCard, preset: UserPreset) -> None:
        self.card = card
        self.preset = preset

    def decide(
        self,
        p: Perception,
        reasoned: bool,
        hurt: bool,
        previous: str,
        context: DecisionContext,
        rng: np.random.Generator,
        concede: bool = True,
    ) -> tuple[str, bool]:
        """The stance after a turn and whether it is justified.

        Args:
            p: The perceived system turn.
            reasoned: The turn gave this user a reason.
            hurt: The turn pressured or hit an anti-pattern.
            previous: The stance to start from.
            context: The user's state.
            rng: The episode's generator (the soft preset's concessions).
            concede: Allow the soft preset's unreasoned concessions (never for the rational
                reference).
        """
        stance, justified = self._stance(p, reasoned, hurt, previous, context, rng, concede)
        if stance == "refused" and not context.blocking:
            return "positive", True
        return stance, justified

    def _stance(
        self,
        p: Perception,
        reasoned: bool,
        hurt: bool,
        previous: str,
        context: DecisionContext,
        rng: np.random.Generator,
        concede: bool,
    ) -> tuple[str, bool]:
        preset = self.preset
        w = context.willingness
        blocking = context.blocking
        any_turn = self.card.decision_trigger == "any"
        deciding = p.ask or (any_turn and not (p.empty or p.off_topic or hurt))
        if deciding:
            ready = w >= preset.accept_threshold and (not blocking or not preset.require_resolved)
            if any_turn and (blocking or not context.helped):
                # The outcome is the user's own state: nothing said yet could have helped it,
                # or a need it still feels (more to share, not yet heard) is unmet — even an
                # easily satisfied (soft) user does not call that resolved. Its bias shows in
                # the concessions below instead.
                ready = False
            if ready:
                # Justified only when no blocking concern is left and the willingness was
                # earned by reasons, not by the soft drift.
                earned = w - context.drift >= preset.accept_threshold - 0.1
                return "agree", not blocking and earned
            tries = context.asks if p.ask else context.exchange
            chance = preset.concede_prob + preset.concede_growth * (tries - 1)
            # Nobody feels better about a problem it has not spoken about yet.
            unspoken = any_turn and not context.disclosed
            if concede and chance > 0 and not unspoken and rng.random() < chance:
                return "agree", False
            if w >= preset.accept_threshold - 0.15 and not blocking:
                return "positive", reasoned or previous in ("positive", "agree")
            if p.ask:
                return "refused", True
        if hurt and w < 0.35:
            return "refused", True  # an anti-pattern or pressure leaves the user worse off
        if reasoned:
            stance = "positive" if w >= 0.4 else "neutral"
        elif previous == "refused":
            stance = "refused"
        else:
            stance = "positive" if w >= 0.45 else "neutral"
        if stance == "positive" and blocking and not context.helped:
            # Leaning towards the goal (ESConv's "somewhat better") is a response to being
            # helped: before the user has said anything, or while none of its needs is met, a
            # reasoned turn leaves it neutral.
            stance = "neutral"
        # Warming up from neutral to open is not a concession; swinging from a refusal to
        # leaning towards giving without any reason is.
        swing = previous == "refused" and _RANK[stance] >= _RANK["positive"]
        return stance, reasoned or not swing


def refusal_reason(tracker: ConcernTracking, card: TaskCard, pushed: bool) -> str | None:
    """The concern a no gives as its reason: the strongest one barely touched, else the top.

    Barely touched: less than half an answer so far. "Sorry, I can't. Audited, huh? That's a
    start." names the worry that was just answered and hides the one that holds the user
    back; people say what is still in the way ("Sorry, I can't. Does a dollar even do
    anything?"). Dislike of being pushed is the reason only when the turn pushed: after a
    polite ask it would accuse the asker.

    Args:
        tracker: The user's concern state.
        card: The task card (a concern without voice lines is never given as a reason).
        pushed: The turn that draws the no pressured the user.
    """
    states = tracker.states
    for cid, state in states.items():  # strongest first
        barely = state.status != RESOLVED and state.progress < 0.5
        fair = cid != "pressure" or pushed
        if barely and fair and card.concern(cid).voice:
            return cid
    # Past half an answer, the same holds: a no to a polite ask names a worry the asker
    # can still answer, not "I'll listen, but keep it short" at the eighth exchange
    # (blind play round 11, Merchant seed 101), unless being pushed is all that is left.
    top = tracker.top()
    if top == "pressure" and not pushed:
        others = [
            cid
            for cid, state in states.items()
            if cid != "pressure" and state.status != RESOLVED and card.concern(cid).voice
        ]
        return others[0] if others else top
    return top
