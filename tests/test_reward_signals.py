"""Signals that mean what they say (issue 14): the embedded users' latent state and the
rational reference.

* The state of a user who reached the task's goal *is* the target z* (s = 1); no state short of
  it reaches the target on any scalar; rapport alone moves little; a refusal lowers c until the
  concerns behind it are resolved.
* The rational reference is a counterfactual that ignores the external user's own stance: every
  refusal once nothing blocks is NOT_RATIONAL, so is an agreement before that on hard users.
* The LLM rationality judge sees the state *before* the reply (on the real test server).
"""

from __future__ import annotations

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.mind.latent import LatentSpace
from dialogue_gym.users.cognitive import CognitiveUser
from dialogue_gym.users.latent_state import NON_SUCCESS_CAP, success_stances

ASK = "Would you donate $1 of your task payment to Save the Children today?"
HELLO = "Hi there! How are you doing today?"


@pytest.fixture(scope="module")
def p4g():
    return load_card("p4g")


@pytest.fixture(scope="module")
def encoder():
    return make_encoder("hashing")


def _user(card, encoder, preset="hard", seed=0):
    user = CognitiveUser(card, encoder, preset=preset)
    user.reset(np.random.default_rng(seed))
    return user


def _resolve_all(user):
    for concern in user.concerns.values():
        concern.progress = float(concern.needed)
        concern.voiced = True


def _fractions(user, state):
    target = user.card.target
    goal = (target.receptivity, target.confidence, target.valence)
    now = (state.receptivity, state.confidence, state.valence)
    return [
        (x - x0) / (xs - x0) if abs(xs - x0) > 1e-9 else 0.0
        for x, x0, xs in zip(now, user._start, goal, strict=True)
    ]


def test_success_stances_follow_the_cards_success_rule():
    assert success_stances(load_card("p4g")) == {"agree"}
    assert success_stances(load_card("ed")) == {"agree"}  # rule "label": resolved only
    # ESConv: three "somewhat_better" votes meet the 0.5 threshold, so feeling better is success.
    assert success_stances(load_card("esconv")) == {"positive", "agree"}


def test_a_user_who_agreed_is_exactly_the_target(p4g, encoder):
    user = _user(p4g, encoder)
    user.decision = "agree"
    state = user._compose_bdi()
    assert state == p4g.target
    latent = LatentSpace(encoder)
    z0, z_star = latent.encode(user.reset(np.random.default_rng(0))), latent.encode(p4g.target)
    assert latent.progress(latent.encode(state), z0, z_star) == pytest.approx(1.0, abs=1e-5)


def test_no_state_short_of_agreement_reaches_the_target(p4g, encoder):
    latent = LatentSpace(encoder)
    z_star = latent.encode(p4g.target)
    for seed in range(5):
        user = _user(p4g, encoder, seed=seed)
        z0 = latent.encode(user.state)
        _resolve_all(user)
        user.mood, user.rapport_turns = 1.0, 2
        for stance in ("refused", "neutral", "positive"):
            user.decision = stance
            state = user._compose_bdi()
            assert all(f <= NON_SUCCESS_CAP + 1e-9 for f in _fractions(user, state)), stance
            s = latent.progress(latent.encode(state), z0, z_star)
            assert s <= NON_SUCCESS_CAP + 0.02, (seed, stance, s)


def test_rapport_alone_moves_little(make_env):
    env = make_env("P4G-hard", privileged=True)
    env.reset(seed=0)
    s = []
    for text in (HELLO, "How has your day been so far?", "Nice to chat with you!"):
        *_, infos = env.step({"system": text})
        s.append(infos["system"]["s"])
    assert max(s) < 0.25  # well short of the target (s = 1); the concerns are untouched


def test_a_refusal_lowers_commitment_until_its_concerns_are_resolved(p4g, encoder):
    user = _user(p4g, encoder)
    start = user.state.confidence
    user.decision = "refused"
    refused = user._compose_bdi().confidence
    _resolve_all(user)
    resolved_but_refused = user._compose_bdi().confidence
    assert refused < start < resolved_but_refused < p4g.target.confidence


def test_the_simulator_never_refuses_once_nothing_blocks(p4g, encoder):
    user = _user(p4g, encoder)
    _resolve_all(user)
    user.affect = -0.6  # willingness far below the accept threshold
    turn = user.respond(ASK)
    assert turn.decision != "refused" and turn.justified


# -- the rational reference ------------------------------------------------------------------


def _user_seat(make_env, fixed_system, seed=0):
    env = make_env("P4G-hard", external=("user",), system_policy=fixed_system, privileged=True)
    env.reset(seed=seed)
    return env


def test_every_refusal_once_nothing_blocks_is_not_rational(make_env, fixed_system):
    for seed in range(3):
        env = _user_seat(make_env, fixed_system, seed)
        _resolve_all(env.user)
        for _ in range(3):  # not only the first refusal: the reference never follows the user
            *_, infos = env.step({"user": "No, I won't donate anything."})
            assert infos["user"]["q"] == -1
            assert infos["user"]["privileged"]["decision"] == "refused"


def _no_with_its_reason(env, system_text: str) -> str:
    """A refusal that says what holds the user back: the worries the simulator would voice."""
    from dialogue_gym.users.base import twin

    events = twin(env.user).respond(system_text).events
    voiced = [e.partition(":")[2] for e in events if e.startswith("voiced:")]
    reasons = " ".join(env.user.card.concern(cid).voice[0] for cid in voiced)
    return f"No, I won't donate anything. {reasons}".strip()


def test_refusals_while_concerns_block_can_be_rational(make_env, fixed_system):
    fixed_system.text = ASK  # asked at once: a user with blocking concerns may say no
    env = _user_seat(make_env, fixed_system)
    *_, infos = env.step({"user": _no_with_its_reason(env, ASK)})
    assert env.user._blocking() and infos["user"]["q"] == 1
    # A skeptical "no" to a bare remark, saying why, is consistent with a user still held back.
    fixed_system.text = HELLO
    env = _user_seat(make_env, fixed_system)
    *_, infos = env.step({"user": _no_with_its_reason(env, HELLO)})
    assert env.user._blocking() and infos["user"]["q"] == 1


def test_refusing_a_reason_is_not_rational(make_env, fixed_system, monkeypatch):
    # A reason and no ask (the hashing encoder's reader reads "even a small donation helps"
    # as a closing ask, and refusing an ask while a concern blocks is rational).
    fixed_system.text = (
        "About 85 percent of Save the Children's spending goes to programs for children."
    )
    env = _user_seat(make_env, fixed_system)
    user = env.user
    perceive = user._perceive

    def reasoned(text):  # the system turn gave this user a reason (whatever the encoder)
        p, events, repetition, _ = perceive(text)
        return p, events, repetition, True

    monkeypatch.setattr(user, "_perceive", reasoned)
    *_, infos = env.step({"user": "No, I won't donate anything."})
    assert user._blocking() and infos["user"]["q"] == -1


def test_agreeing_before_the_blocking_concerns_is_not_rational_on_hard(make_env, fixed_system):
    fixed_system.text = ASK
    env = _user_seat(make_env, fixed_system)
    assert env.user._blocking()
    *_, infos = env.step({"user": "Sure, put me down for $1.00."})
    assert infos["user"]["q"] == -1


def test_external_reply_that_voices_a_concern_marks_it_voiced(make_env, fixed_system):
    env = _user_seat(make_env, fixed_system)
    user = env.user
    top = next(iter(user.concerns))
    line = env.card.concern(top).voice[0]
    assert not user.concerns[top].voiced
    env.step({"user": line})
    assert user.concerns[top].voiced and user.disclosed


# -- the LLM rationality judge sees the pre-reply state ----------------------------------------


def test_llm_rationality_judge_prompt_holds_the_state_before_the_reply(monkeypatch):
    pytest.importorskip("openai")
    from dialogue_gym.testing.server import TestServer

    monkeypatch.setenv("DG_JUDGE_KEY", "sk-judge-test-0000")

    def reply(body):
        system = body["messages"][0]["content"]
        return "RATIONAL" if "NOT_RATIONAL" in system else "Neutral. Nothing decided yet."

    with TestServer(replies=reply) as server:
        env = dialogue_gym.make(
            "P4G-hard",
            encoder="hashing",
            judges="llm",
            backend="openai:test-judge",
            backend_options={
                "base_url": server.url,
                "api_key_env": "DG_JUDGE_KEY",
                "max_retries": 0,
            },
            cache_mode="off",
            privileged=True,
        )
        env.reset(seed=0)
        before = env.user.state
        *_, infos = env.step({"system": ASK})
        after = env.user.state
        prompts = [
            r.body["messages"][1]["content"]
            for r in server.chat_requests
            if "NOT_RATIONAL" in r.body["messages"][0]["content"]
        ]
    assert len(prompts) == 1 and infos["system"]["q"] == 1
    assert before.intention != after.intention  # the reply changed the user's mind
    assert before.intention in prompts[0] and after.intention not in prompts[0]
