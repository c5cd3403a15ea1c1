"""Single-seat vector views: Gymnasium ``VectorEnv`` s over a :class:`VectorDialogueEnv`.

:class:`SingleAgentVectorEnv` is one seat with text actions and NumPy reward arrays;
:class:`StrategyVectorEnv` the system seat as strategy indices and feature arrays (a
:class:`~dialogue_gym.env.wrappers.StrategyActions` per sub-env), what PPO-style code trains;
:class:`ConcernVectorEnv` the same over listening moves (a
:class:`~dialogue_gym.env.wrappers.ConcernActions` per sub-env).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from dialogue_gym.env.dialogue_env import SYSTEM
from dialogue_gym.env.vector.base import VectorBase
from dialogue_gym.env.vector.dialogue import VectorDialogueEnv
from dialogue_gym.env.wrappers.concern_actions import ConcernActions
from dialogue_gym.env.wrappers.single_agent import SingleAgent
from dialogue_gym.env.wrappers.strategy_actions import StrategyActions

__all__ = ["ConcernVectorEnv", "SingleAgentVectorEnv", "StrategyVectorEnv"]

# ``autoreset_mode`` → the value of Gymnasium's ``AutoresetMode`` (in the views' metadata).
_GYMNASIUM_AUTORESET = {"next_step": "NextStep", "same_step": "SameStep", "disabled": "Disabled"}


# The ignore below: reset/step give infos as a list (one dict per sub-env), not Gymnasium's
# dict of arrays, so VectorBase.reset's return type differs from VectorEnv's.
class _SeatViewBase(VectorBase, VectorEnv):  # type: ignore[misc]
    """A view whose sub-envs are single-agent Gymnasium envs over the vector env's sub-envs.

    A ``gymnasium.vector.VectorEnv`` (``gymnasium.make_vec`` builds these views): it has
    Gymnasium's ``num_envs``, ``single_observation_space``/``single_action_space``, batched
    ``observation_space``/``action_space``, ``metadata["autoreset_mode"]`` (an
    ``AutoresetMode``), ``np_random`` and ``close``. One difference: ``infos`` is a list with
    one dict per sub-env (what each sub-env returned), not Gymnasium's dict of arrays.
    """

    def __init__(
        self, vec: VectorDialogueEnv, slots: Sequence[Any], autoreset_mode: str | None
    ) -> None:
        self.vec = vec
        self.slots = list(slots)
        self._init_base(vec.num_envs, autoreset_mode or vec.autoreset_mode, vec._runner)
        self._threaded = vec._threaded
        self.metadata = {
            **vec.metadata,
            "autoreset_mode": AutoresetMode(_GYMNASIUM_AUTORESET[self.autoreset_mode]),
        }
        self.render_mode = getattr(self.slots[0], "render_mode", None)

    def render(self) -> tuple[Any, ...] | None:
        """Each sub-env's ``render()`` (``"ansi"``: the transcripts)."""
        return tuple(slot.render() for slot in self.slots)

    def close(self, **kwargs: Any) -> None:
        """Closes the underlying :class:`VectorDialogueEnv`."""
        self._closed = True
        self.closed = True
        self.vec.close()

    def __enter__(self) -> _SeatViewBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed or self.vec._closed:
            raise RuntimeError("the vector env is closed")

    def _slot_reset(self, i: int, seed: int | None, options: Any) -> tuple[Any, Any]:
        return self.slots[i].reset(seed=seed, options=options)

    def _slot_step(self, i: int, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        return self.slots[i].step(action)

    def _slot_finished(self, i: int, result: tuple[Any, Any, Any, Any, Any]) -> bool:
        return bool(result[2] or result[3])

    def _first_step(self, i: int, obs: Any, info: Any) -> tuple[Any, Any, Any, Any, Any]:
        return obs, 0.0, False, False, info

    def _merge_final(
        self, final: tuple[Any, Any, Any, Any, Any], obs: Any, info: Any
    ) -> tuple[Any, Any, Any, Any, Any]:
        final_obs, reward, terminated, truncated, final_info = final
        return (
            obs,
            reward,
            terminated,
            truncated,
            {**info, "final_obs": final_obs, "final_info": final_info},
        )

    def _arrays(
        self, results: list[tuple[Any, Any, Any, Any, Any]]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rewards = np.array([float(r[1]) for r in results], dtype=np.float64)
        terminations = np.array([bool(r[2]) for r in results], dtype=bool)
        truncations = np.array([bool(r[3]) for r in results], dtype=bool)
        return rewards, terminations, truncations


class SingleAgentVectorEnv(_SeatViewBase):
    """One seat of a :class:`VectorDialogueEnv` (a ``SingleAgent`` per sub-env), with arrays.

    What vectorized RL code trains: a :class:`~dialogue_gym.env.wrappers.SingleAgent` of ``seat``
    over each sub-env.

    ``reset`` returns ``(observations, infos)`` and ``step``
    ``(observations, rewards, terminations, truncations, infos)``: observations and infos are
    lists (the seat's observation dict and info per sub-env; ``None`` and ``{}`` for a sub-env
    left alone), rewards a float64 array and terminations/truncations bool arrays of shape
    ``(num_envs,)`` (0 and ``False`` for a sub-env left alone).

    Args:
        vec: The vector env (its sub-envs must have only ``seat`` external, or be self-play
            envs with ``other`` playing the other seat).
        seat: ``"system"`` or ``"user"``.
        other: A factory ``other(i) -> agent`` for the other seat of self-play sub-envs.
        autoreset_mode: Default: the vector env's.

    Attributes:
        single_observation_space: A sub-env's observation space of the seat.
        single_action_space: A sub-env's action space of the seat (text).
        observation_space: ``Tuple`` of ``num_envs`` single observation spaces.
        action_space: ``Tuple`` of ``num_envs`` single action spaces.
    """

    def __init__(
        self,
        vec: VectorDialogueEnv,
        seat: str = SYSTEM,
        other: Callable[[int], Any] | None = None,
        autoreset_mode: str | None = None,
    ) -> None:
        slots = [
            SingleAgent(env, seat=seat, other=None if other is None else other(i))
            for i, env in enumerate(vec.envs)
        ]
        super().__init__(vec, slots, autoreset_mode)
        self.seat = seat
        self.single_observation_space = slots[0].observation_space
        self.single_action_space = slots[0].action_space
        # Observations and actions are per-sub-env sequences of the seat's (text) ones.
        self.observation_space = spaces.Tuple([self.single_observation_space] * self.num_envs)
        self.action_space = spaces.Tuple([self.single_action_space] * self.num_envs)

    def _check_action(self, i: int, action: Any) -> None:
        if isinstance(action, str):
            return
        if (
            self.seat == SYSTEM
            and isinstance(action, Mapping)
            and isinstance(action.get("utterance"), str)
        ):
            return
        raise TypeError(
            f"sub-env {i}: a {self.seat} action is a str utterance"
            + (" or {'utterance': str, 'estimate': ...}" if self.seat == SYSTEM else "")
            + f", or None; got {type(action).__name__}"
        )

    def _prefetch(self, actions: Mapping[int, Any]) -> None:
        if self.seat == SYSTEM:
            self.vec._prefetch(actions)

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        return None, 0.0, False, False, {}

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        rewards, terminations, truncations = self._arrays(results)
        return [r[0] for r in results], rewards, terminations, truncations, [r[4] for r in results]

    def __repr__(self) -> str:
        return f"<SingleAgentVectorEnv seat={self.seat!r} of {self.vec!r}>"


class StrategyVectorEnv(_SeatViewBase):
    """The system seat of a :class:`VectorDialogueEnv` as strategy indices and feature arrays.

    A :class:`~dialogue_gym.env.wrappers.StrategyActions` over each sub-env.

    ``reset`` returns ``(observations, infos)`` and ``step``
    ``(observations, rewards, terminations, truncations, infos)`` with observations a float32
    array of shape ``(num_envs, n_features)`` (zeros for a sub-env left alone), rewards a
    float64 array, terminations/truncations bool arrays and infos a list of dicts. Actions are
    strategy indices (or names), one per sub-env (``None``: leave it alone). The sub-envs step
    on worker threads so that their utterances, realized inside each wrapper, are encoded in
    one batched call per round.

    Args:
        vec: The vector env (default seats: only the system external).
        autoreset_mode: Default: the vector env's.
        **wrapper_kwargs: Passed to every :class:`~dialogue_gym.env.wrappers.StrategyActions`.

    Attributes:
        single_observation_space: ``Box(0, 1, (n_features,), float32)``.
        single_action_space: ``Discrete(k)`` over the card's strategies.
        observation_space: ``Box`` of shape ``(num_envs, n_features)``.
        action_space: ``MultiDiscrete([k] * num_envs)``.
        feature_names: Names of the features (see ``StrategyActions``).
        strategy_names: The strategies, in action order.
    """

    single_observation_space: spaces.Box
    single_action_space: spaces.Discrete
    view: type[StrategyActions] = StrategyActions
    """The single-env view built over each sub-env."""

    def __init__(
        self, vec: VectorDialogueEnv, autoreset_mode: str | None = None, **wrapper_kwargs: Any
    ) -> None:
        slots = [self.view(env, **wrapper_kwargs) for env in vec.envs]
        super().__init__(vec, slots, autoreset_mode)
        # The realized utterances are only known inside the wrappers: coalesce on threads.
        self._threaded = True
        first = slots[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        n_features = first.observation_space.shape[0]
        self.observation_space = spaces.Box(
            0.0, 1.0, shape=(self.num_envs, n_features), dtype=np.float32
        )
        self.action_space = spaces.MultiDiscrete([int(first.action_space.n)] * self.num_envs)
        self.feature_names = first.feature_names
        self.strategy_names = first.strategy_names

    def _check_action(self, i: int, action: Any) -> None:
        names = self.strategy_names
        if isinstance(action, str):
            if action not in names:
                raise ValueError(f"sub-env {i}: unknown strategy {action!r}; strategies: {names}")
            return
        if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
            action = action.reshape(()).item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(
                f"sub-env {i}: a strategy action is an integer index in [0, {len(names)}) or a "
                f"strategy name, or None; got {action!r}"
            )
        if not 0 <= int(action) < len(names):
            raise ValueError(
                f"sub-env {i}: strategy index {int(action)} out of range [0, {len(names)})"
            )

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        n_features = self.single_observation_space.shape[0]
        return np.zeros(n_features, dtype=np.float32), 0.0, False, False, {}

    def _collate_reset(self, obs: list[Any], infos: list[Any]) -> tuple[Any, list[Any]]:
        return np.stack(obs).astype(np.float32), infos

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        rewards, terminations, truncations = self._arrays(results)
        observations = np.stack([r[0] for r in results]).astype(np.float32)
        return observations, rewards, terminations, truncations, [r[4] for r in results]

    def __repr__(self) -> str:
        return f"<StrategyVectorEnv Discrete({len(self.strategy_names)}) of {self.vec!r}>"


class ConcernVectorEnv(StrategyVectorEnv):
    """The system seat of a :class:`VectorDialogueEnv` as listening moves and feature arrays.

    A :class:`~dialogue_gym.env.wrappers.ConcernActions` over each sub-env, batched like
    :class:`StrategyVectorEnv` (actions are move indices or names; ``strategy_names`` and
    ``move_names`` are the moves).

    Args:
        vec: The vector env (default seats: only the system external).
        autoreset_mode: Default: the vector env's.
        **wrapper_kwargs: Passed to every :class:`~dialogue_gym.env.wrappers.ConcernActions`.
    """

    view = ConcernActions

    def __init__(
        self, vec: VectorDialogueEnv, autoreset_mode: str | None = None, **wrapper_kwargs: Any
    ) -> None:
        super().__init__(vec, autoreset_mode, **wrapper_kwargs)
        self.move_names = self.strategy_names
