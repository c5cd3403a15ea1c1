"""The single-agent views of every registered env, registered with Gymnasium.

Every dialogue_gym id ``Task-user-vN`` gets three Gymnasium ids in the ``dialogue_gym``
namespace:

* ``dialogue_gym/Task-user-vN`` — :class:`~dialogue_gym.env.wrappers.SingleAgent` of the system
  seat (text observations and actions), vectorized by
  :class:`~dialogue_gym.env.vector.SingleAgentVectorEnv`;
* ``dialogue_gym/Task-user-Strategy-vN`` — :class:`~dialogue_gym.env.wrappers.StrategyActions`
  (``Discrete`` strategies, a ``Box`` of features: what SB3's ``MlpPolicy`` trains), vectorized
  by :class:`~dialogue_gym.env.vector.StrategyVectorEnv`;
* ``dialogue_gym/Task-user-Concern-vN`` — :class:`~dialogue_gym.env.wrappers.ConcernActions`
  (``Discrete`` listening moves — price moves on a negotiation — and a ``Box`` of features),
  vectorized by :class:`~dialogue_gym.env.vector.ConcernVectorEnv`.

::

    import gymnasium
    import dialogue_gym  # registers the views

    env = gymnasium.make("dialogue_gym/P4G-hard-Strategy-v0", encoder="hashing")
    vec = gymnasium.make_vec("dialogue_gym/P4G-hard-Strategy-v0", num_envs=8, encoder="hashing")

Keyword arguments of ``gymnasium.make``/``make_vec`` are :func:`dialogue_gym.make` overrides,
except the wrapper's own: ``seat`` and ``other`` for the text view, ``realizer`` and
``voice_threshold`` for the strategy view, ``match_threshold`` for the concern view. A
``render_mode`` the env does not have (SB3's ``make_vec_env`` asks for ``"rgb_array"``) is
dropped with a warning. ``make_vec`` builds the
batched vector envs of :mod:`dialogue_gym.env.vector` (one shared encoder and LLM backend;
``autoreset_mode=`` as there); ``vectorization_mode="sync"`` gives Gymnasium's
``SyncVectorEnv`` of lone envs instead.

Registration happens on ``import dialogue_gym`` and in :func:`dialogue_gym.register` (so an
env registered later gets its views too); it only adds entries to ``gymnasium.registry`` and
never replaces one that is there.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import gymnasium

if TYPE_CHECKING:
    from dialogue_gym.env.dialogue_env import DialogueEnv
    from dialogue_gym.env.registry import EnvSpec
    from dialogue_gym.env.vector import ConcernVectorEnv, SingleAgentVectorEnv, StrategyVectorEnv
    from dialogue_gym.env.wrappers import ConcernActions, SingleAgent, StrategyActions

__all__ = [
    "CONCERN_SUFFIX",
    "NAMESPACE",
    "STRATEGY_SUFFIX",
    "concern_env",
    "concern_vector_env",
    "gymnasium_ids",
    "register_views",
    "single_agent_env",
    "single_agent_vector_env",
    "strategy_env",
    "strategy_vector_env",
]

NAMESPACE = "dialogue_gym"
"""The Gymnasium namespace of the views."""

STRATEGY_SUFFIX = "-Strategy"
"""Appended to an env's name for its :class:`~dialogue_gym.env.wrappers.StrategyActions` view."""

CONCERN_SUFFIX = "-Concern"
"""Appended to an env's name for its :class:`~dialogue_gym.env.wrappers.ConcernActions` view."""

_STRATEGY_OPTIONS = ("realizer", "voice_threshold")
_CONCERN_OPTIONS = ("match_threshold",)
_KINDS = ("single_agent", "strategy", "concern")


def gymnasium_ids(env_id: str) -> tuple[str, str, str]:
    """The Gymnasium ids of the text, strategy and concern views of dialogue_gym id ``env_id``.

    Example:
        >>> gymnasium_ids("P4G-hard-v0")  # doctest: +NORMALIZE_WHITESPACE
        ('dialogue_gym/P4G-hard-v0', 'dialogue_gym/P4G-hard-Strategy-v0',
         'dialogue_gym/P4G-hard-Concern-v0')
    """
    name, _, version = env_id.rpartition("-v")
    return (
        f"{NAMESPACE}/{env_id}",
        f"{NAMESPACE}/{name}{STRATEGY_SUFFIX}-v{version}",
        f"{NAMESPACE}/{name}{CONCERN_SUFFIX}-v{version}",
    )


def register_views(specs: Iterable[EnvSpec] | None = None) -> list[str]:
    """Registers the Gymnasium views of ``specs`` (default: every registered env).

    Idempotent: ids already in ``gymnasium.registry`` are left as they are.

    Returns:
        The Gymnasium ids registered by this call.
    """
    if specs is None:
        from dialogue_gym.env.registry import registry

        specs = list(registry.values())
    added: list[str] = []
    for env_spec in specs:
        for gym_id, kind in zip(gymnasium_ids(env_spec.id), _KINDS, strict=True):
            if gym_id in gymnasium.registry:
                continue
            gymnasium.register(
                id=gym_id,
                entry_point=f"{__name__}:{kind}_env",
                vector_entry_point=f"{__name__}:{kind}_vector_env",
                # The dialogue env ends its episodes itself (its exchange budget).
                max_episode_steps=None,
                kwargs={"dialogue_id": env_spec.id},
            )
            added.append(gym_id)
    return added


def _make(dialogue_id: str, overrides: dict[str, Any]) -> DialogueEnv:
    from dialogue_gym.env.dialogue_env import DialogueEnv
    from dialogue_gym.env.registry import make

    render_mode = overrides.get("render_mode")
    if render_mode is not None and render_mode not in DialogueEnv.metadata["render_modes"]:
        # SB3's make_vec_env asks every env for "rgb_array"; a dialogue renders text only.
        warnings.warn(
            f"{dialogue_id}: render_mode {render_mode!r} is not supported (the env renders "
            f"{DialogueEnv.metadata['render_modes']}); building it without a render mode",
            stacklevel=3,
        )
        overrides = {k: v for k, v in overrides.items() if k != "render_mode"}
    return make(dialogue_id, **overrides)


def single_agent_env(
    dialogue_id: str, seat: str = "system", other: Any = None, **overrides: Any
) -> SingleAgent:
    """``SingleAgent(dialogue_gym.make(dialogue_id, **overrides), seat, other)``."""
    from dialogue_gym.env.wrappers import SingleAgent

    return SingleAgent(_make(dialogue_id, overrides), seat=seat, other=other)


def strategy_env(dialogue_id: str, **overrides: Any) -> StrategyActions:
    """``StrategyActions(dialogue_gym.make(dialogue_id, **overrides))``.

    ``realizer`` and ``voice_threshold`` go to the wrapper, the rest to ``make``.
    """
    from dialogue_gym.env.wrappers import StrategyActions

    options = {k: overrides.pop(k) for k in _STRATEGY_OPTIONS if k in overrides}
    return StrategyActions(_make(dialogue_id, overrides), **options)


def concern_env(dialogue_id: str, **overrides: Any) -> ConcernActions:
    """``ConcernActions(dialogue_gym.make(dialogue_id, **overrides))``.

    ``match_threshold`` goes to the wrapper, the rest to ``make``.
    """
    from dialogue_gym.env.wrappers import ConcernActions

    options = {k: overrides.pop(k) for k in _CONCERN_OPTIONS if k in overrides}
    return ConcernActions(_make(dialogue_id, overrides), **options)


def single_agent_vector_env(
    dialogue_id: str,
    num_envs: int = 1,
    seat: str = "system",
    autoreset_mode: str = "next_step",
    **overrides: Any,
) -> SingleAgentVectorEnv:
    """``SingleAgentVectorEnv(make_vec(dialogue_id, num_envs, **overrides), seat)``."""
    from dialogue_gym.env.vector import SingleAgentVectorEnv, make_vec

    vec = make_vec(dialogue_id, num_envs, autoreset_mode=autoreset_mode, **overrides)
    return SingleAgentVectorEnv(vec, seat=seat)


def strategy_vector_env(
    dialogue_id: str, num_envs: int = 1, autoreset_mode: str = "next_step", **overrides: Any
) -> StrategyVectorEnv:
    """``StrategyVectorEnv(make_vec(dialogue_id, num_envs, **overrides))``.

    ``realizer`` and ``voice_threshold`` go to every wrapper, the rest to ``make_vec``.
    """
    from dialogue_gym.env.vector import StrategyVectorEnv, make_vec

    options = {k: overrides.pop(k) for k in _STRATEGY_OPTIONS if k in overrides}
    vec = make_vec(dialogue_id, num_envs, autoreset_mode=autoreset_mode, **overrides)
    return StrategyVectorEnv(vec, **options)


def concern_vector_env(
    dialogue_id: str, num_envs: int = 1, autoreset_mode: str = "next_step", **overrides: Any
) -> ConcernVectorEnv:
    """``ConcernVectorEnv(make_vec(dialogue_id, num_envs, **overrides))``.

    ``match_threshold`` goes to every wrapper, the rest to ``make_vec``.
    """
    from dialogue_gym.env.vector import ConcernVectorEnv, make_vec

    options = {k: overrides.pop(k) for k in _CONCERN_OPTIONS if k in overrides}
    vec = make_vec(dialogue_id, num_envs, autoreset_mode=autoreset_mode, **overrides)
    return ConcernVectorEnv(vec, **options)
