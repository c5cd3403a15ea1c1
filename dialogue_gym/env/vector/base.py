"""What the three vector views share: sub-env states, seeding, autoreset, validation, errors.

A view (:class:`~dialogue_gym.env.vector.VectorDialogueEnv`, the single-seat views) subclasses
:class:`VectorBase` and implements its per-sub-env hooks (``_slot_*``) and ``_collate``; the
autoreset modes and the sub-env error contract are described in :mod:`dialogue_gym.env.vector`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.argtypes import check_seed
from dialogue_gym.env.vector.batching import SlotRunner

__all__ = ["AUTORESET_MODES", "SubEnvError", "VectorBase"]

AUTORESET_MODES = ("next_step", "same_step", "disabled")

# Sub-env states: no running episode / running / ended in the last step (next_step autoreset).
_IDLE, _LIVE, _ENDED = "idle", "live", "ended"


class SubEnvError(RuntimeError):
    """Some sub-envs raised during a vector ``step`` or ``reset``; the others finished.

    Attributes:
        errors: Sub-env index → the exception it raised (its episode is abandoned: the
            sub-env waits for ``reset_at``).
        results: What the call returns otherwise, with empty entries for the failed sub-envs.
    """

    def __init__(self, errors: Mapping[int, BaseException], results: Any) -> None:
        first = min(errors)
        super().__init__(
            f"{len(errors)} sub-env(s) raised: {sorted(errors)}; sub-env {first}: "
            f"{type(errors[first]).__name__}: {errors[first]}"
        )
        self.errors = dict(errors)
        self.results = results


class VectorBase:
    """Sub-env states, autoreset, validation and error handling shared by the views.

    A view implements the per-sub-env hooks (``_slot_*``) and :meth:`_collate`.
    """

    num_envs: int
    autoreset_mode: str
    _threaded: bool

    def _init_base(self, num_envs: int, autoreset_mode: str, runner: SlotRunner) -> None:
        if autoreset_mode not in AUTORESET_MODES:
            raise ValueError(
                f"autoreset_mode must be one of {AUTORESET_MODES}, got {autoreset_mode!r}"
            )
        self.num_envs = num_envs
        self.autoreset_mode = autoreset_mode
        self._runner = runner
        self._states = [_IDLE] * num_envs
        self._closed = False
        self.autoreset_mask = np.zeros(num_envs, dtype=bool)

    # -- hooks ------------------------------------------------------------------------------------

    def _slot_reset(self, i: int, seed: int | None, options: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _slot_step(self, i: int, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        raise NotImplementedError

    def _slot_finished(self, i: int, result: tuple[Any, Any, Any, Any, Any]) -> bool:
        raise NotImplementedError

    def _check_action(self, i: int, action: Any) -> None:
        """Raises ``TypeError``/``ValueError`` for an action the sub-env would reject."""

    def _prefetch(self, actions: Mapping[int, Any]) -> None:
        """Encodes the texts the stepping sub-envs will encode, in one batched call."""

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        raise NotImplementedError

    def _first_step(self, i: int, obs: Any, info: Any) -> tuple[Any, Any, Any, Any, Any]:
        """The result of a next-step autoreset: the new episode's start, nothing earned."""
        raise NotImplementedError

    def _merge_final(
        self, final: tuple[Any, Any, Any, Any, Any], obs: Any, info: Any
    ) -> tuple[Any, Any, Any, Any, Any]:
        """The result of a same-step autoreset (see the module docstring)."""
        raise NotImplementedError

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        raise NotImplementedError

    # -- API ------------------------------------------------------------------------------------

    @property
    def active(self) -> list[bool]:
        """Per sub-env: whether an episode is running (it takes an action this step)."""
        return [state == _LIVE for state in self._states]

    def reset(
        self,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, list[Any]]:
        """Starts an episode in every sub-env.

        Args:
            seed: ``int``: sub-env ``i`` gets ``seed + i``; a sequence: one seed (or ``None``)
                per sub-env; ``None``: every sub-env continues its own random stream.
            options: Passed to every sub-env's ``reset``.

        Returns:
            Observations and infos, one per sub-env (a view's ``_collate`` format).

        Raises:
            TypeError: A seed that is not an int (nor a sequence of ints or ``None``).
            ValueError: A seed sequence of the wrong length, or a negative seed.
            SubEnvError: Some sub-envs raised (the others were reset).
        """
        self._check_open()
        seeds: list[int | None]
        if isinstance(seed, (Sequence, np.ndarray)) and not isinstance(seed, (str, bytes)):
            seeds = [check_seed(s, f"seed[{i}]") for i, s in enumerate(seed)]
            if len(seeds) != self.num_envs:
                raise ValueError(
                    f"reset(seed=...) needs one seed per sub-env ({self.num_envs}), "
                    f"got {len(seeds)}"
                )
        else:
            first = check_seed(seed)
            seeds = [None if first is None else first + i for i in range(self.num_envs)]
        tasks = {
            i: functools.partial(self._slot_reset, i, seeds[i], options)
            for i in range(self.num_envs)
        }
        outcomes = self._runner.run(tasks, self._threaded)
        obs: list[Any] = []
        infos: list[Any] = []
        errors: dict[int, BaseException] = {}
        for i in range(self.num_envs):
            result, exc = outcomes[i]
            if exc is not None:
                errors[i] = exc
                self._states[i] = _IDLE
                result = self._blank(i)[0], self._blank(i)[4]
            else:
                self._states[i] = _LIVE
            obs.append(result[0])
            infos.append(result[1])
        self.autoreset_mask = np.zeros(self.num_envs, dtype=bool)
        out = self._collate_reset(obs, infos)
        if errors:
            raise SubEnvError(errors, out)
        return out

    def reset_at(
        self, index: int, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, Any]:
        """Starts an episode in sub-env ``index`` only (e.g. an evaluator's next episode seed).

        Args:
            index: The sub-env, ``0 <= index < num_envs``.
            seed: Its episode seed (``None``: continue its random stream).
            options: Passed to its ``reset``.

        Returns:
            That sub-env's observation and info.

        Raises:
            IndexError: ``index`` out of range.
        """
        self._check_open()
        if isinstance(index, bool) or not 0 <= int(index) < self.num_envs:
            raise IndexError(f"sub-env index {index!r} out of range [0, {self.num_envs})")
        index = int(index)
        self._states[index] = _IDLE
        obs, info = self._slot_reset(index, seed, options)
        self._states[index] = _LIVE
        return obs, info

    def step(self, actions: Sequence[Any]) -> tuple[Any, ...]:
        """Steps every sub-env with its action (see the module docstring for actions).

        Args:
            actions: One action per sub-env (``None``: leave it alone this step).

        Returns:
            Observations, rewards, terminations, truncations and infos (a view's format).

        Raises:
            ValueError: Not one action per sub-env.
            TypeError: A malformed action (nothing was stepped).
            RuntimeError: An action for a sub-env with no running episode, or the env is
                closed (nothing was stepped).
            SubEnvError: Some sub-envs raised (the others were stepped).
        """
        self._check_open()
        if isinstance(actions, (str, bytes, Mapping)) or not isinstance(
            actions, (Sequence, np.ndarray)
        ):
            raise TypeError(
                f"actions must be a sequence with one action per sub-env, got "
                f"{type(actions).__name__}"
            )
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(
                f"step() needs one action per sub-env: expected {self.num_envs}, got {len(actions)}"
            )
        stepping: dict[int, Any] = {}
        resetting: list[int] = []
        for i, action in enumerate(actions):
            state = self._states[i]
            if state == _ENDED and self.autoreset_mode == "next_step":
                resetting.append(i)
            elif state == _LIVE:
                if action is not None:
                    self._check_action(i, action)
                    stepping[i] = action
            elif action is not None:
                raise RuntimeError(
                    f"sub-env {i} has no running episode: pass None for it, or start one "
                    "with reset() or reset_at()"
                )
        self._prefetch(stepping)
        tasks: dict[int, Callable[[], Any]] = {
            i: functools.partial(self._slot_step, i, action) for i, action in stepping.items()
        }
        tasks.update({i: functools.partial(self._slot_reset, i, None, None) for i in resetting})
        outcomes = self._runner.run(dict(sorted(tasks.items())), self._threaded)
        results = [self._blank(i) for i in range(self.num_envs)]
        errors: dict[int, BaseException] = {}
        autoreset = np.zeros(self.num_envs, dtype=bool)
        finished: list[int] = []
        for i, (result, exc) in outcomes.items():
            if exc is not None:
                errors[i] = exc
                self._states[i] = _IDLE
            elif i in resetting:
                results[i] = self._first_step(i, *result)
                self._states[i] = _LIVE
                autoreset[i] = True
            else:
                results[i] = result
                if self._slot_finished(i, result):
                    finished.append(i)
                    self._states[i] = _ENDED if self.autoreset_mode == "next_step" else _IDLE
        if self.autoreset_mode == "same_step" and finished:
            resets = {i: functools.partial(self._slot_reset, i, None, None) for i in finished}
            for i, (result, exc) in self._runner.run(resets, self._threaded).items():
                if exc is not None:
                    errors[i] = exc
                    continue
                results[i] = self._merge_final(results[i], *result)
                self._states[i] = _LIVE
                autoreset[i] = True
        self.autoreset_mask = autoreset
        out = self._collate(results)
        if errors:
            raise SubEnvError(errors, out)
        return out

    def _collate_reset(self, obs: list[Any], infos: list[Any]) -> tuple[Any, list[Any]]:
        return obs, infos

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the vector env is closed")
