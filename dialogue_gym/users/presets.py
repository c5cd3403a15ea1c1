"""Presets of the embedded users' dynamics: :class:`UserPreset` (soft / hard) and calibration.

A card tunes a shipped preset for its task in ``[presets.soft]`` / ``[presets.hard]`` tables;
:func:`calibrated` applies such overrides to any family of frozen preset dataclasses (the
seller's presets use it too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from dialogue_gym.cards.card import TaskCard


@dataclasses.dataclass(frozen=True)
class UserPreset:
    """Parameters of the CognitiveUser dynamics; ``SOFT`` and ``HARD`` are the shipped presets.

    Attributes:
        name: Preset name.
        unlock_threshold: Addressing score needed to move a concern.
        anti_threshold: Anti-pattern score needed to push a concern back.
        accept_threshold: Willingness needed to agree when asked.
        require_resolved: Agree only once all blocking concerns are resolved.
        blocking_cutoff: A concern blocks when strength × blocking_weight reaches this.
        extra_resistance_strength: Concerns at least this strong need one more addressing turn.
        w_full: Willingness once every concern is resolved (before affect).
        rapport_gain: Affect gained from greetings/inquiries early in the dialogue (twice max).
        drift: Unreasoned willingness drift per exchange (the soft-user bias).
        concede_prob: Base probability of conceding to a request without reasons.
        concede_growth: Added to ``concede_prob`` per earlier request.
        pressure_penalty: Affect lost to pressure (a request right after a refusal, guilt).
        repetition_penalty: Affect lost when the system repeats itself.
        offtopic_penalty: Affect lost to off-topic turns.
        empty_penalty: Affect lost to empty turns.
        anti_penalty: Affect lost to an anti-pattern.
        proactive_credit: Share of a turn's credit that a concern the user has not voiced
            earns (proactivity is rewarded, blind topic-covering is not: a voiced concern, or
            one the user confirmed when probed, earns the full share).
        topic_margin: Concerns scoring within this margin of a turn's best concern count as
            touched by the turn; the turn's one unit of credit is split between them.
        multi_topic_penalty: Affect lost per concern touched beyond the first (stuffing).
        long_turn_words: Turns longer than this many words cost affect.
        long_turn_penalty: Affect lost per ``long_turn_words`` words beyond the first block.
        situation_margin: A situational concern is met only by a turn closer to this user's
            own situation than to any other persona's situation by this margin.
        meaning_threshold: The sentence-level meaning reader's probability at which a turn
            addresses a concern (:func:`~dialogue_gym.users.answers.touch_excess`).
        focus_threshold: The reader's line for a concern under discussion, when the turn
            reads likeliest as its answer (:func:`~dialogue_gym.users.answers.answers_focus`).
        argument_threshold: The reader's probability at which a sentence carries the answer
            to a concern under discussion, so that another topic read best in it is part of
            that answer (:func:`~dialogue_gym.users.answers.one_argument`).
        pushy_threshold: The reader's probability of a pushy ask at which a turn is pressure.
        thorough_credit: The most units of credit one turn earns for the concern under
            discussion, one per sentence that reads as its answer, when the turn is about that
            concern alone (:func:`~dialogue_gym.users.answers.arguments_for`); 1 turns it off.
    """

    name: str
    unlock_threshold: float
    anti_threshold: float
    accept_threshold: float
    require_resolved: bool
    blocking_cutoff: float = 0.3
    extra_resistance_strength: float = 0.8
    w_full: float = 0.75
    rapport_gain: float = 0.04
    drift: float = 0.0
    concede_prob: float = 0.0
    concede_growth: float = 0.0
    pressure_penalty: float = 0.1
    repetition_penalty: float = 0.06
    offtopic_penalty: float = 0.05
    empty_penalty: float = 0.05
    anti_penalty: float = 0.08
    proactive_credit: float = 0.5
    topic_margin: float = 0.05
    multi_topic_penalty: float = 0.03
    long_turn_words: int = 60
    long_turn_penalty: float = 0.04
    situation_margin: float = 0.05
    meaning_threshold: float = 0.3
    focus_threshold: float = 0.15
    argument_threshold: float = 0.1
    pushy_threshold: float = 0.6
    thorough_credit: int = 2


HARD = UserPreset(
    name="hard",
    unlock_threshold=0.55,
    anti_threshold=0.6,
    accept_threshold=0.6,
    require_resolved=True,
)
SOFT = UserPreset(
    name="soft",
    unlock_threshold=0.5,
    anti_threshold=0.65,
    accept_threshold=0.5,
    require_resolved=False,
    extra_resistance_strength=2.0,  # never: soft users need one addressing turn per concern
    rapport_gain=0.06,
    drift=0.05,
    concede_prob=0.12,
    concede_growth=0.08,
    pressure_penalty=0.03,
    repetition_penalty=0.02,
    anti_penalty=0.03,
)
PRESETS = {"soft": SOFT, "hard": HARD}


def card_preset(card: TaskCard, name: str) -> UserPreset:
    """The shipped preset ``name`` with the card's calibration applied.

    A card may tune a preset for its task in a ``[presets.soft]`` / ``[presets.hard]`` table
    whose keys are :class:`UserPreset` fields (e.g. ``unlock_threshold = 0.5``).

    Raises:
        ValueError: Unknown preset name or field.
    """
    overrides = card.extra.get("presets", {}).get(name, {})
    return calibrated(PRESETS, name, overrides, f"card {card.id!r}: presets.{name}", "user")


PresetT = TypeVar("PresetT")


def calibrated(
    presets: Mapping[str, PresetT],
    name: str,
    overrides: Mapping[str, Any],
    where: str,
    kind: str,
) -> PresetT:
    """Preset ``name`` of ``presets`` with a card's field ``overrides`` applied.

    Args:
        presets: The shipped presets (frozen dataclasses) by name.
        name: The preset to start from.
        overrides: Field values from the card.
        where: Where the overrides live, for error messages.
        kind: What the presets are for (``"user"``, ``"seller"``), for error messages.

    Raises:
        ValueError: Unknown preset name or field.
    """
    if name not in presets:
        raise ValueError(f"unknown {kind} preset {name!r}; choose from {sorted(presets)}")
    base = presets[name]
    fields = {f.name for f in dataclasses.fields(base)} - {"name"}  # type: ignore[arg-type]
    unknown = set(overrides) - fields
    if unknown:
        raise ValueError(f"{where} has unknown fields {sorted(unknown)}")
    return dataclasses.replace(base, **overrides)  # type: ignore[type-var]
