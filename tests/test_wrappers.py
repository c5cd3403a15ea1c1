from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import dialogue_gym
from dialogue_gym.env.checkers import (
    PERSUASION_SENTENCES,
    FixedSystemPolicy,
    FixedUserPolicy,
    check_single_agent,
    check_strategy_env,
)
from dialogue_gym.env.wrappers import RecordEpisodes, SingleAgent, StrategyActions, TemplateRealizer
from dialogue_gym.env.wrappers.strategy_actions import STANCES, split_sentences


def make(env_id: str = "P4G-hard", **kwargs: Any) -> Any:
    kwargs.setdefault("encoder", "hashing")
    return dialogue_gym.make(env_id, **kwargs)


def play(env: Any, actions: list[Any]) -> list[tuple[Any, ...]]:
    """Steps a Gymnasium env with ``actions`` (cycled) until the episode ends."""
    out = []
    for i in range(100):
        result = env.step(actions[i % len(actions)])
        out.append(result)
        if result[2] or result[3]:
            return out
    raise AssertionError("episode did not end")


# -- SingleAgent -------------------------------------------------------------------------------


def test_single_agent_system_seat_matches_the_parallel_env() -> None:
    env = SingleAgent(make())
    assert env.card is env.par_env.card
    assert env.observation_space is env.par_env.observation_space("system")
    assert env.action_space is env.par_env.action_space("system")
    obs, info = env.reset(seed=3)
    assert obs["to_speak"] == 1 and obs["history"] == () and isinstance(info, dict)
    steps = play(env, list(PERSUASION_SENTENCES))

    par = make()
    par_obs, _ = par.reset(seed=3)
    assert par_obs["system"] == obs
    for i, (obs, reward, terminated, truncated, info) in enumerate(steps):
        action = PERSUASION_SENTENCES[i % len(PERSUASION_SENTENCES)]
        p_obs, p_rew, p_term, p_trunc, p_info = par.step({"system": action})
        assert obs == p_obs["system"]
        assert reward == p_rew["system"] and isinstance(reward, float)
        assert (terminated, truncated) == (p_term["system"], p_trunc["system"])
        assert info == p_info["system"]
        assert obs["exchange"] == i + 1
    assert "episode" in steps[-1][4]


def test_single_agent_user_seat() -> None:
    policy = FixedSystemPolicy()
    env = SingleAgent(make(external=("user",), system_policy=policy), seat="user")
    assert env.observation_space is env.par_env.observation_space("user")
    obs, _ = env.reset(seed=0)
    assert obs["to_speak"] == 1
    assert [t["text"] for t in obs["history"]] == [policy.text]
    assert obs["state"] and obs["profile"]  # the user sees its own state
    obs, reward, *_, info = env.step("Money is tight for me right now.")
    assert isinstance(reward, float) and "q" in info
    assert obs["exchange"] == 1 and len(obs["history"]) == 3  # the system already spoke again
    steps = play(env, ["No, thanks. I'd rather keep my payment."])
    assert steps[-1][3] and not steps[-1][2]  # refusing to the end: truncated, not terminated
    check_single_agent(env, name="user seat")


@pytest.mark.parametrize("seat", ["system", "user"])
def test_single_agent_plays_the_other_seat_of_a_self_play_env(seat: str) -> None:
    other = FixedUserPolicy() if seat == "system" else FixedSystemPolicy()
    env = SingleAgent(make(external=("system", "user")), seat=seat, other=other)
    obs, _ = env.reset(seed=1)
    assert obs["to_speak"] == 1
    for exchange, (obs, reward, terminated, truncated, info) in enumerate(play(env, ["Hm."]), 1):
        assert obs["exchange"] == exchange
        assert "success_label" in info and isinstance(reward, float)
        assert obs["to_speak"] == int(not (terminated or truncated))
    check_single_agent(env, name=f"self-play {seat}")


def test_single_agent_rejects_envs_where_the_other_seat_is_external() -> None:
    with pytest.raises(ValueError, match="only the 'user' seat is external"):
        SingleAgent(make(), seat="user")
    with pytest.raises(ValueError, match="only the 'system' seat is external"):
        SingleAgent(make(external=("system", "user")))
    with pytest.raises(ValueError, match="self-play env"):
        SingleAgent(make(), other=FixedUserPolicy())
    with pytest.raises(TypeError, match="act"):
        SingleAgent(make(external=("system", "user")), other=object())
    with pytest.raises(ValueError, match="seat must be one of"):
        SingleAgent(make(), seat="judge")


def test_single_agent_step_after_the_end_raises() -> None:
    env = SingleAgent(make(max_exchanges=1))
    env.reset(seed=0)
    _, _, _, truncated, _ = env.step("Hello!")
    assert truncated
    with pytest.raises(RuntimeError, match="reset"):
        env.step("Hello again!")


# -- StrategyActions ---------------------------------------------------------------------------


def test_strategy_env_spaces_and_feature_names() -> None:
    env = StrategyActions(make())
    card = env.card
    n_features = 1 + len(STANCES) + len(card.strategies) + 2 + len(card.concerns)
    assert env.action_space.n == len(card.strategies)
    assert env.observation_space.shape == (n_features,) == (len(env.feature_names),)
    assert env.observation_space.dtype == np.float32
    assert env.feature_names[0] == "exchange" and env.feature_names[-1].startswith("voiced:")
    obs, _ = env.reset(seed=0)
    assert obs[env.feature_names.index("stance:none")] == 1.0
    assert obs.sum() == 1.0  # nothing else before the first exchange


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_strategy_features_stay_in_bounds(seed: int) -> None:
    env = StrategyActions(make("P4G-soft" if seed % 2 else "P4G-hard"))
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(3):  # three episodes, the later ones unseeded
        done = False
        counts = np.zeros(env.action_space.n)
        exchange = 0
        while not done:
            action = env.action_space.sample()
            counts[action] += 1
            exchange += 1
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            assert obs.dtype == np.float32 and obs in env.observation_space
            assert np.all((obs >= 0) & (obs <= 1))
            assert obs[env.feature_names.index("stance:none")] == 0.0
            assert obs[1 : 1 + len(STANCES)].sum() == 1.0  # one-hot
            assert obs[0] == pytest.approx(exchange / env.max_exchanges)
            used = obs[1 + len(STANCES) : 1 + len(STANCES) + env.action_space.n]
            assert np.allclose(used, counts / env.max_exchanges)
        obs, _ = env.reset()


def test_strategy_index_is_realized_to_one_of_its_templates() -> None:
    env = StrategyActions(make())
    env.reset(seed=5)
    for index, strategy in enumerate(env.card.strategies[:6]):
        _, _, terminated, truncated, info = env.step(index)
        assert info["strategy"] == strategy.name and info["strategy_index"] == index
        assert info["utterance"] in strategy.templates
        history = env.single.dialogue_env.history
        assert history[-2] == ("system", info["utterance"])
        assert not (terminated or truncated)


def test_templates_are_not_repeated_within_an_episode() -> None:
    env = StrategyActions(make(max_exchanges=20))
    greeting = env.card.strategy_names.index("greeting")
    n_templates = len(env.card.strategies[greeting].templates)
    env.reset(seed=0)
    said = [info["utterance"] for *_, info in play(env, [greeting])[:n_templates]]
    assert len(said) == n_templates and len(set(said)) == n_templates


def test_realizer_wording_is_seeded_by_reset() -> None:
    def wording(seed: int) -> list[str]:
        env = StrategyActions(make())
        env.reset(seed=seed)
        return [env.step(i)[4]["utterance"] for i in (5, 6, 7, 11)]

    assert wording(11) == wording(11)
    assert any(wording(11) != wording(s) for s in (12, 13, 14))


def test_template_realizer_cycles_through_all_templates() -> None:
    card = make().card
    realizer = TemplateRealizer(card, seed=0)
    strategy = card.strategies[0]
    first = [realizer.realize(0) for _ in strategy.templates]
    assert sorted(first) == sorted(strategy.templates)
    realizer.reset(0)
    assert [realizer.realize(strategy.name) for _ in strategy.templates] == first


def test_strategy_actions_accepts_numpy_integers_and_names() -> None:
    env = StrategyActions(make())
    env.reset(seed=0)
    assert env.step(np.int64(1))[4]["strategy_index"] == 1
    assert env.step(np.array([2]))[4]["strategy_index"] == 2
    assert env.step(np.array(3, dtype=np.int32))[4]["strategy_index"] == 3
    assert env.step("logical-appeal")[4]["strategy"] == "logical-appeal"


@pytest.mark.parametrize("bad", [13, -1, 100, np.int64(13)])
def test_out_of_range_action_is_rejected_clearly(bad: Any) -> None:
    env = StrategyActions(make())
    env.reset(seed=0)
    k = env.action_space.n
    with pytest.raises(ValueError, match=rf"out of range for Discrete\({k}\).*0=greeting"):
        env.step(bad if bad != 13 else k)


@pytest.mark.parametrize("bad", [1.0, True, None, np.array([1, 2]), np.array([0.5])])
def test_non_integer_action_is_rejected(bad: Any) -> None:
    env = StrategyActions(make())
    env.reset(seed=0)
    with pytest.raises(TypeError, match="integer strategy index"):
        env.step(bad)


def test_unknown_strategy_name_is_rejected() -> None:
    env = StrategyActions(make())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown strategy 'bribery'"):
        env.step("bribery")


def _observation(env: StrategyActions, *replies: str) -> dict[str, Any]:
    history = []
    for reply in replies:
        history += [{"speaker": 0, "text": "Hi there!"}, {"speaker": 1, "text": reply}]
    return {"role": 0, "exchange": len(replies), "history": tuple(history)}


def test_features_come_from_the_observation_only() -> None:
    env = StrategyActions(make())
    env.reset(seed=0)
    card = env.card
    concern = card.concerns[0]
    reply = f"Hmm, I see. {concern.voice[0]} What do they do?"
    x = env._features(_observation(env, reply))
    names = env.feature_names
    assert x[names.index(f"voiced:{concern.id}")] == 1.0
    assert sum(x[names.index(f"voiced:{c.id}")] for c in card.concerns) == 1.0
    assert x[names.index("user_question")] == 1.0
    assert x[names.index("reply_length")] == pytest.approx(len(reply) / 300)
    assert x[names.index("stance:neutral")] == 1.0
    # Voiced flags stick for the episode; the other features follow the last reply.
    refusal = "No, thanks. I'd rather keep my payment." + " Really." * 60
    x = env._features(_observation(env, reply, refusal))
    assert x[names.index(f"voiced:{concern.id}")] == 1.0
    assert x[names.index("stance:refused")] == 1.0
    assert x[names.index("user_question")] == 0.0
    assert x[names.index("reply_length")] == 1.0  # clipped at 300 characters
    # A fresh episode forgets them; the same observation always gives the same features.
    env.reset(seed=1)
    a = env._features(_observation(env, "Okay, you convinced me. I'll donate $0.50."))
    env.reset(seed=2)
    b = env._features(_observation(env, "Okay, you convinced me. I'll donate $0.50."))
    assert np.array_equal(a, b) and a[names.index("stance:agree")] == 1.0
    assert not any(a[names.index(f"voiced:{c.id}")] for c in card.concerns)


def test_split_sentences() -> None:
    assert split_sentences("Hi! How are you?  I'm fine.\nOk") == [
        "Hi!",
        "How are you?",
        "I'm fine.",
        "Ok",
    ]
    assert split_sentences(" ... ") == []


def test_strategy_actions_wraps_a_single_agent_of_the_system_seat_only() -> None:
    single = SingleAgent(make())
    assert StrategyActions(single).single is single
    user = SingleAgent(make(external=("user",), system_policy=FixedSystemPolicy()), seat="user")
    with pytest.raises(ValueError, match="system seat"):
        StrategyActions(user)
    with pytest.raises(TypeError, match="ParallelEnv or a SingleAgent"):
        StrategyActions(object())  # type: ignore[arg-type]


def test_strategy_actions_passes_the_gymnasium_and_sb3_checkers() -> None:
    check_strategy_env(StrategyActions(make()), name="strategy")


def test_sb3_ppo_trains_on_the_strategy_view() -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    env = StrategyActions(make())
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=64)
    action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
    assert 0 <= int(action) < env.action_space.n


# -- RecordEpisodes ----------------------------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_record_episodes_writes_one_line_per_episode(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "episodes.jsonl"
    env = RecordEpisodes(make(), path)
    finals = []
    for episode in range(3):
        env.reset(seed=episode if episode != 1 else None)
        for i in range(100):
            out = env.step({"system": PERSUASION_SENTENCES[i % len(PERSUASION_SENTENCES)]})
            if not env.agents:
                finals.append(out)
                break
            assert len(_lines(path)) == episode  # nothing written mid-episode
        assert len(_lines(path)) == episode + 1  # flushed as soon as the episode ends
    lines = _lines(path)
    assert [line["episode_index"] for line in lines] == [0, 1, 2]
    assert [line["seed"] for line in lines] == [0, None, 2]
    for line, (_, _, _, _, infos) in zip(lines, finals, strict=True):
        record = line["episode"]
        assert record == json.loads(json.dumps(infos["system"]["episode"]))
        assert line["env_id"] == "P4G-hard-v0"
        assert len(line["transcript"]) == 2 * record["turns"]
        assert [t["speaker"] for t in line["transcript"][:2]] == ["system", "user"]
        assert line["transcript"][0]["text"] == PERSUASION_SENTENCES[0]
        assert [e["exchange"] for e in line["exchanges"]] == list(range(1, record["turns"] + 1))
        assert [e["success_label"] for e in line["exchanges"]] == record["labels"]
        assert [e["q"] for e in line["exchanges"]] == record["q"]
        first = line["exchanges"][0]
        assert {"success", "success_score", "s", "delta_s", "user_events", "rewards"} <= set(first)
        assert set(first["rewards"]) == {"system", "user"}


def test_record_episodes_self_play_and_abandoned_episodes(tmp_path: Path) -> None:
    path = tmp_path / "selfplay.jsonl"
    env = RecordEpisodes(make(external=("system", "user"), privileged=True), path)
    env.reset(seed=0)
    env.step({"system": "Hi!"})
    env.reset(seed=1)  # the first episode is abandoned: not written
    step = 0
    while env.agents:
        seat = "system" if step % 2 == 0 else "user"
        text = "Would you donate 50 cents?" if seat == "system" else "No, thanks."
        env.step({seat: text})
        step += 1
    (line,) = _lines(path)
    assert line["seed"] == 1
    turns = line["episode"]["turns"]
    assert len(line["transcript"]) == step == 2 * turns
    assert len(line["exchanges"]) == turns  # one entry per exchange, not per utterance
    assert "privileged" in line["exchanges"][0]


def test_record_episodes_is_a_conforming_parallel_env(tmp_path: Path) -> None:
    path = tmp_path / "api.jsonl"
    env = RecordEpisodes(make(), path)
    parallel_api_test(env, num_cycles=50)
    assert len(_lines(path)) == env.episodes_written >= 2
    # The views work on top of it and forward its attributes.
    single = SingleAgent(RecordEpisodes(make(), tmp_path / "single.jsonl"))
    check_single_agent(single, name="recorded")
    strategy = StrategyActions(RecordEpisodes(make(), tmp_path / "strategy.jsonl"))
    strategy.reset(seed=0)
    play(strategy, [0, 5, 12])
    assert len(_lines(tmp_path / "strategy.jsonl")) == 1
