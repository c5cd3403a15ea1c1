"""Personas: the background, external and internal layers of a simulated user (CUS)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from dialogue_gym.cards.card import TaskCard


@dataclasses.dataclass(frozen=True)
class Persona:
    """One simulated user.

    Attributes:
        id: Stable id within the card's bank, e.g. ``"P4G-0042"``.
        name: First name.
        age: Age in years.
        background: Background-layer text.
        style: Id of the card style (external layer: tone, wording).
        concerns: Internal layer: ``(concern id, strength in (0, 1])`` pairs, strongest first.
        initial_willingness: Willingness w at the start of the dialogue, in [0, 1].
        capacity: The most (in dollars) this user would give (persuasion tasks).
        facts: The persona's slot values (``occupation``, ``situation`` …), also available to
            reply templates as ``{slot}`` placeholders.
        initial_valence: Valence v of the user's starting state z_0, in [-1, 1] (0 for the
            bank's personas; an ESConv seeker built from a real dialogue starts below 0, lower
            the more intense its emotion, see :mod:`dialogue_gym.plugins.esconv.seeker`).
        emotion_intensity: The real seeker's initial emotion intensity (ESConv's survey, 1–5)
            for a persona built from a corpus dialogue that has one; ``None`` otherwise.
    """

    id: str
    name: str
    age: int
    background: str
    style: str
    concerns: tuple[tuple[str, float], ...]
    initial_willingness: float
    capacity: float
    facts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    initial_valence: float = 0.0
    emotion_intensity: int | None = None

    @property
    def occupation(self) -> str:
        """The ``occupation`` fact (empty when the card has no such slot)."""
        return self.facts.get("occupation", "")

    def profile(self) -> str:
        """The visible profile text (background layer and style, no internal concerns)."""
        return f"{self.background} Speaking style: {self.style}."


# How many latent concerns a persona carries, and with what probability.
_CONCERN_COUNTS = (1, 2, 3)
_CONCERN_COUNT_PROBS = (0.3, 0.45, 0.25)
STRENGTH_RANGE = (0.35, 1.0)
"""The bank draws each concern's strength uniformly from this range."""
WILLINGNESS_RANGE = (0.1, 0.45)
"""The bank draws each persona's initial willingness uniformly from this range."""


def _hashable_facts(facts: dict[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(facts))


@functools.lru_cache(maxsize=16)
def persona_bank(card: TaskCard) -> tuple[Persona, ...]:
    """Generates the card's project-written persona bank, deterministically from its seed."""
    ing = card.personas
    rng = np.random.default_rng(ing.seed)
    concern_ids = [c.id for c in card.concerns]
    styles = [s.id for s in card.styles]
    bank = []
    for index in range(ing.count):
        name = ing.first_names[int(rng.integers(len(ing.first_names)))]
        age = int(rng.integers(ing.ages[0], ing.ages[1] + 1))
        template = ing.background_templates[int(rng.integers(len(ing.background_templates)))]
        # One draw per slot, in order; a paired slot takes its lead's index (and no draw, so
        # the banks of cards without pairs are what they were).
        drawn = {
            slot: int(rng.integers(len(values)))
            for slot, values in ing.slots.items()
            if slot not in ing.paired
        }
        drawn.update({slot: drawn[lead] for slot, lead in ing.paired.items()})
        facts = {slot: values[drawn[slot]] for slot, values in ing.slots.items()}
        background = template.format(name=name, age=age, **facts)
        k = int(rng.choice(_CONCERN_COUNTS, p=_CONCERN_COUNT_PROBS))
        chosen = rng.choice(len(concern_ids), size=min(k, len(concern_ids)), replace=False)
        strengths = rng.uniform(*STRENGTH_RANGE, size=len(chosen))
        concerns = sorted(
            (
                (concern_ids[int(i)], round(float(s), 3))
                for i, s in zip(chosen, strengths, strict=True)
            ),
            key=lambda pair: -pair[1],
        )
        bank.append(
            Persona(
                id=f"{card.id}-{index:04d}",
                name=name,
                age=age,
                background=background,
                style=styles[int(rng.integers(len(styles)))],
                concerns=tuple(concerns),
                initial_willingness=round(float(rng.uniform(*WILLINGNESS_RANGE)), 3),
                capacity=round(float(rng.choice([0.1, 0.25, 0.5, 1.0, 1.5, 2.0])), 2),
                facts=_hashable_facts(facts),
            )
        )
    return tuple(bank)
