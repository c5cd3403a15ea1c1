"""Validity against people: replay held-out real dialogues through the simulated world.

``dialogue-gym validate ENV_ID --data PATH`` and :func:`validate` measure whether what the
env's simulated users and judges say agrees with what the real participants did (P4G
donations, ESConv emotion-intensity change, CraigslistBargain deals), each figure with a
bootstrap 95 % interval, its n, and a text-only bag-of-words reference beside it. See
:mod:`dialogue_gym.validity.runner` for what is measured and
:mod:`dialogue_gym.validity.corpus` for the outcomes.
"""

from dialogue_gym.validity.corpus import Outcome, exchanges_of, outcome_of
from dialogue_gym.validity.runner import TARGETS, format_report, validate, validate_dialogues
from dialogue_gym.validity.stats import Cell, auc, spearman

__all__ = [
    "TARGETS",
    "Cell",
    "Outcome",
    "auc",
    "exchanges_of",
    "format_report",
    "outcome_of",
    "spearman",
    "validate",
    "validate_dialogues",
]
