"""The embedded deal judge of a negotiation card: deal detection, price extraction, utility.

Generic for any card whose ``[judge.success] kind`` is ``"deal"``
(:attr:`~dialogue_gym.cards.card.TaskCard.is_negotiation`): it reads the card's cues (``reply_*``,
``accept``), its ``[listings]`` fractions and prices in the text, and the seller's privileged
record when a simulator gives one (``listing_price``, ``buyer_target``, ``deal``); nothing in
it is CraigslistBargain's own, so it stays in the core while CB's seller lives in its plug-in
(:mod:`dialogue_gym.plugins.cb`). :func:`states_deal` and :func:`accepts_price`, the reading
of a deal in words, are shared with that seller.

MASP (Appendix C.7): the judge decides whether a deal has been reached and extracts the final
price; if *any* sampled judgment says there is no deal, the outcome is ``no_deal``; otherwise
the price is converted to the buyer-normalized utility ``(p_deal − p_seller) / (p_buyer −
p_seller)`` and the exchange succeeds when it passes the card's threshold
(:meth:`~dialogue_gym.cards.card.SuccessJudgeSpec.passes`).

**Capitulation is not success.** MASP counts ``utility >= 0.0``, so a buyer who accepts the
asking price at once ("Is it still available?" — "Deal at $LISTING") succeeds at exchange 2.
The shipped CB card sets ``judge.success.inclusive = false``: success needs ``utility >
threshold`` (0.0), a price below the listing. Such a deal is still labelled ``deal`` with its
price and utility (it scores SL 0, see :func:`dialogue_gym.metrics.sale_to_list`), but it is
not a success, so its AT counts as T. The paper's convention: ``DealJudge(card,
inclusive=True)`` (e.g. ``make("CB-hard", success_judge=functools.partial(DealJudge,
inclusive=True))``) or a card copy with ``inclusive = true``.

The embedded judge casts its n = 3 votes from three views, as the LLM judge samples three
readings of the transcript:

1. **the seller's words** — the reply states a deal (the card's ``reply_agree`` cues; or, for
   an external seller, a sentence accepting the buyer's standing offer by the card's
   ``accept`` cues as a real seller does, "Deal: I accept $120."; refusal cues win;
   :func:`states_deal`) and names a price;
2. **the seller's state** — the simulator has closed a deal (``privileged["deal"]``) at a price
   matching the stated one;
3. **the buyer's side** — the agreed price is one the buyer's last turn offered (or more), the
   seller's previous price that the buyer accepted, or the midpoint the buyer asked to split.

**Deals the buyer closes.** In real transcripts the seller often makes the last offer and the
*buyer* accepts it ("I can do $120." — "Deal: I accept $120."), after which the seller says
nothing more. Where the seller's reply is written by someone else than the embedded seller
(``exchange.external_user``: a real or LLM seller) and states no deal, the judge also reads
the buyer's side: the three votes then ask whether

1. **the words** — the buyer's turn accepts (the card's ``accept`` cues) the price the seller
   stated in its previous turn, naming no lower one, and the seller's reply neither refuses
   nor names another price;
2. **the seller's state** — the embedded seller's state machine, following the transcript,
   would close at that price (``exchange.turn.decision == "agree"``);
3. **the buyer's side** — vote 3 above, for that price.

The price is always one the seller stated: a buyer who says "deal" to a price the seller never
offered gets no deal. With the embedded seller (simulated episodes) this path is never taken:
that seller states every deal it closes, so nothing changes for a simulated buyer.

``p_seller`` (the listing price) and ``p_buyer`` (the buyer's target) come from the seller's
privileged record; without one, from the first price the seller stated and the card's
``listings.buyer_target_fraction``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.judges.base import Exchange, Judgment
from dialogue_gym.text.cue_search import any_cue
from dialogue_gym.text.prices import asking_price_in, buyer_utility, offer_in, read_offer

__all__ = ["DEAL", "NO_DEAL", "DealJudge", "DealJudgment", "accepts_price", "states_deal"]

DEAL, NO_DEAL = "deal", "no_deal"
_SYSTEM, _USER = "system", "user"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def accepts_price(text: str, card: TaskCard) -> bool:
    """Whether a sentence of ``text`` accepts the other side's price (the ``accept`` cues).

    Per sentence (or line), so a cue anchored at the start (``^deal``) also matches a sentence
    that opens a later part of the turn ("I offer $120. Deal: I accept $120.").
    """
    accept = card.cues.get("accept", ())
    return any(p.search(sentence) for sentence in _SENTENCE_END.split(text.strip()) for p in accept)


def states_deal(text: str, card: TaskCard, offered: float | None = None) -> bool:
    """Whether a seller's reply states a deal.

    It does when its stance is ``agree`` (``reply_agree`` cues), or when one of its sentences
    accepts the buyer's price ``offered`` (the card's ``accept`` cues: a real seller accepts
    an offer as a buyer accepts a price, "Deal: I accept $120.") and the reply names no other
    price. Refusal cues win. Without an offer to accept, acceptance words are no deal: "I just
    want this sold" in an opening that names the asking price is not one. The embedded seller
    states its deals with ``reply_agree`` words ("Deal at $X"), so this reading changes
    nothing for it.

    Args:
        text: The seller's reply.
        card: The CB card (``reply_*`` and ``accept`` cues).
        offered: The buyer's standing offer, if any.
    """
    stance = classify_stance(text, card)
    if stance != "neutral" and stance != "positive":
        return stance == "agree"
    if offered is None or not accepts_price(text, card):
        return False
    said = offer_in(text, reference=offered)
    return said is None or abs(said - offered) <= max(0.5, 0.01 * offered)


@dataclasses.dataclass(frozen=True)
class DealJudgment(Judgment):
    """A :class:`~dialogue_gym.judges.base.Judgment` with the deal's price and utility.

    Attributes:
        deal_price: The agreed price (``None`` without a deal).
        utility: The buyer-normalized utility of the deal (``None`` without a deal).
        listing_price: ``p_seller`` used for the utility.
        buyer_target: ``p_buyer`` used for the utility.
    """

    deal_price: float | None = None
    utility: float | None = None
    listing_price: float | None = None
    buyer_target: float | None = None

    @property
    def details(self) -> dict[str, Any]:
        """The deal fields as a dict (for infos)."""
        return {
            "deal_price": self.deal_price,
            "utility": self.utility,
            "listing_price": self.listing_price,
            "buyer_target": self.buyer_target,
        }


class DealJudge:
    """Deal/no-deal with a price and the buyer-utility threshold (see the module docstring).

    Args:
        card: The task card: labels ``deal`` and ``no_deal`` with their rewards, the utility
            threshold (``judge.success.threshold``), reply and acceptance cues.
        tolerance: Relative tolerance when comparing prices (at least $0.50).
        inclusive: Override the card's ``judge.success.inclusive``: ``True`` counts a deal whose
            utility equals the threshold (MASP's ``>=``; a deal at the listing price succeeds),
            ``False`` needs more. ``None`` (default): the card's setting.

    Raises:
        ValueError: The card's labels are not ``deal`` and ``no_deal``.
    """

    def __init__(
        self, card: TaskCard, tolerance: float = 0.01, inclusive: bool | None = None
    ) -> None:
        labels = card.success_judge.labels
        if set(labels) != {DEAL, NO_DEAL}:
            raise ValueError(
                f"DealJudge needs judge.success.labels {{deal, no_deal}} on card {card.id!r}, "
                f"got {sorted(labels)}"
            )
        self.card = card
        self.threshold = card.success_judge.threshold
        self.rule = card.success_judge
        if inclusive is not None:
            self.rule = dataclasses.replace(self.rule, inclusive=bool(inclusive))
        self.inclusive = self.rule.inclusive
        self.tolerance = tolerance
        listings = card.extra.get("listings", {})
        self.target_fraction = float(listings.get("buyer_target_fraction", 0.7))

    # -- helpers -------------------------------------------------------------------------------

    def _tol(self, price: float) -> float:
        return max(0.5, self.tolerance * abs(price))

    def _prices(self, exchange: Exchange) -> tuple[float | None, float | None]:
        privileged = exchange.privileged
        listing = privileged.get("listing_price")
        target = privileged.get("buyer_target")
        if listing is None:
            first = next((text for role, text in exchange.history if role == _USER), "")
            listing = asking_price_in(first)
        if listing is None:
            return None, None
        if target is None:
            target = round(float(listing) * self.target_fraction)
        return float(listing), float(target)

    def _offer(self, exchange: Exchange, text: str, listing: float | None) -> float | None:
        """The price ``text`` proposes, read in the listing's period (a rent per month)."""
        return read_offer(text, listing, exchange.privileged.get("period")).offer

    def _top_offer(self, exchange: Exchange, text: str, listing: float | None) -> float | None:
        """The most ``text`` offers: the high end of a range (``$300-350``), else its offer."""
        reading = read_offer(text, listing, exchange.privileged.get("period"))
        return reading.offer if reading.high is None else reading.high

    def _cue(self, name: str, text: str) -> bool:
        return any_cue(self.card.cues.get(name, ()), text)

    def _accepts(self, exchange: Exchange, text: str) -> bool:
        """The buyer's ``text`` accepts a price: per sentence for an external seller's talk."""
        if exchange.external_user:
            return accepts_price(text, self.card)
        return self._cue("accept", text)

    def _standing_offer(self, exchange: Exchange, listing: float | None) -> float | None:
        """The buyer's latest offer: its last turn's, else (external sellers) an earlier one.

        An offer stands until the buyer names another: a real seller may accept it a turn
        later ("$250?" — "Will you pick it up?" — "Yes." — "OK, deal at $250."). The embedded
        seller only ever closes on the current turn, so simulated episodes read the last turn.
        """
        offer = self._top_offer(exchange, exchange.system, listing)
        if offer is not None or not exchange.external_user:
            return offer
        for role, text in reversed(exchange.history[:-2]):
            if role == _SYSTEM:
                offer = self._top_offer(exchange, text, listing)
                if offer is not None:
                    return offer
        return None

    def _buyer_side(self, exchange: Exchange, price: float | None, listing: float | None) -> str:
        """Vote 3: did the buyer offer ``price`` (its standing offer), accept it or split?"""
        if price is None:
            return NO_DEAL
        tol = self._tol(price)
        buyer = exchange.system
        offer = self._standing_offer(exchange, listing)
        if offer is not None and offer >= price - tol:
            return DEAL
        offer = self._offer(exchange, buyer, listing)
        history = exchange.history
        previous_seller = next(
            (text for role, text in reversed(history[:-2]) if role == _USER), None
        )
        seller_price = (
            self._offer(exchange, previous_seller, listing) if previous_seller is not None else None
        )
        if (
            seller_price is not None
            and self._accepts(exchange, buyer)
            and abs(seller_price - price) <= tol
            and (offer is None or offer >= seller_price - tol)
        ):
            return DEAL
        if seller_price is not None and offer is None and self._cue("split", buyer):
            earlier = [
                self._offer(exchange, text, listing)
                for role, text in history[:-2]
                if role == _SYSTEM
            ]
            earlier_offers = [v for v in earlier if v is not None]
            if earlier_offers and abs((earlier_offers[-1] + seller_price) / 2 - price) <= tol:
                return DEAL
        return NO_DEAL

    def _previous_seller_price(self, exchange: Exchange, listing: float | None) -> float | None:
        """The price the seller stated in the turn before the buyer's current one."""
        previous = next(
            (text for role, text in reversed(exchange.history[:-2]) if role == _USER), None
        )
        return self._offer(exchange, previous, listing) if previous is not None else None

    def _buyer_closes(self, exchange: Exchange, listing: float | None) -> float | None:
        """Vote 1 of a deal the buyer closes: the seller's stated price the buyer accepted."""
        price = self._previous_seller_price(exchange, listing)
        if price is None or not self._accepts(exchange, exchange.system):
            return None
        tol = self._tol(price)
        offer = self._offer(exchange, exchange.system, listing)
        if offer is not None and offer < price - tol:
            return None  # "deal at $X" below what the seller said is a counter, not an accept
        said = self._offer(exchange, exchange.user, listing) if exchange.user.strip() else None
        if said is not None and abs(said - price) > tol:
            return None  # the seller answers with another price
        if exchange.user.strip() and classify_stance(exchange.user, self.card) == "refused":
            return None
        return price

    # -- the protocol --------------------------------------------------------------------------

    def judge(self, exchange: Exchange) -> DealJudgment:
        """See :class:`~dialogue_gym.judges.base.SuccessJudge`."""
        listing, target = self._prices(exchange)
        n_failed = 0
        # Vote 1: the seller's words.
        offered = self._standing_offer(exchange, listing) if exchange.external_user else None
        stated = states_deal(exchange.user, self.card, offered)
        stated_price = self._offer(exchange, exchange.user, listing) if stated else None
        if stated and stated_price is None:
            n_failed += 1  # a deal without a readable price cannot be scored
        by_words = DEAL if stated_price is not None else NO_DEAL
        # Vote 2: the seller's state.
        privileged = exchange.privileged
        if "deal" in privileged:
            state_price = privileged.get("deal_price") if privileged.get("deal") else None
        else:  # another user model: its stance
            state_price = stated_price if exchange.turn.decision == "agree" else None
        by_state = DEAL if state_price is not None else NO_DEAL
        if (
            state_price is not None
            and stated_price is not None
            and abs(float(state_price) - stated_price) > self._tol(stated_price)
        ):
            by_state = NO_DEAL  # the words and the state disagree on the price
        price = stated_price if stated_price is not None else state_price
        price = None if price is None else float(price)
        if exchange.external_user and stated_price is None:
            # A real or LLM seller who states no deal: did the buyer close one (module doc)?
            accepted = self._buyer_closes(exchange, listing)
            if accepted is not None:
                price = accepted
                by_words = DEAL
                by_state = DEAL if exchange.turn.decision == "agree" else NO_DEAL
        # Vote 3: the buyer's side of the deal.
        by_buyer = self._buyer_side(exchange, price, listing)
        votes = (by_words, by_state, by_buyer)
        deal = all(v == DEAL for v in votes)
        utility = None
        if deal and price is not None and listing is not None and target is not None:
            try:
                utility = buyer_utility(price, listing, target)
            except ValueError:
                utility = None
        success = deal and utility is not None and self.rule.passes(utility)
        labels = self.card.success_judge.labels
        rewards = tuple(labels[v] for v in votes)
        return DealJudgment(
            votes=votes,
            rewards=rewards,
            score=sum(rewards) / len(rewards),
            success=success,
            label=DEAL if deal else NO_DEAL,
            n_failed=n_failed,
            deal_price=price if deal else None,
            utility=utility,
            listing_price=listing,
            buyer_target=target,
        )
