"""How the embedded users compose the scalars of their latent state (ρ, c, v) toward z*.

MASP's progress ``s_t`` (Eq. 13) measures how far the user's state z_t has moved from its own
start z_0 toward the task's successful end state z*; almost all of ‖z* − z_0‖²_A lies in the
three scalars (receptivity ρ, confidence/commitment c, valence v), so their composition decides
what the env's dense reward pays for. The embedded users therefore compose each scalar as a
*fraction of the way* from the user's start value to the card's target value:

    x_t = x_0 + (x* − x_0) · f_x,    f_x ≤ :data:`NON_SUCCESS_CAP` unless the user agreed,

with the fractions f driven by what the system achieved toward the goal (the user's resolved
concerns, its stance, its mood), and ``x_t = x*`` exactly once the user has agreed (the paper's
z* *is* the state of a user who agreed). So:

* s = 1 at success (up to the three text embeddings, which weigh well under 1 %), and no state
  short of success reaches it (s ≤ the cap plus the text share < 1);
* rapport alone moves only a small part of ρ and v; resolving concerns moves most of each
  scalar, but the last stretch is reached only by the user's agreement — so a policy that never
  asks is paid less than one that asks when the user is ready;
* a refusal lowers c, but resolving the concerns behind it brings c back (a justified ask that
  is refused is not progress lost forever).

Fractions may go below zero (pressure, insults, a walk-away leave the user worse off than it
started); they are clipped at :data:`FLOOR`.
"""

from __future__ import annotations

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.bdi import BDI

NON_SUCCESS_CAP = 0.7
"""The largest fraction of the way to the target any scalar takes before the user agrees."""
FLOOR = -1.0
"""The lowest fraction (the user is as far behind its start as the target is ahead)."""


def success_stances(card: TaskCard) -> frozenset[str]:
    """The stances whose unanimous votes pass the card's success rule (the user "agreed").

    P4G: only ``agree``; ESConv (threshold 0.5 on the mean, ``somewhat_better`` = 0.5):
    ``positive`` and ``agree`` — a seeker who feels better has reached the task's goal, so its
    state is the target there.
    """
    spec = card.success_judge
    if not spec.decision_labels:
        return frozenset({"agree"})
    if spec.rule == "label":
        labels = spec.decision_labels.items()
        return frozenset(s for s, label in labels if label == spec.success_label)
    return frozenset(
        s for s, label in spec.decision_labels.items() if spec.passes(spec.labels[label])
    )


def clip_fraction(fraction: float, agreed: bool = False) -> float:
    """``fraction`` clipped to ``[FLOOR, NON_SUCCESS_CAP]`` (to 1 once the user agreed)."""
    return min(max(fraction, FLOOR), 1.0 if agreed else NON_SUCCESS_CAP)


def toward_target(
    start: tuple[float, float, float],
    target: BDI,
    fractions: tuple[float, float, float],
    agreed: bool = False,
) -> tuple[float, float, float]:
    """(ρ, c, v) the given fractions of the way from ``start`` to the target's scalars.

    Args:
        start: The user's initial (ρ, c, v): the scalars of its z_0.
        target: The task's target state z* (its receptivity, confidence, valence).
        fractions: How far each scalar has moved (clipped, see :func:`clip_fraction`).
        agreed: The user has agreed: the scalars are exactly the target's.

    Returns:
        The composed (receptivity, confidence, valence), each within its BDI range.
    """
    goal = (target.receptivity, target.confidence, target.valence)
    if agreed:
        return goal
    lows = (0.0, 0.0, -1.0)
    out = []
    for x0, x_star, f, low in zip(start, goal, fractions, lows, strict=True):
        value = x0 + (x_star - x0) * clip_fraction(f)
        out.append(min(max(value, low), 1.0))
    return out[0], out[1], out[2]
