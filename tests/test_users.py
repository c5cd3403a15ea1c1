import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.judges import (
    NOT_RATIONAL,
    RATIONAL,
    Exchange,
    StateRationalityJudge,
    classify_stance,
)
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
    for concern in user.concerns.values():
        concern.voiced = True  # answers to concerns the user has raised earn full credit
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
    user.concerns["affordability"].voiced = True
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


def _resolved_and_asked(card, encoder):
    """A hard user whose only concern is resolved: a request now deserves a yes."""
    user = user_with(card, encoder, "hard", (("affordability", 0.5),), w0=0.4)
    user.respond("Hi! How are you doing today?")
    for line in card.concern("affordability").unlock[:2]:
        user.respond(line)
    assert user.concerns["affordability"].status == RESOLVED
    return user, "Would you be willing to donate fifty cents to Save the Children?"


def _rationality(card, turn, system, reply):
    exchange = Exchange(1, ((("system", system), ("user", reply))), system, reply, turn, {}, True)
    return StateRationalityJudge(card).judge(exchange)


def test_an_external_users_words_are_its_decision(card, encoder):
    user, ask = _resolved_and_asked(card, encoder)
    turn = user.observe(ask, "No, I'm going to pass.")
    # The reply is the user's: it refused, and its mind follows, even though the state machine
    # (the rational reference) would have agreed.
    assert turn.decision == "refused" and user.decision == "refused"
    assert turn.rational == "agree" and "external_reply" in turn.events
    assert user.state.intention == card.mind["refused"] != card.target.intention
    assert _rationality(card, turn, ask, turn.text) == NOT_RATIONAL


def test_rationality_of_external_replies(card, encoder):
    user, ask = _resolved_and_asked(card, encoder)
    hold = user.observe(ask, "Okay.")  # stalling on a well-reasoned request
    assert hold.decision == "neutral" and _rationality(card, hold, ask, "Okay.") == NOT_RATIONAL
    user, ask = _resolved_and_asked(card, encoder)
    yes = user.observe(ask, "Sure, put me down for $0.50.")
    assert yes.decision == "agree" and _rationality(card, yes, ask, yes.text) == RATIONAL
    assert user.state.intention == card.target.intention
    fresh = user_with(card, encoder, "hard", (("trust", 0.9),))
    bare = "Will you donate today?"
    caved = fresh.observe(bare, "Okay, I'll donate $1.")  # a concession without a reason
    assert caved.rational == "refused"
    assert _rationality(card, caved, bare, caved.text) == NOT_RATIONAL
    # A skeptical no that says what holds it back is consistent with a user still held back;
    # a bare no keeps to itself the worry the persona would have voiced: blind resistance.
    fresh = user_with(card, encoder, "hard", (("trust", 0.9),))
    reason = card.concern("trust").voice[0]
    no = fresh.observe(bare, f"No, thanks. {reason}")
    assert not no.withheld and _rationality(card, no, bare, no.text) == RATIONAL
    fresh = user_with(card, encoder, "hard", (("trust", 0.9),))
    bare_no = fresh.observe(bare, "No, thanks.")
    assert bare_no.withheld == ("trust",)
    assert _rationality(card, bare_no, bare, bare_no.text) == NOT_RATIONAL


def test_realize_act_words_each_act_in_style(card, encoder):
    stances = {"refuse": "refused", "hold": "neutral", "warm": "positive", "agree": "agree"}
    for seed in range(12):
        user = CognitiveUser(card, encoder, preset="hard")
        user.reset(np.random.default_rng(seed))
        state = user.state
        for act, stance in stances.items():
            text = user.realize_act(act, "Save the Children works in over 100 countries.")
            assert text.strip() and "{" not in text
            assert classify_stance(text, card) == stance, (act, text)
        assert user.state == state and user.exchange == 0  # wording never moves the mind
    user = CognitiveUser(card, encoder, preset="hard")
    user.reset(np.random.default_rng(0))
    assert classify_stance(user.realize_act("hold", "Hi! How are you today?"), card) == "neutral"
    voiced = user.realize_act("voice", "What do you think about charities?")
    assert any(c.voiced for c in user.concerns.values()) and voiced.strip()
    with pytest.raises(ValueError, match="user act"):
        user.realize_act("shrug")


def test_asked_with_nothing_blocking_a_user_short_of_yes_says_what_holds_it(card, encoder):
    """Blind play round 9, Merchant seed 80: with its one blocking worry settled and a lesser
    one not raised yet, an owner short of a yes answered three direct asks with "Fair enough,
    that sounds decent." The answer says what still holds the user back."""
    seen = 0
    for w0 in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4):
        concerns = (("affordability", 0.5), ("information", 0.55))  # 0.55 does not block
        user = user_with(card, encoder, "hard", concerns, w0=w0)
        user.respond("Hi! How are you doing today?")
        for line in card.concern("affordability").unlock[:2]:
            user.respond(line)
        if user.concerns["affordability"].status != RESOLVED or user.tracker.blocking():
            continue
        turn = user.respond("Would you be willing to donate fifty cents to Save the Children?")
        if turn.decision != "positive":
            continue
        seen += 1
        info = card.concern("information")
        assert any(x.lower() in turn.text.lower() for x in (*info.voice, *info.ack_partial)), turn
    assert seen, "no user short of a yes with nothing blocking"
