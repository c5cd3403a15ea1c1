"""Mentalizers: the teacher F(h, p_u, g) → z (reward side) and the student M(h) → ẑ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from dialogue_gym.mind.bdi import BDI
from dialogue_gym.users.base import UserSimulator


@runtime_checkable
class Teacher(Protocol):
    """The frozen reward-side mentalizer."""

    def infer(self, history: Sequence[tuple[str, str]], user: UserSimulator) -> BDI:
        """Returns the user's state after ``history``."""
        ...


@runtime_checkable
class Student(Protocol):
    """The policy-side mentalizer: sees only the observable history."""

    def estimate(self, history: Sequence[tuple[str, str]]) -> BDI:
        """Returns the estimated user state after ``history``."""
        ...


class OracleTeacher:
    """Reads the simulator's true state (exact for the embedded CognitiveUser)."""

    def infer(self, history: Sequence[tuple[str, str]], user: UserSimulator) -> BDI:
        """See :class:`Teacher`."""
        return user.state


__all__ = ["OracleTeacher", "Student", "Teacher"]
