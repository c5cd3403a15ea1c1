"""Building a vector env from a registered id: :func:`make_vec` and its shared components."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dialogue_gym.backends.base import BaseBackend
from dialogue_gym.backends.factory import make_backend
from dialogue_gym.env.registry import make, spec
from dialogue_gym.env.vector.base import AUTORESET_MODES
from dialogue_gym.env.vector.batching import BatchingBackend, BatchingEncoder, StepRounds
from dialogue_gym.env.vector.dialogue import VectorDialogueEnv
from dialogue_gym.mind.encoders import CachedEncoder, Encoder, make_encoder

__all__ = ["make_vec"]


def make_vec(
    env_id: str,
    num_envs: int,
    *,
    autoreset_mode: str = "next_step",
    threaded: bool | None = None,
    per_env_kwargs: Callable[[int], Mapping[str, Any]] | None = None,
    **make_kwargs: Any,
) -> VectorDialogueEnv:
    """Builds ``num_envs`` copies of ``make(env_id, **make_kwargs)`` sharing their components.

    The sub-envs share one encoder (one model and one cache, with batched encoding) and, when
    the configuration uses LLM components, one backend (built once from ``backend``,
    ``backend_cache``, ``cache_mode`` and ``backend_options``) whose requests are batched per
    round. Everything else (users, judges, random generators) is per sub-env.

    Args:
        env_id: A registered id (``"P4G-hard"``).
        num_envs: N >= 1.
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        threaded: Step the sub-envs on worker threads (default: with LLM components).
        per_env_kwargs: ``per_env_kwargs(i)`` → extra overrides for sub-env ``i``, for objects
            that must not be shared, such as a stateful ``system_policy`` agent.
        **make_kwargs: Overrides for every sub-env, as for :func:`dialogue_gym.make`. Objects
            given here (judges, mentalizers, a ``system_policy``) are shared by all sub-envs.

    Returns:
        The :class:`VectorDialogueEnv`.

    Raises:
        ValueError: ``num_envs < 1`` or an unknown ``autoreset_mode``.
        TypeError: ``num_envs`` is not an int.
        RegistryError: Unknown ``env_id``.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
        raise TypeError(f"num_envs must be an int, got {num_envs!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if autoreset_mode not in AUTORESET_MODES:
        raise ValueError(f"autoreset_mode must be one of {AUTORESET_MODES}, got {autoreset_mode!r}")
    resolved = spec(env_id).resolved(**make_kwargs)
    rounds = StepRounds()
    kwargs = dict(make_kwargs)
    kwargs["encoder"] = _shared_encoder(resolved.get("encoder", "minilm"), rounds)
    owned: list[Any] = []
    backend = resolved.get("backend")
    if backend is not None:
        built = make_backend(
            backend,
            cache=resolved.get("backend_cache"),
            cache_mode=resolved.get("cache_mode", "rw"),
            **(dict(resolved.get("backend_options") or {}) if isinstance(backend, str) else {}),
        )
        if built is not backend:
            owned.append(built)  # built here from a spec or a cache: closed with the vector env
        if isinstance(built, BaseBackend):
            built = BatchingBackend(built, rounds)
        kwargs.update(backend=built, backend_cache=None, backend_options=None)
    envs = [
        make(env_id, **{**kwargs, **(per_env_kwargs(i) if per_env_kwargs else {})})
        for i in range(int(num_envs))
    ]
    return VectorDialogueEnv(
        envs, autoreset_mode=autoreset_mode, threaded=threaded, rounds=rounds, owned=owned
    )


def _shared_encoder(encoder: str | Encoder, rounds: StepRounds) -> CachedEncoder:
    """A cache for the sub-envs over the process's encoder, batching its misses per round.

    By name, ``make_encoder`` returns the process-wide cached encoder (one model, one cache):
    the sub-envs' misses are looked up there, so texts a lone env or an earlier vector env
    already encoded are not encoded again.
    """
    return CachedEncoder(BatchingEncoder(make_encoder(encoder), rounds))
