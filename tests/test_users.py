import numpy as np
import pytest

from dialogue_gym.cards import load_card
from dialogue_gym.mind import make_encoder
from dialogue_gym.users import HARD, SOFT, CognitiveUser, persona_bank
from dialogue_gym.users.cognitive import RESOLVED


@pytest.fixture(scope="module")
def card():
    return load_card("p4g")


@pytest.fixture(scope="module")
def encoder():
    return make_encoder("minilm")


def user_with(card, encoder, preset, concerns, w0=0.3):
    """A CognitiveUser whose persona has exactly the given concerns."""
    base = persona_bank(card)[0]
    persona = type(base)(**{**base.__dict__, "concerns": concerns, "initial_willingness": w0})
    user = CognitiveUser(card, encoder, preset=preset, personas=(persona,))
    user.reset(np.random.default_rng(0))
    return user


def test_persona_bank_is_large_diverse_and_deterministic(card):
    bank = persona_bank(card)
    assert len(bank) >= 200
    assert len({p.background for p in bank}) >= 190
    assert {p.style for p in bank} == {s.id for s in card.styles}
    assert {cid for p in bank for cid, _ in p.concerns} == {c.id for c in card.concerns}
    persona_bank.cache_clear()
    assert persona_bank(card) == bank


def test_addressing_a_concern_with_a_reason_moves_it(card, encoder):
    user = user_with(card, encoder, "hard", (("affordability", 0.5), ("trust", 0.5)))
    before = user.willingness
    turn = user.respond(card.concern("affordability").unlock[0])
    assert "addressed:affordability" in turn.events
    assert user.concerns["affordability"].status == RESOLVED
    assert user.willingness > before
    # Trust has a resistance point of 2: one reason only partly addresses it.
    before = user.willingness
    turn = user.respond(card.concern("trust").unlock[0])
    assert "addressed:trust" in turn.events
    assert user.concerns["trust"].status == "partially_addressed"
    assert user.willingness > before
    assert turn.justified


def test_off_topic_empty_and_repetition_push_back(card, encoder):
    user = user_with(card, encoder, "hard", (("efficacy", 0.6),))
    w = user.willingness
    turn = user.respond("My favourite football team lost on Sunday in overtime.")
    assert "off_topic" in turn.events and user.willingness < w
    w = user.willingness
    turn = user.respond("   ")
    assert "empty" in turn.events and user.willingness < w
    line = "Save the Children works in over a hundred countries helping kids."
    user.respond(line)
    turn = user.respond(line)
    assert "repetition" in turn.events


def test_pressure_after_refusal_hurts(card, encoder):
    user = user_with(card, encoder, "hard", (("affordability", 0.9),))
    first = user.respond("Will you donate to Save the Children today?")
    assert first.decision == "refused"
    w = user.willingness
    second = user.respond("Come on, please donate now. Will you give?")
    assert "pressure" in second.events and user.willingness < w
    assert second.decision == "refused"


def test_hard_user_needs_blocking_concerns_resolved(card, encoder):
    user = user_with(card, encoder, "hard", (("trust", 0.9), ("affordability", 0.5)), w0=0.45)
    for _ in range(4):
        turn = user.respond("Would you donate to Save the Children today?")
        assert turn.decision != "agree"
    assert all(turn.justified for _ in [0])


def test_hard_user_agrees_after_reasons(card, encoder):
    user = user_with(card, encoder, "hard", (("affordability", 0.5),), w0=0.4)
    user.respond("Hi! How are you doing today?")
    for line in card.concern("affordability").unlock[:2]:
        user.respond(line)
    assert user.concerns["affordability"].status == RESOLVED
    turn = user.respond("Would you be willing to donate fifty cents to Save the Children?")
    assert turn.decision == "agree" and turn.justified
    assert turn.bdi.intention == card.target.intention


def test_soft_user_concessions_without_reason_are_flagged(card, encoder):
    agreed = []
    for seed in range(40):
        user = CognitiveUser(card, encoder, preset="soft")
        user.reset(np.random.default_rng(seed))
        for _ in range(8):
            turn = user.respond("Please donate to Save the Children now. Will you give?")
            if turn.decision == "agree":
                agreed.append(turn.justified)
                break
    assert len(agreed) >= 10  # the soft-user bias exists
    assert agreed.count(False) >= 0.8 * len(agreed)  # and is marked as not justified


def test_bdi_follows_state(card, encoder):
    user = user_with(card, encoder, "hard", (("affordability", 0.5),))
    start = user.state
    assert start.belief == card.concern("affordability").belief_unresolved
    user.respond(card.concern("affordability").unlock[1])
    assert user.state.belief != start.belief
    assert user.state.receptivity > start.receptivity


def test_replies_read_like_a_person(card, encoder):
    user = CognitiveUser(card, encoder, preset="hard")
    texts = []
    for seed in range(30):
        user.reset(np.random.default_rng(seed))
        for line in ("Hi there, how are you?", "Would you donate today?", "Why not?"):
            texts.append(user.respond(line).text)
    assert all(t.strip() and "{" not in t for t in texts)
    assert len(set(texts)) >= 0.8 * len(texts)


def test_presets_are_distinct():
    assert SOFT.require_resolved is False and HARD.require_resolved is True
    assert SOFT.drift > 0 and HARD.drift == 0
    with pytest.raises(ValueError, match="preset"):
        CognitiveUser(load_card("p4g"), make_encoder("hashing"), preset="medium")
