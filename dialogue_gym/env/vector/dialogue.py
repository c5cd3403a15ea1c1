"""The parallel (PettingZoo) vector view: one lone-env result per sub-env, as lists."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from gymnasium import spaces

from dialogue_gym.env.dialogue_env import SEATS, SYSTEM, DialogueEnv
from dialogue_gym.env.vector.base import VectorBase
from dialogue_gym.env.vector.batching import SlotRunner, StepRounds

__all__ = ["VectorDialogueEnv"]

_WORD = re.compile(r"\w")


class VectorDialogueEnv(VectorBase):
    """N dialogue envs stepped together, one PettingZoo result per sub-env (see the module doc).

    Build it with :func:`make_vec`, which shares one encoder and one LLM backend between the
    sub-envs and batches their calls. Built from ready envs, it batches encoding for envs that
    share an encoder object, and steps envs with LLM backends on threads (their calls overlap
    but are not coalesced unless the envs were built with this class's ``rounds``).

    ``reset`` returns ``(observations, infos)`` and ``step``
    ``(observations, rewards, terminations, truncations, infos)``: lists with one entry per
    sub-env, each what a lone env returns (dicts keyed by seat; empty dicts for a sub-env left
    alone). Drive the sub-envs through one view at a time (this one,
    :class:`SingleAgentVectorEnv` or :class:`StrategyVectorEnv`).

    Args:
        envs: The sub-envs.
        autoreset_mode: ``"next_step"``, ``"same_step"`` or ``"disabled"``.
        threaded: Step the sub-envs on worker threads (default: when they have LLM backends).
        rounds: The :class:`StepRounds` their :class:`BatchingEncoder` /
            :class:`BatchingBackend` were built with (a new one by default).
        owned: Objects closed with this env (what :func:`make_vec` built for it).

    Attributes:
        envs: The sub-envs (``envs[i].revealed()`` after an episode, ...).
        num_envs: N.
        autoreset_mode: The autoreset policy.
        autoreset_mask: Which sub-envs the last ``step`` reset.
        encoder: The sub-envs' (first sub-env's) encoder.
        backend: The sub-envs' (first sub-env's) LLM backend, or ``None``.
        rounds: The :class:`StepRounds` coalescing the sub-envs' calls.

    Raises:
        ValueError: No envs, or an unknown ``autoreset_mode``.
    """

    metadata: Mapping[str, Any] = MappingProxyType(
        {"name": "dialogue_gym_vector_v0", "autoreset_mode": None}
    )

    def __init__(
        self,
        envs: Sequence[DialogueEnv],
        autoreset_mode: str = "next_step",
        threaded: bool | None = None,
        rounds: StepRounds | None = None,
        owned: Sequence[Any] = (),
    ) -> None:
        envs = list(envs)
        if not envs:
            raise ValueError("a vector env needs at least one sub-env")
        rounds = rounds or StepRounds()
        self._init_base(len(envs), autoreset_mode, SlotRunner(len(envs), rounds))
        self.envs = envs
        self.rounds = rounds
        self._dialogue_envs = [_innermost(env) for env in envs]
        self.encoder = getattr(self._dialogue_envs[0], "encoder", None)
        self.backend = getattr(self._dialogue_envs[0], "backend", None)
        if threaded is None:
            threaded = any(getattr(e, "backend", None) is not None for e in self._dialogue_envs)
        self._threaded = bool(threaded)
        self._owned = list(owned)
        self.possible_agents = list(envs[0].possible_agents)
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}

    @property
    def card(self) -> Any:
        """The task card (of the first sub-env)."""
        return self.envs[0].card

    def observation_space(self, agent: str) -> spaces.Space:
        """A sub-env's observation space of ``agent``."""
        return self.envs[0].observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """A sub-env's action space of ``agent``."""
        return self.envs[0].action_space(agent)

    def run_batched(self, tasks: Sequence[Callable[[], Any]]) -> list[Any]:
        """Runs ``tasks`` at once as members of this env's rounds; returns their results.

        The agents of a step act this way
        (:func:`~dialogue_gym.evaluation.episode_loop.run_vectorized`):
        an agent that encodes with a sub-env's encoder (``agent.encoder is env.envs[i].encoder``,
        what :class:`~dialogue_gym.evaluation.executors.VectorExecutor` gives it) has its encoder
        misses
        batched with the other agents' — and its LLM requests through the sub-envs' backend
        coalesced — exactly as the sub-envs' own calls are in :meth:`step`. A task's exception
        is re-raised here (the first, in ``tasks``' order) after every task has finished.
        """
        outcomes = self._runner.run(dict(enumerate(tasks)), threaded=True)
        for _, error in outcomes.values():
            if error is not None:
                raise error
        return [result for result, _ in outcomes.values()]

    def render(self) -> list[str | None]:
        """Each sub-env's ``render()``."""
        return [env.render() for env in self.envs]

    def close(self) -> None:
        """Closes the sub-envs, the worker threads and what :func:`make_vec` built (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for env in self.envs:
            env.close()
        self._runner.close()
        for thing in self._owned:
            thing.close()

    def __enter__(self) -> VectorDialogueEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        env_id = getattr(self.envs[0], "env_id", type(self.envs[0]).__name__)
        return f"<VectorDialogueEnv {env_id} x{self.num_envs} autoreset={self.autoreset_mode}>"

    # -- hooks ----------------------------------------------------------------------------------

    def _slot_reset(self, i: int, seed: int | None, options: Any) -> tuple[Any, Any]:
        return self.envs[i].reset(seed=seed, options=options)

    def _slot_step(self, i: int, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        return self.envs[i].step(self._as_dict(i, action))

    def _slot_finished(self, i: int, result: tuple[Any, Any, Any, Any, Any]) -> bool:
        return not self.envs[i].agents

    def _as_dict(self, i: int, action: Any) -> Mapping[str, Any]:
        if isinstance(action, Mapping) and "utterance" not in action:
            return action
        return {self._dialogue_envs[i].turn: action}

    def _check_action(self, i: int, action: Any) -> None:
        if isinstance(action, str):
            return
        if isinstance(action, Mapping):
            if "utterance" in action:
                turn = self._dialogue_envs[i].turn
                if turn != SYSTEM or not isinstance(action["utterance"], str):
                    raise TypeError(
                        f"sub-env {i}: a {{'utterance', 'estimate'}} action is the system's, "
                        f"with a str utterance (it is the {turn!r} seat's turn)"
                    )
                return
            unknown = set(action) - set(SEATS)
            if unknown:
                raise TypeError(
                    f"sub-env {i}: a dict action is {{seat: action}} with seats {SEATS} or the "
                    f"system's {{'utterance', 'estimate'}}; got keys {sorted(map(str, action))}"
                )
            return
        raise TypeError(
            f"sub-env {i}: an action is a str (the utterance of the seat whose turn it is), a "
            f"dict, or None; got {type(action).__name__}"
        )

    def _prefetch(self, actions: Mapping[int, Any]) -> None:
        texts: dict[int, tuple[Any, list[str]]] = {}
        for i, action in actions.items():
            env = self._dialogue_envs[i]
            if env.turn != SYSTEM:
                continue
            text = _system_text(action)
            encoder = getattr(env, "encoder", None)
            if text is None or encoder is None:
                continue
            # What the user simulator will encode: the truncated, stripped utterance.
            text = text[: env.max_utterance_chars].strip()
            if _WORD.search(text) and _encodable(text):
                texts.setdefault(id(encoder), (encoder, []))[1].append(text)
        for encoder, batch in texts.values():
            encoder.encode(list(dict.fromkeys(batch)))

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        return {}, {}, {}, {}, {}

    def _first_step(self, i: int, obs: Any, info: Any) -> tuple[Any, Any, Any, Any, Any]:
        seats = list(obs)
        return (
            obs,
            dict.fromkeys(seats, 0.0),
            dict.fromkeys(seats, False),
            dict.fromkeys(seats, False),
            info,
        )

    def _merge_final(
        self, final: tuple[Any, Any, Any, Any, Any], obs: Any, info: Any
    ) -> tuple[Any, Any, Any, Any, Any]:
        final_obs, rewards, terminations, truncations, final_info = final
        merged = {
            seat: {
                **info.get(seat, {}),
                "final_obs": final_obs.get(seat),
                "final_info": final_info.get(seat, {}),
            }
            for seat in {**final_info, **info}
        }
        return obs, rewards, terminations, truncations, merged

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        return tuple([list(column) for column in zip(*results, strict=True)])


def _innermost(env: Any) -> DialogueEnv:
    """The dialogue env under PettingZoo wrappers (``unwrapped``)."""
    return getattr(env, "unwrapped", env)


def _system_text(action: Any) -> str | None:
    """The system utterance inside a vector action, if there is one."""
    if isinstance(action, Mapping):
        action = action.get("utterance", action.get(SYSTEM))
        if isinstance(action, Mapping):
            action = action.get("utterance")
    return action if isinstance(action, str) else None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the env repairs them first
        return False
    return True
