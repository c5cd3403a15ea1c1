"""API-conformance checks that anyone can run on their own dialogue environments.

Every check raises ``AssertionError`` with a message naming the env, the seat mode, the check
and what went wrong; warnings that Gymnasium's, PettingZoo's or Stable-Baselines3's checkers
emit about API problems count as failures too (``strict=True``, the default).

* :func:`check_parallel_env` — PettingZoo's ``parallel_api_test`` and ``parallel_seed_test``
  plus a full-episode same-seed determinism check, per seat mode.
* :func:`check_single_agent` — Gymnasium's ``check_env`` plus same-seed replay of full episodes.
* :func:`check_strategy_env` — Gymnasium's and Stable-Baselines3's ``check_env`` plus replay.
* :func:`check_env_id` — all of the above for a registered id, for every seat mode and view.

Example:
    >>> from dialogue_gym.env.checkers import check_env_id
    >>> check_env_id("P4G-hard-v0", encoder="hashing")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env as gym_check_env
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test, parallel_seed_test

__all__ = [
    "PERSUASION_SENTENCES",
    "SEAT_MODES",
    "USER_SENTENCES",
    "VIEWS",
    "FixedSystemPolicy",
    "FixedUserPolicy",
    "check_determinism",
    "check_env_id",
    "check_parallel_env",
    "check_single_agent",
    "check_strategy_env",
    "first_difference",
    "seat_mode_kwargs",
]

#: Real system utterances used (besides random samples of the action space) in the
#: determinism checks.
PERSUASION_SENTENCES = (
    "Hi there! How is your day going so far?",
    "Have you ever heard of a charity called Save the Children?",
    "They have been helping children in poor countries for over a hundred years.",
    "Even fifty cents from your task payment can buy medicine for a sick child.",
    "Charity watchdogs rate them highly, and their audited reports are public.",
    "There is no minimum at all, and the amount is completely up to you.",
    "Would you be willing to donate 50 cents of your task payment to Save the Children?",
    "How much would you feel comfortable giving?",
)

#: Real user replies used in the determinism checks when the user seat is external.
USER_SENTENCES = (
    "Hi, I'm fine, thanks. What's this about?",
    "Money is pretty tight for me right now, honestly.",
    "How do I know the money actually reaches the kids?",
    "Hmm, that makes sense. I might be open to it.",
    "No, thanks. I'd rather keep my payment.",
    "Okay, you convinced me. I'll donate $0.50.",
)

#: Seat modes: which seats are external. ``"user"`` also needs a system policy.
SEAT_MODES = ("system", "self_play", "user")

#: Gymnasium views checked by :func:`check_env_id`.
VIEWS = ("system", "user", "self_play", "strategy")

_STRICT_SOURCES = ("gymnasium", "pettingzoo", "stable_baselines3")
_BENIGN = (
    # Not an API problem: the default seed argument, checked elsewhere, etc.
    "is different from the unwrapped version",
)


class FixedSystemPolicy:
    """A simple system policy for the ``"user"`` seat mode: always says the same sentence.

    Args:
        text: The utterance it always returns.
    """

    def __init__(
        self,
        text: str = "Even a small donation from your task payment helps a child in need. "
        "Would you consider giving 50 cents to Save the Children?",
    ) -> None:
        self.text = text

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset (accepts the episode seed)."""

    def act(self, observation: Mapping[str, Any]) -> str:
        """Returns :attr:`text`."""
        return self.text


class FixedUserPolicy(FixedSystemPolicy):
    """A simple user policy (for ``SingleAgent(..., other=...)`` on self-play envs)."""

    def __init__(self, text: str = "I'm not sure. How would my money actually be used?") -> None:
        super().__init__(text)


def seat_mode_kwargs(mode: str) -> dict[str, Any]:
    """Constructor keyword arguments of a seat mode (a fresh system policy each call).

    Args:
        mode: ``"system"`` (only the system external), ``"self_play"`` (both external) or
            ``"user"`` (only the user external, the system played by :class:`FixedSystemPolicy`).

    Raises:
        ValueError: Unknown mode.
    """
    if mode == "system":
        return {"external": ("system",)}
    if mode == "self_play":
        return {"external": ("system", "user")}
    if mode == "user":
        return {"external": ("user",), "system_policy": FixedSystemPolicy()}
    raise ValueError(f"unknown seat mode {mode!r}; choose from {SEAT_MODES}")


# -- deep comparison ---------------------------------------------------------------------------


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Describes the first difference between two nested structures, or ``None`` if equal.

    Dicts, lists/tuples and arrays are compared element-wise; floats with a relative tolerance
    of 1e-9 (NaN equals NaN); everything else with ``==``.
    """
    where = path or "<root>"
    if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
        return None if bool(a) == bool(b) and type(a) is type(b) else f"{where}: {a!r} != {b!r}"
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating, int)):
        fa, fb = float(a), float(b)
        if (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-9, abs_tol=0):
            return None
        return f"{where}: {fa!r} != {fb!r}"
    if type(a) is not type(b):
        types = f"{type(a).__name__} != {type(b).__name__}"
        return f"{where}: type {types} ({_short(a)} vs {_short(b)})"
    if isinstance(a, Mapping):
        if list(a.keys()) != list(b.keys()):
            return f"{where}: keys {list(a.keys())} != {list(b.keys())}"
        for key in a:
            diff = first_difference(a[key], b[key], f"{path}[{key!r}]")
            if diff:
                return diff
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            diff = first_difference(x, y, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{where}: array {a.shape}/{a.dtype} != {b.shape}/{b.dtype}"
        if a.dtype == object:
            return first_difference(a.tolist(), b.tolist(), path)
        if a.dtype.kind in "fc":
            same = np.allclose(a, b, rtol=1e-9, atol=0.0, equal_nan=True)
        else:
            same = np.array_equal(a, b)
        return None if same else f"{where}: arrays differ ({_short(a)} vs {_short(b)})"
    try:
        same = bool(a == b)
    except Exception:  # objects without a usable __eq__
        same = a is b
    return None if same else f"{where}: {_short(a)} != {_short(b)}"


# -- failure reporting -------------------------------------------------------------------------


@contextlib.contextmanager
def _check(label: str, strict: bool = True) -> Iterator[None]:
    """Runs a check: any exception or API warning becomes an ``AssertionError`` naming it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                yield
        except AssertionError as exc:
            raise AssertionError(f"{label}: {exc or 'assertion failed'}") from exc
        except Exception as exc:
            raise AssertionError(f"{label}: raised {type(exc).__name__}: {exc}") from exc
    if strict:
        problems = [
            str(w.message)
            for w in caught
            if issubclass(w.category, UserWarning)
            and any(f"{src}" in (w.filename or "") for src in _STRICT_SOURCES)
            and not any(benign in str(w.message) for benign in _BENIGN)
        ]
        if problems:
            listed = "\n  ".join(dict.fromkeys(problems))
            raise AssertionError(f"{label}: the checker warned:\n  {listed}")


# -- parallel env ------------------------------------------------------------------------------


def _sentences_for(seat: str) -> Sequence[str]:
    return PERSUASION_SENTENCES if seat == "system" else USER_SENTENCES


def _parallel_rollout(
    env: ParallelEnv, seed: int, source: str, episodes: int, max_steps: int
) -> list[Any]:
    """Plays ``episodes`` episodes (the first reset with ``seed``, later ones unseeded)."""
    trace: list[Any] = []
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)
    for episode in range(episodes):
        observations, infos = env.reset(seed=seed if episode == 0 else None)
        trace.append(("reset", observations, infos))
        for step in range(max_steps):
            if not env.agents:
                break
            if source == "samples":
                actions = {agent: env.action_space(agent).sample() for agent in env.agents}
            else:
                actions = {
                    agent: _sentences_for(agent)[step % len(_sentences_for(agent))]
                    for agent in env.agents
                }
            result = env.step(actions)
            _validate_parallel_step(env, step, *result)
            trace.append(("step", actions, *result))
        assert not env.agents, f"episode {episode} did not end within {max_steps} steps"
    return trace


def _validate_parallel_step(
    env: ParallelEnv,
    step: int,
    observations: Mapping[str, Any],
    rewards: Mapping[str, Any],
    terminations: Mapping[str, Any],
    truncations: Mapping[str, Any],
    infos: Mapping[str, Any],
) -> None:
    """Checks what ``parallel_api_test`` does not: spaces, reward values, flag types."""
    for agent, observation in observations.items():
        assert observation in env.observation_space(agent), (
            f"step {step}: the {agent!r} observation is outside its observation space"
        )
    for agent, reward in rewards.items():
        assert isinstance(reward, (int, float, np.number)) and math.isfinite(float(reward)), (
            f"step {step}: the {agent!r} reward {reward!r} is not a finite number"
        )
    for name, flags in (("terminations", terminations), ("truncations", truncations)):
        for agent, flag in flags.items():
            assert isinstance(flag, (bool, np.bool_)), (
                f"step {step}: {name}[{agent!r}] must be a bool, got {type(flag).__name__}"
            )
    for agent, info in infos.items():
        assert isinstance(info, dict), f"step {step}: infos[{agent!r}] must be a dict"


def check_determinism(
    env_fn: Callable[[], ParallelEnv], seed: int = 7, episodes: int = 2, max_steps: int = 100
) -> None:
    """Same seed and actions → identical observations, rewards, terminations, truncations, infos.

    Two envs from ``env_fn`` are played in lockstep with (a) seeded random samples of the
    action spaces and (b) a fixed list of real sentences; the first env is then replayed with
    the same seed, which must reproduce its first run (no state leaks across episodes).

    Raises:
        AssertionError: Naming the action source and the first differing field.
    """
    env1, env2 = env_fn(), env_fn()
    try:
        for source in ("samples", "sentences"):
            run1 = _parallel_rollout(env1, seed, source, episodes, max_steps)
            run2 = _parallel_rollout(env2, seed, source, episodes, max_steps)
            diff = first_difference(run1, run2)
            assert diff is None, (
                f"two envs with seed {seed} and the same {source} actions diverged at trace{diff}"
            )
            rerun = _parallel_rollout(env1, seed, source, episodes, max_steps)
            diff = first_difference(run1, rerun)
            assert diff is None, (
                f"replaying seed {seed} with the same {source} actions on the same env "
                f"diverged at trace{diff}"
            )
    finally:
        env1.close()
        env2.close()


def check_parallel_env(
    env_fn: Callable[..., ParallelEnv],
    seat_modes: Sequence[str | None] | None = None,
    num_cycles: int = 100,
    seed: int = 7,
    strict: bool = True,
    name: str | None = None,
) -> None:
    """PettingZoo API test, PettingZoo seed test and a determinism check, per seat mode.

    Args:
        env_fn: Builds a fresh env; called with the seat mode's keyword arguments
            (:func:`seat_mode_kwargs`: ``external``, ``system_policy``), or with none for the
            mode ``None``.
        seat_modes: Modes to check (``"system"``, ``"self_play"``, ``"user"``, ``None`` = as
            ``env_fn()`` builds it). Default: ``(None,)``.
        num_cycles: Step limit per episode of the PettingZoo tests.
        seed: Seed of the determinism check.
        strict: Treat the checkers' API warnings as failures.
        name: Label for messages (default: the env's ``env_id``).

    Raises:
        AssertionError: A check failed (the message names the mode and the check).
    """
    for mode in seat_modes if seat_modes is not None else (None,):

        def build(mode: str | None = mode) -> ParallelEnv:
            return env_fn(**(seat_mode_kwargs(mode) if mode else {}))

        prefix = f"[{name or 'env'} | seats={mode or 'default'}]"
        with _check(f"{prefix} building the env", strict):
            env = build()
        if name is None:
            prefix = f"[{getattr(env, 'env_id', None) or 'env'} | seats={mode or 'default'}]"
        with _check(f"{prefix} pettingzoo parallel_api_test", strict):
            parallel_api_test(env, num_cycles=num_cycles)
            env.close()
        with _check(f"{prefix} pettingzoo parallel_seed_test", strict):
            parallel_seed_test(build, num_cycles=num_cycles)
        with _check(f"{prefix} same-seed determinism", strict):
            check_determinism(build, seed=seed, max_steps=num_cycles)


# -- Gymnasium views ---------------------------------------------------------------------------


def _view_actions(env: gym.Env, seed: int, source: str, n: int) -> list[Any]:
    if source == "samples":
        env.action_space.seed(seed)
        return [env.action_space.sample() for _ in range(n)]
    sentences = _sentences_for(getattr(env, "seat", "system"))
    return [sentences[i % len(sentences)] for i in range(n)]


def _view_rollout(env: gym.Env, seed: int, actions: Sequence[Any]) -> list[Any]:
    """One seeded episode with ``actions``; checks every observation is in the space."""
    observation, info = env.reset(seed=seed)
    assert observation in env.observation_space, "reset() returned an observation outside the space"
    trace: list[Any] = [("reset", observation, info)]
    for step, action in enumerate(actions):
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation in env.observation_space, (
            f"step {step} returned an observation outside the observation space"
        )
        assert isinstance(reward, (float, int, np.floating)) and math.isfinite(float(reward)), (
            f"step {step} returned a non-finite or non-numeric reward {reward!r}"
        )
        assert isinstance(terminated, bool) and isinstance(truncated, bool), (
            f"step {step}: terminated/truncated must be bool, got "
            f"{type(terminated).__name__}/{type(truncated).__name__}"
        )
        trace.append(("step", action, observation, reward, terminated, truncated, info))
        if terminated or truncated:
            return trace
    raise AssertionError(f"the episode did not end within {len(actions)} steps")


def _check_view_replay(env: gym.Env, seed: int, max_steps: int) -> None:
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    sources = ("samples",) if discrete else ("samples", "sentences")
    for source in sources:
        actions = _view_actions(env, seed, source, max_steps)
        first = _view_rollout(env, seed, actions)
        env.reset()  # an unseeded episode in between must not change the seeded replay
        second = _view_rollout(env, seed, actions)
        diff = first_difference(first, second)
        assert diff is None, (
            f"replaying reset(seed={seed}) with the same {source} actions diverged at trace{diff}"
        )


def check_single_agent(
    env: gym.Env, seed: int = 7, max_steps: int = 100, strict: bool = True, name: str = ""
) -> None:
    """Gymnasium ``check_env`` plus same-seed replay of full episodes (observations in space).

    Args:
        env: A Gymnasium env, e.g. ``SingleAgent(dialogue_gym.make(...))``.
        seed: Seed of the replay check.
        max_steps: Step limit of a replayed episode.
        strict: Treat Gymnasium's API warnings as failures.
        name: Label for messages.

    Raises:
        AssertionError: A check failed.
    """
    prefix = f"[{name or _label(env)}]"
    with _check(f"{prefix} gymnasium check_env", strict):
        gym_check_env(env, skip_render_check=True, skip_close_check=True)
    with _check(f"{prefix} same-seed replay", strict):
        _check_view_replay(env, seed, max_steps)


def check_strategy_env(
    env: gym.Env, seed: int = 7, max_steps: int = 100, strict: bool = True, name: str = ""
) -> None:
    """Gymnasium and Stable-Baselines3 ``check_env`` plus same-seed replay.

    Args:
        env: A ``StrategyActions`` env (or any SB3-compatible Gymnasium env).
        seed: Seed of the replay check.
        max_steps: Step limit of a replayed episode.
        strict: Treat the checkers' API warnings as failures.
        name: Label for messages.

    Raises:
        AssertionError: A check failed.
    """
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_single_agent(env, seed=seed, max_steps=max_steps, strict=strict, name=name)
    with _check(f"[{name or _label(env)}] stable-baselines3 check_env", strict):
        sb3_check_env(env, warn=True, skip_render_check=True)


def _label(env: Any) -> str:
    inner = getattr(env, "par_env", None)
    env_id = getattr(inner, "env_id", None) or getattr(env, "env_id", None)
    seat = getattr(env, "seat", None) or getattr(getattr(env, "single", None), "seat", None)
    return f"{env_id or type(env).__name__} | {type(env).__name__}" + (
        f" seat={seat}" if seat else ""
    )


# -- everything for a registered id ------------------------------------------------------------


def check_env_id(
    env_id: str,
    seat_modes: Sequence[str] = SEAT_MODES,
    views: bool | Sequence[str] = True,
    num_cycles: int = 100,
    seed: int = 7,
    strict: bool = True,
    **kwargs: Any,
) -> None:
    """Runs every check on a registered env id, for every seat mode and both views.

    Parallel view: :func:`check_parallel_env` for each of ``seat_modes``. Gymnasium views
    (:data:`VIEWS`): ``"system"`` — ``SingleAgent`` of the system seat (system-only env);
    ``"user"`` — ``SingleAgent`` of the user seat (user-only env with
    :class:`FixedSystemPolicy`); ``"self_play"`` — ``SingleAgent`` of each seat of a self-play
    env with the other seat played by a fixed policy (``other=``); ``"strategy"`` —
    ``StrategyActions`` (:func:`check_strategy_env`).

    Args:
        env_id: A registered id (``"P4G-hard-v0"``; unversioned ids resolve to the latest).
        seat_modes: Seat modes of the parallel checks (default: all three).
        views: ``True`` (all of :data:`VIEWS`), ``False`` (none) or a subset of :data:`VIEWS`.
        num_cycles: Step limit per episode.
        seed: Seed of the determinism checks.
        strict: Treat the checkers' API warnings as failures.
        **kwargs: Overrides passed to ``dialogue_gym.make`` (e.g. ``encoder="hashing"``);
            ``external`` and ``system_policy`` are set per seat mode.

    Raises:
        AssertionError: A check failed (the message names the id, mode, view and check).
        ValueError: An unknown view name.
    """
    from dialogue_gym.env.registry import make
    from dialogue_gym.env.wrappers import SingleAgent, StrategyActions

    selected = VIEWS if views is True else () if views is False else tuple(views)
    unknown = set(selected) - set(VIEWS)
    if unknown:
        raise ValueError(f"unknown views {sorted(unknown)}; choose from {VIEWS}")
    kwargs = {k: v for k, v in kwargs.items() if k not in ("external", "system_policy")}
    env_fn = functools.partial(make, env_id, **kwargs)
    check_parallel_env(
        env_fn, seat_modes=seat_modes, num_cycles=num_cycles, seed=seed, strict=strict, name=env_id
    )
    options: dict[str, Any] = {"seed": seed, "max_steps": num_cycles, "strict": strict}

    def build(mode: str) -> ParallelEnv:
        with _check(f"[{env_id} | seats={mode}] building the env", strict):
            return env_fn(**seat_mode_kwargs(mode))

    if "system" in selected:
        check_single_agent(
            SingleAgent(build("system"), seat="system"),
            name=f"{env_id} | SingleAgent seat=system",
            **options,
        )
    if "user" in selected:
        check_single_agent(
            SingleAgent(build("user"), seat="user"),
            name=f"{env_id} | SingleAgent seat=user",
            **options,
        )
    if "self_play" in selected:
        for seat, other in (("system", FixedUserPolicy()), ("user", FixedSystemPolicy())):
            check_single_agent(
                SingleAgent(build("self_play"), seat=seat, other=other),
                name=f"{env_id} | SingleAgent seat={seat} other=fixed (self-play env)",
                **options,
            )
    if "strategy" in selected:
        check_strategy_env(
            StrategyActions(build("system")), name=f"{env_id} | StrategyActions", **options
        )
