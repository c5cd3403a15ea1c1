"""The CB seller hears a reason said inside the offer's own sentence (issue 34).

A buyer who writes "Since the chain is already rusting, could you do $400?" gives a reason;
read whole, that sentence looks mostly like an ask, and the seller used to hear no reason at
all (43 of 172 of a dev wording listener's reasoned turns). The seller now reads the parts an
offer and its reason share (:func:`~dialogue_gym.plugins.cb.seller_perception.split_offer`),
with a reader fitted on reasons said inside offers. Bare offers, however they are punctuated,
and pressure with a price still earn nothing. The lines below were written for this test, not
taken from any wording set; before the change the seller missed "Money's been tight since my
hours got cut, so could you do $400?" and read "The photos look great, so would you take $400?"
as a market reason (most of the others it read already).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import test_seller_reading as reading

from dialogue_gym.plugins.cb.seller import SellerUser
from dialogue_gym.plugins.cb.seller_perception import split_offer
from dialogue_gym.users.persona import persona_bank

GREETING = "Hi! Is this still available?"
card = reading.card
encoder = reading.encoder


@pytest.fixture(scope="module")
def make_seller(card, encoder):
    def factory(concern: str) -> SellerUser:
        persona = dataclasses.replace(persona_bank(card)[0], concerns=((concern, 0.9),))
        seller = SellerUser(card, encoder, personas=(persona,), listings=(reading.BIKE,))
        seller.reset(np.random.default_rng(0))
        seller.respond(GREETING)
        seller.negotiation.voiced_now = []  # read blind: nothing the seller just brought up
        return seller

    return factory


@pytest.mark.parametrize(
    ("concern", "text"),
    [
        ("condition", "Since the chain is already rusting, could you do $400?"),
        ("condition", "I'd pay $400, considering the rust I'd have to deal with."),
        ("market", "Would you take $400, seeing as two identical bikes are posted for less?"),
        ("market", "With new ones discounted this month, how about $400?"),
        ("convenience", "I can be there with cash in twenty minutes, so would $400 work?"),
        ("budget", "Money's been tight since my hours got cut, so could you do $400?"),
        ("budget", "$400 is all I've managed to save for a bike."),
    ],
)
def test_a_reason_inside_the_offer_sentence_is_credited(make_seller, concern, text):
    seller = make_seller(concern)
    turn = seller.respond(text)
    assert f"addressed:{concern}" in turn.events, turn.events
    assert seller.last_offer == 400.0


@pytest.mark.parametrize(
    "text",
    [
        "Would you take $400?",
        "Okay, sounds good, how about $400?",
        "Thanks for the quick reply, would you take $400 for it?",
        "Because I really like it, I'd offer $400.",
        "Given everything, $400 works for me.",
        "The photos look great, so would you take $400?",
        "I hear you, but I can only do $400.",
    ],
)
def test_a_bare_offer_however_punctuated_is_no_reason(make_seller, text):
    for concern in ("condition", "market", "convenience", "budget"):
        turn = make_seller(concern).respond(text)
        assert not any(e.startswith("addressed:") for e in turn.events), (concern, turn.events)


def test_pressure_with_a_price_is_no_reason(make_seller):
    turn = make_seller("market").respond("Take it or leave it, $400, nobody else will pay more.")
    assert not any(e.startswith("addressed:") for e in turn.events), turn.events


def test_split_offer_separates_an_offer_from_its_reason():
    assert split_offer("Given the scratches on the side, could you do $N?") == [
        "Given the scratches on the side",
        "could you do $N",
    ]
    assert split_offer("I can do $N since it needs new tires.") == [
        "I can do $N",
        "since it needs new tires",
    ]
    # A pointer back ("Given that") is too short to read on its own: the focus rule reads it.
    assert split_offer("Given that, would you take $N?") == ["would you take $N"]
    assert split_offer("Would you take $N?") == []


def test_a_pointer_back_at_an_acknowledged_reason_is_no_new_reason(make_seller):
    """ "Given that, would you take $N?" right after the seller took a reason on board presses
    that reason with nothing new: crediting it doubled the SL of a script that gives one reason
    and then only pointers (0.093 → 0.186 on CB-hard, 100 episodes)."""
    seller = make_seller("condition")
    first = seller.respond(
        "The chain is rusted through, so I'd have to replace it. Could you do $380?"
    )
    assert "addressed:condition" in first.events, first.events
    seller.negotiation.voiced_now = []  # the reply brought up nothing new
    turn = seller.respond("Given that, would you take $390?")
    assert not any(e.startswith("addressed:") for e in turn.events), turn.events
