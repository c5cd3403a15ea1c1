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

The seller reads one view of each buyer turn, :func:`dialogue_gym.text.text_view` (normalized,
invisible characters removed, cut to what the encoder sees): the encoder, the cue regexes and
the price parser see the same text, so a price or a cue hidden from one is hidden from all.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from dialogue_gym.cards import CardError, TaskCard
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.prices import format_price, mask_prices, offer_in
from dialogue_gym.stance import classify_stance
from dialogue_gym.text import text_view
from dialogue_gym.users.analysis import UtteranceAnalyzer
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.latent_state import toward_target
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym.users.presets import calibrated
from dialogue_gym.users.wording import pick_unused

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

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"


# -- listings ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Listing:
    """One item for sale.

    Attributes:
        id: Stable id within the card's bank, e.g. ``"CB-L0042"``.
        category: ``furniture``, ``bikes``, ``electronics``, ``housing``, ``cars`` or ``phones``.
        title: The item, e.g. ``"2012 Honda Civic LX with 98k miles"``.
        price: The listing price (``p_seller``: the seller's target).
        buyer_target: The buyer's target price (``p_buyer``).
        bottom_quantile: Where the hidden bottom line sits inside the preset's range (0..1).
        highlight: A selling point the seller mentions.
        flaw: The item's flaw, which the seller admits when asked about the condition.
        unit: Text after the listing price in the opening (``" a month"`` for rentals).
    """

    id: str
    category: str
    title: str
    price: float
    buyer_target: float
    bottom_quantile: float
    highlight: str
    flaw: str
    unit: str = ""


_START_MOOD = 0.1
# The seller's z_0 scalars (receptivity, confidence, valence): guarded, uncommitted, polite.
_START_SCALARS = (0.16, 0.35, _START_MOOD)
# How far a stance moves commitment c toward the target (on top of the concession made).
_STANCE_COMMITMENT = {"refused": -0.4, "neutral": 0.0, "positive": 0.2}


def price_step(price: float) -> float:
    """The granularity a seller quotes prices in: $5 under $200 … $100 from $10,000."""
    for limit, step in ((200, 5.0), (1000, 10.0), (3000, 25.0), (10000, 50.0)):
        if price < limit:
            return step
    return 100.0


def _texts(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise CardError(f"{where}.{key}: expected a non-empty list of strings")
    return tuple(value)


@functools.lru_cache(maxsize=16)
def listing_bank(card: TaskCard) -> tuple[Listing, ...]:
    """Generates the card's listing bank (``[listings]``) deterministically from its seed.

    Raises:
        CardError: The card has no valid ``[listings]`` section.
    """
    spec = card.extra.get("listings")
    if not isinstance(spec, Mapping):
        raise CardError(f"card {card.id!r}: the seller model needs a [listings] section")
    categories = spec.get("categories")
    if not isinstance(categories, list) or not categories:
        raise CardError("listings.categories: expected at least one [[listings.categories]]")
    fraction = float(spec.get("buyer_target_fraction", 0.7))
    if not 0.0 < fraction < 1.0:
        raise CardError("listings.buyer_target_fraction must be in (0, 1)")
    parsed = []
    for category in categories:
        where = f"listings.categories.{category.get('id')}"
        items = category.get("items")
        if not isinstance(items, list) or not items:
            raise CardError(f"{where}.items: expected a non-empty list")
        for item in items:
            low, high = float(item.get("low", 0)), float(item.get("high", 0))
            if not (isinstance(item.get("title"), str) and 0 < low <= high):
                raise CardError(f"{where}.items: each item needs a title and 0 < low <= high")
        parsed.append(
            (
                str(category.get("id")),
                items,
                _texts(category, "highlights", where),
                _texts(category, "flaws", where),
                str(category.get("unit", "")),
            )
        )
    count = int(spec.get("count", 240))
    if count < 1:
        raise CardError("listings.count must be >= 1")
    rng = np.random.default_rng(int(spec.get("seed", 0)))
    bank = []
    for index in range(count):
        category_id, items, highlights, flaws, unit = parsed[int(rng.integers(len(parsed)))]
        item = items[int(rng.integers(len(items)))]
        raw = float(rng.uniform(float(item["low"]), float(item["high"])))
        step = price_step(raw)
        price = max(step, round(raw / step) * step)
        bank.append(
            Listing(
                id=f"{card.id}-L{index:04d}",
                category=category_id,
                title=str(item["title"]),
                price=price,
                buyer_target=float(round(price * fraction)),
                bottom_quantile=round(float(rng.uniform(0.0, 1.0)), 3),
                highlight=highlights[int(rng.integers(len(highlights)))],
                flaw=flaws[int(rng.integers(len(flaws)))],
                unit=unit,
            )
        )
    return tuple(bank)


# -- presets -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SellerPreset:
    """Parameters of the seller dynamics; ``SOFT`` and ``HARD`` are the shipped presets.

    Fractions "of the gap" are of the distance between the current ask and the bottom line.

    Attributes:
        name: Preset name.
        floor_range: The bottom line's range as fractions of the listing price.
        arg_gain: Share of the gap one argument takes (times its weight).
        off_weight: Weight of an argument the persona is not especially receptive to (the
            persona's own concerns weigh their strength, 0.35..1).
        max_gain: Cap on the share of the gap taken in one turn.
        bare_step: Share of the gap conceded to a bare offer or request.
        close_gap: Accept an offer above the bottom line this close to the ask (× listing).
        positive_gap: An offer this close to the ask (× listing) makes the seller positive.
        insult_fraction: Offers below this fraction of the listing are insulting low-balls.
        harden: Share of (listing − ask) the ask moves back up after an insult.
        walk_after: Insults after which the seller walks away.
        unlock_threshold: Addressing score that counts as an argument.
        unlock_margin: A turn *touches* an argument when its score reaches
            ``unlock_threshold`` and lies within this margin of the turn's best score (a side
            match far below the best one is not an argument).
        tie_margin: Touched arguments within this margin of the best score are tied; a tie
            goes to the persona's own (strongest) concern. Only one argument is credited per
            turn: the best (after tie-breaking), with its share of the turn's one unit of
            credit when the turn touches several (split in proportion to their scores; about
            ``1/k`` for ``k`` arguments argued alike). If it is exhausted, the turn earns
            nothing.
        stuffing_mood: Mood lost by a turn that touches two or more arguments at once
            (multi-topic stuffing; event ``multi_topic``). Small on purpose: the turn's
            real cost is that its credit is split.
        proactive_credit: Share of an argument's gain it earns before the seller has voiced
            that concern (closed loop: an argument answering what the seller said it cares
            about counts in full; the same argument recited blind counts this much).
        anti_threshold: Anti-pattern score that counts as an insult.
        cave_prob: Probability of giving in to an offer below the acceptable price without a
            reason (the soft-seller bias; not justified).
        cave_growth: Added to ``cave_prob`` for every earlier offer without a reason.
        cave_min: Never gives in below this fraction of the listing.
        drift_prob: Probability of an extra concession without a reason on a bare turn.
        drift_step: Share of the gap that unreasoned concession takes (not justified).
        rapport_gain: Mood gained from a greeting or a friendly question (twice at most).
    """

    name: str
    floor_range: tuple[float, float]
    arg_gain: float
    off_weight: float
    bare_step: float
    close_gap: float
    positive_gap: float
    insult_fraction: float
    harden: float
    walk_after: int
    max_gain: float = 0.6
    unlock_threshold: float = 0.5
    unlock_margin: float = 0.3
    tie_margin: float = 0.02
    stuffing_mood: float = 0.05
    proactive_credit: float = 0.5
    anti_threshold: float = 0.6
    cave_prob: float = 0.0
    cave_growth: float = 0.0
    cave_min: float = 0.25
    drift_prob: float = 0.0
    drift_step: float = 0.0
    rapport_gain: float = 0.1

    def __post_init__(self) -> None:
        low, high = self.floor_range
        if not 0.0 < low <= high <= 1.0:
            raise ValueError(f"floor_range must satisfy 0 < low <= high <= 1, got {low, high}")
        if self.walk_after < 1:
            raise ValueError("walk_after must be >= 1")


HARD = SellerPreset(
    name="hard",
    floor_range=(0.8, 0.9),
    arg_gain=0.3,
    off_weight=0.0,  # a hard seller is moved only by reasons it cares about
    bare_step=0.04,
    close_gap=0.015,
    positive_gap=0.06,
    insult_fraction=0.55,
    harden=0.5,
    walk_after=2,
)
SOFT = SellerPreset(
    name="soft",
    floor_range=(0.55, 0.7),
    arg_gain=0.45,
    off_weight=0.7,
    bare_step=0.12,
    close_gap=0.06,
    positive_gap=0.12,
    insult_fraction=0.45,
    harden=0.15,
    walk_after=5,
    max_gain=0.75,
    cave_prob=0.05,
    cave_growth=0.03,
    drift_prob=0.3,
    drift_step=0.3,
    rapport_gain=0.15,
)
SELLER_PRESETS = {"soft": SOFT, "hard": HARD}


def seller_preset(card: TaskCard, name: str) -> SellerPreset:
    """The shipped preset ``name`` with the card's ``[seller.presets.<name>]`` overrides.

    Raises:
        ValueError: Unknown preset name or field.
    """
    overrides = dict(card.extra.get("seller", {}).get("presets", {}).get(name, {}))
    if "floor_range" in overrides:  # TOML gives a list; the preset holds a tuple
        overrides["floor_range"] = tuple(float(v) for v in overrides["floor_range"])
    where = f"card {card.id!r}: seller.presets.{name}"
    return calibrated(SELLER_PRESETS, name, overrides, where, "seller")


# -- the seller ----------------------------------------------------------------------------------


@dataclasses.dataclass
class _Argument:
    """How far the buyer has pressed one kind of argument (a concern of the card)."""

    needed: int
    strength: float  # the persona's receptivity; 0 when it is not one of the persona's concerns
    progress: int = 0
    voiced: bool = False

    @property
    def status(self) -> str:
        if self.progress >= self.needed:
            return RESOLVED
        return PARTIAL if self.progress > 0 else UNRESOLVED


@dataclasses.dataclass
class _Step:
    """What one buyer turn did to the seller (internal)."""

    kind: str
    stance: str
    justified: bool = True
    events: list[str] = dataclasses.field(default_factory=list)
    offer: float | None = None
    addressed: list[str] = dataclasses.field(default_factory=list)
    condition_question: bool = False


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
        self._replies = {
            key: _texts(seller.get("replies", {}), key, "seller.replies")
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
        self.card = card
        self.preset = preset
        self.analyzer = UtteranceAnalyzer(card, encoder, scoring="centroid")
        self.personas = personas if personas is not None else persona_bank(card)
        self.listings = listings if listings is not None else listing_bank(card)
        if not self.personas or not self.listings:
            raise ValueError("the persona and listing pools must not be empty")
        self._rng = np.random.default_rng(0)
        self._begin(self.personas[0], self.listings[0])

    # -- episode state -------------------------------------------------------------------------

    def _begin(self, persona: Persona, listing: Listing) -> None:
        self.listing = listing
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
            c.id: _Argument(
                needed=c.resistance + int(strengths.get(c.id, 0.0) >= 0.8),
                strength=strengths.get(c.id, 0.0),
            )
            for c in self.card.concerns
        }
        self.ask = price  # the seller's current acceptable price (internal, unrounded)
        self.last_counter = price  # the last price the seller stated
        self.last_offer: float | None = None
        self.deal_price: float | None = None
        self.walked = False
        self.insults = 0
        self.anger = 0.0
        self.mood = _START_MOOD
        self.rapport_turns = 0
        self.unreasoned_offers = 0
        self.exchange = 0
        self.decision = "neutral"
        self.opened = False
        self.addressed_last: list[str] = []
        self.past_embeddings: list[np.ndarray] = []
        self.used: set[str] = set()
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

    # -- perception and dynamics ---------------------------------------------------------------

    def _cue(self, name: str, text: str) -> bool:
        return any(p.search(text) for p in self.card.cues.get(name, ()))

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

    def _concede(self, share: float) -> None:
        self.ask = max(self.bottom_line, self.ask - share * (self.ask - self.bottom_line))

    def _close(self, price: float, step: _Step, kind: str = "agree") -> _Step:
        self.deal_price = float(round(price, 2))
        self.mood = min(1.0, self.mood + 0.3)
        step.kind, step.stance = kind, "agree"
        step.events.append("deal")
        return step

    def _update(self, text: str) -> _Step:
        """Updates the state from the buyer's turn; returns what happened."""
        preset = self.preset
        listing_price = self.listing.price
        if self.walked:
            return _Step("after_walk", "refused", events=["walked_away"])
        if self.deal_price is not None:
            return _Step("after_deal", "agree", events=["deal"])
        # One view of the turn for the encoder, the cues and the price parser.
        text = text_view(text, self.analyzer.encoder)
        # Prices are masked before encoding: the argument does not depend on the number (and
        # the encoder's cache then sees a template once).
        p = self.analyzer.perceive(mask_prices(text, listing_price))
        if p.empty:
            self.mood -= 0.05
            return _Step("empty", self._hold(), events=["empty"])
        offer = offer_in(text, reference=listing_price)
        repetition = bool(self.past_embeddings) and (
            float(max(e @ p.embedding for e in self.past_embeddings)) >= 0.9
        )
        if offer is not None and offer != self.last_offer:
            repetition = False  # the same words with a new price are a new offer
        self.past_embeddings.append(p.embedding)
        # Taking "your price" before the seller has named one is interest, not a deal.
        accept = self._cue("accept", text) and self.opened
        if offer is None and self._cue("split", text) and self.last_offer is not None:
            offer = (self.last_offer + self.last_counter) / 2.0
        step = _Step("counter", "neutral", offer=offer)
        events = step.events
        step.condition_question = p.question and self._cue("condition_question", text)
        if offer is not None or p.ask:
            events.append("ask")
        if repetition:
            events.append("repetition")
        # The buyer takes the seller's last price (or offers at least as much).
        if accept and (offer is None or offer >= self.last_counter - 1e-6):
            events.append("accept")
            return self._close(max(offer or 0.0, self.last_counter), step)
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
        # A question about the item is an inquiry, not an argument ("any scratches?").
        inquiry = p.question and not bargaining
        # Arguments: the turn's one credited argument takes a share of the gap to the bottom line.
        gain = 0.0
        if not (repetition or inquiry):
            cid = self._argument(p, events)
            if cid is not None:
                arg = self.arguments[cid]
                if arg.progress >= arg.needed:
                    events.append(f"exhausted:{cid}")
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
            self._concede(min(gain, preset.max_gain))
            self.anger = max(0.0, self.anger - 0.5)
            self.mood = min(1.0, self.mood + 0.05)
        elif bargaining and not repetition:
            self._concede(preset.bare_step)
            events.append("bare")
            if preset.drift_prob > 0 and self._rng.random() < preset.drift_prob:
                self._concede(preset.drift_step)  # the soft bias: more than a bare turn earns
                step.justified = False
                events.append("unreasoned_concession")
        if offer is not None:
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
        elif offer is None and bargaining and self.stated_ask < quoted:
            step.kind = "haggled"
        elif offer is None and repetition:
            step.kind = "repetition"
        elif offer is None and (p.question or p.greeting):
            step.kind = "inquiry" if p.question else "greeting"
        self.last_counter = self.stated_ask
        return step

    def _touched(self, p: Any) -> list[str]:
        """The arguments a turn touches: over the threshold, within the margin of its best."""
        preset = self.preset
        best = max(p.unlock.values(), default=0.0)
        return [
            cid
            for cid in self.arguments
            if p.unlock[cid] >= preset.unlock_threshold
            and p.unlock[cid] >= p.anti[cid]
            and p.unlock[cid] >= best - preset.unlock_margin
        ]

    def _share(self, p: Any, cid: str) -> float:
        """The share of the turn's one unit of credit that its argument ``cid`` takes.

        The unit is split over the arguments the turn touches in proportion to how strongly it
        argues each: a turn making one reason keeps all of it (a faint side match costs
        little), while a reason thrown in among several weighs about ``1/k`` of the same
        reason made on its own — covering every topic blindly dilutes each of them, as with
        the :class:`~dialogue_gym.users.cognitive.CognitiveUser`.
        """
        touched = self._touched(p)
        total = sum(p.unlock[c] for c in touched)
        return float(p.unlock[cid] / total) if cid in touched and total > 0 else 1.0

    def _argument(self, p: Any, events: list[str]) -> str | None:
        """The one argument a turn is credited for (see :class:`SellerPreset`), or ``None``.

        A turn argues what it is closest to: a side match far below the best one (a remark on
        wear that also resembles a market remark) does not count. Of the arguments it touches,
        only the best is credited (near-ties: the persona's own, strongest concern); touching
        two or more costs a little mood (``multi_topic``) and splits the turn's credit
        (:meth:`_share`).
        """
        preset = self.preset
        touched = self._touched(p)
        if not touched:
            return None
        if len(touched) >= 2:
            self.mood = max(-1.0, self.mood - preset.stuffing_mood)
            events.append("multi_topic")
        top = max(p.unlock[cid] for cid in touched)
        tied = [cid for cid in touched if p.unlock[cid] >= top - preset.tie_margin]
        # max() keeps the first of equals: the card's concern order breaks exact ties.
        return max(tied, key=lambda cid: (self.arguments[cid].strength, p.unlock[cid]))

    def _hold(self) -> str:
        return self.decision if self.decision in ("neutral", "positive") else "neutral"

    def _caves(self, offer: float) -> bool:
        preset = self.preset
        if preset.cave_prob <= 0 or offer < preset.cave_min * self.listing.price:
            return False
        chance = preset.cave_prob + preset.cave_growth * (self.unreasoned_offers - 1)
        return bool(self._rng.random() < chance)

    def _insulted(self, step: _Step, lowball: bool, rude: bool) -> _Step:
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

    # -- realization ---------------------------------------------------------------------------

    def _pick(self, key: str, options: tuple[str, ...]) -> str:
        return pick_unused(self._rng, self.used, key, options)

    def _voice(self, cid: str) -> str:
        self.arguments[cid].voiced = True
        return self._pick(f"voice:{cid}", self.card.concern(cid).voice)

    def _top_concern(self) -> str | None:
        """The persona's strongest concern the buyer has not pressed and the seller not voiced."""
        for cid, _ in self.base_persona.concerns:
            arg = self.arguments.get(cid)
            if arg is not None and arg.progress == 0 and not arg.voiced:
                return cid
        return None

    def _fill(self, template: str, step: _Step, price: float | None = None) -> str:
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

    def _reply(self, key: str, step: _Step, price: float | None = None) -> str:
        options = self.card.replies.get(key) or self._replies.get(key, ())
        if step.offer is None:
            options = tuple(t for t in options if "{offer}" not in t) or options
        template = self._pick(key, options)
        if "{concern_voice}" in template:
            cid = "condition" if step.condition_question else self._top_concern()
            voice = self._voice(cid) if cid else ""
            template = template.replace("{concern_voice}", voice)
        return self._fill(template, step, price)

    def _realize(self, step: _Step) -> str:
        parts: list[str] = []
        first = not self.opened
        if first:
            self.opened = True
            parts.append(self._fill(self._pick("opening", self._replies["opening"]), step))
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
            parts.append(self._fill(self._pick(f"ack:{cid}:{done}", options), step))
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
        text = " ".join(p for p in parts if p)
        if self._rng.random() < 0.45:
            opener = self._pick("opener", self.style.openers)
            if opener.endswith(", ") and not re.match(r"I\b", text):
                text = text[:1].lower() + text[1:]
            text = opener + text
        if self._rng.random() < 0.35 * self.style.verbosity:
            text = text.rstrip() + self._pick("closer", self.style.closers)
        return text.lower() if self.style.lowercase else text

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
        price closes the deal at that price, and no stated deal leaves it open.
        """
        self.exchange += 1
        self.opened = True
        step = self._update(system_text)
        self.decision = step.stance
        stated = classify_stance(user_text, self.card)
        said = offer_in(user_text, reference=self.listing.price)
        if step.kind not in ("after_deal", "after_walk"):
            if stated == "agree" and said is not None:
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
