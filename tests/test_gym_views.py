"""Gymnasium registration of the single-agent views: ids generated from the registry,
gymnasium.make / make_vec for every env, idempotence, and the views' VectorEnv conformance."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

import dialogue_gym
from dialogue_gym.env.gym_views import NAMESPACE, gymnasium_ids, register_views
from dialogue_gym.env.vector import (
    ConcernVectorEnv,
    SingleAgentVectorEnv,
    StrategyVectorEnv,
    make_vec,
)
from dialogue_gym.env.wrappers import ConcernActions, SingleAgent, StrategyActions

FAST = {"encoder": "hashing"}
IDS = sorted(dialogue_gym.registry)


def dump(value) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def test_every_registered_env_has_its_three_views():
    ours = {k for k in gymnasium.registry if k.startswith(f"{NAMESPACE}/")}
    expected = {gym_id for env_id in IDS for gym_id in gymnasium_ids(env_id)}
    assert expected <= ours
    assert "dialogue_gym/P4G-hard-Strategy-v0" in ours and "dialogue_gym/CB-soft-v0" in ours
    assert gymnasium.spec("dialogue_gym/P4G-hard-Strategy-v0").kwargs == {
        "dialogue_id": "P4G-hard-v0"
    }


def test_registration_is_idempotent_and_only_touches_gymnasium():
    before = dict(gymnasium.registry)
    specs = dict(dialogue_gym.registry)
    assert register_views() == []  # everything is there already
    assert dict(gymnasium.registry) == before and dict(dialogue_gym.registry) == specs


def test_import_registers_in_a_fresh_process():
    code = (
        "import gymnasium, dialogue_gym, importlib;"
        "n = sum(k.startswith('dialogue_gym/') for k in gymnasium.registry);"
        "importlib.reload(dialogue_gym.env.gym_views); dialogue_gym.env.gym_views.register_views();"
        "m = sum(k.startswith('dialogue_gym/') for k in gymnasium.registry);"
        "print(n, m, len(dialogue_gym.registry))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    n, m, envs = map(int, out)
    assert n == m == 3 * envs  # the text, strategy and concern views


def test_a_later_registration_gets_its_views():
    dialogue_gym.register(
        "P4G-hard-v9", "dialogue_gym.env.dialogue_env:DialogueEnv", card="p4g", user="hard"
    )
    try:
        env = gymnasium.make("dialogue_gym/P4G-hard-Strategy-v9", **FAST)
        assert env.unwrapped.par_env.spec.id == "P4G-hard-v9"
        env.close()
    finally:
        del dialogue_gym.registry["P4G-hard-v9"]
        for gym_id in gymnasium_ids("P4G-hard-v9"):
            del gymnasium.registry[gym_id]


@pytest.mark.parametrize("env_id", IDS)
def test_make_every_view_equals_the_wrapper(env_id):
    text_id, strategy_id, concern_id = gymnasium_ids(env_id)
    for gym_id, view in ((strategy_id, StrategyActions), (concern_id, ConcernActions)):
        env = gymnasium.make(gym_id, **FAST)
        lone = view(dialogue_gym.make(env_id, **FAST))
        assert type(env.unwrapped) is view
        assert env.observation_space == lone.observation_space
        assert env.action_space == lone.action_space
        obs, _ = env.reset(seed=3)
        expected, _ = lone.reset(seed=3)
        np.testing.assert_array_equal(obs, expected)
        for action in (0, 1):
            got, want = env.step(action), lone.step(action)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1:4] == want[1:4]
        env.close()
        lone.close()

    text = gymnasium.make(text_id, **FAST)
    assert isinstance(text.unwrapped, SingleAgent) and text.unwrapped.seat == "system"
    lone_text = SingleAgent(dialogue_gym.make(env_id, **FAST))
    assert dump(text.reset(seed=5)) == dump(lone_text.reset(seed=5))
    assert dump(text.step("Hello there!")) == dump(lone_text.step("Hello there!"))
    text.close()
    lone_text.close()


def test_strategy_view_passes_gymnasium_env_checker():
    env = gymnasium.make("dialogue_gym/P4G-hard-Strategy-v0", **FAST)
    check_env(env.unwrapped, skip_render_check=True)


def test_make_routes_wrapper_options_and_make_overrides():
    env = gymnasium.make(
        "dialogue_gym/P4G-hard-Strategy-v0", voice_threshold=0.9, max_exchanges=3, **FAST
    )
    assert env.unwrapped.voice_threshold == 0.9 and env.unwrapped.max_exchanges == 3
    with pytest.raises(TypeError, match="P4G-hard-v0"):
        gymnasium.make("dialogue_gym/P4G-hard-v0", colour="blue")


def test_unsupported_render_mode_is_dropped_with_a_warning():
    with pytest.warns(UserWarning, match="rgb_array"):
        env = gymnasium.make("dialogue_gym/P4G-hard-Strategy-v0", render_mode="rgb_array", **FAST)
    assert env.unwrapped.par_env.render_mode is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ansi = gymnasium.make("dialogue_gym/P4G-hard-v0", render_mode="ansi", **FAST)
    assert ansi.unwrapped.par_env.render_mode == "ansi"


def test_make_vec_builds_the_batched_views():
    vec = gymnasium.make_vec("dialogue_gym/P4G-hard-Strategy-v0", num_envs=3, **FAST)
    assert isinstance(vec, StrategyVectorEnv) and isinstance(vec, VectorEnv)
    assert vec.spec is not None and vec.spec.id == "dialogue_gym/P4G-hard-Strategy-v0"
    assert vec.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    ours = StrategyVectorEnv(make_vec("P4G-hard", 3, **FAST))
    obs, _ = vec.reset(seed=0)
    expected, _ = ours.reset(seed=0)
    np.testing.assert_array_equal(obs, expected)
    assert vec.observation_space.contains(obs)
    actions = vec.action_space.sample()
    got, want = vec.step(actions), ours.step(actions)
    for a, b in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    vec.close()
    ours.close()
    assert vec.closed

    same = gymnasium.make_vec(
        "dialogue_gym/ESConv-soft-v0", num_envs=2, autoreset_mode="same_step", **FAST
    )
    assert isinstance(same, SingleAgentVectorEnv) and isinstance(same, VectorEnv)
    assert same.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    obs, infos = same.reset(seed=1)
    assert same.observation_space.contains(tuple(obs)) and len(infos) == 2
    same.close()


def test_make_vec_sync_mode_is_gymnasiums_own():
    vec = gymnasium.make_vec(
        "dialogue_gym/P4G-hard-Strategy-v0", num_envs=2, vectorization_mode="sync", **FAST
    )
    assert isinstance(vec, SyncVectorEnv)
    obs, _ = vec.reset(seed=0)
    assert obs.shape == vec.observation_space.shape
    vec.close()


def test_views_are_gymnasium_vector_envs():
    for view in (SingleAgentVectorEnv, StrategyVectorEnv):
        assert issubclass(view, VectorEnv)
    vec = StrategyVectorEnv(make_vec("P4G-hard", 2, **FAST))
    assert vec.unwrapped is vec and vec.num_envs == 2
    assert vec.single_action_space == gymnasium.spaces.Discrete(len(vec.strategy_names))
    assert isinstance(vec.np_random, np.random.Generator)
    vec.reset(seed=0)
    assert len(vec.render()) == 2
    vec.close()
    vec.close()  # idempotent


def test_the_concern_view_vectorizes_and_takes_its_wrapper_option():
    """``dialogue_gym/<id>-Concern-vN``: ``ConcernVectorEnv`` from ``make_vec``, each sub-env
    exactly the lone ``ConcernActions``; ``match_threshold`` goes to the wrapper."""
    gym_id = "dialogue_gym/ED-hard-Concern-v0"
    env = gymnasium.make(gym_id, match_threshold=0.7, **FAST)
    assert env.unwrapped.tracker.match_threshold == 0.7
    env.close()
    vec = gymnasium.make_vec(gym_id, num_envs=2, **FAST)
    assert (
        isinstance(vec, ConcernVectorEnv)
        and vec.move_names == ConcernActions(dialogue_gym.make("ED-hard", **FAST)).move_names
    )
    obs, _ = vec.reset(seed=4)
    lone = ConcernActions(dialogue_gym.make("ED-hard", **FAST))
    for i in range(2):
        np.testing.assert_array_equal(obs[i], lone.reset(seed=4 + i)[0])
    obs, rewards, *_ = vec.step(["probe", "reflect"])
    assert obs.shape == (2, len(lone.feature_names)) and rewards.shape == (2,)
    vec.close()
