"""ConcernActions (listening moves + what the system can see) and the interface bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.env.wrappers import BargainMoves, ConcernActions, ListeningMoves
from dialogue_gym.env.wrappers.bargain_moves import (
    PRICE_FEATURES,
    PriceState,
    buyer_target_fraction,
    round_offer,
)
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.testing.move_search import (
    best_fixed_sequence,
    clairvoyant_search,
    deal_utility,
    interface_lines,
    play_moves,
)
from dialogue_gym.text.prices import asking_price_in, format_price, offer_in
from dialogue_gym.users.analysis import UtteranceAnalyzer


@pytest.fixture(scope="module")
def p4g() -> ConcernActions:
    return ConcernActions(dialogue_gym.make("P4G-hard", privileged=True))


def test_one_answer_move_per_concern_then_the_other_moves() -> None:
    card = load_card("p4g")
    names = ListeningMoves(card).names
    assert names == (
        *(f"answer:{c.id}" for c in card.concerns),
        "rapport",
        "probe",
        "acknowledge",
        "reflect",
        "ask",
    )
    assert "ask" not in ListeningMoves(load_card("ed")).names  # nothing to ask for on ED


def test_reflect_says_back_what_the_user_told_in_the_second_person() -> None:
    moves = ListeningMoves(load_card("ed"))
    moves.reset(0)
    replies = ["Hi.", "I found out my friends had a group chat without me. Why would they?"]
    assert moves.realize("reflect", replies) == (
        "It sounds like you found out your friends had a group chat without you."
    )
    # Said back once; with nothing new to say back it acknowledges instead.
    assert "group chat" not in moves.realize("reflect", replies)
    # Lower-case "i was" (a texting style) is said back as "you were".
    assert moves.realize("reflect", ["ugh, i was stuck in an elevator for an hour."]) == (
        "It sounds like you were stuck in an elevator for an hour."
    )


def test_a_need_met_by_the_users_story_is_answered_in_its_words() -> None:
    """ED's needs are met by the user's own story: the answer says its core back and takes it
    seriously, in a different turn each time (a turn said twice is a repetition)."""
    moves = ListeningMoves(load_card("ed"))
    moves.reset(0)
    replies = ["Well, I finally paid off my car last month and I feel content. It was a lot."]
    answers = [moves.realize("answer:feeling_heard", replies) for _ in range(3)]
    assert all("you finally paid off your car last month" in a.lower() for a in answers)
    assert len(set(answers)) == 3
    unlock = load_card("ed").concern("feeling_heard").unlock
    assert moves.realize("answer:feeling_heard", ()) in unlock  # no story yet: the card's


def test_story_answers_say_back_another_part_of_the_story_each_time() -> None:
    """What happened, then the feeling the user named, then that it is no overreaction, then
    a detail it added: said back in its words, none a repeat of another."""
    moves = ListeningMoves(load_card("ed"))
    moves.reset(0)
    replies = [
        "So, i got lost hiking alone after dark last weekend and i was terrified until i "
        "found the trail again.",
        "There's more. My phone died halfway and nobody knew where I was.",
    ]
    answers = [moves.realize("answer:feeling_heard", replies) for _ in range(4)]
    assert answers[0] == (
        "Wait, so you got lost hiking alone after dark last weekend? That really is a big deal."
    )
    assert answers[1].startswith("Of course you feel terrified. You got lost hiking alone")
    assert "not overreacting" in answers[2] and "of course you feel terrified" in answers[2]
    assert answers[3] == (
        "It makes sense that your phone died halfway and nobody knew where you were."
    )
    assert len(set(answers)) == 4


def test_story_answers_after_a_reflection_are_rarely_heard_as_repeats() -> None:
    """A story answer that said back the same sentence as the reflection before it was a
    repetition to the user (10 of these 12 episodes before); each says another part now."""
    env = ConcernActions(dialogue_gym.make("ED-hard"))
    moves = ["probe", "reflect", "answer:feeling_heard", "answer:feeling_validated"]
    repeated = 0
    for seed in range(12):
        env.reset(seed=seed)
        events: list[str] = []
        for move in [*moves, "answer:feeling_heard"]:
            _, _, terminated, truncated, info = env.step(move)
            events += info["user_events"]
            if terminated or truncated:
                break
        repeated += "repetition" in events
    assert repeated <= 4


def test_a_turn_is_labelled_with_the_move_it_is_nearest() -> None:
    """Others' turns (a corpus listener's) get the move whose wording here is nearest,
    including the moves built from the user's own words; nothing is realized."""
    card = load_card("ed")
    moves = ListeningMoves(card)
    moves.reset(0)
    encoder = make_encoder("minilm")
    replies = ["Honestly, I finally finished building a bookshelf by hand and I'm proud of it."]
    said_back = "It sounds like you finished building a bookshelf by hand and you're proud of it."
    assert moves.names[moves.nearest(said_back, replies, encoder)] == "reflect"
    invite = "What happened after that? I'd love to hear the rest of it."
    assert moves.names[moves.nearest(invite, replies, encoder)] == "answer:wants_to_share_more"
    validation = "Of course you feel proud, you built a bookshelf by hand and that is a big deal."
    assert moves.names[moves.nearest(validation, replies, encoder)].startswith("answer:feeling")
    # Labelling realized nothing: the first story answer is still the first form.
    assert moves.realize("answer:feeling_heard", replies).startswith("Wait, so you finally")


def test_a_negotiation_gets_price_moves_and_price_features() -> None:
    """On CB the polite ask (whose wordings carry arbitrary prices) gives way to moves that
    name a price read from the dialogue: the target, a raise, the midpoint, an accept."""
    env = ConcernActions(dialogue_gym.make("CB-hard", encoder="hashing"))
    assert env.move_names[-4:] == ("offer:target", "offer:raise", "offer:split", "accept")
    assert "ask" not in env.move_names
    assert env.feature_names[-4:] == PRICE_FEATURES
    check_env(env, skip_render_check=True)
    features, _ = env.reset(seed=0)
    assert not features[-4:].any()  # no price named yet
    _, _, _, _, info = env.step("probe")
    history = env.single.dialogue_env.history
    listing = asking_price_in(history[-1][1])
    assert listing is not None
    fraction = buyer_target_fraction(env.card)
    features, _, _, _, info = env.step("offer:target")
    target = round_offer(fraction * listing)
    assert format_price(target) in info["utterance"]
    assert features[env.feature_names.index("own_offer")] == pytest.approx(target / listing)
    _, _, _, _, info = env.step("offer:raise")
    raised = offer_in(info["utterance"], reference=listing)
    assert raised is not None and raised > target
    assert "a month" not in info["utterance"]  # a one-off listing gets one-off wordings


def test_offers_rise_never_fall_and_never_pass_the_sellers_price() -> None:
    moves = BargainMoves(load_card("cb"))
    moves.reset(0)
    listing, seller = 1000.0, 900.0
    assert moves.offer("offer:target", listing, seller, None) == round_offer(
        moves.fraction * listing
    )
    assert moves.offer("offer:raise", listing, seller, 700.0) == 740.0
    assert moves.offer("offer:split", listing, seller, 700.0) == 800.0
    assert moves.offer("offer:target", listing, seller, 850.0) == 850.0  # never back down
    assert moves.offer("offer:raise", listing, 720.0, 700.0) == 720.0  # the seller's price caps
    replies = ["Hi! It's a couch, asking $1,000.", "I could do $900."]
    assert PriceState.read(replies, ["Would you take $700?"]).__dict__ == {
        "listing": 1000.0, "seller": 900.0, "own": 700.0, "monthly": False,
    }  # fmt: skip
    rent = PriceState.read(["The room is $1,400 a month, utilities included."])
    assert rent.listing == 1400.0 and rent.monthly
    moves.reset(0)
    assert "a month" in moves.realize("offer:target", ["The room is $1,400 a month."])


@pytest.mark.parametrize("card_id", ["p4g", "merchant", "courier", "esconv"])
def test_every_answer_move_reaches_its_concern(card_id: str) -> None:
    """What the issue asks of the interface: each answer move is read by the users as an
    answer to its own concern (the likeliest concern of the turn), for most of its wordings."""
    card = load_card(card_id)
    analyzer = UtteranceAnalyzer.for_user(card, make_encoder("minilm"))
    moves = ListeningMoves(card)
    moves.reset(0)
    for concern in card.concerns:
        wordings = [moves.realize(f"answer:{concern.id}") for _ in range(8)]
        hits = 0
        for text in wordings:
            meaning = analyzer.perceive(text).meaning
            assert meaning is not None
            hits += meaning.likeliest() == concern.id
        assert hits >= 6, (concern.id, hits)


def test_the_view_passes_gymnasiums_checker(p4g: ConcernActions) -> None:
    check_env(p4g, skip_render_check=True)


def test_same_seed_same_episode(p4g: ConcernActions) -> None:
    def run() -> list[Any]:
        x, _ = p4g.reset(seed=11)
        out = [x]
        for action in (9, 0, 12, 11):
            x, reward, _, _, info = p4g.step(action)
            out += [x, reward, info["utterance"]]
        return out

    first, second = run(), run()
    for a, b in zip(first, second, strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_actions_by_name_and_bad_actions(p4g: ConcernActions) -> None:
    p4g.reset(seed=0)
    _, _, _, _, info = p4g.step("probe")
    assert info["strategy"] == "probe"
    with pytest.raises(ValueError, match="out of range"):
        p4g.step(len(p4g.move_names))
    with pytest.raises(ValueError, match="unknown strategy"):
        p4g.step("answer:nothing")
    with pytest.raises(TypeError):
        p4g.step(1.5)


@pytest.mark.parametrize("encoder", ["minilm", "static"])
def test_voiced_and_settled_flags_follow_what_the_user_said(encoder: str) -> None:
    """The observation's concern flags are read from the replies' text; they agree with the
    user's hidden events (voiced, resolved) under both encoders (the static encoder's cosines
    are put on MiniLM's scale first)."""
    env = ConcernActions(dialogue_gym.make("P4G-hard", privileged=True, encoder=encoder))
    names = env.move_names
    flagged = agreed = missed = 0
    for seed in range(12):
        x, _ = env.reset(seed=seed)
        voiced: set[str] = set()
        resolved: set[str] = set()
        for _ in range(env.max_exchanges):
            feature = dict(zip(env.feature_names, x, strict=True))
            open_ = [c for c in env.concern_ids if feature[f"open:{c}"] > 0]
            action = names.index(f"answer:{open_[0]}" if open_ else "probe")
            x, _, terminated, truncated, info = env.step(action)
            for event in info["privileged"]["user_events"]:
                kind, _, cid = event.partition(":")
                (voiced if kind == "voiced" else resolved if kind == "resolved" else set()).add(cid)
            feature = dict(zip(env.feature_names, x, strict=True))
            for cid in env.concern_ids:
                if feature[f"voiced:{cid}"] > 0:
                    flagged += 1
                    agreed += cid in voiced
                elif cid in voiced:
                    missed += 1
                if feature[f"resolved:{cid}"] > 0:
                    assert cid in resolved, (seed, cid)
            if terminated or truncated:
                break
    assert flagged and agreed / flagged >= 0.9, (agreed, flagged)
    assert missed <= 0.25 * (agreed + missed), (missed, agreed)


def test_the_fixed_sequence_and_the_ceiling_bound_a_policy(p4g: ConcernActions) -> None:
    """A fixed sequence is scored by replay; the clairvoyant search finds a success where a
    listening sequence has one, and is never below the fixed sequence on the same seed."""
    seeds = range(3)
    moves, score = best_fixed_sequence(p4g, seeds, rounds=1)
    assert len(moves) == p4g.max_exchanges
    always_probe = sum(play_moves(p4g, [9] * 8, s)[0] for s in seeds) / 3
    assert score >= always_probe
    for seed in seeds:
        found, outcome = clairvoyant_search(p4g, seed, width=2)
        assert play_moves(p4g, found, seed) == outcome  # replays to the same outcome
        assert outcome[0] or not play_moves(p4g, moves, seed)[0]


@pytest.mark.parametrize("card_id", ["p4g", "merchant", "courier", "esconv", "ed", "cb"])
def test_every_strategy_reaches_each_concern_it_lists(card_id: str) -> None:
    """StrategyActions keeps the paper's strategies: each concern a strategy lists in
    ``addresses`` is the likeliest reading of at least one of its templates, so a planner on
    that view can reach it (issue 35: no foot-in-the-door template reached P4G's pressure
    worry before, no risk-reversal one Merchant's cash-up-front worry)."""
    card = load_card(card_id)
    analyzer = UtteranceAnalyzer.for_user(card, make_encoder("minilm"))
    for strategy in card.strategies:
        reads = [analyzer.perceive(t).meaning for t in strategy.templates]
        for concern in strategy.addresses:
            assert any(m is not None and m.likeliest() == concern for m in reads), (
                strategy.name,
                concern,
            )


def test_a_negotiations_fixed_sequence_is_searched_by_buyer_utility() -> None:
    """On CB the fixed-sequence line maximizes SL (a deal at the listing is a success worth
    nothing) and is reported as ``fixed best SL`` too."""
    env = ConcernActions(dialogue_gym.make("CB-hard", encoder="hashing"))
    seeds = range(100_000, 100_002)
    fixed, value = best_fixed_sequence(env, seeds, length=8, rounds=1, objective="utility")
    assert value == pytest.approx(sum(deal_utility(env, fixed, s) for s in seeds) / 2)
    accept_at_once = [env.move_names.index("accept")] * 8
    assert value >= sum(deal_utility(env, accept_at_once, s) for s in seeds) / 2
    lines, _ = interface_lines(env, range(2), seeds, width=0, rounds=1)
    assert set(lines) == {"random", "fixed best", "fixed best SL"}
    with pytest.raises(ValueError, match="objective"):
        best_fixed_sequence(env, seeds, objective="sl")
