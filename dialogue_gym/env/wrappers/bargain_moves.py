"""Price moves for a negotiation (CB): the listening moves plus offers and an accept.

On a negotiation the user is a seller and the goal a price, so the listening moves (a reason
for a lower price per concern of the card, probes, acknowledgements, reflections) need moves
that name one. :class:`BargainMoves` replaces the listening ``ask`` (whose wordings carry
arbitrary prices) with:

* ``offer:target`` — offers the buyer's target price (the card's
  ``[listings] buyer_target_fraction`` of the listing), or the seller's price if lower;
* ``offer:raise`` — raises the buyer's last offer by :data:`RAISE` of the listing;
* ``offer:split`` — offers the midpoint of the buyer's last offer and the seller's last price;
* ``accept`` — accepts the seller's last price.

Every price is read from the dialogue: the listing from the seller's first reply that names
one (:func:`~dialogue_gym.text.prices.asking_price_in`), the seller's last price from its latest
reply that proposes one (:func:`~dialogue_gym.text.prices.offer_in`), the buyer's last offer from
its own turns; offers are rounded as people quote prices (:func:`round_offer`), never above
the seller's last price, and an offer never goes below the buyer's previous one.
:class:`BargainFeatures` adds what a buyer sees of the prices to the listening features.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import draw_unused
from dialogue_gym.env.wrappers.listening import ListeningFeatures, ListeningMoves
from dialogue_gym.text.prices import asking_price_in, format_price, mask_prices, offer_in
from dialogue_gym.users.meaning import PerceptionSet

__all__ = [
    "PRICE_FEATURES",
    "PRICE_MOVES",
    "RAISE",
    "BargainFeatures",
    "BargainMoves",
    "PriceState",
    "buyer_target_fraction",
    "round_offer",
]

PRICE_MOVES = ("offer:target", "offer:raise", "offer:split", "accept")
"""The moves that name a price, after the listening moves."""

RAISE = 0.04
"""How far ``offer:raise`` raises the buyer's last offer, as a fraction of the listing."""

PRICE_FEATURES = ("listing_known", "seller_price", "own_offer", "seller_at_target")
"""The price features :class:`BargainFeatures` appends (see there)."""

_ROUNDS = ((200, 5.0), (1000, 10.0), (3000, 25.0), (10000, 50.0))
_NOT_AN_OFFER = re.compile(r"\b(middle|halfway|split|difference)\b", re.I)
_MONTHLY = re.compile(r"\b(a|per) month\b|/\s?mo\b|\b(the place|the room|rent)\b", re.I)
_MONTHLY_PRICE = re.compile(r"\$\s?[\d,]+(?:\.\d+)?\s*(?:a|per|/)\s*(?:month|mo)\b", re.I)


def round_offer(value: float) -> float:
    """Rounds an offer the way people quote prices ($5 steps under $200 … $100 over $10k)."""
    for limit, step in _ROUNDS:
        if value < limit:
            return max(step, round(value / step) * step)
    return round(value / 100.0) * 100.0


def buyer_target_fraction(card: TaskCard) -> float:
    """The buyer's target as a fraction of the listing.

    The card's ``[listings] buyer_target_fraction``, else a percentage in its goal text, else
    0.7.
    """
    listings = card.extra.get("listings", {})
    if "buyer_target_fraction" in listings:
        return float(listings["buyer_target_fraction"])
    match = re.search(r"(\d{1,2})\s?%", card.goal)
    return int(match.group(1)) / 100 if match else 0.7


class PriceState:
    """The prices of a negotiation so far, read from its turns.

    Attributes:
        listing: The seller's asking price (``None`` until a seller reply names one).
        seller: The seller's last price (its latest proposal, else the listing).
        own: The buyer's last offer (``None`` before it made one).
        monthly: The listing is a rent (its price quoted per month).
    """

    def __init__(
        self, listing: float | None, seller: float | None, own: float | None, monthly: bool
    ) -> None:
        self.listing, self.seller, self.own, self.monthly = listing, seller, own, monthly

    @classmethod
    def read(cls, replies: Sequence[str], own_turns: Sequence[str] = ()) -> PriceState:
        """The prices in the seller's ``replies`` and the buyer's ``own_turns``."""
        priced = next((r for r in replies if asking_price_in(r) is not None), None)
        listing = asking_price_in(priced) if priced is not None else None
        seller = listing
        for reply in replies:
            price = offer_in(reply, reference=listing)
            if price is not None and listing is not None:
                seller = price
        own = None
        for turn in own_turns:
            price = offer_in(turn, reference=listing)
            if price is not None:
                own = price
        monthly = priced is not None and bool(_MONTHLY_PRICE.search(priced))
        return cls(listing, seller, own, monthly)


class BargainMoves(ListeningMoves):
    """The listening moves of a negotiation card, with :data:`PRICE_MOVES` instead of ``ask``.

    Offers are worded like the perception set's polite asks (their price replaced; a rent's
    asks, "... a month", only for a listing quoted per month); the accept with the card's
    ``agree`` strategy templates.

    Args:
        card: The task card (a negotiation).
        perception: The card's perception set (default: the shipped one).
    """

    def __init__(self, card: TaskCard, perception: PerceptionSet | None = None) -> None:
        super().__init__(card, perception)
        asks = [
            mask_prices(line, token="{price}")
            for line in self._pools.pop("ask", ())
            if line.count("$") == 1 and not _NOT_AN_OFFER.search(line)
        ]
        agree = next((s.templates for s in card.strategies if s.name == "agree"), ())
        if not any(not _MONTHLY.search(a) for a in asks) or not agree:
            raise ValueError(
                f"card {card.id!r}: price moves need polite asks naming one price (perception "
                "set) and an 'agree' strategy with templates"
            )
        self._offers = {
            False: tuple(a for a in asks if not _MONTHLY.search(a)),
            True: tuple(a for a in asks if _MONTHLY.search(a)) or tuple(asks),
        }
        self._pools["accept"] = tuple(agree)
        self.fraction = buyer_target_fraction(card)
        self.names = (*(n for n in self.names if n != "ask"), *PRICE_MOVES)

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: no offer made."""
        super().reset(seed)
        self._own: float | None = None

    def realize(self, which: int | str, replies: Sequence[str] = ()) -> str:
        """A wording of move ``which``; a price move names its price (see the module)."""
        name = which if isinstance(which, str) else self.names[int(which)]
        if not name.startswith("offer:"):
            return super().realize(name, replies)
        prices = PriceState.read(replies)
        if prices.listing is None or prices.seller is None:
            return "Sorry, I missed it. What's your asking price?"
        offer = self.offer(name, prices.listing, prices.seller, self._own)
        self._own = offer
        pool = self._offers[prices.monthly]
        used = self._used.setdefault(f"offer:{prices.monthly}", set())
        return pool[draw_unused(self._rng, used, len(pool))].format(price=format_price(offer))

    def offer(self, name: str, listing: float, seller: float, own: float | None) -> float:
        """The price of offer move ``name`` given the listing, the seller's and own last price."""
        target = round_offer(self.fraction * listing)
        base = own if own is not None else target
        if name == "offer:target":
            price = target
        elif name == "offer:raise":
            price = round_offer(base + RAISE * listing) if own is not None else target
        elif name == "offer:split":
            price = round_offer((base + seller) / 2)
        else:
            raise KeyError(f"unknown offer move {name!r}")
        if own is not None:
            price = max(price, own)  # never go back down
        return min(price, seller)


class BargainFeatures(ListeningFeatures):
    """:class:`ListeningFeatures` plus what a buyer sees of the prices.

    Appended (:data:`PRICE_FEATURES`, in ``[0, 1]``): ``listing_known`` (a seller reply named
    its asking price), ``seller_price`` and ``own_offer`` (the seller's last price and the
    buyer's last offer, as fractions of the listing; 0 before there is one) and
    ``seller_at_target`` (the seller's price is at or under the buyer's target).

    Built like :class:`~.listening.ListeningFeatures` (with ``BargainMoves(card).names``).
    """

    extra_features = PRICE_FEATURES

    def observe(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The listening features, then the price features, of a system observation."""
        listening = super().observe(observation)
        own = observation["role"]
        mine = [t["text"] for t in observation["history"] if t["speaker"] == own]
        prices = PriceState.read(self.replies, mine)
        price = np.zeros(len(PRICE_FEATURES), dtype=np.float32)
        if prices.listing:
            seller = prices.seller if prices.seller is not None else prices.listing
            price[0] = 1.0
            price[1] = seller / prices.listing
            price[2] = (prices.own or 0.0) / prices.listing
            target = round_offer(buyer_target_fraction(self.card) * prices.listing)
            price[3] = float(seller <= target)
        return np.clip(np.concatenate([listening, price]), 0.0, 1.0).astype(np.float32)
