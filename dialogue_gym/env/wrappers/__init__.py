"""Views and wrappers of the dialogue ``ParallelEnv``.

* :class:`SingleAgent` — a ``gymnasium.Env`` for one seat (the other seat internal).
* :class:`StrategyActions` — ``Discrete`` strategy actions with a feature ``Box`` observation
  (for SB3 and PPDPP-style planners), realized by a :class:`TemplateRealizer`.
* :class:`ConcernActions` — ``Discrete`` listening moves (answer concern *c*, probe,
  acknowledge, ask) with features of what the user voiced and settled; on a negotiation, with
  price moves (:class:`BargainMoves`: offer the target, raise, split the difference, accept).
* :class:`RecordEpisodes` — appends one JSON line per finished episode.
"""

from __future__ import annotations

from dialogue_gym.env.wrappers.bargain_moves import BargainFeatures, BargainMoves
from dialogue_gym.env.wrappers.concern_actions import ConcernActions, listening_parts
from dialogue_gym.env.wrappers.listening import ListeningFeatures, ListeningMoves
from dialogue_gym.env.wrappers.record import RecordEpisodes
from dialogue_gym.env.wrappers.single_agent import SingleAgent
from dialogue_gym.env.wrappers.strategy_actions import StrategyActions, TemplateRealizer

__all__ = [
    "BargainFeatures",
    "BargainMoves",
    "ConcernActions",
    "ListeningFeatures",
    "ListeningMoves",
    "RecordEpisodes",
    "SingleAgent",
    "StrategyActions",
    "TemplateRealizer",
    "listening_parts",
]
