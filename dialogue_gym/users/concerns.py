"""Concern tracking of the embedded users: what each concern's state is, and what a turn touches.

:class:`ConcernState` is one latent concern of a persona (its strength, the addressing turns it
needs, the credit it has had, whether the user has voiced it). :func:`touch_excess` says how far
a perceived turn goes past the line at which it counts as addressing each concern: by closeness
to the concern's meaning on the cosine scale (the card's description and prototypes, with its
cues), or by the sentence-level meaning reader's probability
(:class:`~dialogue_gym.users.meaning.MeaningReader`), whichever is further past its line.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dialogue_gym.cards import TaskCard
    from dialogue_gym.users.analysis import Perception
    from dialogue_gym.users.presets import UserPreset

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"

MEANING_SCALE = 0.25
"""Probability units → cosine units: a reader 0.2 past its line counts like a cosine 0.05 past
the unlock threshold (so the topic margin compares both paths in one unit)."""


@dataclasses.dataclass
class ConcernState:
    """One latent concern of the current persona.

    Attributes:
        strength: How much it weighs (0-1).
        needed: Addressing turns it takes to resolve.
        progress: The credit it has had (a fraction when shared or proactive). It persists:
            only pressure on the ``pressure`` concern or an anti-pattern takes it back.
        voiced: The user has said it.
    """

    strength: float
    needed: int
    progress: float = 0.0
    voiced: bool = False

    @property
    def status(self) -> str:
        """``unresolved``, ``partially_addressed`` or ``resolved``."""
        if self.progress >= self.needed - 1e-9:
            return RESOLVED
        return PARTIAL if self.progress > 1e-9 else UNRESOLVED


def touch_excess(p: Perception, preset: UserPreset, card: TaskCard) -> dict[str, float]:
    """Concern id → how far the turn goes past the line of addressing it (≥ 0: it does).

    The cosine path counts only when the turn is closer to the concern's meaning than to its
    anti-patterns. Situational concerns (met only by this user's own story) are read on the
    cosine path alone: the reader knows the card's stories, not this user's.
    """
    out: dict[str, float] = {}
    for concern in card.concerns:
        cid = concern.id
        score = p.unlock.get(cid, 0.0)
        excess = score - preset.unlock_threshold if score >= p.anti.get(cid, 0.0) else -1.0
        if concern.situational is None and p.meaning is not None:
            by_meaning = (p.addressing(cid) - preset.meaning_threshold) * MEANING_SCALE
            excess = max(excess, by_meaning)
        out[cid] = excess
    return out
