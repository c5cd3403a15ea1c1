"""The stance a reply states, read from its text with the task card's ``reply_*`` cues.

One reader for everyone who needs it: the embedded judges (the success judge's "what the
reply says" vote, the rationality judge's check of an external user's reply), the user
simulators (a wording that would state another stance than the one decided is dropped), the
strategy view's observation features and the scripted test user policies. It lives outside
``users`` and ``judges`` so that both can import it without importing each other.
"""

from __future__ import annotations

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.text.cue_search import CueText

__all__ = ["classify_stance"]


def classify_stance(text: str, card: TaskCard) -> str:
    """Classifies the stance a reply states with the card's ``reply_*`` cues.

    Refusal cues win over agreement cues (``"no, I won't donate"`` mentions donating).

    Args:
        text: The reply.
        card: The task card whose ``reply_refuse``, ``reply_agree`` and ``reply_positive``
            cues are read.

    Returns:
        ``"refused"``, ``"agree"``, ``"positive"`` or ``"neutral"``.
    """
    cues = CueText(text)
    for label, key in (("refused", "reply_refuse"), ("agree", "reply_agree")):
        if cues.any(card.cues.get(key, ())):
            return label
    if cues.any(card.cues.get("reply_positive", ())):
        return "positive"
    return "neutral"
