"""The environment: :class:`DialogueEnv`, its assembly, its registry and its views.

* :mod:`dialogue_gym.env.dialogue_env` — :class:`DialogueEnv`, the PettingZoo ParallelEnv;
* :mod:`dialogue_gym.env.parts` and :mod:`dialogue_gym.env.components` — the eight built
  parts it receives, and their assembly from keyword options;
* :mod:`dialogue_gym.env.reveal`, :mod:`dialogue_gym.env.spaces` — the privileged view, the
  spaces;
* :mod:`dialogue_gym.env.registry` and :mod:`dialogue_gym.env.tasks` — ``make``/``register``
  and the envs of a card;
* :mod:`dialogue_gym.env.wrappers`, :mod:`dialogue_gym.env.vector`,
  :mod:`dialogue_gym.env.gym_views` — single-agent and strategy views, vector envs, the
  Gymnasium ids;
* :mod:`dialogue_gym.env.checkers` — API conformance over every registered env.

This package re-exports the names of the former module ``dialogue_gym.env`` (now
:mod:`dialogue_gym.env.dialogue_env`), so ``from dialogue_gym.env import DialogueEnv`` works as
before.
"""

from __future__ import annotations

from dialogue_gym.env.dialogue_env import (
    CONCERN_EVENTS,
    CORPORA,
    SEATS,
    SPEAKER_ID,
    SYSTEM,
    USER,
    DialogueEnv,
    Policy,
    public_events,
)

__all__ = [
    "CONCERN_EVENTS",
    "CORPORA",
    "SEATS",
    "SPEAKER_ID",
    "SYSTEM",
    "USER",
    "DialogueEnv",
    "Policy",
    "public_events",
]
