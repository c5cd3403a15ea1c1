"""Buyer agents for CraigslistBargain (the system seat is the buyer).

Both read only the observation (the dialogue history) and the public task card: the listing
price comes from the seller's first reply, parsed with :mod:`dialogue_gym.prices`; the target
fraction from the card's ``[listings] buyer_target_fraction`` (also stated in the goal text).

* :class:`ScriptedBuyer` — a sensible negotiator: greets and asks about the condition, then
  gives one reason per turn for a lower price (the condition, comparable listings, a quick cash
  pickup, a tight budget) with an offer that opens at the target price and rises in steps,
  accepts a counter once it is within what it is willing to pay by then, and never offers more
  than the listing price.
* :class:`LowballBuyer` — a bad negotiator: repeats an insulting offer of 30-40% of the listing
  with no reasons.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.prices import asking_price_in, format_price, offer_in

__all__ = ["LowballBuyer", "ScriptedBuyer", "round_offer"]

USER_SPEAKER = 1


def _seller_replies(observation: dict[str, Any]) -> list[str]:
    return [turn["text"] for turn in observation["history"] if turn["speaker"] == USER_SPEAKER]


def _target_fraction(card: TaskCard) -> float:
    listings = card.extra.get("listings", {})
    if "buyer_target_fraction" in listings:
        return float(listings["buyer_target_fraction"])
    match = re.search(r"(\d{1,2})\s?%", card.goal)
    return int(match.group(1)) / 100 if match else 0.7


def round_offer(value: float) -> float:
    """Rounds an offer the way people quote prices ($5 steps under $200 … $100 over $10k)."""
    for limit, step in ((200, 5.0), (1000, 10.0), (3000, 25.0), (10000, 50.0)):
        if value < limit:
            return max(step, round(value / step) * step)
    return round(value / 100.0) * 100.0


class ScriptedBuyer:
    """A sensible hand-written CraigslistBargain buyer (see the module docstring).

    Args:
        card: The task card.
        seed: Default seed (overridden by :meth:`reset`); picks wordings.
        steps: Offers as fractions of the listing price, in order (the first is the target).
        limits: Per exchange (1-based), the highest counter it accepts as a fraction of the
            listing; the last entry applies from then on.
    """

    OPENINGS = (
        "Hi! Is this still available? What condition is it in? Any wear or issues I should "
        "know about?",
        "Hello, I'm interested in your listing. Is it still for sale, and what shape is it in?",
        "Hey there! Is it still available? How old is it, and does it have any damage or problems?",
    )
    ARGUMENTS: ClassVar[dict[str, tuple[str, ...]]] = {
        "condition": (
            "Thanks for being upfront. With the wear you mentioned it isn't like new anymore, "
            "and I'd have to put money into fixing it up.",
            "I appreciate the honesty. Since it's used and shows its age, full price seems "
            "high to me.",
        ),
        "market": (
            "I've been comparing listings, and similar ones around here are asking noticeably "
            "less than you are.",
            "I checked Marketplace and eBay, and comparable used ones have been selling for less.",
        ),
        "convenience": (
            "I can pick it up today and pay cash, so you won't have to deal with any more "
            "messages or no-shows.",
            "I'll bring cash and come get it this afternoon, no hassle for you.",
        ),
        "budget": (
            "My budget is really tight right now; I'm furnishing my first place on very "
            "little money.",
            "I'm saving up for rent, so every dollar counts for me, but I'd put it to good use.",
        ),
    }
    ORDER = ("condition", "market", "convenience", "budget")
    OFFERS = (
        "Would you take {price}?",
        "How about {price}?",
        "Could you do {price}?",
        "I can offer {price}.",
        "I'd pay {price} for it.",
    )
    ACCEPTS = (
        "Okay, deal at {price}. When can I come by?",
        "That works for me. Deal at {price}.",
        "Alright, you've got a deal at {price}.",
    )
    ASK_PRICE = "Sorry, I missed it. What's your asking price?"

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        steps: tuple[float, ...] | None = None,
        limits: tuple[float, ...] = (0.0, 0.74, 0.79, 0.84, 0.88, 0.92, 0.95, 1.0),
        **kwargs: Any,
    ) -> None:
        self.card = card
        fraction = _target_fraction(card)
        self.steps = steps or tuple(
            min(1.0, fraction + d) for d in (0.0, 0.06, 0.12, 0.17, 0.21, 0.24, 0.27)
        )
        self.limits = limits
        self.max_exchanges = card.max_exchanges
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        self._rng = np.random.default_rng(seed)
        self._listing: float | None = None
        self._offers = 0
        self._argued: list[str] = []
        self._last_offer: float | None = None
        self._counter: float | None = None

    def _say(self, options: tuple[str, ...], price: float) -> str:
        template = options[int(self._rng.integers(len(options)))]
        return template.format(price=format_price(price))

    def _limit(self, exchange: int) -> float:
        index = min(exchange, len(self.limits)) - 1
        return self.limits[max(index, 0)]

    def _next_argument(self, last: str) -> str | None:
        budget_asked = re.search(r"\b(budget|spend|looking to pay|for you or)\b", last, re.I)
        if budget_asked and "budget" not in self._argued:
            return "budget"
        return next((a for a in self.ORDER if a not in self._argued), None)

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next buyer turn."""
        replies = _seller_replies(observation)
        exchange = int(observation.get("exchange", len(replies))) + 1  # this turn's number
        if not replies:
            return self.OPENINGS[int(self._rng.integers(len(self.OPENINGS)))]
        if self._listing is None:
            self._listing = asking_price_in(replies[0])
            if self._listing is None:
                return self.ASK_PRICE
        listing = self._listing
        last = replies[-1]
        stated = offer_in(last, reference=listing)
        if stated is not None:
            self._counter = stated  # the seller's latest price
        counter = self._counter if self._counter is not None else listing
        final = exchange >= self.max_exchanges
        limit = 1.0 if final else self._limit(exchange)
        if counter <= min(listing, limit * listing):
            return self._say(self.ACCEPTS, counter)
        step = self.steps[min(self._offers, len(self.steps) - 1)]
        offer = round_offer(step * listing)
        if self._last_offer is not None:
            offer = max(offer, self._last_offer)  # never go back down
        if offer >= counter:
            return self._say(self.ACCEPTS, min(counter, listing))
        offer = min(offer, listing)
        self._offers += 1
        self._last_offer = offer
        argument = self._next_argument(last)
        parts = []
        if argument is not None:
            self._argued.append(argument)
            options = self.ARGUMENTS[argument]
            parts.append(options[int(self._rng.integers(len(options)))])
        parts.append(self._say(self.OFFERS, offer))
        return " ".join(parts)


class LowballBuyer:
    """Insulting offers of 30-40% of the listing price, repeated, with no arguments.

    Args:
        card: The task card.
        seed: Default seed (overridden by :meth:`reset`); draws the fraction and wordings.
        low: Lowest offer as a fraction of the listing.
        high: Highest offer as a fraction of the listing.
    """

    OPENING = "Hey. What's the lowest you'll take for it?"
    OFFERS = (
        "I'll give you {price}. Take it or leave it.",
        "{price}, cash. That's my offer.",
        "Best I can do is {price}.",
        "Come on, {price} is plenty for that.",
        "I'm offering {price}, not a penny more.",
        "{price}. Final answer.",
    )

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        low: float = 0.3,
        high: float = 0.4,
        **kwargs: Any,
    ) -> None:
        if not 0.0 < low <= high < 1.0:
            raise ValueError(f"need 0 < low <= high < 1, got {low}, {high}")
        self.card = card
        self.low, self.high = low, high
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Draws this episode's offer fraction."""
        self._rng = np.random.default_rng(seed)
        self._fraction = float(self._rng.uniform(self.low, self.high))
        self._listing: float | None = None

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next insulting offer."""
        replies = _seller_replies(observation)
        if not replies:
            return self.OPENING
        if self._listing is None:
            self._listing = asking_price_in(replies[0])
        if self._listing is None:
            return self.OPENING
        offer = round_offer(self._fraction * self._listing)
        template = self.OFFERS[int(self._rng.integers(len(self.OFFERS)))]
        return template.format(price=format_price(offer))
