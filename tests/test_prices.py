"""Price extraction, the offer of a turn, and buyer utility (dialogue_gym.text.prices)."""

import math

import pytest

from dialogue_gym.text.prices import (
    PriceMention,
    asking_price_in,
    buyer_utility,
    extract_prices,
    format_price,
    mask_prices,
    offer_in,
)


def values(text, reference=None):
    return [m.value for m in extract_prices(text, reference)]


# -- extraction: formats -------------------------------------------------------------------------

FORMATS = [
    ("$1,200", None, [1200]),
    ("It's $1200.50 with tax", None, [1200.5]),
    ("I'd pay 1200 dollars", None, [1200]),
    ("how about 1.2k?", None, [1200]),
    ("$1.2K firm", None, [1200]),
    ("12K and it's yours", None, [12000]),
    ("$12,500 obo", None, [12500]),
    ("US$300", None, [300]),
    ("350 bucks and it's mine", None, [350]),
    ("2 grand", None, [2000]),
    ("1.5 grand", None, [1500]),
    ("twelve hundred", None, [1200]),
    ("I'll give you twelve hundred for it", None, [1200]),
    ("three hundred fifty bucks", None, [350]),
    ("Could you do three hundred and fifty?", 400, [350]),
    ("I'll do two thousand five hundred", 3000, [2500]),
    ("a couple hundred bucks", None, [200]),
    ("a grand", None, [1000]),
    ("I'll pay you four hundred", 450, [400]),
    ("I'll give you fifty", 80, [50]),
    ("$200-250", None, [200, 250]),
]


@pytest.mark.parametrize(("text", "reference", "expected"), FORMATS)
def test_extracts_money_formats(text, reference, expected):
    assert values(text, reference) == pytest.approx(expected)


# -- extraction: ambiguous scale ("two fifty") ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reference", "expected"),
    [
        ("two fifty", 300, 250),  # near a $300 listing: two hundred fifty
        ("two fifty", 3, 2.5),  # near a $3 item: two dollars fifty
        ("two fifty?", None, 250),  # no reference: the bargaining reading
        ("twelve fifty", 1400, 1250),
        ("twelve fifty", 15, 12.5),
        ("nineteen ninety nine", 2500, 1999),
        ("nineteen ninety nine", 25, 19.99),
        ("four fifty and it's a deal", 500, 450),
    ],
)
def test_colloquial_prices_use_the_reference_for_scale(text, reference, expected):
    assert values(text, reference) == pytest.approx([expected])


# -- extraction: numbers that are not prices --------------------------------------------------

NOT_PRICES = [
    ("It's a 2015 Trek in good shape", None),  # a year
    ("Bought it in 2019", 300),  # a year
    ("RTX 3080 in great shape", None),  # a model number
    ("iPhone 12 with a case", 300),  # a model number
    ("Galaxy S21, barely used", 300),  # a model number glued to letters
    ("the Ford F-150 is great", 9000),  # a model number after a hyphen
    ("I have 2 chairs", None),  # a count
    ("I've got 3 kids", None),  # a count
    ("It's 6 years old", 300),  # an age
    ("It has 98k miles", 8000),  # mileage
    ("a 4k TV", 300),  # a resolution
    ("call me at 555-123-4567", None),  # a phone number
    ("call 5551234567", None),  # a phone number without separators
    ("meet at 6", 300),  # a time, implausible as a price
    ("I can come at 5:30", None),  # a time
    ("5pm works for me", None),  # a time
    ("it's 20% bigger", 300),  # a percentage
    ("a 6x4 rug", None),  # dimensions
    ("I'm 25 and a student", 300),  # an age
    ("two chairs and a table", None),  # a count in words
    ("this one is nicer", 300),  # "one" is not a price
]


@pytest.mark.parametrize(("text", "reference"), NOT_PRICES)
def test_ignores_numbers_that_are_not_prices(text, reference):
    assert values(text, reference) == []


@pytest.mark.parametrize(
    ("text", "reference", "expected"),
    [
        ("It's a 2015 Trek, asking $450", None, [450]),
        ("I have 2 chairs for 150", None, [150]),
        ("We have 3 kids and I can pay 400", 500, [400]),
        ("It's from 2014 and I'll pay 2000", 2500, [2000]),
        ("my number is 415 555 0199, offering 300", 350, [300]),
        ("I can meet at 5:30 with 300 cash", 350, [300]),
        ("98k miles, asking $6,500", None, [6500]),
        ("Samsung Galaxy S21 for 250?", 300, [250]),
        ("I live 10 minutes away, could do 280", 300, [280]),
    ],
)
def test_finds_the_price_among_other_numbers(text, reference, expected):
    assert values(text, reference) == pytest.approx(expected)


def test_mentions_carry_spans_and_markers():
    text = "I'd do $300, or 280 if you deliver"
    first, second = extract_prices(text)
    assert isinstance(first, PriceMention)
    assert text[first.start : first.end] == "$300" and first.explicit
    assert second.value == 280  # the range "$300, or 280" carries the currency on
    assert not extract_prices("I'll take 300")[0].explicit  # a bare number read from context
    discount = extract_prices("knock $50 off", 400)[0]
    assert discount.kind == "discount" and discount.value == 50


def test_extract_prices_rejects_non_text():
    with pytest.raises(TypeError, match="str"):
        extract_prices(300)


# -- the offer of a turn ---------------------------------------------------------------------

OFFERS = [
    ("It was $500 new, I'll take $300", 400, 300),  # a cited original price
    ("I'll give you $300, it was $500 new", 400, 300),  # cited after the offer
    ("I said 200 — scratch that, 180", 250, 180),  # a retracted offer
    ("I'd take 200. Actually, make it 190.", 250, 190),  # a revised offer
    ("180, not 200", 250, 180),  # a negated price
    ("I'd do 250 instead of 300", 400, 250),
    ("$300 for the bike and $20 for the helmet", 400, 300),  # a different item
    ("$20 for the helmet and $300 for the bike", 400, 300),  # same, other order
    ("I saw one on craigslist for $250. Would you do $280?", 400, 280),  # a comparable listing
    ("You're asking $400; would you take $320?", 400, 320),  # the other side's price
    ("The 2018 model sells for 900 new. I'll give 600.", 800, 600),
    ("I paid $900 for it, but I could come down to $480.", 500, 480),  # a seller's counter
    ("I could come down to $480. I paid $900 for it.", 500, 480),
    ("would you take 15% off?", 400, 340),  # relative to the listing
    ("knock $50 off and it's a deal", 400, 350),  # a discount
    ("how about half the asking price?", 400, 200),
    ("Deal at $1,175. When can you pick it up?", 1275, 1175),
    ("I said 200 – scratch that, 180", 250, 180),  # en dash
    ("I said 200 - scratch that, 180", 250, 180),  # hyphen
    ("I said 200—scratch that, 180", 250, 180),  # em dash, no spaces
    ("$300, no wait, $280", 400, 280),
    ("I'll pay $300. Never mind, make it $290.", 400, 290),
    ("I'll pay $4​50", 500, 450),  # a zero-width space inside the number
    ("I'll pay $４５０", 500, 450),  # fullwidth digits
    ("I'll pay $450 or forget it", 500, 450),  # an ultimatum, not a take-back
    ("I can't do $370, but I could do $340.", 370, 340),  # a price turned down
    ("I won't pay $400 for it. How about $350?", 400, 350),
]


@pytest.mark.parametrize(("text", "reference", "expected"), OFFERS)
def test_offer_in_picks_the_proposed_price(text, reference, expected):
    assert offer_in(text, reference) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text",
    [
        "Hi! Is this still available?",
        "What condition is it in?",
        "I saw one listed for $250 last week.",  # only a cited price
        "It's a 2016 model with 2 batteries.",
        # Turned down, not offered (blind play round 17, CB seeds 160 and 166: the seller
        # closed "deal at $370" on "I'll pass at $370").
        "Got it, thanks. I'll pass at $370, but I wish you a smooth sale.",
        "I'll have to pass on it at $390. Good luck with the sale.",
        "Sorry, I can't do $380.",
    ],
)
def test_offer_in_is_none_without_a_proposal(text):
    assert offer_in(text, 400) is None


@pytest.mark.parametrize(
    "text",
    [
        "I'll pay $350 – scratch that",
        "I'll pay $350 - scratch that",
        "$350, no wait",
        "I said 200, never mind",
        "I'll pay $350. Actually, forget it.",
        "I'll pay $350, I take that back.",
        "I'll pay $350. Strike that.",
        "$350, just kidding",
        "How about half the asking price? Never mind.",
    ],
)
def test_offer_in_is_none_when_the_offer_is_taken_back(text):
    assert offer_in(text, 400) is None


def test_asking_price_prefers_the_stated_asking_price():
    opening = "It's the 2012 Honda Civic LX with 98k miles. I paid $9,000. I'm asking $7,250."
    assert asking_price_in(opening) == 7250
    assert asking_price_in("The apartment is $1,450 a month.") == 1450
    assert asking_price_in("Hi! How are you?") is None


def test_mask_prices_keeps_the_words():
    assert mask_prices("It was $500 new, I'll take 300.", 400) == "It was $N new, I'll take $N."
    assert mask_prices("Call 555-123-4567") == "Call 555-123-4567"


def test_format_price():
    assert format_price(1200) == "$1,200"
    assert format_price(12.5) == "$12.50"


# -- utility ---------------------------------------------------------------------------------


def test_buyer_utility_normalizes_between_listing_and_target():
    assert buyer_utility(100, 100, 70) == 0.0  # at the listing price
    assert buyer_utility(70, 100, 70) == 1.0  # at the buyer's target
    assert buyer_utility(85, 100, 70) == pytest.approx(0.5)
    assert buyer_utility(110, 100, 70) < 0  # above the listing
    assert buyer_utility(60, 100, 70) > 1  # below the target


def test_buyer_utility_is_undefined_when_target_equals_listing():
    with pytest.raises(ValueError, match="p_buyer == p_seller"):
        buyer_utility(90, 100, 100)
    with pytest.raises(ValueError, match="finite"):
        buyer_utility(math.nan, 100, 70)


# -- blind play round 13 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A bound is no price: the seller had closed at $240 on a $225 offer (CB seed 121).
        (
            "Would you meet me at $225 cash, or is there any number under $240 you'd be "
            "comfortable with?",
            225,
        ),
        ("Would $200 work, or is there any price a bit under $220 you'd like?", 200),
        ("Could you do something below $230?", None),
        # An amount under the asking price is a discount.
        ("I can do $15 under your asking.", 225),
        ("How about $20 below the listing price?", 220),
        # A proposal after a clarified offer is the new offer (CB seed 123).
        (
            "Just to be clear, I wasn't offering the full $220; my offer was $200. If you "
            "could meet me somewhere in between, say $210, I'd take it today.",
            210,
        ),
        ("Sorry, I think we crossed wires: my offer was $225, not $240.", 225),
    ],
)
def test_bounds_and_later_proposals_are_read_in_context(text, expected):
    assert offer_in(text, 240, "item") == (None if expected is None else pytest.approx(expected))
