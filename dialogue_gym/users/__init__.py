"""User simulators."""

from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.base import DECISIONS, UserSimulator, UserTurn
from dialogue_gym.users.cognitive import HARD, PRESETS, SOFT, CognitiveUser, UserPreset
from dialogue_gym.users.persona import Persona, persona_bank

__all__ = [
    "DECISIONS",
    "HARD",
    "PRESETS",
    "SOFT",
    "CognitiveUser",
    "Perception",
    "Persona",
    "UserPreset",
    "UserSimulator",
    "UserTurn",
    "UtteranceAnalyzer",
    "persona_bank",
]
