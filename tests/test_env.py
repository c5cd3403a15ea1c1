import numpy as np
import pytest

from dialogue_gym.mind import BDI

HELLO = "Hi! How are you today? Have you heard of Save the Children?"


def run_episode(env, actions, seed=0):
    env.reset(seed=seed)
    out = []
    for action in actions:
        if not env.agents:
            break
        out.append(env.step({"system": action}))
    return out


def test_one_step_is_one_exchange(make_env):
    env = make_env()
    obs, infos = env.reset(seed=1)
    assert obs["system"]["history"] == () and obs["system"]["to_speak"] == 1
    assert obs["user"]["to_speak"] == 0
    obs, rewards, _, _, infos = env.step({"system": HELLO})
    history = obs["system"]["history"]
    assert [h["speaker"] for h in history] == [0, 1]
    assert history[0]["text"] == HELLO and history[1]["text"].strip()
    assert obs["system"]["exchange"] == 1 and infos["system"]["exchange"] == 1
    for key in ("success", "success_score", "success_label", "judge_votes", "q", "s", "delta_s"):
        assert key in infos["system"]
    assert infos["system"]["q"] in (-1, 0, 1)
    assert set(rewards) == {"system", "user"}
    assert "privileged" not in infos["system"]


def test_episode_record_discounts_both_returns(make_env):
    env = make_env(weights={"gamma": 0.5})
    env.reset(seed=2)
    r_system, r_user = [], []
    infos: dict = {}
    while env.agents:
        _, rewards, _, _, infos = env.step({"system": "Save the Children helps kids. Donate?"})
        r_system.append(rewards["system"])
        r_user.append(rewards["user"])
    record = infos["system"]["episode"]
    assert len(r_system) >= 2  # so that the discount matters
    for seat, rewards in (("system", r_system), ("user", r_user)):
        discounted = sum(0.5**t * r for t, r in enumerate(rewards))
        assert record[f"return_{seat}"] == pytest.approx(discounted)
        assert record[f"sum_reward_{seat}"] == pytest.approx(sum(rewards))


def test_hidden_state_not_in_system_observation(make_env):
    env = make_env(privileged=False)
    obs, _ = env.reset(seed=3)
    obs, *_ = env.step({"system": HELLO})
    assert set(obs["system"]) == {"role", "to_speak", "exchange", "goal", "history", "estimate"}
    assert "Belief:" in obs["user"]["state"]
    assert obs["user"]["profile"]


def test_rewards_follow_the_formulas(make_env):
    env = make_env(privileged=True)
    env.reset(seed=5)
    s_prev = 0.0
    for text in [HELLO, "Save the Children has been audited for decades.", "Would you donate $1?"]:
        if not env.agents:
            break
        _, rewards, _, _, infos = env.step({"system": text})
        info = infos["system"]
        assert info["delta_s"] == pytest.approx(info["s"] - s_prev)
        assert rewards["system"] == pytest.approx(info["delta_s"])
        assert rewards["user"] == pytest.approx(-info["delta_s"] + 0.5 * info["q"])
        s_prev = info["s"]
        assert {"bdi", "initial_bdi", "willingness", "concerns"} <= set(info["privileged"])


def test_inference_term_with_estimate(make_env):
    env = make_env(privileged=True)
    env.reset(seed=2)
    initial = BDI.from_dict(env.user.state.to_dict())
    _, rewards, _, _, infos = env.step({"system": {"utterance": HELLO, "estimate": initial}})
    # The estimate is the true state at h_t, so the inference error is zero.
    assert infos["system"]["inference_error"] == pytest.approx(0.0, abs=1e-9)
    env.reset(seed=2)
    far = BDI("x", "y", "z", 0.0, 0.0, -1.0)
    _, rewards, _, _, infos = env.step({"system": {"utterance": HELLO, "estimate": far.to_dict()}})
    err = infos["system"]["inference_error"]
    assert err > 0
    assert rewards["system"] == pytest.approx(infos["system"]["delta_s"] - 0.25 * err)
    env.reset(seed=2)
    with pytest.raises(ValueError, match="shape"):
        env.step({"system": {"utterance": HELLO, "estimate": np.zeros(3)}})


def test_truncation_at_budget_and_step_after_end(make_env):
    env = make_env(max_exchanges=2)
    results = run_episode(env, ["The weather is nice.", "I like trains."])
    _, _, term, trunc, infos = results[-1]
    assert trunc == {"system": True, "user": True} and not any(term.values())
    episode = infos["system"]["episode"]
    assert episode["turns"] == 2 and episode["success"] is False and len(episode["q"]) == 2
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"system": "hello?"})


def test_same_seed_same_everything(make_env):
    actions = [HELLO, "Would you donate?", "Every dollar buys school supplies.", "Please donate."]
    a = run_episode(make_env(), actions, seed=11)
    b = run_episode(make_env(), actions, seed=11)
    assert repr(a) == repr(b)
    c = run_episode(make_env(), actions, seed=12)
    assert repr(a) != repr(c)


def test_bad_actions(make_env):
    env = make_env()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be a str"):
        env.step({"system": 42})
    with pytest.raises(TypeError, match="dict"):
        env.step(["hi"])
    with pytest.raises(KeyError, match="system"):
        env.step({"user": "I speak out of turn"})
    with pytest.raises(KeyError, match="judge"):
        env.step({"system": "hello", "judge": "x"})
    _, _, _, _, infos = env.step({"system": ""})
    assert "empty_action" in infos["system"]["fallbacks"]
    _, _, _, _, infos = env.step({"system": "a" * 100_000})
    assert "action_truncated" in infos["system"]["fallbacks"]
    assert len(env.history[-2][1]) == env.max_utterance_chars
    _, _, _, _, infos = env.step({"system": "Hello \ud800 friend", "user": "ignored"})
    assert "action_sanitized" in infos["system"]["fallbacks"]
    assert infos["user"]["ignored"] is True
    assert "\ufffd" in env.history[-2][1]
    env.history[-2][1].encode("utf-8")  # the stored text is valid UTF-8 now


def test_self_play_one_utterance_per_step(make_env):
    env = make_env(external=("system", "user"))
    obs, _ = env.reset(seed=0)
    assert obs["system"]["to_speak"] == 1 and obs["user"]["to_speak"] == 0
    obs, rewards, *_ = env.step({"system": HELLO, "user": "ignored"})
    assert rewards == {"system": 0.0, "user": 0.0}
    assert obs["user"]["to_speak"] == 1 and obs["system"]["to_speak"] == 0
    with pytest.raises(KeyError, match="user"):
        env.step({"system": "again?"})
    obs, rewards, _, _, infos = env.step({"user": "No, I will not donate."})
    assert obs["system"]["history"][-1]["text"] == "No, I will not donate."
    assert infos["user"]["q"] in (-1, 0, 1)


def test_user_only_external(make_env, fixed_system):
    env = make_env(external=("user",), system_policy=fixed_system)
    obs, _ = env.reset(seed=0)
    assert fixed_system.resets == 1
    assert obs["user"]["to_speak"] == 1
    assert obs["user"]["history"][0]["text"] == fixed_system.text
    obs, _, term, _, infos = env.step({"user": "Okay, I'll donate $1 right now."})
    # The user policy's word is the user's decision: it agreed, so the task succeeded — but a
    # rational hard user would not agree to a bare assertion at exchange 1.
    assert infos["user"]["success"] and term["user"]
    assert infos["user"]["q"] == -1
    assert infos["user"]["episode"]["success_turn"] == 1
    env.reset(seed=0)
    obs, _, term, _, infos = env.step({"user": "No, I don't think I'll donate this time."})
    assert not infos["user"]["success"] and infos["user"]["q"] == 1
    assert len(obs["user"]["history"]) == 3  # the frozen system spoke again


def test_user_only_requires_policy(make_env):
    with pytest.raises(ValueError, match="system_policy"):
        make_env(external=("user",))
    with pytest.raises(ValueError, match="external"):
        make_env(external=("narrator",))


def test_render(make_env):
    env = make_env(render_mode="ansi")
    env.reset(seed=0)
    env.step({"system": HELLO})
    text = env.render()
    assert HELLO in text and "exchange 1/8" in text


def test_episode_record_has_cus_metrics(make_env):
    env = make_env(privileged=True, max_exchanges=2)
    env.reset(seed=4)
    concerns = env.user.privileged()["concerns"]
    first = next(iter(concerns))
    # Address the first latent concern before the user has voiced it: that is proactive.
    env.step({"system": env.card.concern(first).unlock[0]})
    _, _, _, _, infos = env.step({"system": "Would you donate?"})
    episode = infos["system"]["episode"]
    assert 0.0 <= episode["csr"] <= 1.0
    assert episode["proactivity"] == pytest.approx(1 / len(concerns))


def test_self_play_user_words_are_its_decision(make_env):
    env = make_env(external=("system", "user"), privileged=True)
    env.reset(seed=3)
    env.step({"system": "Would you donate $1 to Save the Children today?"})
    _, rewards, term, _, infos = env.step({"user": "Sure, put me down for $1.00."})
    # The user policy agreed, so the task succeeded — without a reason at exchange 1.
    assert infos["user"]["success"] and term["user"] and infos["user"]["q"] == -1
    assert infos["user"]["privileged"]["decision"] == "agree"
    assert rewards["user"] == pytest.approx(-infos["user"]["delta_s"] - 0.5)
    env.reset(seed=3)
    env.step({"system": HELLO})
    obs, _, term, _, infos = env.step({"user": "No, I won't donate."})
    assert not term["user"] and infos["user"]["privileged"]["decision"] == "refused"
    assert env.card.mind["refused"] in obs["user"]["state"]  # its mind follows what it said
