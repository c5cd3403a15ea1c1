"""How a buyer turn moves the CraigslistBargain seller: perception, credit, offers, insults.

:class:`SellerDynamics` is the seller's state machine (see :mod:`dialogue_gym.plugins.cb.seller`
for the rules): it reads one view of the buyer's turn, credits at most one argument per turn
(its share of the turn's one unit of credit), moves the ask, and decides the stance, a deal, a
cave-in or a walk-away. :class:`~dialogue_gym.plugins.cb.seller.SellerUser` adds the episode state,
the wording and the user protocol on top of it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.judges.deal import accepts_price, states_deal
from dialogue_gym.plugins.cb.seller_listings import Listing, price_step
from dialogue_gym.plugins.cb.seller_presets import SellerPreset
from dialogue_gym.text.cue_search import any_cue
from dialogue_gym.text.prices import OfferReading, mask_prices, read_offer
from dialogue_gym.text.view import text_view
from dialogue_gym.users.analysis import UtteranceAnalyzer
from dialogue_gym.users.concerns import MEANING_SCALE
from dialogue_gym.users.meaning import ASKS

__all__ = [
    "PARTIAL",
    "RESOLVED",
    "UNRESOLVED",
    "ArgumentProgress",
    "SellerDynamics",
    "TurnEffect",
    "accepts_price",
    "states_deal",
]

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MONEY = re.compile(r"\$\s?\d|\b(budget|spend|afford)\b", re.I)
"""A buyer's turn that names a price or its budget."""


@dataclasses.dataclass
class ArgumentProgress:
    """How far the buyer has pressed one kind of argument (a concern of the card)."""

    needed: int
    strength: float  # the persona's receptivity; 0 when it is not one of the persona's concerns
    progress: int = 0
    voiced: bool = False

    @property
    def status(self) -> str:
        """``unresolved``, ``partially_addressed`` or ``resolved`` (pressed enough)."""
        if self.progress >= self.needed:
            return RESOLVED
        return PARTIAL if self.progress > 0 else UNRESOLVED


@dataclasses.dataclass
class TurnEffect:
    """What one buyer turn did to the seller (internal)."""

    kind: str
    stance: str
    justified: bool = True
    events: list[str] = dataclasses.field(default_factory=list)
    offer: float | None = None
    addressed: list[str] = dataclasses.field(default_factory=list)
    condition_question: bool = False
    moved: bool = False  # the stated price came down this turn
    dismissed: str | None = None  # a reason heard that this seller gives no weight
    asked: bool = False  # the buyer's turn asked a question
    item_question: bool = False  # ... and one of its questions is about the item, not the deal


class SellerDynamics:
    """The seller's perception and dynamics (mixed into :class:`SellerUser`).

    The attributes below are the episode state :class:`SellerUser` sets up (``_begin``); this
    class reads and moves them.
    """

    card: TaskCard
    preset: SellerPreset
    analyzer: UtteranceAnalyzer
    listing: Listing
    bottom_line: float
    arguments: dict[str, ArgumentProgress]
    ask: float
    last_counter: float
    last_offer: float | None
    deal_price: float | None
    deal_offer: float | None
    walked: bool
    insults: int
    anger: float
    mood: float
    rapport_turns: int
    unreasoned_offers: int
    decision: str
    opened: bool
    money_named: bool
    addressed_last: list[str]
    voiced_now: list[str]
    focus: frozenset[str]
    past_embeddings: list[np.ndarray]
    _rng: np.random.Generator

    @property
    def stated_ask(self) -> float:
        """The current ask as the seller would quote it (rounded, never below the bottom line)."""
        step = price_step(self.listing.price)
        quoted = round(self.ask / step) * step
        if quoted < self.bottom_line:
            quoted = math.ceil(self.bottom_line / step - 1e-9) * step
        return float(min(quoted, self.listing.price))

    @property
    def concession(self) -> float:
        """How far the ask has come down from the listing towards the bottom line (0..1)."""
        gap = self.listing.price - self.bottom_line
        return float(np.clip((self.listing.price - self.ask) / gap, 0.0, 1.0)) if gap > 0 else 1.0

    def _cue(self, name: str, text: str) -> bool:
        return any_cue(self.card.cues.get(name, ()), text)

    def _weight(self, cid: str) -> float:
        arg = self.arguments[cid]
        if arg.strength > 0:
            return arg.strength
        return self.preset.off_weight * self.card.concern(cid).blocking_weight

    def _acceptable(self, offer: float) -> bool:
        """A rational seller in this state takes ``offer``."""
        if offer >= self.stated_ask - 1e-6 or offer >= self.ask - 1e-6:
            return True
        gap = self.preset.close_gap * self.listing.price
        return offer >= self.bottom_line and self.ask - offer <= gap

    def _concede(self, share: float, offer: float | None = None) -> None:
        """Moves the ask ``share`` of the way to the buyer's ``offer`` (never below the floor).

        Without an offer, towards the bottom line: a concession answers what the buyer asks
        for, so a reasoned offer close to the ask moves it less than one far below.
        """
        target = self.bottom_line if offer is None else max(self.bottom_line, offer)
        if target < self.ask:
            self.ask = max(self.bottom_line, self.ask - share * (self.ask - target))

    def _close(
        self, price: float, step: TurnEffect, kind: str = "agree", offered: bool = True
    ) -> TurnEffect:
        self.deal_price = float(round(price, 2))
        self.deal_offer = self.deal_price if offered else None
        self.mood = min(1.0, self.mood + 0.3)
        step.kind, step.stance = kind, "agree"
        step.events.append("deal")
        return step

    def _update(self, text: str) -> TurnEffect:
        """Updates the state from the buyer's turn; returns what happened."""
        preset = self.preset
        listing_price = self.listing.price
        if self.walked:
            return TurnEffect("after_walk", "refused", events=["walked_away"])
        # What the seller just brought up (a flaw, the other listings) is what the buyer's
        # reply is read against: "given that, would you take $N?" answers it.
        self.focus = frozenset(self.voiced_now)
        self.voiced_now = []
        # One view of the turn for the encoder, the cues and the price parser.
        text = text_view(text, self.analyzer.encoder)
        # The offer read in context: per month for a rent, not a total, a cost or a budget.
        reading = read_offer(text, reference=listing_price, period=self.listing.period)
        # Once a price or a budget was named, the seller does not ask what the buyer means to spend.
        self.money_named = (
            self.money_named or reading.offer is not None or bool(_MONEY.search(text))
        )
        reopened = False
        if self.deal_price is not None:
            if not self._misread_deal(reading):
                return TurnEffect("after_deal", "agree", events=["deal"])
            # The deal was closed on a number the buyer now says it did not offer.
            self.deal_price = self.deal_offer = None
            self.last_offer = None
            self.mood = max(-1.0, self.mood - 0.3)
            reopened = True
        # Prices are masked before encoding: the argument does not depend on the number (and
        # the encoder's cache then sees a template once).
        p = self.analyzer.perceive(mask_prices(text, listing_price))
        if p.empty:
            self.mood -= 0.05
            return TurnEffect("empty", self._hold(), events=["empty"])
        offer = reading.offer
        if reading.clarified:
            self._forgive_misread(reading)
        repetition = bool(self.past_embeddings) and (
            self.analyzer.encoder.to_reference_cosine(
                float(max(e @ p.embedding for e in self.past_embeddings))
            )
            >= 0.9
        )
        if offer is not None and (offer != self.last_offer or reading.clarified):
            repetition = False  # the same words with a new price (or a correction): an offer
        repeated_offer = offer is not None and offer == self.last_offer
        self.past_embeddings.append(p.embedding)
        # Taking "your price" before the seller has named one is interest, not a deal.
        accept = self._cue("accept", text) and self.opened
        if offer is None and self._cue("split", text) and self.last_offer is not None:
            offer = (self.last_offer + self.last_counter) / 2.0
        step = TurnEffect("counter", "neutral", offer=offer)
        events = step.events
        if reopened:
            events.append("reopened")
        if reading.clarified:
            events.append("clarified")
        step.asked = p.question
        # A question about the item beside an offer ("Do you know the battery health? I could
        # do $360."): answered as well as the seller can, not passed over.
        step.item_question = p.question and any(
            sentence.rstrip().endswith("?")
            and "$" not in sentence
            and self._cue("item_question", sentence)
            and not self._cue("deal_question", sentence)
            for sentence in _SENTENCE_END.split(text.strip())
        )
        step.condition_question = p.question and self._cue("condition_question", text)
        if offer is not None or p.ask:
            events.append("ask")
        if repetition:
            events.append("repetition")
        # The buyer takes the seller's last price (or offers at least as much).
        top = offer if reading.high is None else reading.high
        if accept and (top is None or top >= self.last_counter - 1e-6):
            events.append("accept")
            price = self.last_counter if top is None else max(offer or 0.0, self.last_counter)
            return self._close(price, step, offered=top is not None and price > self.last_counter)
        if p.off_topic and offer is None:
            self.mood -= 0.05
            events.append("off_topic")
            step.kind, step.stance = "offtopic", self._hold()
            return step
        if offer is not None:
            events.append("offer")
        rude = self._cue("insult", text) or any(
            p.anti[cid] >= preset.anti_threshold and p.anti[cid] > p.unlock[cid]
            for cid in self.arguments
        )
        lowball = offer is not None and offer < preset.insult_fraction * listing_price
        if p.pressure_cue:
            self.mood -= 0.1
            events.append("pressure")
        if (p.greeting or p.question) and self.rapport_turns < 2 and offer is None and not rude:
            self.rapport_turns += 1
            self.mood += preset.rapport_gain
            events.append("rapport")
        if lowball or rude:
            return self._insulted(step, lowball, rude)
        bargaining = (
            offer is not None
            or accept
            or any(self._cue(name, text) for name in ("haggle", "reject", "split"))
        )
        # A question about the item is an inquiry, not an argument ("any scratches?"), unless
        # a sentence of it states a reason ("At 82% the battery needs replacing soon. Does it
        # come with a charger?").
        states_reason = p.meaning is not None and bool(p.meaning.leading & set(self.arguments))
        inquiry = p.question and not bargaining and not states_reason
        # Arguments: the turn's one credited argument takes a share of the gap to the bottom line.
        gain = 0.0
        if not (repetition or inquiry):
            cid = self._argument(p, events)
            if cid is not None:
                arg = self.arguments[cid]
                if arg.progress >= arg.needed:
                    events.append(f"exhausted:{cid}")
                elif self._weight(cid) == 0:
                    # A reason this seller gives no weight (the hard seller's off-persona
                    # ones): heard and set aside, and the reply says so (see SellerUser).
                    arg.progress += 1
                    step.dismissed = cid
                    events.append(f"dismissed:{cid}")
                else:
                    arg.progress += 1
                    gain = preset.arg_gain * self._weight(cid) * self._share(p, cid)
                    if not arg.voiced:
                        gain *= preset.proactive_credit
                    if gain > 0 and arg.strength == 0:
                        # A reason this seller does not care about moves only an easy (soft)
                        # seller, and that concession is its bias, not a reason (RCSR).
                        step.justified = False
                        events.append("unreasoned_concession")
                    step.addressed.append(cid)
                    events.append(f"addressed:{cid}")
                    if not arg.voiced:
                        events.append(f"proactive:{cid}")
        self.addressed_last = list(step.addressed)
        quoted = self.stated_ask
        if gain > 0:
            # A reason moves the counter toward the offer in proportion to its weight.
            bare_ask = self.ask - preset.bare_step * (self.ask - self.bottom_line)
            self._concede(min(gain, preset.max_gain), offer)
            if self.ask > bare_ask:  # an offer near the ask: the reason adds to a bare turn's
                self.ask = bare_ask
                self._concede(min(gain, preset.max_gain), offer)
            self.anger = max(0.0, self.anger - 0.5)
            self.mood = min(1.0, self.mood + 0.05)
        elif bargaining and not repetition:
            # A bare offer moves it a little; the same number again, half as much.
            self._concede(preset.bare_step * (0.5 if repeated_offer else 1.0))
            events.append("bare")
            if preset.drift_prob > 0 and self._rng.random() < preset.drift_prob:
                self._concede(preset.drift_step)  # the soft bias: more than a bare turn earns
                step.justified = False
                events.append("unreasoned_concession")
        if offer is not None:
            if reading.high is not None and self._acceptable(reading.high):
                # A range reaching the ask: the seller takes its price within the range.
                self.last_offer = reading.high
                price = min(reading.high, max(offer, self.stated_ask))
                return self._close(price, step)
            if self._acceptable(offer):
                self.last_offer = offer
                return self._close(offer, step)
            if gain == 0:
                self.unreasoned_offers += 1
                if self._caves(offer):
                    self.last_offer = offer
                    step.justified = False
                    events.append("cave")
                    return self._close(offer, step, kind="cave")
            self.last_offer = offer
            close = self.stated_ask - offer <= preset.positive_gap * listing_price
            step.stance = "positive" if close else "neutral"
        else:
            near = self.last_offer is not None and (
                self.stated_ask - self.last_offer <= preset.positive_gap * listing_price
            )
            step.stance = "positive" if near and gain > 0 else "neutral"
        if step.addressed:
            step.kind = "ack"
        elif step.dismissed is not None:
            step.kind = "dismissed"
        elif offer is None and bargaining and self.stated_ask < quoted:
            step.kind = "haggled"
        elif offer is None and repetition:
            step.kind = "repetition"
        elif offer is None and (p.question or p.greeting):
            step.kind = "inquiry" if p.question else "greeting"
        step.moved = self.stated_ask < self.last_counter - 1e-6
        self.last_counter = self.stated_ask
        return step

    def _misread_deal(self, reading: OfferReading) -> bool:
        """The buyer corrects the offer a deal was closed on: the deal was a misread.

        ``no, I meant $1,225, not $22,000`` after "Deal at $22,000": that deal does not hold.
        """
        deal = self.deal_offer
        if deal is None or not reading.clarified:
            return False
        tol = max(0.5, 0.01 * deal)
        if any(abs(d - deal) <= tol for d in reading.disowned):
            return True
        return reading.offer is not None and abs(reading.offer - deal) > tol

    def _forgive_misread(self, reading: OfferReading) -> None:
        """A correction disowning the number taken as a low-ball takes back that insult.

        The seller must not hold a number the buyer did not offer against it.
        """
        last = self.last_offer
        if last is None or self.insults == 0 or reading.offer is None:
            return
        if any(abs(d - last) <= max(0.5, 0.01 * last) for d in reading.disowned):
            self.insults -= 1
            self.anger = max(0.0, self.anger - 1.0)
            self.mood = min(1.0, self.mood + 0.2)
            self.last_offer = None

    def _scores(self, p: Any) -> dict[str, float]:
        """Argument id → how strongly the turn argues it, on the cosine scale.

        The higher of its closeness to the argument's prototypes and the sentence-level
        meaning reader's probability mapped onto that scale (the reader's
        ``meaning_threshold`` lands on ``unlock_threshold``), so a reason in the buyer's own
        words counts as much as one in the card's. A reason the seller has just brought up
        counts from ``focus_threshold`` when the turn reads likeliest as it, and counts
        whatever the turn's words when the turn points back at it ("Given that, would you take
        $980?", :attr:`~dialogue_gym.users.analysis.Perception.back_reference`).
        """
        preset = self.preset
        likeliest = None if p.meaning is None else p.meaning.likeliest()
        # The seller's own point, raised in its last reply, is read against the other reasons
        # only: a buyer who brings it up beside an offer argues it ("Given the competition,
        # could you come down closer to $940?"), however near a miss its words read alone.
        closest = max(self.arguments, key=p.addressing) if p.meaning is not None else None
        # A turn that reads as nothing but an offer makes no argument, whatever the prototypes'
        # faint likeness ("How about $1,325 a month?" beside "I'm saving up for rent").
        reasons_read = p.meaning is None or not p.meaning.leading <= set(ASKS)
        scores = {}
        for cid in self.arguments:
            # Every buyer turn carries an offer, which takes much of the reader's probability:
            # the reason it reads likeliest counts from the lower line, when some sentence
            # reads likeliest as it ("How about $1,325 a month?" is an offer, whatever faint
            # reason it also resembles).
            lower = cid == likeliest and cid in p.meaning.leading
            line = preset.reason_threshold if lower else preset.meaning_threshold
            by_meaning = preset.unlock_threshold + (p.addressing(cid) - line) * MEANING_SCALE
            scores[cid] = max(p.unlock[cid] if reasons_read else 0.0, by_meaning)
            # A reason pointing back at what the seller just brought up ("Thanks for being
            # upfront. Given that, would you take $980?") argues it, whatever its words.
            if cid in self.focus and (
                (cid == closest and p.addressing(cid) >= preset.focus_threshold)
                or (p.back_reference and len(self.focus) == 1)
            ):
                scores[cid] = max(scores[cid], preset.unlock_threshold)
        return scores

    def _touched(self, p: Any, scores: dict[str, float] | None = None) -> list[str]:
        """The arguments a turn touches: over the threshold, within the margin of its best.

        ``scores`` are the turn's :meth:`_scores` when the caller has them already.
        """
        preset = self.preset
        scores = self._scores(p) if scores is None else scores
        best = max(scores.values(), default=0.0)
        return [
            cid
            for cid in self.arguments
            if scores[cid] >= preset.unlock_threshold
            and scores[cid] >= p.anti[cid]
            and scores[cid] >= best - preset.unlock_margin
        ]

    def _share(self, p: Any, cid: str) -> float:
        """The share of the turn's one unit of credit that its argument ``cid`` takes.

        The unit is split over the arguments the turn touches in proportion to how strongly it
        argues each: a turn making one reason keeps all of it (a faint side match costs
        little), while a reason thrown in among several weighs about ``1/k`` of the same
        reason made on its own — covering every topic blindly dilutes each of them, as with
        the :class:`~dialogue_gym.users.cognitive.CognitiveUser`.
        """
        scores = self._scores(p)
        touched = self._touched(p, scores)
        total = sum(scores[c] for c in touched)
        return float(scores[cid] / total) if cid in touched and total > 0 else 1.0

    def _argument(self, p: Any, events: list[str]) -> str | None:
        """The one argument a turn is credited for (see :class:`SellerPreset`), or ``None``.

        A turn argues what it is closest to: a side match far below the best one (a remark on
        wear that also resembles a market remark) does not count. Of the arguments it touches,
        only the best is credited (near-ties: the persona's own, strongest concern); touching
        two or more costs a little mood (``multi_topic``) and splits the turn's credit
        (:meth:`_share`).
        """
        preset = self.preset
        scores = self._scores(p)
        touched = self._touched(p, scores)
        if not touched:
            return None
        if len(touched) >= 2:
            self.mood = max(-1.0, self.mood - preset.stuffing_mood)
            events.append("multi_topic")
        # The reason the seller just brought up is the one the buyer answers: "I was hoping to
        # spend around $170 ... I can bring my own help and a vehicle" to "what are you looking
        # to spend on it?" is heard for the budget, not for the pickup (blind play round 11,
        # CB seeds 101 and 103: the question asked was answered and earned nothing).
        answered = [c for c in touched if c in self.focus and not self._spent(c)]
        chosen = self._best(answered or touched, scores)
        # A turn that re-argues a spent reason beside one the seller itself brought up is
        # heard for the latter ("That covers the fix for the leg, and you'd have it gone
        # today" after a quick pickup was credited, the leg disclosed): the buyer took up what
        # the seller said. Beside a reason nobody raised, a spent one still earns nothing.
        if self._spent(chosen):
            taken_up = [c for c in touched if self.arguments[c].voiced and not self._spent(c)]
            chosen = self._best(taken_up, scores) if taken_up else chosen
        return chosen

    def _spent(self, cid: str) -> bool:
        return self.arguments[cid].progress >= self.arguments[cid].needed

    def _best(self, touched: list[str], scores: dict[str, float]) -> str:
        """The best-scoring of ``touched`` (near-ties: the persona's strongest concern)."""
        top = max(scores[cid] for cid in touched)
        tied = [cid for cid in touched if scores[cid] >= top - self.preset.tie_margin]
        # max() keeps the first of equals: the card's concern order breaks exact ties.
        return max(tied, key=lambda cid: (self.arguments[cid].strength, scores[cid]))

    def _hold(self) -> str:
        return self.decision if self.decision in ("neutral", "positive") else "neutral"

    def _caves(self, offer: float) -> bool:
        preset = self.preset
        if preset.cave_prob <= 0 or offer < preset.cave_min * self.listing.price:
            return False
        chance = preset.cave_prob + preset.cave_growth * (self.unreasoned_offers - 1)
        return bool(self._rng.random() < chance)

    def _insulted(self, step: TurnEffect, lowball: bool, rude: bool) -> TurnEffect:
        preset = self.preset
        events = step.events
        events.append("insult")
        if lowball:
            events.append("lowball")
            self.unreasoned_offers += 1
            if self._caves(step.offer or 0.0):
                self.last_offer = step.offer
                step.justified = False
                events.append("cave")
                return self._close(step.offer or 0.0, step, kind="cave")
            self.last_offer = step.offer
        self.insults += 1
        self.anger += 1.0
        self.mood = max(-1.0, self.mood - 0.3)
        self.ask = min(
            self.listing.price, self.ask + preset.harden * (self.listing.price - self.ask)
        )
        step.stance = "refused"
        if self.insults >= preset.walk_after:
            self.walked = True
            events.append("walked_away")
            step.kind = "walk_away"
            return step
        step.kind = "refuse" if self.insults == 1 else "pushback"
        self.last_counter = self.stated_ask
        return step
