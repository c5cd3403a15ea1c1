"""Buyer agents for CraigslistBargain (the system seat is the buyer).

Both read only the observation (the dialogue history) and the public task card: the listing
price comes from the seller's first reply, parsed with :mod:`dialogue_gym.prices`; the target
fraction from the card's ``[listings] buyer_target_fraction`` (also stated in the goal text).

* :class:`ScriptedBuyer` — a sensible negotiator that listens: greets and asks why the item is
  for sale, then gives one reason per turn for a lower price with an offer that opens at the
  target price and rises in steps, accepts a counter once it is within what it is willing to
  pay by then, and never offers more than the listing price. Which reason it gives follows
  what the seller said: a concern the seller hinted at (the card's ``voice`` lines: a flaw, the
  competition, wanting it gone, "what's your budget?") is argued first, and pressed again while
  the seller acknowledges it only partly (the card's ``ack_partial`` lines); a reason the
  seller has conceded (``ack_resolved``) or ignored is dropped for the next one (the item's
  condition, comparable listings, a quick cash pickup, a tight budget). Never more than one
  reason per turn: the embedded seller credits one argument per turn.
* :class:`LowballBuyer` — a bad negotiator: repeats an insulting offer of 30-40% of the listing
  with no reasons.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards import Concern, TaskCard
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


def _template_pattern(template: str) -> re.Pattern[str]:
    """A card line as a regex: placeholders (``{flaw}``) match any text, case ignored."""
    parts = re.split(r"\{\w+\}", template.strip())
    return re.compile(".+?".join(re.escape(part) for part in parts), re.I)


def _lines(concern: Concern, field: str) -> tuple[re.Pattern[str], ...]:
    return tuple(_template_pattern(t) for t in getattr(concern, field, ()) if t.strip())


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
        "Hi! Is this still available? I'm interested. What's the story behind it, why are you "
        "selling?",
        "Hello, I'm interested in your listing. Is it still for sale? Why are you letting it go?",
        "Hey there! Is it still available? Mind if I ask why you're selling it?",
    )
    ARGUMENTS: ClassVar[dict[str, tuple[str, ...]]] = {
        "condition": (
            "Thanks for being upfront. With the wear you mentioned it isn't like new anymore, "
            "and I'd have to put money into fixing it up.",
            "I appreciate the honesty. Since it's used and shows its age, full price seems "
            "high to me.",
            "That flaw is going to cost me something to repair, so I have to factor that in.",
        ),
        "market": (
            "I've been comparing listings, and similar ones around here are asking noticeably "
            "less than you are.",
            "I checked Marketplace and eBay, and comparable used ones have been selling for less.",
            "Prices on these have dropped since the newer models came out, so the going rate "
            "is lower now.",
        ),
        "convenience": (
            "I can pick it up today and pay cash, so you won't have to deal with any more "
            "messages or no-shows.",
            "I'll bring cash and come get it this afternoon, no hassle for you.",
            "I have a truck, so I can take it off your hands right away and pay on the spot.",
        ),
        "budget": (
            "My budget is really tight right now; I'm furnishing my first place on very "
            "little money.",
            "I'm saving up for rent, so every dollar counts for me, but I'd put it to good use.",
            "Money is tight for me as a student, and I can't afford to go much higher.",
        ),
    }
    ORDER = ("condition", "market", "convenience", "budget")
    MAX_PRESSES = 3  # times one reason is given while the seller acknowledges it only partly
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
        # The seller's public lines per concern: how it hints at one, how it acknowledges one.
        concerns = {c.id: c for c in card.concerns if c.id in self.ARGUMENTS}
        self._voices = {cid: _lines(c, "voice") for cid, c in concerns.items()}
        self._partial = {cid: _lines(c, "ack_partial") for cid, c in concerns.items()}
        self._resolved = {cid: _lines(c, "ack_resolved") for cid, c in concerns.items()}
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
        self._argued: list[str] = []  # one entry per turn that gave a reason
        self._heard: list[str] = []  # concerns the seller hinted at, in the order heard
        self._done: set[str] = set()  # conceded, or ignored by the seller
        self._wording: dict[str, int] = {}  # per reason, the episode's first wording
        self._last_offer: float | None = None
        self._counter: float | None = None

    def _say(self, options: tuple[str, ...], price: float) -> str:
        template = options[int(self._rng.integers(len(options)))]
        return template.format(price=format_price(price))

    def _limit(self, exchange: int) -> float:
        index = min(exchange, len(self.limits)) - 1
        return self.limits[max(index, 0)]

    def _listen(self, last: str) -> None:
        """Reads the seller's last reply: concerns it hinted at, how it took the last reason."""
        for cid, patterns in self._voices.items():
            if cid not in self._heard and any(p.search(last) for p in patterns):
                self._heard.append(cid)
        budget_asked = re.search(r"\b(budget|spend|looking to pay|for you or)\b", last, re.I)
        if budget_asked and "budget" in self.ARGUMENTS and "budget" not in self._heard:
            self._heard.append("budget")
        if not self._argued:
            return
        previous = self._argued[-1]
        if any(p.search(last) for p in self._resolved.get(previous, ())):
            self._done.add(previous)  # conceded: move on
        elif not any(p.search(last) for p in self._partial.get(previous, ())):
            self._done.add(previous)  # not taken up (or used up): move on
        elif self._argued.count(previous) >= self.MAX_PRESSES:
            self._done.add(previous)

    def _next_argument(self, last: str) -> str | None:
        self._listen(last)
        open_ = [a for a in self.ARGUMENTS if a not in self._done]
        # What the seller raised first, pressed while it only partly gives way; then reasons
        # not given yet; then the partly taken ones again.
        for cid in self._heard:
            if cid in open_:
                return cid
        fresh = next((a for a in self.ORDER if a in open_ and a not in self._argued), None)
        if fresh is not None:
            return fresh
        return next((a for a in self.ORDER if a in open_), None)

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
            # A fresh wording each time the reason is pressed (repeating words is ignored).
            options = self.ARGUMENTS[argument]
            if argument not in self._wording:
                self._wording[argument] = int(self._rng.integers(len(options)))
            index = self._wording[argument] + self._argued.count(argument)
            parts.append(options[index % len(options)])
            self._argued.append(argument)
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
