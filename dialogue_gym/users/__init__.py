"""User simulators."""

import importlib
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.plugin_index import Contributions
from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.base import DECISIONS, UserSimulator, UserTurn
from dialogue_gym.users.cognitive import (
    HARD,
    PRESETS,
    SOFT,
    CognitiveUser,
    UserPreset,
    card_preset,
)
from dialogue_gym.users.persona import Persona, persona_bank

# User-simulator families by the card's ``task.user_model``; "module:attr" so that a
# family's code loads only when a card needs it. A task's own model (CraigslistBargain's
# seller) comes from its plug-in's ``user_models``.
USER_MODELS = Contributions(
    "user_models", base={"cognitive": "dialogue_gym.users.cognitive:CognitiveUser"}
)


def build_user(
    card: TaskCard, encoder: Encoder, preset: str | UserPreset, **kwargs: Any
) -> UserSimulator:
    """Builds the card's user model (``task.user_model``) with a preset (``soft``/``hard``).

    Keyword arguments go to the model (e.g. ``personas=`` for corpus-grounded episodes;
    ``None`` values are dropped so each model keeps its defaults).

    Raises:
        ValueError: Unknown user model or preset.
    """
    models = USER_MODELS.with_plugin(card.plugin)
    if card.user_model not in models:
        known = sorted(models)
        raise ValueError(
            f"card {card.id!r}: unknown user_model {card.user_model!r}; known: {known}"
        )
    module, _, attr = models[card.user_model].partition(":")
    options = {k: v for k, v in kwargs.items() if v is not None}
    return getattr(importlib.import_module(module), attr)(card, encoder, preset=preset, **options)


__all__ = [
    "DECISIONS",
    "HARD",
    "PRESETS",
    "SOFT",
    "USER_MODELS",
    "CognitiveUser",
    "Perception",
    "Persona",
    "UserPreset",
    "UserSimulator",
    "UserTurn",
    "UtteranceAnalyzer",
    "build_user",
    "card_preset",
    "persona_bank",
]
