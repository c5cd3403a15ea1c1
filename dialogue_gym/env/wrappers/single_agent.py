"""``SingleAgent``: a Gymnasium ``Env`` view of one seat of a :class:`~dialogue_gym.DialogueEnv`.

The other seat must be internal: either the env fills it (for ``seat="system"`` the default
``external=("system",)``, the user simulator answers; for ``seat="user"`` ``external=("user",)``
and a ``system_policy``), or the env is a self-play env and the wrapper plays the other seat
with a given agent (``other=``). Each :meth:`SingleAgent.step` is one exchange.

Example:
    >>> env = SingleAgent(dialogue_gym.make("P4G-hard", encoder="hashing"))  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> obs, reward, terminated, truncated, info = env.step("Hi! How are you?")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces
from pettingzoo import ParallelEnv

from dialogue_gym.argtypes import check_seed

SEATS = ("system", "user")


class SingleAgent(gym.Env):
    """One seat of a dialogue ``ParallelEnv`` as a single-agent ``gymnasium.Env``.

    ``observation_space``/``action_space`` are the parallel env's spaces for ``seat``;
    ``reset`` returns that seat's ``(observation, info)`` and ``step`` its
    ``(observation, reward, terminated, truncated, info)``, one exchange per step.

    The other seat must be internal. Either the env fills it (``seat="system"``: the default
    ``external=("system",)``; ``seat="user"``: ``external=("user",)`` plus a ``system_policy``),
    or the env is a self-play env (``external=("system", "user")``) and ``other`` is the agent
    (any object with ``act(observation)``, optionally ``reset(seed)``) that this wrapper plays
    the other seat with. Rewards the seat earns while the other seat speaks are added to the
    step's reward; infos of those inner steps are merged into the step's info (later values
    win, ``fallbacks`` are concatenated).

    Seeding: ``reset(seed=s)`` seeds the parallel env with ``s`` (the episode equals
    ``par_env.reset(seed=s)``'s) and the wrapper's ``np_random`` (which seeds ``other``);
    ``reset()`` continues both random streams.

    Args:
        env: The parallel env (a :class:`~dialogue_gym.DialogueEnv` or a PettingZoo wrapper
            around one, e.g. :class:`~dialogue_gym.env.wrappers.RecordEpisodes`).
        seat: The seat the caller plays: ``"system"`` or ``"user"``.
        other: The agent for the other seat of a self-play env; ``None`` when the env fills
            the other seat itself.

    Raises:
        ValueError: ``seat`` is unknown or the env's external seats do not fit (see above).
        TypeError: ``other`` has no ``act`` method.
    """

    def __init__(self, env: ParallelEnv, seat: str = "system", other: Any = None) -> None:
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        other_seat = SEATS[1 - SEATS.index(seat)]
        external = getattr(env, "external", None)
        if other is not None:
            if not callable(getattr(other, "act", None)):
                raise TypeError(f"other must have an act(observation) method, got {other!r}")
            if external is not None and set(external) != set(SEATS):
                raise ValueError(
                    f"other= plays the {other_seat!r} seat of a self-play env, which needs "
                    f"external=('system', 'user'); this env has external={tuple(external)!r}"
                )
        elif external is not None and tuple(external) != (seat,):
            fix = (
                "build it with the default external=('system',)"
                if seat == "system"
                else "build it with external=('user',) and a system_policy"
            )
            raise ValueError(
                f"SingleAgent(seat={seat!r}) needs an env where only the {seat!r} seat is "
                f"external, got external={tuple(external)!r}: {fix}, or pass other=<agent> "
                "with a self-play env"
            )
        self.par_env = env
        self.seat = seat
        self.other_seat = other_seat
        self.other = other
        self.observation_space: spaces.Space = env.observation_space(seat)
        self.action_space: spaces.Space = env.action_space(seat)
        self.metadata = dict(getattr(env, "metadata", {}))
        self.render_mode = getattr(env, "render_mode", None)

    @property
    def card(self) -> Any:
        """The task card of the underlying env."""
        return self.par_env.card

    @property
    def dialogue_env(self) -> Any:
        """The innermost parallel env (PettingZoo wrappers removed)."""
        return getattr(self.par_env, "unwrapped", self.par_env)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Starts an episode; see the class docstring for seeding.

        Args:
            seed: Episode seed (``None`` continues the random streams).
            options: Passed to the parallel env's ``reset``.

        Returns:
            The seat's observation and info.

        Raises:
            TypeError: ``seed`` is not an int or ``None`` (a bool, a float, a string).
            ValueError: ``seed`` is negative.
        """
        seed = check_seed(seed)  # numpy ints too, which Gymnasium's own check refuses
        super().reset(seed=seed)
        observations, infos = self.par_env.reset(seed=seed, options=options)
        info = dict(infos.get(self.seat, {}))
        if self.other is not None:
            if callable(getattr(self.other, "reset", None)):
                self.other.reset(seed=int(self.np_random.integers(2**31)))
            observations, _, _, _, info = self._others_turns(observations, info)
        return observations[self.seat], info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Plays ``action`` for the seat and runs the other seat until the seat speaks again.

        Args:
            action: The seat's utterance (``str``; the system may pass
                ``{"utterance": str, "estimate": ...}``).

        Returns:
            ``(observation, reward, terminated, truncated, info)`` of the seat.

        Raises:
            RuntimeError: The episode is over (call ``reset``).
            TypeError: The action is not text.
        """
        observations, rewards, terminations, truncations, infos = self.par_env.step(
            {self.seat: action}
        )
        reward = float(rewards[self.seat])
        terminated = bool(terminations[self.seat])
        truncated = bool(truncations[self.seat])
        info = dict(infos.get(self.seat, {}))
        if self.other is not None and not (terminated or truncated):
            observations, extra, terminated, truncated, info = self._others_turns(
                observations, info
            )
            reward += extra
        return observations[self.seat], reward, terminated, truncated, info

    def _others_turns(
        self, observations: dict[str, Any], info: dict[str, Any]
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Lets ``other`` speak while it is the other seat's turn (self-play envs only)."""
        reward, terminated, truncated = 0.0, False, False
        while (
            not (terminated or truncated)
            and observations[self.other_seat].get("to_speak")
            and not observations[self.seat].get("to_speak")
        ):
            action = self.other.act(observations[self.other_seat])
            observations, rewards, terms, truncs, infos = self.par_env.step(
                {self.other_seat: action}
            )
            reward += float(rewards[self.seat])
            terminated, truncated = bool(terms[self.seat]), bool(truncs[self.seat])
            later = dict(infos.get(self.seat, {}))
            fallbacks = [*info.get("fallbacks", []), *later.get("fallbacks", [])]
            info = {**info, **later, "fallbacks": fallbacks}
        return observations, reward, terminated, truncated, info

    def render(self) -> Any:
        """Renders through the parallel env (``"ansi"``: the transcript text)."""
        return self.par_env.render()

    def close(self) -> None:
        """Closes the parallel env."""
        self.par_env.close()

    def __repr__(self) -> str:
        return f"<SingleAgent seat={self.seat!r} of {self.par_env!r}>"
