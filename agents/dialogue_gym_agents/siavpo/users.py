"""SI-AVPO's user presets.

User presets for training and the generalization evaluation (:func:`user_preset`): the card's
``soft`` and ``hard`` plus two rational variants of ``hard`` — ``strict`` (higher acceptance
threshold, more concerns block and need an extra turn, pressure and anti-patterns hurt more)
and ``lenient`` (lower threshold, only strong concerns block, no extra resistance, but unlike
``soft`` never concedes without reasons).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.users.cognitive import UserPreset, card_preset

__all__ = ["LENIENT_CHANGES", "STRICT_CHANGES", "USER_PRESETS", "user_preset"]

USER_PRESETS = ("soft", "hard", "strict", "lenient")
"""User presets SI-AVPO trains and evaluates against (:func:`user_preset`)."""


STRICT_CHANGES: Mapping[str, Any] = {
    "accept_threshold": 0.1,  # added to the card's hard threshold
    "blocking_cutoff": 0.2,
    "extra_resistance_strength": 0.65,
    "pressure_penalty": 0.15,
    "repetition_penalty": 0.09,
    "anti_penalty": 0.12,
}
"""``strict``: the card's ``hard`` preset with these fields (``accept_threshold`` is added)."""


LENIENT_CHANGES: Mapping[str, Any] = {
    "accept_threshold": -0.1,  # added to the card's hard threshold
    "blocking_cutoff": 0.5,
    "extra_resistance_strength": 2.0,  # never: one addressing turn per concern
    "pressure_penalty": 0.05,
    "rapport_gain": 0.06,
}
"""``lenient``: the card's ``hard`` preset with these fields (``accept_threshold`` is added);
no drift and no concessions, so its acceptances stay justified (unlike ``soft``)."""


def user_preset(card: TaskCard, name: str) -> UserPreset:
    """The user preset ``name`` for ``card``: ``soft``, ``hard``, ``strict`` or ``lenient``.

    ``soft``/``hard`` are the card's calibrated presets; ``strict``/``lenient`` start from the
    calibrated ``hard`` (so a card's MiniLM calibration of the thresholds carries over) and
    apply :data:`STRICT_CHANGES` / :data:`LENIENT_CHANGES`.

    Raises:
        ValueError: Unknown name.
    """
    if name in ("soft", "hard"):
        return card_preset(card, name)
    changes = {"strict": STRICT_CHANGES, "lenient": LENIENT_CHANGES}.get(name)
    if changes is None:
        raise ValueError(f"unknown user preset {name!r}; choose from {list(USER_PRESETS)}")
    hard = card_preset(card, "hard")
    fields = dict(changes)
    fields["accept_threshold"] = hard.accept_threshold + float(changes["accept_threshold"])
    return dataclasses.replace(hard, name=name, **fields)
