"""Spaces for text observations and actions."""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces

_CHARSET = string.ascii_letters + string.digits + " .,!?'$-"


class Utterance(spaces.Text):
    """A Gymnasium ``Text`` space that accepts any Python string up to ``max_length``.

    Dialogue text contains arbitrary Unicode, so membership only checks the type and length;
    sampling draws from a small printable charset (random gibberish, as PettingZoo's API test
    expects of an action space).

    Args:
        max_length: Longest accepted string (characters).
        seed: Seed of the space's own RNG (sampling only).
    """

    def __init__(self, max_length: int = 2000, seed: int | None = None) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        """Any ``str`` no longer than ``max_length``."""
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"Utterance(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Utterance) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("Utterance", self.max_length))
