"""The CraigslistBargain seller's negotiation state: ask, bottom line, arguments, deal, mood.

:class:`NegotiationState` is the seller's concern tracking, one object per episode: the
listing and its hidden bottom line, the current ask and the last price stated, how far the
buyer has pressed each argument (:class:`ArgumentProgress`), the deal or the walk-away, and
the seller's mood and anger. It knows the price arithmetic (:attr:`~NegotiationState.stated_ask`,
:attr:`~NegotiationState.concession`, :meth:`~NegotiationState.concede`,
:meth:`~NegotiationState.close`); *when* to concede, close or walk is the decision's
(:mod:`dialogue_gym.plugins.cb.seller_decision`), and the wording only records what the
reply brought up (:meth:`~NegotiationState.bring_up`).

:class:`TurnEffect` is what one buyer turn did: the decision's output and the wording's input.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.plugins.cb.seller_listings import Listing, price_step
from dialogue_gym.plugins.cb.seller_presets import SellerPreset
from dialogue_gym.users.persona import Persona

__all__ = [
    "PARTIAL",
    "RESOLVED",
    "START_MOOD",
    "UNRESOLVED",
    "ArgumentProgress",
    "NegotiationState",
    "TurnEffect",
]

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"
START_MOOD = 0.1
"""The seller's mood at the start of an episode (polite, uncommitted)."""


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

    @property
    def spent(self) -> bool:
        """Pressed as often as it counts: a further turn on it earns nothing."""
        return self.progress >= self.needed


@dataclasses.dataclass
class TurnEffect:
    """What one buyer turn did to the seller (the decision's output, the wording's input)."""

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
    inspection: bool = False  # the buyer asks to see or have the item checked before paying
    when_asked: bool = False  # the buyer asks when it can come by
    parting: bool = False  # the buyer takes its leave without an offer ("I'll pass. Good luck.")


@dataclasses.dataclass
class NegotiationState:
    """One episode's negotiation: prices, arguments' progress, deal, mood and anger.

    Built by :meth:`start`; the decision moves it turn by turn, the wording marks what the
    reply brought up, and :class:`~dialogue_gym.plugins.cb.seller.SellerUser` reads it for the
    BDI state and the privileged record.
    """

    listing: Listing
    bottom_line: float
    arguments: dict[str, ArgumentProgress]
    ask: float  # the seller's current acceptable price (internal, unrounded)
    last_counter: float  # the last price the seller stated
    last_offer: float | None = None
    deal_price: float | None = None
    deal_offer: float | None = None
    walked: bool = False
    insults: int = 0
    anger: float = 0.0
    mood: float = START_MOOD
    rapport_turns: int = 0
    unreasoned_offers: int = 0
    exchange: int = 0
    decision: str = "neutral"
    opened: bool = False
    money_named: bool = False  # the buyer has named a price or its budget
    use_named: bool = False  # the buyer has said what the item is for (or who)
    addressed_last: list[str] = dataclasses.field(default_factory=list)
    voiced_now: list[str] = dataclasses.field(default_factory=list)  # this reply's concerns
    focus: frozenset[str] = frozenset()  # the concerns the last reply brought up
    past_embeddings: list[np.ndarray] = dataclasses.field(default_factory=list)

    @classmethod
    def start(
        cls, card: TaskCard, preset: SellerPreset, persona: Persona, listing: Listing
    ) -> NegotiationState:
        """The state at the start of an episode selling ``listing`` as ``persona``.

        The bottom line sits at the listing's quantile of the preset's floor range; each of the
        card's concerns needs ``resistance`` turns (one more for the persona's strongest).
        """
        low, high = preset.floor_range
        price = listing.price
        strengths = dict(persona.concerns)
        arguments = {
            c.id: ArgumentProgress(
                needed=c.resistance + int(strengths.get(c.id, 0.0) >= 0.8),
                strength=strengths.get(c.id, 0.0),
            )
            for c in card.concerns
        }
        return cls(
            listing=listing,
            bottom_line=price * (low + (high - low) * listing.bottom_quantile),
            arguments=arguments,
            ask=price,
            last_counter=price,
        )

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

    def spent(self, cid: str) -> bool:
        """The argument ``cid`` has been pressed as often as it counts."""
        return self.arguments[cid].spent

    def concede(self, share: float, offer: float | None = None) -> None:
        """Moves the ask ``share`` of the way to the buyer's ``offer`` (never below the floor).

        Without an offer, towards the bottom line: a concession answers what the buyer asks
        for, so a reasoned offer close to the ask moves it less than one far below.
        """
        target = self.bottom_line if offer is None else max(self.bottom_line, offer)
        if target < self.ask:
            self.ask = max(self.bottom_line, self.ask - share * (self.ask - target))

    def close(
        self, price: float, step: TurnEffect, kind: str = "agree", offered: bool = True
    ) -> TurnEffect:
        """Closes the deal at ``price`` (``offered``: the buyer's number, not the seller's)."""
        self.deal_price = float(round(price, 2))
        self.deal_offer = self.deal_price if offered else None
        self.mood = min(1.0, self.mood + 0.3)
        step.kind, step.stance = kind, "agree"
        step.events.append("deal")
        return step

    def bring_up(self, cid: str) -> None:
        """Records that the current reply brings up ``cid`` (the next turn is read against it)."""
        self.voiced_now.append(cid)

    def hold(self) -> str:
        """The stance of a turn that changes nothing: the last one, short of a refusal."""
        return self.decision if self.decision in ("neutral", "positive") else "neutral"
