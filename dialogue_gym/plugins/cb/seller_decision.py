"""When the CraigslistBargain seller concedes, closes, caves, holds or walks away.

:class:`SellerDecision` takes one buyer turn, what the seller's perception makes of it
(:class:`~dialogue_gym.plugins.cb.seller_perception.BuyerTurnReader`) and the episode's
:class:`~dialogue_gym.plugins.cb.seller_state.NegotiationState`, and returns what the turn did
(:class:`~dialogue_gym.plugins.cb.seller_state.TurnEffect`): the argument credited (its share
of the turn's one unit of credit), the ask moved, and the stance — a counter, a deal, a
cave-in, a refusal or a walk-away (the rules are in :mod:`dialogue_gym.plugins.cb.seller`).
The state is its only output besides the effect; the random draws (the soft seller's drift
and cave-ins) come from the generator passed in, in a fixed order.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.plugins.cb.seller_perception import BuyerTurnReader
from dialogue_gym.plugins.cb.seller_presets import SellerPreset
from dialogue_gym.plugins.cb.seller_state import NegotiationState, TurnEffect
from dialogue_gym.text.prices import OfferReading
from dialogue_gym.users.analysis import Perception
from dialogue_gym.users.meaning import split_sentences

__all__ = ["SellerDecision", "SellerDecisionRule"]


def _stated(p: Perception, line: float) -> frozenset[str]:
    """What the turn's sentences read as at the reader's ``line``, less what only its questions do.

    "How is the car's condition: any wear, damage or repairs I should know about?" asks about
    the flaw; it does not argue it (blind play round 18, CB seed 170: the seller set aside a
    reason nobody gave, "the price already takes it into account").
    """
    if p.meaning is None:
        return frozenset()
    asked: set[str] = set()
    said: set[str] = set()
    # One row per sentence of the view (the analyzer reads the same split).
    for sentence, row in zip(split_sentences(p.view), p.meaning.per_sentence, strict=True):
        top = max(row, key=row.__getitem__) if row else None
        if top is not None and row[top] >= line:
            (asked if sentence.rstrip().endswith("?") else said).add(top)
    return p.meaning.leading - (asked - said)


class SellerDecisionRule(Protocol):
    """Moves the negotiation by one buyer turn and says what the turn did."""

    def update(self, state: NegotiationState, text: str, rng: np.random.Generator) -> TurnEffect:
        """Updates ``state`` from the buyer's turn ``text``; returns its effect."""
        ...


class SellerDecision:
    """The seller's decision rule (see the module docstring).

    Args:
        card: The CB task card (its concerns' blocking weights).
        preset: The seller preset (gains, gaps, insult and cave-in parameters).
        reader: The seller's perception of buyer turns.
    """

    def __init__(self, card: TaskCard, preset: SellerPreset, reader: BuyerTurnReader) -> None:
        self.card = card
        self.preset = preset
        self.reader = reader

    def weight(self, state: NegotiationState, cid: str) -> float:
        """How much an argument on ``cid`` moves this seller (0: heard and set aside)."""
        arg = state.arguments[cid]
        if arg.strength > 0:
            return arg.strength
        return self.preset.off_weight * self.card.concern(cid).blocking_weight

    def acceptable(self, state: NegotiationState, offer: float) -> bool:
        """A rational seller in this state takes ``offer``."""
        if offer >= state.stated_ask - 1e-6 or offer >= state.ask - 1e-6:
            return True
        gap = self.preset.close_gap * state.listing.price
        return offer >= state.bottom_line and state.ask - offer <= gap

    def update(self, state: NegotiationState, text: str, rng: np.random.Generator) -> TurnEffect:
        """Updates ``state`` from the buyer's turn ``text``; returns what happened."""
        preset, reader = self.preset, self.reader
        listing_price = state.listing.price
        if state.walked:
            return TurnEffect("after_walk", "refused", events=["walked_away"])
        # What the seller just brought up (a flaw, the other listings) is what the buyer's
        # reply is read against: "given that, would you take $N?" answers it.
        state.focus = frozenset(state.voiced_now)
        state.voiced_now = []
        # One view of the turn for the encoder, the cues and the price parser.
        view = reader.view(text, listing_price, state.listing.period)
        text, reading = view.text, view.reading
        # Once a price or a budget was named, the seller does not ask what the buyer means to spend.
        state.money_named = state.money_named or view.names_money
        state.use_named = state.use_named or reader.cue("use_named", text)
        reopened = False
        if state.deal_price is not None:
            if not self._misread_deal(state, reading):
                return TurnEffect("after_deal", "agree", events=["deal"])
            # The deal was closed on a number the buyer now says it did not offer.
            state.deal_price = state.deal_offer = None
            state.last_offer = None
            state.mood = max(-1.0, state.mood - 0.3)
            reopened = True
        p = reader.perceive(text, listing_price)
        if p.empty:
            state.mood -= 0.05
            return TurnEffect("empty", state.hold(), events=["empty"])
        offer = reading.offer
        if reading.clarified:
            self._forgive_misread(state, reading)
        repetition = reader.repeats(p, state.past_embeddings)
        if offer is not None and (offer != state.last_offer or reading.clarified):
            repetition = False  # the same words with a new price (or a correction): an offer
        repeated_offer = offer is not None and offer == state.last_offer
        state.past_embeddings.append(p.embedding)
        # Taking "your price" before the seller has named one is interest, not a deal.
        accept = reader.cue("accept", text) and state.opened
        if offer is None and reader.cue("split", text) and state.last_offer is not None:
            offer = (state.last_offer + state.last_counter) / 2.0
        step = TurnEffect("counter", "neutral", offer=offer)
        events = step.events
        if reopened:
            events.append("reopened")
        if reading.clarified:
            events.append("clarified")
        step.asked = p.question
        # A question about the item beside an offer ("Do you know the battery health? I could
        # do $360."): answered as well as the seller can, not passed over.
        step.item_question = reader.item_question(p, text)
        step.condition_question = p.question and reader.cue("condition_question", text)
        step.inspection = reader.cue("inspection_request", text)
        step.when_asked = reader.cue("timing_question", text)
        farewell = p.meaning is not None and "farewell" in p.meaning.leading
        step.parting = offer is None and not accept and (farewell or reader.cue("parting", text))
        if offer is not None or p.ask:
            events.append("ask")
        if repetition:
            events.append("repetition")
        # The buyer takes the seller's last price (or offers at least as much).
        top = offer if reading.high is None else reading.high
        if accept and (top is None or top >= state.last_counter - 1e-6):
            events.append("accept")
            price = state.last_counter if top is None else max(offer or 0.0, state.last_counter)
            return state.close(price, step, offered=top is not None and price > state.last_counter)
        if p.off_topic and offer is None:
            state.mood -= 0.05
            events.append("off_topic")
            step.kind, step.stance = "offtopic", state.hold()
            return step
        if offer is not None:
            events.append("offer")
        rude = reader.rude(p, text, state)
        lowball = offer is not None and offer < preset.insult_fraction * listing_price
        if p.pressure_cue:
            state.mood -= 0.1
            events.append("pressure")
        if (p.greeting or p.question) and state.rapport_turns < 2 and offer is None and not rude:
            state.rapport_turns += 1
            state.mood += preset.rapport_gain
            events.append("rapport")
        if lowball or rude:
            return self._insulted(state, step, lowball, rng)
        bargaining = (
            offer is not None
            or accept
            or any(reader.cue(name, text) for name in ("haggle", "reject", "split"))
        )
        # A question about the item is an inquiry, not an argument ("any scratches?"), unless
        # a sentence of it states a reason ("At 82% the battery needs replacing soon. Does it
        # come with a charger?").
        states_reason = bool(_stated(p, preset.meaning_threshold) & set(state.arguments))
        inquiry = p.question and not bargaining and not states_reason
        # A goodbye argues nothing ("Good luck with the sale" is no point about the market).
        gain = 0.0 if repetition or inquiry or step.parting else self._credit(state, p, step)
        state.addressed_last = list(step.addressed)
        quoted = state.stated_ask
        if gain > 0:
            # A reason moves the counter toward the offer in proportion to its weight.
            bare_ask = state.ask - preset.bare_step * (state.ask - state.bottom_line)
            state.concede(min(gain, preset.max_gain), offer)
            if state.ask > bare_ask:  # an offer near the ask: the reason adds to a bare turn's
                state.ask = bare_ask
                state.concede(min(gain, preset.max_gain), offer)
            state.anger = max(0.0, state.anger - 0.5)
            state.mood = min(1.0, state.mood + 0.05)
        elif bargaining and not repetition:
            # A bare offer moves it a little; the same number again, half as much.
            state.concede(preset.bare_step * (0.5 if repeated_offer else 1.0))
            events.append("bare")
            if preset.drift_prob > 0 and rng.random() < preset.drift_prob:
                state.concede(preset.drift_step)  # the soft bias: more than a bare turn earns
                step.justified = False
                events.append("unreasoned_concession")
        if offer is not None:
            if reading.high is not None and self.acceptable(state, reading.high):
                # A range reaching the ask: the seller takes its price within the range.
                state.last_offer = reading.high
                price = min(reading.high, max(offer, state.stated_ask))
                return state.close(price, step)
            if self.acceptable(state, offer):
                state.last_offer = offer
                return state.close(offer, step)
            if gain == 0:
                state.unreasoned_offers += 1
                if self._caves(state, offer, rng):
                    state.last_offer = offer
                    step.justified = False
                    events.append("cave")
                    return state.close(offer, step, kind="cave")
            state.last_offer = offer
            close = state.stated_ask - offer <= preset.positive_gap * listing_price
            step.stance = "positive" if close else "neutral"
        else:
            near = state.last_offer is not None and (
                state.stated_ask - state.last_offer <= preset.positive_gap * listing_price
            )
            step.stance = "positive" if near and gain > 0 else "neutral"
        if step.addressed:
            step.kind = "ack"
        elif step.dismissed is not None:
            step.kind = "dismissed"
        elif offer is None and bargaining and state.stated_ask < quoted:
            step.kind = "haggled"
        elif offer is None and repetition:
            step.kind = "repetition"
        elif offer is None and (p.question or p.greeting):
            step.kind = "inquiry" if p.question else "greeting"
        step.moved = state.stated_ask < state.last_counter - 1e-6
        state.last_counter = state.stated_ask
        return step

    def _credit(self, state: NegotiationState, p: Perception, step: TurnEffect) -> float:
        """Credits the turn's one argument; returns its gain (a share of the gap to the floor).

        Touching two or more arguments costs a little mood (``multi_topic``); an exhausted
        argument earns nothing, and one this seller gives no weight is dismissed.
        """
        preset, events = self.preset, step.events
        cid, touched = self.reader.argument(p, state)
        if touched >= 2:
            state.mood = max(-1.0, state.mood - preset.stuffing_mood)
            events.append("multi_topic")
        if cid is None:
            return 0.0
        arg = state.arguments[cid]
        if arg.progress >= arg.needed:
            events.append(f"exhausted:{cid}")
            return 0.0
        if self.weight(state, cid) == 0:
            # A reason this seller gives no weight (the hard seller's off-persona ones): heard
            # and set aside, and the reply says so (see SellerWording).
            arg.progress += 1
            step.dismissed = cid
            events.append(f"dismissed:{cid}")
            return 0.0
        arg.progress += 1
        gain = preset.arg_gain * self.weight(state, cid) * self.reader.share(p, cid, state)
        if not arg.voiced:
            gain *= preset.proactive_credit
        if gain > 0 and arg.strength == 0:
            # A reason this seller does not care about moves only an easy (soft) seller, and
            # that concession is its bias, not a reason (RCSR).
            step.justified = False
            events.append("unreasoned_concession")
        step.addressed.append(cid)
        events.append(f"addressed:{cid}")
        if not arg.voiced:
            events.append(f"proactive:{cid}")
        return gain

    def _misread_deal(self, state: NegotiationState, reading: OfferReading) -> bool:
        """The buyer corrects the offer a deal was closed on: the deal was a misread.

        ``no, I meant $1,225, not $22,000`` after "Deal at $22,000": that deal does not hold.
        """
        deal = state.deal_offer
        if deal is None or not reading.clarified:
            return False
        tol = max(0.5, 0.01 * deal)
        if any(abs(d - deal) <= tol for d in reading.disowned):
            return True
        return reading.offer is not None and abs(reading.offer - deal) > tol

    def _forgive_misread(self, state: NegotiationState, reading: OfferReading) -> None:
        """A correction disowning the number taken as a low-ball takes back that insult.

        The seller must not hold a number the buyer did not offer against it.
        """
        last = state.last_offer
        if last is None or state.insults == 0 or reading.offer is None:
            return
        if any(abs(d - last) <= max(0.5, 0.01 * last) for d in reading.disowned):
            state.insults -= 1
            state.anger = max(0.0, state.anger - 1.0)
            state.mood = min(1.0, state.mood + 0.2)
            state.last_offer = None

    def _caves(self, state: NegotiationState, offer: float, rng: np.random.Generator) -> bool:
        """The soft seller gives in to an unreasoned offer (a draw from ``rng``)."""
        preset = self.preset
        if preset.cave_prob <= 0 or offer < preset.cave_min * state.listing.price:
            return False
        chance = preset.cave_prob + preset.cave_growth * (state.unreasoned_offers - 1)
        return bool(rng.random() < chance)

    def _insulted(
        self, state: NegotiationState, step: TurnEffect, lowball: bool, rng: np.random.Generator
    ) -> TurnEffect:
        """A low-ball or rude turn: a cave-in (soft), else a harder ask, a refusal or a walk."""
        preset = self.preset
        events = step.events
        events.append("insult")
        if lowball:
            events.append("lowball")
            state.unreasoned_offers += 1
            if self._caves(state, step.offer or 0.0, rng):
                state.last_offer = step.offer
                step.justified = False
                events.append("cave")
                return state.close(step.offer or 0.0, step, kind="cave")
            state.last_offer = step.offer
        state.insults += 1
        state.anger += 1.0
        state.mood = max(-1.0, state.mood - 0.3)
        price = state.listing.price
        state.ask = min(price, state.ask + preset.harden * (price - state.ask))
        step.stance = "refused"
        if state.insults >= preset.walk_after:
            state.walked = True
            events.append("walked_away")
            step.kind = "walk_away"
            return step
        step.kind = "refuse" if state.insults == 1 else "pushback"
        state.last_counter = state.stated_ask
        return step
