"""dialogue_gym: PettingZoo/Gymnasium environments for proactive-dialogue RL.

Quick start::

    import dialogue_gym
    env = dialogue_gym.make("P4G-hard")          # a PettingZoo ParallelEnv
    obs, infos = env.reset(seed=0)
    obs, rewards, terms, truncs, infos = env.step({"system": "Hi! Have you heard of ..."})

The catalog is data: every card TOML shipped in ``envs/`` (the package ``dialogue_gym.catalog``)
registers ``<id>-soft-v0`` and ``<id>-hard-v0`` at import, described from the card's title and
``[catalog]`` section (:mod:`dialogue_gym.env.tasks`). Third-party tasks register through the
``dialogue_gym.envs`` entry points or ``"module:Task-hard-v0"`` ids
(:mod:`dialogue_gym.env.registry`).
"""

import sys
from collections.abc import Mapping
from types import MappingProxyType

from dialogue_gym import _moved
from dialogue_gym.cards.card import builtin_cards
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym.env.gym_views import register_views
from dialogue_gym.env.registry import (
    EnvSpec,
    RegistryError,
    load_plugins,
    make,
    on_register,
    pprint_registry,
    register,
    registry,
    spec,
)
from dialogue_gym.env.tasks import register_card, task_cards
from dialogue_gym.evaluation.run import EvalResult, evaluate
from dialogue_gym.mind import BDI, LatentSpace, RewardWeights
from dialogue_gym.version import __version__

# The modules' old paths (dialogue_gym.journal, ...) keep importing, with a warning.
_moved.install(sys.modules[__name__])

# Every env registered from here on (the catalog below, plugins, register()) also gets its
# Gymnasium views; wired here so that the registry does not import the views.
on_register(lambda env_spec: register_views([env_spec]))


def _register_catalog() -> Mapping[str, tuple[str, ...]]:
    """Registers every shipped card's envs; card name → the ids it registered."""
    return MappingProxyType(
        {name: tuple(s.id for s in register_card(name)) for name in builtin_cards()}
    )


CATALOG = _register_catalog()
"""The shipped catalog: card name (``"p4g"``) → its env ids (``("P4G-soft-v0", "P4G-hard-v0")``)."""

__all__ = [
    "BDI",
    "CATALOG",
    "DialogueEnv",
    "EnvSpec",
    "EvalResult",
    "LatentSpace",
    "RegistryError",
    "RewardWeights",
    "__version__",
    "evaluate",
    "load_plugins",
    "make",
    "pprint_registry",
    "register",
    "register_card",
    "registry",
    "spec",
    "task_cards",
]
