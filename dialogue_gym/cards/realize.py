"""Template realization of system strategies (used by ``StrategyActions`` and template agents)."""

from __future__ import annotations

import numpy as np

from dialogue_gym.cards.card import Strategy, TaskCard


def draw_unused(rng: np.random.Generator, used: set[int], n: int) -> int:
    """An index in ``[0, n)`` not in ``used`` (all of them again once all were used); recorded."""
    if len(used) >= n:
        used.clear()
    index = int(rng.choice([i for i in range(n) if i not in used]))
    used.add(index)
    return index


class TemplateRealizer:
    """Turns a strategy into text by picking one of its card templates.

    Within an episode it avoids repeating a template until all of a strategy's templates
    have been used. Randomness comes only from its own generator, seeded by :meth:`reset`.

    Args:
        card: The task card whose strategies are realized.
        seed: Initial seed.
    """

    def __init__(self, card: TaskCard, seed: int | None = None) -> None:
        self.card = card
        self._by_name = {s.name: s for s in card.strategies}
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Starts a new episode (forgets used templates) with a fresh seeded generator."""
        self._rng = np.random.default_rng(seed)
        self._used: dict[str, set[int]] = {}

    def strategy(self, which: int | str) -> Strategy:
        """Looks a strategy up by index or name.

        Raises:
            IndexError: Index out of range.
            KeyError: Unknown name.
        """
        if isinstance(which, str):
            if which not in self._by_name:
                raise KeyError(f"card {self.card.id!r} has no strategy {which!r}")
            return self._by_name[which]
        index = int(which)
        if not 0 <= index < len(self.card.strategies):
            raise IndexError(
                f"strategy index {index} out of range [0, {len(self.card.strategies)})"
            )
        return self.card.strategies[index]

    def realize(self, which: int | str) -> str:
        """Returns a template of the strategy, preferring ones not used this episode."""
        strategy = self.strategy(which)
        used = self._used.setdefault(strategy.name, set())
        return strategy.templates[draw_unused(self._rng, used, len(strategy.templates))]
