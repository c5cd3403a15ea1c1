"""CB deals the buyer closes, and sellers who accept the buyer's price (issue 15 item 2).

Real CraigslistBargain transcripts close deals as the seller offers and the buyer accepts
("I can do $460." — "Deal: I accept $460.") or as the buyer offers and the seller accepts;
the judge reads both where the seller is real (``external_user``), never crediting a price the
seller did not state, and nothing changes for the embedded seller.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.judges.base import Exchange
from dialogue_gym.judges.deal import DealJudge
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.plugins.cb.seller import Listing, SellerUser
from dialogue_gym.plugins.cb.seller_dynamics import accepts_price, states_deal
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.persona import persona_bank

PRIV = {"listing_price": 500.0, "buyer_target": 350.0, "deal": False, "deal_price": None}
OPENING = [("system", "Hi, is the bike still available?"), ("user", "Yes! I'm asking $500.")]


@pytest.fixture(scope="module")
def card():
    return load_card("cb")


def exchange(card, history, decision="agree", external=True, privileged=PRIV):
    return Exchange(
        index=len(history) // 2,
        history=tuple(history),
        system=history[-2][1],
        user=history[-1][1],
        turn=UserTurn(history[-1][1], decision, card.target, True),
        privileged=privileged,
        external_user=external,
    )


def test_a_seller_states_a_deal_by_accepting_the_buyers_price(card):
    assert states_deal("Deal: I accept $450.", card, offered=450.0)
    assert states_deal("Sounds good. Deal: I accept $450.", card, offered=450.0)
    assert states_deal("Deal at $450.", card)
    assert not states_deal("No deal. I'll sell it to someone else.", card, offered=450.0)
    assert not states_deal("How about $480?", card, offered=450.0)
    # Acceptance words accept only the buyer's price: not another one, nor none at all.
    assert not states_deal("Deal: I accept $480.", card, offered=450.0)
    opening = "It's the oak table. I'm asking $610. I just want this sold fast."
    assert not states_deal(opening, card) and not states_deal(opening, card, offered=430.0)
    assert accepts_price("I offer $450.\nDeal: I accept $450.", card)
    assert not accepts_price("I offer $450.", card)


def test_the_buyer_accepting_the_sellers_offer_is_a_deal(card):
    history = [
        *OPENING,
        ("system", "Would you take $400?"),
        ("user", "I can do $460. I offer $460."),
        ("system", "Deal: I accept $460."),
        ("user", ""),
    ]
    judgment = DealJudge(card).judge(exchange(card, history))
    assert judgment.votes == ("deal", "deal", "deal")
    assert judgment.success and judgment.deal_price == 460.0
    assert judgment.utility == pytest.approx((460 - 500) / (350 - 500))


def test_saying_deal_to_a_price_the_seller_never_offered_is_no_deal(card):
    history = [
        *OPENING,
        ("system", "Would you take $400?"),
        ("user", "I can do $460."),
        ("system", "Deal at $400. Deal: I accept $400."),
        ("user", ""),
    ]
    judgment = DealJudge(card).judge(exchange(card, history, decision="neutral"))
    assert judgment.label == "no_deal" and not judgment.success
    # The seller answers the accept with a refusal or another price.
    for reply in ("No deal, I changed my mind.", "Actually I need $480."):
        history = [*history[:-2], ("system", "Deal, $460 works."), ("user", reply)]
        judgment = DealJudge(card).judge(exchange(card, history, decision="neutral"))
        assert judgment.label == "no_deal" and not judgment.success


def test_the_embedded_seller_is_judged_as_before(card):
    # The embedded seller states every deal it closes: an unanswered accept is no deal.
    history = [
        *OPENING,
        ("system", "Would you take $400?"),
        ("user", "I can do $460."),
        ("system", "Deal: I accept $460."),
        ("user", "Glad you like it."),
    ]
    judgment = DealJudge(card).judge(exchange(card, history, external=False))
    assert judgment.label == "no_deal" and not judgment.success


def test_a_real_seller_accepting_the_buyers_standing_offer_is_a_deal(card):
    history = [
        *OPENING,
        ("system", "Would you take $450? I offer $450."),
        ("user", "Will you pick it up?"),
        ("system", "Yes, today."),
        ("user", "Ok. Deal: I accept $450."),
    ]
    privileged = {**PRIV, "deal": True, "deal_price": 450.0}
    judgment = DealJudge(card).judge(exchange(card, history, privileged=privileged))
    assert judgment.success and judgment.deal_price == 450.0
    # The embedded seller closes on the current turn only: its judge reads the last turn.
    judgment = DealJudge(card).judge(exchange(card, history, external=False, privileged=privileged))
    assert judgment.votes[2] == "no_deal" and not judgment.success


def test_an_external_seller_accepting_closes_the_deal_record(card):
    listing = Listing("T-1", "bikes", "Trek bike", 500.0, 350.0, 0.5, "Smooth.", "rust")
    persona = dataclasses.replace(persona_bank(card)[0], concerns=(("condition", 0.9),))
    seller = SellerUser(card, make_encoder("hashing"), personas=(persona,), listings=(listing,))
    seller.reset(np.random.default_rng(0))
    seller.observe("Hi!", "Hi! The bike is $500.")
    seller.observe("I offer $470.", "Deal: I accept $470.")
    assert seller.privileged()["deal_price"] == 470.0
    # An opening that wants the item "sold" is no deal at its asking price.
    seller.reset(np.random.default_rng(0))
    seller.observe("Is it available? I'd pay $430.", "It's $500. I just want this sold quickly.")
    assert seller.privileged()["deal_price"] is None
