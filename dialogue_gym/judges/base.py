"""Judge protocols: per-exchange success and user rationality."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from dialogue_gym.mind.bdi import BDI
from dialogue_gym.users.base import UserTurn

RATIONAL, NOT_RATIONAL, UNPARSEABLE = 1, -1, 0


@dataclasses.dataclass(frozen=True)
class Exchange:
    """What a judge sees after one system–user exchange.

    Attributes:
        index: 1-based exchange index.
        history: The whole transcript so far as ``(role, text)`` pairs, this exchange included.
        system: The system utterance of this exchange.
        user: The user reply of this exchange.
        turn: The user's turn record (stance, state, justification) from the simulator.
        privileged: The simulator's privileged information (willingness, concerns).
        external_user: Whether an external policy wrote the user reply.
        state_before: The user's mental state before this reply (what "rational under the
            current mental state" is judged against); ``None`` when unknown.
    """

    index: int
    history: tuple[tuple[str, str], ...]
    system: str
    user: str
    turn: UserTurn
    privileged: Mapping[str, Any]
    external_user: bool = False
    state_before: BDI | None = None


@dataclasses.dataclass(frozen=True)
class Judgment:
    """A success judgment aggregated over n sampled votes.

    Attributes:
        votes: The label of each vote.
        rewards: Each vote's reward under the card's label map.
        score: The mean reward.
        success: Whether the score reaches the card's threshold.
        label: The most frequent vote (ties go to the more positive label).
        n_failed: Votes that could not be parsed (counted as the lowest label, never silent).
    """

    votes: tuple[str, ...]
    rewards: tuple[float, ...]
    score: float
    success: bool
    label: str
    n_failed: int = 0


@runtime_checkable
class SuccessJudge(Protocol):
    """Decides per exchange whether the task goal has been reached."""

    def judge(self, exchange: Exchange) -> Judgment:
        """Judges the transcript up to and including ``exchange``."""
        ...


@runtime_checkable
class RationalityJudge(Protocol):
    """Scores whether the user's reply was rational for its mental state: q ∈ {+1, −1, 0}."""

    def judge(self, exchange: Exchange) -> int:
        """Returns RATIONAL (+1), NOT_RATIONAL (−1) or UNPARSEABLE (0)."""
        ...
