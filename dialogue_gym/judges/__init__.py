"""Success and rationality judges."""

import importlib

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.judges.base import (
    NOT_RATIONAL,
    RATIONAL,
    UNPARSEABLE,
    Exchange,
    Judgment,
    RationalityJudge,
    SuccessJudge,
)
from dialogue_gym.judges.embedded import StateRationalityJudge, StateSuccessJudge, aggregate

# Embedded success judges by the card's ``judge.success.kind``; values are "module:attr" so that
# task-specific judges load only when a card needs them.
SUCCESS_JUDGES = {
    "state": "dialogue_gym.judges.embedded:StateSuccessJudge",
    "deal": "dialogue_gym.judges.deal:DealJudge",
}


def default_success_judge(card: TaskCard) -> SuccessJudge:
    """Builds the embedded success judge the card asks for (``judge.success.kind``).

    Raises:
        ValueError: Unknown kind.
    """
    kind = card.success_judge.kind
    if kind not in SUCCESS_JUDGES:
        raise ValueError(
            f"card {card.id!r}: unknown judge kind {kind!r}; known: {sorted(SUCCESS_JUDGES)}"
        )
    module, _, attr = SUCCESS_JUDGES[kind].partition(":")
    return getattr(importlib.import_module(module), attr)(card)


__all__ = [
    "NOT_RATIONAL",
    "RATIONAL",
    "SUCCESS_JUDGES",
    "UNPARSEABLE",
    "Exchange",
    "Judgment",
    "RationalityJudge",
    "StateRationalityJudge",
    "StateSuccessJudge",
    "SuccessJudge",
    "aggregate",
    "classify_stance",
    "default_success_judge",
]
