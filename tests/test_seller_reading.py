"""The CB seller reads prices in context, takes corrections, and concedes to reasons.

An outside tester's report: the buyer offered "$1,225 a month … that's a guaranteed $22,000+
with no vacancy" for an apartment and the seller answered "deal at $22,000. When can you pick
it up?", then held $22,000 through three corrections. These tests pin each part of the fix:
the price forms (per month vs totals, ranges, ``k``, words, ``+``, costs, budgets), corrections,
never closing on a number the buyer did not offer, per-category wording, and concessions that
follow the buyer's reasons more than bare offers.
"""

import dataclasses

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.judges.base import Exchange
from dialogue_gym.judges.deal import DealJudge
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.plugins.cb.seller import Listing, SellerUser
from dialogue_gym.text.prices import OfferReading, listing_period, offer_in, read_offer
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.persona import persona_bank

GREETING = "Hi! Is this still available?"
QUOTED = (
    "I'd like to offer $1,225 a month on an 18-month lease; that's a guaranteed $22,000+ with "
    "no vacancy."
)
CORRECTIONS = (
    "No, I meant $1,225 per month, not $22,000.",
    "To be clear, my offer is 1225.",
    "I said $1,225 a month, not $22,000.",
)


@pytest.fixture(scope="module")
def card():
    return load_card("cb")


@pytest.fixture(scope="module")
def encoder():
    return make_encoder("minilm")


APARTMENT = Listing(
    id="T-apt",
    category="housing",
    title="sunny one-bedroom apartment near the park",
    price=1400.0,
    buyer_target=980.0,
    bottom_quantile=0.5,
    highlight="Heat and water are included.",
    flaw="an older kitchen",
    unit=" a month",
)
BIKE = Listing(
    id="T-bike",
    category="bikes",
    title="Trek FX 3 hybrid bike",
    price=500.0,
    buyer_target=350.0,
    bottom_quantile=0.5,
    highlight="It rides smooth.",
    flaw="some rust on the chain",
)
CAR = dataclasses.replace(
    BIKE, id="T-car", category="cars", title="2010 Toyota Corolla", price=6000.0
)


@pytest.fixture(scope="module")
def make_seller(card, encoder):
    persona = dataclasses.replace(persona_bank(card)[0], concerns=(("condition", 0.9),))

    def factory(listing=APARTMENT, preset="hard", seed=0):
        seller = SellerUser(card, encoder, preset=preset, personas=(persona,), listings=(listing,))
        seller.reset(np.random.default_rng(seed))
        return seller

    return factory


# -- 1. price forms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reference", "period", "offer", "high"),
    [
        # per month vs totals
        (QUOTED, 1400, "month", 1225, None),
        (
            "$1,225 a month … that's a guaranteed $22,000+ with no vacancy",
            1400,
            "month",
            1225,
            None,
        ),
        ("$1,225 a month, that's $22,050 over the lease.", 1400, "month", 1225, None),
        ("I can pay $1,300/mo", 1400, "month", 1300, None),
        ("I can do $1,250 monthly", 1400, "month", 1250, None),
        ("I'll pay $14,700 a year.", 1400, "month", 1225, None),  # a yearly rent, per month
        ("How about $1,225?", 1400, "month", 1225, None),  # no unit: in the listing's period
        ("I'd pay a total of $22,000.", 1400, "month", None, None),  # a total is no rent
        ("I make $3,000 a month, so I can pay $450.", 500, "item", 450, None),  # an income
        ("I'll give you 5000 for it", 500, "item", None, None),  # 10x the price: a slip
        # ranges: the low end is the offer, the high end is kept
        ("How about $300-350?", 400, "item", 300, 350),
        ("Somewhere between $300 and $350?", 400, "item", 300, 350),
        ("$1,200-1,300 a month works for me", 1400, "month", 1200, 1300),
        # k and words
        ("I could do 1.2k", 1400, "item", 1200, None),
        ("How about $1.2K?", 1400, "item", 1200, None),
        ("Would you take twelve hundred?", 1400, "item", 1200, None),
        ("I'll give you twelve hundred a month", 1400, "month", 1200, None),
        # costs and budgets are not offers
        ("I'd have to spend $200 on repairs.", 1000, "item", None, None),
        ("I'd have to spend $200 on repairs, so would you take $800?", 1000, "item", 800, None),
        ("Shipping would cost me $40.", 300, "item", None, None),
        ("My budget is $500 total, after the $60 for the rack.", 600, "item", None, None),
        ("Fixing the tires would run me $300. Would you take $6,000?", 7000, "item", 6000, None),
        ("I'll pay $300 plus the $40 for delivery.", 400, "item", 300, None),
        # the seller's price named as a condition is no offer (blind play round 11, seed 102:
        # "Sold! $380 it is.")
        (
            "Would you take $345 cash if I pick it up? If $380 is truly firm, I understand.",
            380,
            "item",
            345,
            None,
        ),
        ("Would $345 work? If $380 is the lowest you can go, no worries.", 380, "item", 345, None),
    ],
)
def test_offers_are_read_in_context(text, reference, period, offer, high):
    reading = read_offer(text, reference, period)
    assert reading.offer == (pytest.approx(offer) if offer is not None else None)
    assert reading.high == (pytest.approx(high) if high is not None else None)


def test_a_cited_total_and_a_budget_are_recorded_not_offered():
    reading = read_offer(QUOTED, 1400, "month")
    assert reading.totals == (22000.0,)
    budget = read_offer("My budget is $500 total, after the $60 for the rack.", 600, "item")
    assert budget.budget == 500.0 and budget.offer is None
    # A "+" marks an at-least figure whatever the listing's period.
    assert offer_in("that's $22,000+ with no vacancy", 1400) is None


def test_listing_periods_come_from_the_unit(card):
    assert listing_period(" a month") == "month" == APARTMENT.period
    assert listing_period("") == "item" == BIKE.period
    categories = {c["id"]: c for c in card.extra["listings"]["categories"]}
    assert listing_period(categories["housing"]["unit"]) == "month"
    assert listing_period(categories["cars"]["unit"]) == "item"


@pytest.mark.parametrize("text", CORRECTIONS)
def test_corrections_name_the_offer(text):
    reading = read_offer(text, 1400, "month")
    assert isinstance(reading, OfferReading)
    assert reading.offer == 1225.0 and reading.clarified


# -- the quoted apartment case ------------------------------------------------------------------


def test_the_quoted_apartment_case(make_seller):
    seller = make_seller()
    seller.respond("Hi, is the apartment still available?")
    turn = seller.respond(QUOTED)
    assert seller.last_offer == 1225.0
    assert seller.privileged()["deal_price"] is None
    assert "22,000" not in turn.text and "pick it up" not in turn.text
    assert offer_in(turn.text, 1400.0, "month") == seller.stated_ask  # a monthly counter
    assert seller.privileged()["period"] == "month"


# -- 2. corrections -----------------------------------------------------------------------------


@pytest.mark.parametrize("correction", CORRECTIONS)
def test_a_correction_reopens_a_deal_closed_on_a_misread(make_seller, correction):
    seller = make_seller()
    seller.respond(GREETING)
    seller.negotiation.deal_price = seller.negotiation.deal_offer = (
        22000.0  # as the old reader closed it
    )
    turn = seller.respond(correction)
    assert "reopened" in turn.events and "clarified" in turn.events
    assert seller.deal_price is None and seller.last_offer == 1225.0
    assert "22,000" not in turn.text
    # A deal the buyer does not dispute holds.
    seller.negotiation.deal_price = seller.negotiation.deal_offer = 1350.0
    assert seller.respond("Great, thanks!").events == ("deal",)


def test_a_correction_does_not_reopen_an_accepted_counter(make_seller):
    seller = make_seller()
    seller.respond(GREETING)
    seller.negotiation.deal_price, seller.negotiation.deal_offer = (
        1350.0,
        None,
    )  # the buyer took the seller's price
    turn = seller.respond("To be clear, my offer is 1225.")
    assert turn.events == ("deal",) and seller.deal_price == 1350.0


def test_a_correction_takes_back_an_insult_over_a_misread_number(make_seller):
    seller = make_seller()
    seller.respond(GREETING)
    turn = seller.respond("Would you take $400?")
    assert "insult" in turn.events and seller.insults == 1
    turn = seller.respond("Sorry, not $400, I meant $1,250 a month.")
    assert "clarified" in turn.events and seller.insults == 0
    assert seller.last_offer == 1250.0 and turn.decision != "refused"


# -- 3. never close on a number the buyer did not offer -----------------------------------------


@pytest.mark.parametrize(
    ("listing", "text"),
    [
        (APARTMENT, QUOTED),
        (APARTMENT, "Over an 18-month lease that's $25,200 total for you."),
        (APARTMENT, "I'd have to spend $2,000 on movers first."),
        (APARTMENT, "My budget is $1,500 a month, but I want to keep some room."),
        (BIKE, "I'd have to spend $600 on a new drivetrain."),
        (BIKE, "My budget is $800 total, after the $60 for the rack."),
        (BIKE, "Shipping one from out of state would cost me $700."),
        (BIKE, "These sell for $900+ new."),
        (CAR, "I'd have to put $9,000 into repairs."),
    ],
)
def test_the_seller_never_closes_on_a_number_not_offered(make_seller, listing, text):
    seller = make_seller(listing)
    seller.respond(GREETING)
    turn = seller.respond(text)
    assert seller.privileged()["deal_price"] is None, turn.text
    assert turn.decision != "agree"


def test_a_range_closes_within_the_range(make_seller):
    seller = make_seller(BIKE)
    seller.respond(GREETING)
    turn = seller.respond("I can pick it up today with cash. Could you do $450-500?")
    price = seller.privileged()["deal_price"]
    assert turn.decision == "agree" and 450.0 <= price <= 500.0
    assert price == seller.stated_ask or price == 450.0


def test_the_judge_reads_ranges_and_periods(card):
    def exchange(history, privileged):
        turn = UserTurn(history[-1][1], "agree", card.target, True)
        return Exchange(
            index=len(history) // 2,
            history=tuple(history),
            system=history[-2][1],
            user=history[-1][1],
            turn=turn,
            privileged=privileged,
        )

    opening = [("system", GREETING), ("user", "Hi! It's the bike. I'm asking $500.")]
    priv = {"listing_price": 500.0, "buyer_target": 350.0, "deal": True, "period": "item"}
    history = [*opening, ("system", "Could you do $450-480?"), ("user", "Deal at $470.")]
    judgment = DealJudge(card).judge(exchange(history, {**priv, "deal_price": 470.0}))
    assert judgment.votes == ("deal", "deal", "deal") and judgment.deal_price == 470.0
    # The old misread: a cited total is no offer the seller can close on.
    apt = {"listing_price": 1400.0, "buyer_target": 980.0, "deal": True, "period": "month"}
    history = [*opening, ("system", QUOTED), ("user", "Deal at $22,000.")]
    judgment = DealJudge(card).judge(exchange(history, {**apt, "deal_price": 22000.0}))
    assert judgment.votes[2] == "no_deal" and not judgment.success


# -- 4. wording fits the category ---------------------------------------------------------------


def test_an_apartment_is_moved_into_and_leased(make_seller):
    seller = make_seller()
    opening = seller.respond(GREETING).text
    assert "rent" in opening.lower() and "for sale" not in opening.lower()
    turn = seller.respond("I can sign today and pay in cash. Would you take $1,400 a month?")
    assert turn.decision == "agree"
    text = turn.text.lower()
    assert "pick it up" not in text
    assert any(w in text for w in ("move in", "move-in", "lease", "keys")), turn.text
    assert offer_in(turn.text, 1400.0, "month") == 1400.0


def test_a_car_is_picked_up_or_test_driven(make_seller):
    seller = make_seller(CAR)
    seller.respond(GREETING)
    turn = seller.respond("I can pay cash today. Would you take $6,000?")
    assert turn.decision == "agree"
    text = turn.text.lower()
    assert any(w in text for w in ("pick it up", "test drive", "title")), turn.text


def test_category_variants_keep_their_stance(card):
    seller_replies = card.extra["seller"]["replies"]
    categories = [c["id"] for c in card.extra["listings"]["categories"]]
    tables = [*card.replies.items(), *seller_replies.items()]
    variants = [
        (key, base, templates)
        for key, templates in tables
        for base in [key.rsplit("_", 1)[0]]
        if key.rsplit("_", 1)[-1] in categories and "_" in key
    ]
    assert {key for key, _, _ in variants} >= {"agree_housing", "agree_cars", "opening_housing"}
    for key, base, templates in variants:
        assert base in card.replies or base in seller_replies, key
        for template in templates:
            text = template.replace("{price}", "$300").replace("{offer}", "$250")
            stance = classify_stance(text, card)
            if base in ("agree", "cave", "after_deal"):
                assert stance == "agree", template
            else:
                assert stance not in ("agree", "refused"), template


# -- 5. concessions follow reasons ---------------------------------------------------------------

CONDITION = "I noticed some scratches and wear, so it isn't really like new anymore."


def test_a_reasoned_offer_moves_the_counter_more_than_a_bare_one(make_seller):
    argued, bare = make_seller(BIKE), make_seller(BIKE)
    for seller in (argued, bare):
        seller.respond(GREETING)
    argued_turn = argued.respond(f"{CONDITION} Would you take $440?")
    bare.respond("Would you take $440?")
    assert "addressed:condition" in argued_turn.events
    assert argued.ask < bare.ask < 500.0
    assert argued.stated_ask < 500.0  # the credited reason shows in the quoted price
    assert argued.ask >= argued.bottom_line


def test_a_reason_moves_the_counter_toward_the_offer_in_proportion(make_seller):
    near, far = make_seller(BIKE), make_seller(BIKE)
    for seller in (near, far):
        seller.respond(GREETING)
    near.respond(f"{CONDITION} Would you take $480?")
    far.respond(f"{CONDITION} Would you take $350?")
    assert near.ask > far.ask  # the nearer offer asks for less, and gets less
    assert min(near.ask, far.ask) >= near.bottom_line


def test_a_repeated_bare_offer_moves_the_counter_little(make_seller):
    seller = make_seller(BIKE)
    seller.respond(GREETING)
    first = seller.ask
    seller.respond("Would you take $400?")
    step_one = first - seller.ask
    before = seller.ask
    seller.respond("Could you do $400?")  # the same number in other words
    assert 0 <= before - seller.ask <= 0.6 * step_one


def test_no_jump_to_the_midpoint_after_holding(make_seller):
    seller = make_seller(BIKE)
    seller.respond(GREETING)
    for _ in range(3):
        seller.respond("Would you take $380?")
    held = seller.stated_ask
    turn = seller.respond("Can we meet in the middle?")
    midpoint = (380.0 + held) / 2
    assert seller.privileged()["deal_price"] is None and turn.decision != "agree"
    assert seller.stated_ask > midpoint


def test_the_seller_never_sends_the_same_message_twice(make_seller) -> None:
    """Held positions and after-deal lines are said as repeats, not sent again verbatim."""
    for listing in (BIKE, CAR):
        seller = make_seller(listing)
        replies = [seller.respond("Would you take $200 for it? " * 12).text for _ in range(8)]
        assert len({r.lower() for r in replies}) == len(replies), replies


@pytest.mark.parametrize(
    ("text", "reference", "offer"),
    [
        # Blind play round 3, CB seed 25: read as an offer of $380 (and closed on).
        (
            "Just to be clear, $380 is where you started, so that isn't coming down. "
            "Would you meet me halfway at $355, cash in hand today?",
            380.0,
            355.0,
        ),
        ("$380 is the full asking price, could you do $310?", 380.0, 310.0),
        ("To be clear, $1,225 is my offer, not $22,000.", 1300.0, 1225.0),
        # Blind play round 4, CB seed 34: read as an offer of $160 (and closed on).
        (
            "Would $150 cash today close it? If $160 is truly your floor, just say so and "
            "I'll consider that.",
            170.0,
            150.0,
        ),
        ("Is $160 your best? I could do $150.", 170.0, 150.0),
        ("Okay, $160 is fine, deal.", 170.0, 160.0),
    ],
)
def test_a_price_named_as_the_sellers_is_not_the_offer(
    text: str, reference: float, offer: float
) -> None:
    """An amount the buyer names as the seller's (where it started, its floor, its best) is
    cited, not offered."""
    from dialogue_gym.text.prices import read_offer

    assert read_offer(text, reference=reference).offer == offer


def test_a_reason_pointing_back_at_the_sellers_point_argues_it(make_seller):
    """ "Given that, would you take $440?" right after the seller brought up the rust argues the
    rust; the same words with nothing raised before are a bare offer, and a question in between
    leaves the seller's point open ("Would $440 work, considering that?")."""
    pointing = "Thanks for being upfront. Given that, would you take $440?"
    raised, out_of_the_blue = make_seller(BIKE), make_seller(BIKE)
    for seller in (raised, out_of_the_blue):
        seller.respond(GREETING)  # "... Full disclosure, it has some rust on the chain."
        assert seller.voiced_now == ["condition"]
    out_of_the_blue.negotiation.voiced_now = []  # as if its reply had not brought the rust up
    assert "addressed:condition" in raised.respond(pointing).events
    assert "addressed:condition" not in out_of_the_blue.respond(pointing).events


def test_a_price_held_is_never_worded_as_a_concession(make_seller):
    """ "Let's say $65" or "We're getting close. Meet me at $1,475?" for the price the seller
    already stated frames holding firm as a move (blind play, round 6)."""
    import re

    concession = re.compile(
        r"let['’]s say|meet me at|come down to|go down to|getting close|really close|how about",
        re.I,
    )
    held = 0
    for seed in range(6):
        seller = make_seller(BIKE, seed=seed)
        seller.respond(GREETING)
        for offer in (300, 300, 320, 320, 330):
            before = seller.stated_ask
            turn = seller.respond(f"Would you take ${offer}?")
            if seller.stated_ask == before and turn.decision != "agree":
                held += 1
                assert not concession.search(turn.text), turn.text
    assert held > 0
