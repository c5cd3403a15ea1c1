"""Buyer agents for CraigslistBargain (the system seat is the buyer).

Both read only the observation (the dialogue history) and the public task card: the listing
price comes from the seller's first reply, parsed with :mod:`dialogue_gym.text.prices`; the target
fraction from the card's ``[listings] buyer_target_fraction`` (also stated in the goal text).

* :class:`ScriptedBuyer` — a sensible negotiator that listens: greets and asks why the item is
  for sale, then gives one reason per turn for a lower price with a low offer. Which reason it
  gives follows what the seller said: a concern the seller hinted at (the card's ``voice``
  lines: a flaw, the competition, wanting it gone, "what's your budget?") is argued first, and
  pressed again while the seller acknowledges it only partly (the card's ``ack_partial``
  lines); a reason the seller has conceded (``ack_resolved``) or ignored is dropped. Before it
  gives a reason the seller has not raised, it asks what else matters to the seller, then
  about the item's condition, so that its reasons answer what the seller said (a seller weighs
  those more than reasons offered blind). Its offers open at the target price and rise
  slowly — once reasons move the seller, the seller's counters set the price — and one
  exchange before the last it offers just under the seller's price to probe for room left; it
  keeps negotiating while it has reasons left, takes a counter at or under its target at once,
  and takes the seller's price at the last exchange (never more than the listing price).
  Never more than one reason per turn: the embedded seller credits one argument per turn.
* :class:`LowballBuyer` — a bad negotiator: repeats an insulting offer of 30-40% of the listing
  with no reasons.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards.card import Concern, TaskCard
from dialogue_gym.env.wrappers.bargain_moves import buyer_target_fraction, round_offer
from dialogue_gym.text.prices import asking_price_in, format_price, offer_in

__all__ = ["LowballBuyer", "ScriptedBuyer", "round_offer"]

USER_SPEAKER = 1


def _seller_replies(observation: dict[str, Any]) -> list[str]:
    return [turn["text"] for turn in observation["history"] if turn["speaker"] == USER_SPEAKER]


def _template_pattern(template: str) -> re.Pattern[str]:
    """A card line as a regex: placeholders (``{flaw}``) match any text, case ignored."""
    parts = re.split(r"\{\w+\}", template.strip())
    return re.compile(".+?".join(re.escape(part) for part in parts), re.I)


def _lines(concern: Concern, field: str) -> tuple[re.Pattern[str], ...]:
    return tuple(_template_pattern(t) for t in getattr(concern, field, ()) if t.strip())


class ScriptedBuyer:
    """A sensible hand-written CraigslistBargain buyer (see the module docstring).

    Args:
        card: The task card.
        seed: Default seed (overridden by :meth:`reset`); picks wordings.
        steps: Offers as fractions of the listing price, in order (the first is the target).
            They rise slowly and stay low: once reasons move the seller, its counters set the
            price, and a low offer only probes how far it will go.
        limits: Per exchange (1-based), the highest counter the buyer takes *once it has no
            reason left to give*, as a fraction of the listing; the last entry applies from
            then on. While it has reasons left it keeps negotiating (a counter at or under the
            target price is always taken; at the last exchange any counter below the listing).
    """

    OPENINGS = (
        "Hi! Is this still available? I'm interested. What's the story behind it, why are you "
        "selling?",
        "Hello, I'm interested in your listing. Is it still for sale? Why are you letting it go?",
        "Hey there! Is it still available? Mind if I ask why you're selling it?",
    )
    # Open follow-ups (no price, no condition words): what else matters to the seller.
    FOLLOW_UPS = (
        "Got it, thanks. Is there anything else about the sale that matters to you?",
        "Thanks, that helps. What else is important to you in selling it?",
        "I appreciate that. Anything else on your mind about selling it?",
    )
    CONDITION_QUESTIONS = (
        "Before I make an offer, what condition is it in? Any wear or problems I should know "
        "about?",
        "Could you tell me about its condition? Any scratches, damage or issues?",
        "How is it holding up? Is there any damage or wear I should know about?",
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
    QUESTION_ORDER = ("follow_up", "condition")  # what to ask before arguing blind
    PROBE = 0.015  # how far under the seller's price the last probe goes (× listing)
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
        self.fraction = buyer_target_fraction(card)
        self.steps = steps or tuple(
            min(1.0, self.fraction + d) for d in (0.0, 0.04, 0.07, 0.1, 0.12, 0.14, 0.16)
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
        self._wording: dict[str, int] = {}  # per reason or question, the first wording
        self._last_offer: float | None = None
        self._counter: float | None = None
        self._asked: list[str] = []  # the questions asked since the opening, in order
        self._answering: str | None = None  # the question the last reply answers
        self._quiet = False  # an open follow-up brought up nothing new

    def _say(self, options: tuple[str, ...], price: float) -> str:
        template = options[int(self._rng.integers(len(options)))]
        return template.format(price=format_price(price))

    def _limit(self, exchange: int) -> float:
        index = min(exchange, len(self.limits)) - 1
        return self.limits[max(index, 0)]

    def _listen(self, last: str) -> None:
        """Reads the seller's last reply: concerns it hinted at, how it took the last reason."""
        heard = len(self._heard)
        for cid, patterns in self._voices.items():
            if cid not in self._heard and any(p.search(last) for p in patterns):
                self._heard.append(cid)
        budget_asked = re.search(r"\b(budget|spend|looking to pay|for you or)\b", last, re.I)
        if budget_asked and "budget" in self.ARGUMENTS and "budget" not in self._heard:
            self._heard.append("budget")
        if self._answering == "follow_up" and len(self._heard) == heard:
            self._quiet = True  # asked what else matters: nothing more
        self._answering = None
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
        """Listens to the seller's last reply, then picks the reason to give next."""
        self._listen(last)
        return self._pick()

    def _pick(self) -> str | None:
        """The reason to give next (``None`` when none is left)."""
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

    def _question(self, exchange: int) -> str | None:
        """A question worth a turn now, or ``None``.

        Once everything the seller raised has been argued, and before giving a reason it has
        not raised, ask what else matters to it (twice at most, and not again once it had
        nothing to add), then about the item's condition: a reason answering what the seller
        said weighs more than one offered blind. A question needs at least one exchange after
        its answer to argue it (the last exchange closes the deal).
        """
        if exchange > self.max_exchanges - 2:
            return None
        if any(cid not in self._done for cid in self._heard):
            return None  # something the seller raised is still to be argued
        told = "condition" in self._heard or "condition" in self._argued
        for kind in self.QUESTION_ORDER:
            if kind == "follow_up" and not self._quiet and self._asked.count(kind) < 2:
                options = self.FOLLOW_UPS
            elif kind == "condition" and not told and kind not in self._asked:
                options = self.CONDITION_QUESTIONS
            else:
                continue
            # A fresh wording each time (the seller ignores a question it has just heard).
            start = self._wording.setdefault(kind, int(self._rng.integers(len(options))))
            line = options[(start + self._asked.count(kind)) % len(options)]
            self._asked.append(kind)
            self._answering = kind
            return line
        return None

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
        target = round_offer(self.fraction * listing)
        if counter <= target or exchange >= self.max_exchanges:
            return self._say(self.ACCEPTS, min(counter, listing))
        self._listen(last)
        question = self._question(exchange)
        if question is not None:
            return question
        argument = self._pick()
        if argument is None and counter <= min(listing, self._limit(exchange) * listing):
            return self._say(self.ACCEPTS, counter)  # nothing left to argue
        step = self.steps[min(self._offers, len(self.steps) - 1)]
        offer = round_offer(step * listing)
        if self._last_offer is not None:
            offer = max(offer, self._last_offer)  # never go back down
        if offer >= counter:
            return self._say(self.ACCEPTS, min(counter, listing))
        if exchange == self.max_exchanges - 1:
            # One exchange before the last: offer just under the seller's price. A seller
            # with room left may take it; if not, the last exchange takes its counter.
            offer = max(offer, float(math.ceil(counter - self.PROBE * listing)))
        offer = min(offer, listing)
        self._offers += 1
        self._last_offer = offer
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
