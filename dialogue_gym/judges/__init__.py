"""Success and rationality judges."""

from dialogue_gym.judges.base import (
    NOT_RATIONAL,
    RATIONAL,
    UNPARSEABLE,
    Exchange,
    Judgment,
    RationalityJudge,
    SuccessJudge,
)
from dialogue_gym.judges.embedded import (
    StateRationalityJudge,
    StateSuccessJudge,
    aggregate,
    classify_stance,
)

__all__ = [
    "NOT_RATIONAL",
    "RATIONAL",
    "UNPARSEABLE",
    "Exchange",
    "Judgment",
    "RationalityJudge",
    "StateRationalityJudge",
    "StateSuccessJudge",
    "SuccessJudge",
    "aggregate",
    "classify_stance",
]
