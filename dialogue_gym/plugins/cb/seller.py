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
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from dialogue_gym.cards.card import CardError, TaskCard
from dialogue_gym.cards.schema import patterns
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.plugins.cb.seller_dynamics import (
    RESOLVED,
    ArgumentProgress,
    SellerDynamics,
    TurnEffect,
    states_deal,
)
from dialogue_gym.plugins.cb.seller_listings import Listing, card_texts, listing_bank, price_step
from dialogue_gym.plugins.cb.seller_presets import (
    HARD,
    SELLER_PRESETS,
    SOFT,
    SellerPreset,
    seller_preset,
)
from dialogue_gym.text.cue_search import any_cue
from dialogue_gym.text.prices import format_price, offer_in
from dialogue_gym.users.analysis import UtteranceAnalyzer
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.latent_state import toward_target
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym.users.wording import add_style, pick_unused

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

_START_MOOD = 0.1
_CONCEDES = re.compile(
    r"\b(come down to|go (down )?to|let['’]s say|meet me at|how about|could you do|"
    r"(getting|really) close)\b",
    re.IGNORECASE,
)
"""Counter wordings that present the price as a move down (used only when the price moved):
"Let's say $65" or "We're getting close. Meet me at $1,475?" for the price already stated
frames holding firm as a concession (blind play, round 6)."""
# The seller's z_0 scalars (receptivity, confidence, valence): guarded, uncommitted, polite.
_START_SCALARS = (0.16, 0.35, _START_MOOD)
# How far a stance moves commitment c toward the target (on top of the concession made).
_STANCE_COMMITMENT = {"refused": -0.4, "neutral": 0.0, "positive": 0.2}


_REQUIRED_SELLER_REPLIES = ("opening", "haggled", "cave", "walk_away", "after_walk", "after_deal")
_REQUIRED_SELLER_MIND = ("belief_start", "belief_bad_faith", "desire_end", "intention_walk")


_ASKS_MONEY = re.compile(r"\b(spend|budget)\b", re.I)
"""A voice line asking what the buyer means to spend."""
_SURPRISED = re.compile(r"\b(didn'?t|did not) (realize|know)\b", re.I)


class SellerUser(SellerDynamics):
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
        self._replies = {
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
        self._rng = np.random.default_rng(0)
        self._begin(self.personas[0], self.listings[0])

    # -- episode state -------------------------------------------------------------------------

    def _begin(self, persona: Persona, listing: Listing) -> None:
        self.listing = listing
        self._unfit = self._unfit_by_category.get(listing.category, ())
        self.base_persona = persona
        self.style = self.card.style(persona.style)
        low, high = self.preset.floor_range
        price = listing.price
        self.bottom_line = price * (low + (high - low) * listing.bottom_quantile)
        self.persona = dataclasses.replace(
            persona,
            id=f"{persona.id}/{listing.id}",
            background=(
                f"{persona.background} {persona.name} is selling the {listing.title}, listed at "
                f"{format_price(price)}{listing.unit}."
            ),
        )
        strengths = dict(persona.concerns)
        self.arguments = {
            c.id: ArgumentProgress(
                needed=c.resistance + int(strengths.get(c.id, 0.0) >= 0.8),
                strength=strengths.get(c.id, 0.0),
            )
            for c in self.card.concerns
        }
        self.ask = price  # the seller's current acceptable price (internal, unrounded)
        self.last_counter = price  # the last price the seller stated
        self.last_offer: float | None = None
        self.deal_price: float | None = None
        self.deal_offer: float | None = None
        self.walked = False
        self.insults = 0
        self.anger = 0.0
        self.mood = _START_MOOD
        self.rapport_turns = 0
        self.unreasoned_offers = 0
        self.exchange = 0
        self.decision = "neutral"
        self.opened = False
        self.money_named = False  # the buyer has named a price or its budget
        self.addressed_last: list[str] = []
        self.voiced_now: list[str] = []  # the concerns the current reply brings up
        self.focus: frozenset[str] = frozenset()  # those the last reply brought up
        self.past_embeddings: list[np.ndarray] = []
        self.used: set[str] = set()
        self.replied: set[str] = set()  # this episode's replies (none is sent twice)
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
    def listing_price(self) -> float:
        """The listing price (``p_seller``)."""
        return self.listing.price

    @property
    def buyer_target(self) -> float:
        """The buyer's target price (``p_buyer``)."""
        return self.listing.buyer_target

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
        return {
            "persona": self.persona.id,
            "preset": self.preset.name,
            "listing": self.listing.id,
            "item": self.listing.title,
            "category": self.listing.category,
            "period": self.listing.period,
            "listing_price": self.listing.price,
            "buyer_target": self.listing.buyer_target,
            "bottom_line": round(self.bottom_line, 2),
            "ask": round(self.ask, 2),
            "last_counter": self.last_counter,
            "last_offer": self.last_offer,
            "deal": self.deal_price is not None,
            "deal_price": self.deal_price,
            "walked_away": self.walked,
            "insults": self.insults,
            "willingness": round(self.concession, 6),
            "decision": self.decision,
            "concerns": {
                cid: {
                    "status": arg.status,
                    "progress": arg.progress,
                    "needed": arg.needed,
                    "strength": arg.strength,
                    "voiced": arg.voiced,
                }
                for cid, arg in self.arguments.items()
                if arg.strength > 0
            },
        }

    # -- realization ---------------------------------------------------------------------------

    def _pick(
        self, key: str, options: tuple[str, ...], prefer: Callable[[str], object] | None = None
    ) -> str:
        # The same options for a key all episode (the listing does not change), so the
        # indices pick_unused remembers stay those of one list.
        options = tuple(o for o in options if not any_cue(self._unfit, o)) or options
        return pick_unused(self._rng, self.used, key, options, prefer)

    def _voice(self, cid: str) -> str:
        options = self.card.concern(cid).voice
        again = self._options("disclosed_again")
        self.voiced_now.append(cid)
        if self.arguments[cid].voiced and again and any("{flaw}" in line for line in options):
            # A flaw is disclosed once; later the seller refers back to it ("Full disclosure,
            # it has a pair of pretty worn tires." a second and a third time read as news,
            # blind play round 11, CB seeds 102 and 108).
            return self._pick("disclosed_again", again)
        self.arguments[cid].voiced = True
        # Not "What are you looking to spend on it?" to a buyer who has just said "My budget
        # is closer to $600" (blind play round 11, CB seed 101).
        asks_nothing = (lambda line: not _ASKS_MONEY.search(line)) if self.money_named else None
        return self._pick(f"voice:{cid}", options, prefer=asks_nothing)

    def _top_concern(self, voiced_too: bool = False) -> str | None:
        """The persona's strongest concern the buyer has not pressed and the seller not voiced.

        With ``voiced_too``, one the seller has voiced counts as well (it says it again, in
        other words, when the buyer argued something else).
        """
        for cid, _ in self.base_persona.concerns:
            arg = self.arguments.get(cid)
            if arg is not None and arg.progress == 0 and (voiced_too or not arg.voiced):
                return cid
        return None

    def _fill(self, template: str, step: TurnEffect, price: float | None = None) -> str:
        values = {
            "price": format_price(self.stated_ask if price is None else price),
            "listing": format_price(self.listing.price),
            "offer": format_price(step.offer) if step.offer is not None else "that",
            "item": self.listing.title,
            "flaw": self.listing.flaw,
            "highlight": self.listing.highlight,
            "unit": self.listing.unit,
            "name": self.persona.name,
        }
        return re.sub(r"{(\w+)}", lambda m: values.get(m.group(1), m.group(0)), template)

    def _options(self, key: str) -> tuple[str, ...]:
        """The reply templates for ``key``, in the listing category's wording if the card has it.

        ``agree_housing`` (move in, sign the lease) comes before ``agree`` (pick it up).
        """
        seller = self.card.extra.get("seller", {}).get("replies", {})
        for name in (f"{key}_{self.listing.category}", key):
            if self.card.replies.get(name):
                return tuple(self.card.replies[name])
            if seller.get(name):
                return tuple(str(t) for t in seller[name])
        return self._replies.get(key, ())

    def _reply(self, key: str, step: TurnEffect, price: float | None = None) -> str:
        options = self._options(key)
        if step.offer is None:
            options = tuple(t for t in options if "{offer}" not in t) or options
        if not step.moved:
            # "I could come down to $1,275" when $1,275 is the price already stated would
            # frame holding firm as a concession.
            options = tuple(t for t in options if not _CONCEDES.search(t)) or options
        template = self._pick(key, options)
        if "{concern_voice}" in template:
            cid = "condition" if step.condition_question else self._top_concern()
            voice = self._voice(cid) if cid else ""
            template = template.replace("{concern_voice}", voice)
        return self._fill(template, step, price)

    def _realize(self, step: TurnEffect) -> str:
        parts: list[str] = []
        first = not self.opened
        if first:
            self.opened = True
            parts.append(self._fill(self._pick("opening", self._options("opening")), step))
        kind = step.kind
        if kind in ("agree", "cave"):
            parts.append(self._reply(kind, step, price=self.deal_price))
        elif kind == "after_deal":
            parts.append(self._reply("after_deal", step, price=self.deal_price))
        elif kind in ("walk_away", "after_walk", "haggled"):
            parts.append(self._reply(kind, step))
        elif kind in ("refuse", "pushback"):
            key = kind
            if kind == "refuse" and self._top_concern() and self._rng.random() < 0.3:
                key = "refuse_concern"
            parts.append(self._reply(key, step))
        elif kind == "ack":
            cid = step.addressed[0]
            concern = self.card.concern(cid)
            done = self.arguments[cid].status == RESOLVED
            options = concern.ack_resolved if done else concern.ack_partial
            key = f"ack:{cid}:{done}"
            if self.arguments[cid].voiced:
                # No surprise at a point the seller raised itself ("I didn't realize others
                # were listed that low" after "Prices on these have come down lately").
                options = tuple(o for o in options if not _SURPRISED.search(o)) or options
                key += ":voiced"  # another list, so its own memory of what was said
            parts.append(self._fill(self._pick(key, options), step))
            parts.append(self._reply("positive" if step.stance == "positive" else "neutral", step))
        elif kind == "dismissed":
            # The reason is set aside, and what does matter to this seller shows through,
            # as a real seller's does: a listening buyer can take it up.
            if self._options(f"dismiss_{step.dismissed}"):
                parts.append(self._reply(f"dismiss_{step.dismissed}", step))
            matters = self._top_concern(voiced_too=True)
            if matters is not None:
                parts.append(self._fill(self._voice(matters), step))
            parts.append(self._reply("positive" if step.stance == "positive" else "neutral", step))
        elif kind == "inquiry":
            asked = "condition" if step.condition_question else self._top_concern()
            if first:
                if asked:
                    parts.append(self._fill(self._voice(asked), step))
            elif asked:
                parts.append(self._reply("inquiry_concern", step))
            else:
                parts.append(self._reply("inquiry_open", step))
        elif kind == "greeting":
            if not first:
                parts.append(self._reply("greeting", step))
        elif kind in ("offtopic", "empty", "repetition"):
            if not (first and kind == "offtopic"):
                parts.append(self._reply(kind, step))
        else:  # a counter to an offer
            parts.append(self._reply("positive" if step.stance == "positive" else "neutral", step))
        if step.item_question and kind in ("counter", "ack", "dismissed", "haggled"):
            parts.insert(int(first), self._item_answer(step))
        text = " ".join(p for p in parts if p)
        # No closer after a deal: "It's a deal at $390. Let me know when you're coming. Thanks."
        # reads as a form letter.
        closing = kind not in ("agree", "cave", "after_deal")
        text = add_style(text, self.style, self._pick, self._rng, asked=step.asked, closer=closing)
        text = self._unrepeated(text)
        self.replied.add(text.lower())
        return text.lower() if self.style.lowercase else text

    def _item_answer(self, step: TurnEffect) -> str:
        """The answer to a question about the item asked beside an offer.

        A question on its condition brings up the flaw (once); any other gets what the seller
        can say without facts beyond its listing (``inquiry_aside``).
        """
        if step.condition_question and not self.arguments["condition"].voiced:
            return self._fill(self._voice("condition"), step)
        options = self._options("inquiry_aside")
        return self._fill(self._pick("inquiry_aside", options), step) if options else ""

    def _unrepeated(self, text: str) -> str:
        """``text``, or — when the seller said exactly that before — the same said as a repeat.

        A seller holding its position says so ("Like I said, $850 is where I am."), it does
        not send the identical message again.
        """
        for lead in ("", "Like I said, ", "As I said, ", "Again, ", "Once more, "):
            head = text[:1] if re.match(r"I\b", text) else text[:1].lower()
            candidate = text if not lead else lead + head + text[1:]
            if candidate.lower() not in self.replied:
                return candidate
        return text

    # -- mental state --------------------------------------------------------------------------

    def _compose_bdi(self) -> BDI:
        target, mind = self.card.target, self.card.mind
        w = self.concession
        decision = self.decision
        if self.walked:
            belief, desire = self._mind["belief_bad_faith"], self._mind["desire_end"]
            intention = self._mind["intention_walk"]
        elif self.deal_price is not None:
            belief, desire, intention = target.belief, target.desire, target.intention
        else:
            top = next(
                (cid for cid, _ in self.base_persona.concerns if cid in self.arguments),
                None,
            )
            if self.anger >= 1.0:
                belief = self._mind["belief_bad_faith"]
            elif decision == "positive":
                belief = target.belief
            elif self.addressed_last:
                belief = self.card.concern(self.addressed_last[0]).belief_resolved
            elif top is not None and self.arguments[top].progress == 0:
                belief = self.card.concern(top).belief_unresolved
            else:
                belief = self._mind["belief_start"]
            if decision == "positive":
                desire = target.desire
            elif self.anger >= 1.0:
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
        agreed = self.deal_price is not None and self.deal_price < self.listing.price
        mood = self.mood - _START_MOOD
        fractions = (
            0.6 * w + 0.1 * (decision == "positive") + 0.2 * mood - 0.15 * min(self.anger, 2.0),
            0.6 * w + _STANCE_COMMITMENT.get(decision, 0.0),
            0.4 * w + 0.6 * mood,
        )
        if self.walked:
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
        self.exchange += 1
        step = self._update(system_text)
        self.decision = step.stance
        text = self._realize(step)
        self._state = self._compose_bdi()
        return UserTurn(text, step.stance, self._state, step.justified, tuple(step.events))

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """Updates the seller when an external policy wrote the reply ``user_text``.

        The state machine decides what a rational seller in this state would do (the returned
        stance and justification, which the rationality judge compares with the text), while
        the deal record follows what the external seller actually said: a stated deal with a
        price (:func:`~dialogue_gym.plugins.cb.seller_dynamics.states_deal`: agreement words, or
        accepting the price this buyer turn offered, as in "Deal: I accept $120.") closes the
        deal at that price, and no stated deal leaves it open.
        """
        self.exchange += 1
        self.opened = True
        step = self._update(system_text)
        self.decision = step.stance
        stated = classify_stance(user_text, self.card)
        said = offer_in(user_text, reference=self.listing.price, period=self.listing.period)
        if step.kind not in ("after_deal", "after_walk"):
            offered = offer_in(
                system_text, reference=self.listing.price, period=self.listing.period
            )
            if states_deal(user_text, self.card, offered) and said is not None:
                self.deal_price = float(said)
            elif self.deal_price is not None:
                self.deal_price = None  # the simulator would have closed; the seller did not
            if said is not None and self.deal_price is None:
                self.last_counter = float(said)
            if self.walked and stated != "refused":
                self.walked = False
        self._state = self._compose_bdi()
        return UserTurn(
            user_text, step.stance, self._state, step.justified, (*step.events, "external_reply")
        )
