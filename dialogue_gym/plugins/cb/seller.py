"""SellerUser: the embedded CraigslistBargain seller (the user seat; the system is the buyer).

Each episode draws a seller persona (background, style, and the *arguments the seller is most
receptive to*, from the card's concern library) and a listing from the card's project-written
listing bank (:func:`listing_bank`): an item, its listing price (``p_seller``, the seller's
target), a hidden bottom line and the buyer's target price (``p_buyer``).

The seller's first reply always names the item and the listing price. From then on the seller
holds a current *ask* that starts at the listing price and moves towards — never below, on the
hard preset — the bottom line:

* **Arguments** move it: a buyer turn that addresses one of the card's concerns (the item's
  condition, comparable listings, a quick cash pickup, a tight budget), detected like the
  CognitiveUser's concerns by prototype similarity plus lexical cues, takes a share of the
  distance to the bottom line; concerns the persona is receptive to weigh more, and each concern
  counts at most ``resistance`` times. **One unit of credit per turn**: only the turn's
  best-scoring argument is credited (near-ties go to the persona's own concern), and a turn
  that touches several arguments at once (every reason in one breath, or two per turn in
  rotation) splits its one unit of credit over them in proportion to how strongly it argues
  each, and sours the mood a little, as with the
  :class:`~dialogue_gym.users.cognitive.CognitiveUser`: a reason thrown in among ``k``
  carries about ``1/k`` of the weight of the same reason made on its own, so covering topics
  blindly earns less than making the best one.
* **Bare offers** (a price or "can you do better?" without a reason) move it a little.
* **Insulting low-balls** (offers under ``insult_fraction`` of the listing, or rude wording)
  harden the seller: the ask moves back up, the mood sours, and after ``walk_after`` insults the
  seller walks away (no deal).
* **Deal**: an offer at or above the ask (or close to it and above the bottom line), or the
  buyer accepting the seller's last price, closes the deal and the seller states it
  ("Deal at $X").

*Soft* and *hard* are presets (:class:`SellerPreset`). The hard seller holds its price: a high
bottom line, small concessions that need arguments. The soft seller concedes readily: a lower
bottom line, larger steps, accepts buyer-favourable offers, and sometimes concedes or gives in
to a low offer without any reason — those concessions are marked ``justified=False`` so the
rationality judge (and RCSR) catch them.

Stances: ``refused`` (rejects an offer, walks away), ``neutral`` (counters), ``positive`` (close
to a deal), ``agree`` (deal).

The seller reads one view of each buyer turn, :func:`dialogue_gym.text.view.text_view` (normalized,
invisible characters removed, cut to what the encoder sees): the encoder, the cue regexes and
the price parser see the same text, so a price or a cue hidden from one is hidden from all.

:class:`SellerUser` composes four components, one concept each, with explicit inputs and
outputs (no component holds another's state):

* perception (:mod:`~dialogue_gym.plugins.cb.seller_perception`): what the seller understood of
  the turn — its offer in context and the arguments it makes;
* negotiation state (:mod:`~dialogue_gym.plugins.cb.seller_state`): the ask, the bottom line,
  the arguments' progress, the deal, mood and anger;
* decision (:mod:`~dialogue_gym.plugins.cb.seller_decision`): credit, concede, close, cave,
  hold or walk — the turn's :class:`~dialogue_gym.plugins.cb.seller_state.TurnEffect`;
* wording (:mod:`~dialogue_gym.plugins.cb.seller_wording`): the reply, with its prices.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dialogue_gym.cards.card import CardError, TaskCard
from dialogue_gym.cards.schema import patterns
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.judges.deal import states_deal
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.plugins.cb.seller_decision import SellerDecision, SellerDecisionRule
from dialogue_gym.plugins.cb.seller_listings import Listing, card_texts, listing_bank, price_step
from dialogue_gym.plugins.cb.seller_perception import BuyerTurnReader, SellerPerception
from dialogue_gym.plugins.cb.seller_presets import (
    HARD,
    SELLER_PRESETS,
    SOFT,
    SellerPreset,
    seller_preset,
)
from dialogue_gym.plugins.cb.seller_state import (
    START_MOOD,
    ArgumentProgress,
    NegotiationState,
)
from dialogue_gym.plugins.cb.seller_wording import SellerReplyWriter, SellerWording
from dialogue_gym.text.prices import format_price, offer_in
from dialogue_gym.users.analysis import UtteranceAnalyzer
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.latent_state import toward_target
from dialogue_gym.users.persona import Persona, persona_bank

# The listings and presets live in their own modules; their names stay importable from here.
__all__ = [
    "HARD",
    "SELLER_PRESETS",
    "SOFT",
    "Listing",
    "SellerPreset",
    "SellerUser",
    "listing_bank",
    "price_step",
    "seller_preset",
]

# The seller's z_0 scalars (receptivity, confidence, valence): guarded, uncommitted, polite.
_START_SCALARS = (0.16, 0.35, START_MOOD)
# How far a stance moves commitment c toward the target (on top of the concession made).
_STANCE_COMMITMENT = {"refused": -0.4, "neutral": 0.0, "positive": 0.2}


_REQUIRED_SELLER_REPLIES = ("opening", "haggled", "cave", "walk_away", "after_walk", "after_deal")
_REQUIRED_SELLER_MIND = ("belief_start", "belief_bad_faith", "desire_end", "intention_walk")


class SellerUser:
    """The embedded CraigslistBargain seller; see the module docstring.

    Args:
        card: The CB task card (concerns, replies, ``[seller]`` texts, ``[listings]``).
        encoder: Sentence encoder used to perceive the buyer's turns.
        preset: ``"soft"``, ``"hard"`` or a :class:`SellerPreset`.
        personas: Seller persona pool (default: the card's persona bank).
        listings: Listing pool (default: the card's listing bank).
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        preset: str | SellerPreset = "hard",
        personas: tuple[Persona, ...] | None = None,
        listings: tuple[Listing, ...] | None = None,
    ) -> None:
        if isinstance(preset, str):
            preset = seller_preset(card, preset)
        if not isinstance(preset, SellerPreset):
            raise TypeError(
                f"SellerUser needs a SellerPreset or 'soft'/'hard', got {type(preset).__name__}"
            )
        seller = card.extra.get("seller", {})
        replies = {
            key: card_texts(seller.get("replies", {}), key, "seller.replies")
            for key in _REQUIRED_SELLER_REPLIES
        }
        self._mind = {
            key: str(seller.get("mind", {}).get(key, ""))
            for key in _REQUIRED_SELLER_MIND
            if seller.get("mind", {}).get(key)
        }
        missing = set(_REQUIRED_SELLER_MIND) - set(self._mind)
        if missing:
            raise CardError(f"card {card.id!r}: seller.mind is missing {sorted(missing)}")
        unfit = seller.get("unfit", {})
        self._unfit_by_category = {
            str(category): patterns(unfit, category, "seller.unfit") for category in unfit
        }
        self.card = card
        self.preset = preset
        self.analyzer = UtteranceAnalyzer.for_user(card, encoder)
        self.personas = personas if personas is not None else persona_bank(card)
        self.listings = listings if listings is not None else listing_bank(card)
        if not self.personas or not self.listings:
            raise ValueError("the persona and listing pools must not be empty")
        self.reader: BuyerTurnReader = SellerPerception(card, preset, self.analyzer)
        self.decider: SellerDecisionRule = SellerDecision(card, preset, self.reader)
        self.wording: SellerReplyWriter = SellerWording(card, replies)
        self._rng = np.random.default_rng(0)
        self._begin(self.personas[0], self.listings[0])

    # -- episode state -------------------------------------------------------------------------

    def _begin(self, persona: Persona, listing: Listing) -> None:
        self.base_persona = persona
        self.style = self.card.style(persona.style)
        self.persona = dataclasses.replace(
            persona,
            id=f"{persona.id}/{listing.id}",
            background=(
                f"{persona.background} {persona.name} is selling the {listing.title}, listed at "
                f"{format_price(listing.price)}{listing.unit}."
            ),
        )
        self.negotiation = NegotiationState.start(self.card, self.preset, persona, listing)
        # The wording speaks as the drawn persona (its concerns in its order, its name).
        unfit = self._unfit_by_category.get(listing.category, ())
        self.wording.begin(persona, self.style, unfit, self._rng)
        self._state = self._compose_bdi()

    def reset(self, rng: np.random.Generator) -> BDI:
        """Draws a persona and a listing from ``rng`` and starts an episode; returns z_0."""
        self._rng = rng
        persona = self.personas[int(rng.integers(len(self.personas)))]
        listing = self.listings[int(rng.integers(len(self.listings)))]
        self._begin(persona, listing)
        return self._state

    @property
    def state(self) -> BDI:
        """The current hidden BDI state."""
        return self._state

    @property
    def listing(self) -> Listing:
        """This episode's listing."""
        return self.negotiation.listing

    @property
    def listing_price(self) -> float:
        """The listing price (``p_seller``)."""
        return self.listing.price

    @property
    def buyer_target(self) -> float:
        """The buyer's target price (``p_buyer``)."""
        return self.listing.buyer_target

    # Read-only views of the negotiation (tests, teacher views): the state is self.negotiation.

    @property
    def bottom_line(self) -> float:
        """The seller's hidden bottom line."""
        return self.negotiation.bottom_line

    @property
    def ask(self) -> float:
        """The seller's current acceptable price (internal, unrounded)."""
        return self.negotiation.ask

    @property
    def stated_ask(self) -> float:
        """The current ask as the seller would quote it."""
        return self.negotiation.stated_ask

    @property
    def concession(self) -> float:
        """How far the ask has come down from the listing towards the bottom line (0..1)."""
        return self.negotiation.concession

    @property
    def arguments(self) -> dict[str, ArgumentProgress]:
        """How far the buyer has pressed each argument."""
        return self.negotiation.arguments

    @property
    def last_offer(self) -> float | None:
        """The buyer's last offer, if any."""
        return self.negotiation.last_offer

    @property
    def last_counter(self) -> float:
        """The last price the seller stated."""
        return self.negotiation.last_counter

    @property
    def deal_offer(self) -> float | None:
        """The buyer's number the deal was closed on (``None``: the seller's own price)."""
        return self.negotiation.deal_offer

    @property
    def walked(self) -> bool:
        """The seller has walked away."""
        return self.negotiation.walked

    @property
    def mood(self) -> float:
        """The seller's mood (-1..1)."""
        return self.negotiation.mood

    @property
    def anger(self) -> float:
        """The seller's anger (one per insult, eased by good arguments)."""
        return self.negotiation.anger

    @property
    def exchange(self) -> int:
        """How many buyer turns the seller has answered this episode."""
        return self.negotiation.exchange

    @property
    def deal_price(self) -> float | None:
        """The price of the deal closed, if any."""
        return self.negotiation.deal_price

    @property
    def insults(self) -> int:
        """How many insults the seller has taken this episode."""
        return self.negotiation.insults

    @property
    def voiced_now(self) -> list[str]:
        """The concerns the current (last) reply brought up."""
        return self.negotiation.voiced_now

    @property
    def decision(self) -> str:
        """The seller's last stance."""
        return self.negotiation.decision

    def profile(self) -> str:
        """The seller's own view: background, the listing and the bottom line."""
        listing = self.listing
        return (
            f"{self.persona.background} Listing: {listing.title} ({listing.category}) at "
            f"{format_price(listing.price)}{listing.unit}. {listing.highlight} Flaw: "
            f"{listing.flaw}. Your bottom line: {format_price(self.bottom_line)}. "
            f"Speaking style: {self.style.id}."
        )

    def privileged(self) -> dict[str, Any]:
        """Listing, prices, ask, deal state and argument statuses (teacher views, judges)."""
        state = self.negotiation
        return {
            "persona": self.persona.id,
            "preset": self.preset.name,
            "listing": state.listing.id,
            "item": state.listing.title,
            "category": state.listing.category,
            "period": state.listing.period,
            "listing_price": state.listing.price,
            "buyer_target": state.listing.buyer_target,
            "bottom_line": round(state.bottom_line, 2),
            "ask": round(state.ask, 2),
            "last_counter": state.last_counter,
            "last_offer": state.last_offer,
            "deal": state.deal_price is not None,
            "deal_price": state.deal_price,
            "walked_away": state.walked,
            "insults": state.insults,
            "willingness": round(state.concession, 6),
            "decision": state.decision,
            "concerns": {
                cid: {
                    "status": arg.status,
                    "progress": arg.progress,
                    "needed": arg.needed,
                    "strength": arg.strength,
                    "voiced": arg.voiced,
                }
                for cid, arg in state.arguments.items()
                if arg.strength > 0
            },
        }

    # -- mental state --------------------------------------------------------------------------

    def _compose_bdi(self) -> BDI:
        target, mind = self.card.target, self.card.mind
        state = self.negotiation
        w = state.concession
        decision = state.decision
        if state.walked:
            belief, desire = self._mind["belief_bad_faith"], self._mind["desire_end"]
            intention = self._mind["intention_walk"]
        elif state.deal_price is not None:
            belief, desire, intention = target.belief, target.desire, target.intention
        else:
            top = next(
                (cid for cid, _ in self.base_persona.concerns if cid in state.arguments),
                None,
            )
            if state.anger >= 1.0:
                belief = self._mind["belief_bad_faith"]
            elif decision == "positive":
                belief = target.belief
            elif state.addressed_last:
                belief = self.card.concern(state.addressed_last[0]).belief_resolved
            elif top is not None and state.arguments[top].progress == 0:
                belief = self.card.concern(top).belief_unresolved
            else:
                belief = self._mind["belief_start"]
            if decision == "positive":
                desire = target.desire
            elif state.anger >= 1.0:
                desire = self._mind["desire_end"]
            elif top is not None and w < 0.3:
                desire = self.card.concern(top).desire_unresolved
            else:
                desire = mind["desire_open"]
            intention = mind.get(decision, mind["neutral"])
        # The scalars move a fraction of the way from the seller's start to the target (see
        # users/latent_state.py): the concession it made moves most of each, the stance moves
        # c, mood and anger move ρ and v, and only a deal below the listing (the buyer's goal)
        # reaches the target. A walk-away is as far behind the start as the target is ahead.
        agreed = state.deal_price is not None and state.deal_price < state.listing.price
        mood = state.mood - START_MOOD
        fractions = (
            0.6 * w + 0.1 * (decision == "positive") + 0.2 * mood - 0.15 * min(state.anger, 2.0),
            0.6 * w + _STANCE_COMMITMENT.get(decision, 0.0),
            0.4 * w + 0.6 * mood,
        )
        if state.walked:
            fractions = (-1.0, -1.0, fractions[2])
        receptivity, confidence, valence = toward_target(_START_SCALARS, target, fractions, agreed)
        return BDI(
            belief=belief,
            desire=desire,
            intention=intention,
            receptivity=receptivity,
            confidence=confidence,
            valence=valence,
        )

    # -- protocol ------------------------------------------------------------------------------

    def respond(self, system_text: str) -> UserTurn:
        """Perceives the buyer's turn, moves the ask, decides and replies (with prices)."""
        state = self.negotiation
        state.exchange += 1
        step = self.decider.update(state, system_text, self._rng)
        state.decision = step.stance
        text = self.wording.realize(step, state)
        self._state = self._compose_bdi()
        return UserTurn(text, step.stance, self._state, step.justified, tuple(step.events))

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """Updates the seller when an external policy wrote the reply ``user_text``.

        The state machine decides what a rational seller in this state would do (the returned
        stance and justification, which the rationality judge compares with the text), while
        the deal record follows what the external seller actually said: a stated deal with a
        price (:func:`~dialogue_gym.judges.deal.states_deal`: agreement words, or accepting the
        price this buyer turn offered, as in "Deal: I accept $120.") closes the deal at that
        price, and no stated deal leaves it open.
        """
        state = self.negotiation
        listing = state.listing
        state.exchange += 1
        state.opened = True
        step = self.decider.update(state, system_text, self._rng)
        state.decision = step.stance
        stated = classify_stance(user_text, self.card)
        said = offer_in(user_text, reference=listing.price, period=listing.period)
        if step.kind not in ("after_deal", "after_walk"):
            offered = offer_in(system_text, reference=listing.price, period=listing.period)
            if states_deal(user_text, self.card, offered) and said is not None:
                state.deal_price = float(said)
            elif state.deal_price is not None:
                state.deal_price = None  # the simulator would have closed; the seller did not
            if said is not None and state.deal_price is None:
                state.last_counter = float(said)
            if state.walked and stated != "refused":
                state.walked = False
        self._state = self._compose_bdi()
        return UserTurn(
            user_text, step.stance, self._state, step.justified, (*step.events, "external_reply")
        )
