"""CraigslistBargain: the seller simulator, the deal judge, the buyer agents and discrimination."""

import dataclasses

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.judges import default_success_judge
from dialogue_gym.judges.base import Exchange
from dialogue_gym.judges.deal import DealJudge, DealJudgment
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.plugins.cb.seller import (
    HARD,
    SOFT,
    Listing,
    SellerUser,
    listing_bank,
    seller_preset,
)
from dialogue_gym.text.prices import asking_price_in, offer_in
from dialogue_gym.users import build_user
from dialogue_gym.users.base import DECISIONS, UserTurn
from dialogue_gym.users.persona import persona_bank
from dialogue_gym_agents.baselines.bargain import LowballBuyer, ScriptedBuyer

EPISODES = 100

ARGUE_CONDITION = "I noticed some scratches and wear, so it isn't really like new anymore."
ARGUE_MARKET = "I've seen the same model listed for quite a bit less nearby."
ARGUE_PICKUP = "I can pick it up today and pay in cash."
GREETING = "Hi! Is this still available?"


@pytest.fixture(scope="module")
def card():
    return load_card("cb")


@pytest.fixture(scope="module")
def encoder():
    return make_encoder("minilm")


@pytest.fixture(scope="module")
def listing():
    return Listing(
        id="T-1",
        category="bikes",
        title="Trek FX 3 hybrid bike",
        price=500.0,
        buyer_target=350.0,
        bottom_quantile=0.5,
        highlight="It rides smooth.",
        flaw="some rust on the chain",
    )


@pytest.fixture(scope="module")
def seller_factory(card, encoder, listing):
    persona = dataclasses.replace(persona_bank(card)[0], concerns=(("condition", 0.9),))

    def factory(preset="hard", seed=0):
        seller = SellerUser(card, encoder, preset=preset, personas=(persona,), listings=(listing,))
        seller.reset(np.random.default_rng(seed))
        return seller

    return factory


# -- card, bank, presets ---------------------------------------------------------------------


def test_card_declares_the_seller_world(card):
    assert card.user_model == "seller"
    assert card.success_judge.kind == "deal"
    assert card.success_judge.threshold == 0.0
    assert card.success_judge.inclusive is False  # a deal must beat the listing price
    assert card.strategy_names == (
        "greet",
        "inquire",
        "inform",
        "propose",
        "counter",
        "counter-noprice",
        "confirm",
        "affirm",
        "deny",
        "agree",
        "disagree",
    )
    target = card.target
    assert (target.receptivity, target.confidence, target.valence) == (0.8, 0.7, 0.3)
    assert {"CB-soft-v0", "CB-hard-v0"} <= set(dialogue_gym.registry)


def test_strategy_templates_have_no_placeholders(card):
    for strategy in card.strategies:
        for template in strategy.templates:
            assert "{" not in template, (strategy.name, template)


def test_listing_bank_is_large_deterministic_and_consistent(card):
    bank = listing_bank(card)
    assert len(bank) >= 200
    listing_bank.cache_clear()
    assert listing_bank(card) == bank
    assert {item.category for item in bank} == {
        "furniture",
        "bikes",
        "electronics",
        "housing",
        "cars",
        "phones",
    }
    for item in bank:
        assert item.buyer_target == round(item.price * 0.7)
        assert 0.0 <= item.bottom_quantile <= 1.0
    assert len({item.price for item in bank}) > 100


def test_presets_order_the_bottom_lines(card):
    hard, soft = seller_preset(card, "hard"), seller_preset(card, "soft")
    assert soft.floor_range[1] <= hard.floor_range[0]
    assert hard.cave_prob == hard.drift_prob == 0.0
    assert soft.cave_prob > 0 and soft.drift_prob > 0
    with pytest.raises(ValueError, match="unknown seller preset"):
        seller_preset(card, "medium")


def test_reply_templates_match_their_stance(card):
    replies = card.replies
    for template in (*replies["agree"], *card.extra["seller"]["replies"]["cave"]):
        assert classify_stance(template.replace("{price}", "$300"), card) == "agree", template
    for key in ("refuse", "pushback"):
        for template in replies[key]:
            text = template.replace("{price}", "$300").replace("{offer}", "$100")
            assert classify_stance(text, card) == "refused", template
    for template in card.extra["seller"]["replies"]["walk_away"]:
        assert classify_stance(template, card) == "refused", template
    for key in ("neutral", "positive", "inquiry_open", "greeting", "repetition"):
        for template in replies[key]:
            text = template.replace("{price}", "$300").replace("{offer}", "$250")
            assert classify_stance(text, card) not in ("agree", "refused"), template


# -- seller dynamics -------------------------------------------------------------------------


def test_opening_names_the_item_and_the_listing_price(seller_factory, listing):
    seller = seller_factory()
    turn = seller.respond(GREETING)
    assert listing.title in turn.text
    assert asking_price_in(turn.text) == listing.price
    info = seller.privileged()
    assert info["listing_price"] == listing.price and info["buyer_target"] == listing.buyer_target
    assert info["deal"] is False and info["deal_price"] is None


def test_arguments_move_the_ask_more_than_bare_offers(seller_factory):
    argued, bare = seller_factory(), seller_factory()
    for seller in (argued, bare):
        seller.respond(GREETING)
    argued_turn = argued.respond(f"{ARGUE_CONDITION} Would you take $350?")
    bare_turn = bare.respond("Would you take $350?")
    assert "addressed:condition" in argued_turn.events
    assert "bare" in bare_turn.events
    assert argued.ask < bare.ask < 500.0
    assert argued_turn.justified and bare_turn.justified
    assert offer_in(argued_turn.text, 500.0) == argued.stated_ask  # the counter is stated


def test_each_argument_counts_only_up_to_its_resistance(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    arguments = [
        ARGUE_CONDITION,
        "Since it has some damage, I'd have to spend money fixing it up.",
        "The rust you mentioned means I'd need to replace parts, which costs me.",
        "With the wear and tear, full price seems high for a used one.",
    ]
    needed = seller.arguments["condition"].needed
    for text in arguments[:needed]:
        assert "addressed:condition" in seller.respond(text).events
    ask = seller.ask
    turn = seller.respond(arguments[needed])
    # Condition is spent: the turn's side reading (market, which this seller gives no weight)
    # takes it, or it is re-argued for nothing.
    assert "addressed:condition" not in turn.events
    assert "exhausted:condition" in turn.events or "dismissed:market" in turn.events
    assert seller.ask == ask


def test_lowballs_harden_the_seller_and_repeated_ones_end_the_talk(seller_factory):
    seller = seller_factory("hard")
    seller.respond(GREETING)
    seller.respond(f"{ARGUE_CONDITION} Would you take $350?")
    softened = seller.ask
    turn = seller.respond("I'll give you $150. Take it or leave it.")
    assert turn.decision == "refused" and "insult" in turn.events
    assert seller.ask > softened  # the ask moves back up
    assert turn.bdi.valence < 0.1
    for _ in range(HARD.walk_after - 1):
        turn = seller.respond("$150, cash. That's my offer.")
    assert seller.walked
    assert turn.decision == "refused" and classify_stance(turn.text, seller.card) == "refused"
    after = seller.respond("Okay okay, I'll pay $480.")  # too late
    assert after.decision == "refused" and seller.privileged()["deal"] is False


def test_rude_words_insult_whatever_the_number(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    turn = seller.respond("That price is a total rip-off. Would you take $420?")
    assert "insult" in turn.events and turn.decision == "refused"


def test_a_good_enough_offer_closes_with_a_stated_price(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    turn = seller.respond("I can pick it up today with cash. Would you take $490?")
    assert turn.decision == "agree" and turn.justified
    assert classify_stance(turn.text, seller.card) == "agree"
    assert offer_in(turn.text, 500.0) == 490.0 == seller.privileged()["deal_price"]


def test_accepting_the_counter_closes_at_the_counter(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    counter = seller.respond(f"{ARGUE_CONDITION} Would you take $300?")
    stated = offer_in(counter.text, 500.0)
    assert stated is not None and stated < 500.0
    turn = seller.respond("Okay, you've got a deal at your price.")
    assert turn.decision == "agree"
    assert seller.privileged()["deal_price"] == stated


def test_hard_seller_never_crosses_the_bottom_line(card, encoder):
    pool = [
        ARGUE_CONDITION,
        ARGUE_MARKET,
        ARGUE_PICKUP,
        "My budget is really tight; I'm a student.",
        "Could you come down a little on the price?",
        "Would you take {p}?",
        "{arg} How about {p}?",
        "Okay, deal at {p}.",
        "Can we meet in the middle?",
    ]
    seller = build_user(card, encoder, "hard")
    for seed in range(40):
        rng = np.random.default_rng(seed)
        seller.reset(np.random.default_rng(1000 + seed))
        listing = seller.listing_price
        for _ in range(8):
            template = pool[int(rng.integers(len(pool)))]
            price = f"${round(listing * rng.uniform(0.6, 0.95))}"
            text = template.format(p=price, arg=pool[int(rng.integers(3))])
            turn = seller.respond(text)
            assert seller.ask >= seller.bottom_line - 1e-9
            assert seller.stated_ask >= seller.bottom_line - 1e-9
            deal = seller.privileged()["deal_price"]
            if deal is not None:
                assert deal >= seller.bottom_line - 1e-9, (seed, text, deal)
            assert turn.justified  # the hard seller never concedes without a reason
            assert turn.decision in DECISIONS


def test_soft_seller_concessions_without_reasons_are_not_justified(card, encoder, listing):
    persona = persona_bank(card)[0]
    drifting = dataclasses.replace(SOFT, drift_prob=1.0, cave_prob=0.0)
    seller = SellerUser(card, encoder, drifting, personas=(persona,), listings=(listing,))
    seller.reset(np.random.default_rng(0))
    seller.respond(GREETING)
    turn = seller.respond("Would you take $300?")
    assert "unreasoned_concession" in turn.events and not turn.justified
    caving = dataclasses.replace(SOFT, drift_prob=0.0, cave_prob=1.0)
    seller = SellerUser(card, encoder, caving, personas=(persona,), listings=(listing,))
    seller.reset(np.random.default_rng(0))
    seller.respond(GREETING)
    turn = seller.respond("I'll give you $175. Take it or leave it.")  # 35% of the listing
    assert turn.decision == "agree" and not turn.justified and "cave" in turn.events
    assert seller.privileged()["deal_price"] == 175.0 < seller.bottom_line


def test_state_and_profile_are_well_formed(seller_factory, card):
    seller = seller_factory("soft")
    texts = [GREETING, "What condition is it in?", f"{ARGUE_MARKET} How about $380?", ""]
    for text in texts:
        turn = seller.respond(text)
        bdi = turn.bdi
        assert 0 <= bdi.receptivity <= 1 and 0 <= bdi.confidence <= 1 and -1 <= bdi.valence <= 1
        assert turn.decision in DECISIONS
    assert "bottom line" in seller.profile()
    assert seller.persona.id.endswith("/T-1")


def test_observe_follows_what_the_external_seller_said(seller_factory):
    seller = seller_factory()
    seller.observe(GREETING, "Hi! The bike is $500.")
    turn = seller.observe("Would you take $480?", "Deal at $480. Come by tonight.")
    assert "external_reply" in turn.events
    assert seller.privileged()["deal_price"] == 480.0
    seller = seller_factory()
    seller.observe(GREETING, "Hi! The bike is $500.")
    seller.observe("Would you take $499?", "Hmm, let me think about it.")
    assert seller.privileged()["deal_price"] is None  # the seller never said yes


# -- the deal judge --------------------------------------------------------------------------


def _exchange(card, history, privileged, decision="agree"):
    turn = UserTurn(history[-1][1], decision, card.target, True)
    return Exchange(
        index=len(history) // 2,
        history=tuple(history),
        system=history[-2][1],
        user=history[-1][1],
        turn=turn,
        privileged=privileged,
    )


PRIV = {"listing_price": 500.0, "buyer_target": 350.0, "deal": True, "deal_price": 450.0}
OPENING = [("system", GREETING), ("user", "Hi! It's the bike. I'm asking $500.")]


def test_judge_is_built_from_the_card(card):
    judge = default_success_judge(card)
    assert isinstance(judge, DealJudge)
    with pytest.raises(ValueError, match="deal, no_deal"):
        DealJudge(load_card("p4g"))


def test_judge_scores_a_deal_with_utility(card):
    history = [*OPENING, ("system", "Would you take $450?"), ("user", "Deal at $450.")]
    judgment = DealJudge(card).judge(_exchange(card, history, PRIV))
    assert isinstance(judgment, DealJudgment)
    assert judgment.votes == ("deal", "deal", "deal")
    assert judgment.success and judgment.label == "deal"
    assert judgment.deal_price == 450.0
    assert judgment.utility == pytest.approx((450 - 500) / (350 - 500))
    assert judgment.details["utility"] == judgment.utility


def test_any_no_deal_vote_vetoes_the_deal(card):
    history = [*OPENING, ("system", "Would you take $450?"), ("user", "Deal at $450.")]
    no_state = {**PRIV, "deal": False, "deal_price": None}
    judgment = DealJudge(card).judge(_exchange(card, history, no_state))
    assert judgment.votes == ("deal", "no_deal", "deal")
    assert judgment.label == "no_deal" and not judgment.success and judgment.utility is None
    # The seller claims a price the buyer never offered or accepted.
    history = [*OPENING, ("system", "Would you take $400?"), ("user", "Deal at $450.")]
    judgment = DealJudge(card).judge(_exchange(card, history, PRIV))
    assert judgment.votes[2] == "no_deal" and not judgment.success
    # Words and state disagree on the price.
    history = [*OPENING, ("system", "Would you take $450?"), ("user", "Deal at $450.")]
    judgment = DealJudge(card).judge(_exchange(card, history, {**PRIV, "deal_price": 430.0}))
    assert judgment.votes[1] == "no_deal"
    # No deal stated at all.
    history = [*OPENING, ("system", "Would you take $450?"), ("user", "How about $480?")]
    judgment = DealJudge(card).judge(
        _exchange(card, history, {**PRIV, "deal": False, "deal_price": None}, "neutral")
    )
    assert judgment.votes == ("no_deal", "no_deal", "no_deal") and judgment.score == -1.0


def test_a_deal_above_the_listing_fails_the_utility_threshold(card):
    history = [*OPENING, ("system", "I'll pay $520 for it."), ("user", "Deal at $520!")]
    judgment = DealJudge(card).judge(_exchange(card, history, {**PRIV, "deal_price": 520.0}))
    assert judgment.label == "deal" and judgment.utility < 0
    assert not judgment.success
    at_listing = [*OPENING, ("system", "I'll pay $500."), ("user", "Deal at $500.")]
    judgment = DealJudge(card).judge(_exchange(card, at_listing, {**PRIV, "deal_price": 500.0}))
    # Paying the asking price is no success on the shipped (strict) card; MASP's inclusive
    # threshold 0.0 counted it (issue 13: capitulating must not win).
    assert judgment.utility == 0.0 and judgment.label == "deal" and not judgment.success
    inclusive = DealJudge(card, inclusive=True)
    assert inclusive.judge(_exchange(card, at_listing, {**PRIV, "deal_price": 500.0})).success


def test_accepting_the_sellers_price_is_consistent(card):
    history = [
        *OPENING,
        ("system", "Would you take $400?"),
        ("user", "I could do $460."),
        ("system", "Okay, you've got a deal at your price."),
        ("user", "Deal at $460. When can you come?"),
    ]
    judgment = DealJudge(card).judge(_exchange(card, history, {**PRIV, "deal_price": 460.0}))
    assert judgment.success and judgment.deal_price == 460.0


def test_judge_falls_back_to_the_transcript_for_prices(card):
    history = [*OPENING, ("system", "Would you take $450?"), ("user", "Deal at $450.")]
    judgment = DealJudge(card).judge(_exchange(card, history, {}))
    assert judgment.success
    assert judgment.listing_price == 500.0 and judgment.buyer_target == 350.0


# -- agents and the env ----------------------------------------------------------------------


def test_scripted_buyer_reads_the_listing_and_stays_below_it(card):
    env = dialogue_gym.make("CB-hard", encoder="hashing", privileged=True)
    buyer = ScriptedBuyer(card)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        buyer.reset(seed=seed)
        done = False
        while not done:
            text = buyer.act(obs["system"])
            obs, _, term, trunc, infos = env.step({"system": text})
            listing = infos["system"]["privileged"]["listing_price"]
            offer = offer_in(text, listing)
            assert offer is None or offer <= listing
            done = term["system"] or trunc["system"]


def test_lowball_buyer_offers_a_third_of_the_listing(card):
    buyer = LowballBuyer(card, seed=3)
    observation = {"history": ({"speaker": 1, "text": "Hi! It's a sofa. I'm asking $600."},)}
    offer = offer_in(buyer.act(observation), 600.0)
    assert 0.3 * 600 - 10 <= offer <= 0.4 * 600 + 10


def test_env_reports_the_deal(card):
    env = dialogue_gym.make("CB-hard", encoder="hashing", privileged=True)
    obs, _ = env.reset(seed=0)
    obs, *_, infos = env.step({"system": GREETING})
    listing = infos["system"]["privileged"]["listing_price"]
    assert asking_price_in(obs["system"]["history"][-1]["text"]) == listing
    _, _, term, _, infos = env.step({"system": f"I'll pay {listing:.0f} dollars, deal?"})
    assert infos["system"]["success_label"] == "deal"
    assert infos["system"]["privileged"]["deal_price"] == listing
    # A deal at the listing price has utility 0: reported, but no success (the strict card),
    # so the episode is not over and its AT will count as T.
    assert infos["system"]["utility"] == 0.0
    assert not infos["system"]["success"] and not term["system"]


# -- discrimination over 100 seeded episodes (default MiniLM encoder) --------------------------


@pytest.fixture(scope="module")
def table():
    result = evaluate(
        ["scripted", "lowball"], ["CB-soft", "CB-hard"], episodes=EPISODES, progress=False
    )
    return {(row["agent"], row["env_id"]): row for row in result.summaries}


def test_scripted_buyer_is_clearly_ahead_on_hard_sellers(table):
    scripted, lowball = table["scripted", "CB-hard-v0"], table["lowball", "CB-hard-v0"]
    assert scripted["sr"] >= 0.8
    assert lowball["sr"] <= 0.1
    assert scripted["rcsr"] >= scripted["sr"] - 0.05


def test_hard_sellers_take_longer_than_soft_ones(table):
    assert table["scripted", "CB-hard-v0"]["at"] > table["scripted", "CB-soft-v0"]["at"] + 1.0


def test_soft_sellers_cave_to_lowballs_and_rcsr_catches_it(table):
    soft = table["lowball", "CB-soft-v0"]
    assert soft["sr"] > table["lowball", "CB-hard-v0"]["sr"]
    if soft["sr"] > 0:
        assert soft["rcsr"] < soft["sr"]
        assert soft["rcsr"] <= 0.5 * soft["sr"]
