"""The CraigslistBargain seller's listings: the items for sale and the card's listing bank.

A :class:`Listing` is one item with its listing price (``p_seller``), the buyer's target
(``p_buyer``) and where the seller's hidden bottom line sits; :func:`listing_bank` generates
the card's bank (``[listings]``) deterministically from its seed.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from dialogue_gym.cards.card import CardError, TaskCard
from dialogue_gym.text.prices import listing_period

__all__ = ["Listing", "card_texts", "listing_bank", "listings_from_seeds", "price_step"]


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

    @property
    def period(self) -> str:
        """The period of the price: ``"month"`` for a rent, else ``"item"`` (one-off).

        Read from ``unit`` (``" a month"``); see :func:`dialogue_gym.text.prices.read_offer`.
        """
        return listing_period(self.unit)


def price_step(price: float) -> float:
    """The granularity a seller quotes prices in: $5 under $200 … $100 from $10,000."""
    for limit, step in ((200, 5.0), (1000, 10.0), (3000, 25.0), (10000, 50.0)):
        if price < limit:
            return step
    return 100.0


def card_texts(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """The non-empty list of strings at ``table[key]`` (``where`` names it in the error).

    Raises:
        CardError: Missing, empty or not all strings.
    """
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
                card_texts(category, "highlights", where),
                card_texts(category, "flaws", where),
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
        # An item's own flaws (checked by the card schema): a TV has no fan, headphones no remote.
        own = tuple(item["flaws"]) if "flaws" in item else flaws
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
                flaw=own[int(rng.integers(len(own)))],
                unit=unit,
            )
        )
    return tuple(bank)


# CraigslistBargain categories → the seller card's listing categories.
_CB_CATEGORIES = {
    "bike": "bikes",
    "car": "cars",
    "phone": "phones",
    "housing": "housing",
    "furniture": "furniture",
    "electronics": "electronics",
}


def listings_from_seeds(card: TaskCard, seeds: Iterable[Any]) -> tuple[Any, ...]:
    """One seller listing per CraigslistBargain seed: the real title, category and prices.

    The listing price is the seller's target (``p_seller``) and the buyer's target is the
    corpus's; the selling point, the admitted flaw and where the hidden bottom line sits come
    from a bank listing of the same category chosen by a hash of the dialogue id. Seeds
    without both prices are skipped.

    Raises:
        ValueError: No usable seeds.
    """
    bank = listing_bank(card)
    by_category: dict[str, list[Any]] = {}
    for listing in bank:
        by_category.setdefault(listing.category, []).append(listing)
    listings = []
    for seed in seeds:
        situation = seed.situation
        price = situation.get("seller_target") or situation.get("listing_price")
        target = situation.get("buyer_target")
        if not price or not target or float(target) >= float(price):
            continue
        category = _CB_CATEGORIES.get(str(situation.get("category")), "")
        pool = by_category.get(category) or list(bank)
        digest = int(hashlib.sha256(f"cb/{seed.dialogue_id}".encode()).hexdigest()[:8], 16)
        base = pool[digest % len(pool)]
        title = (situation.get("title") or "").strip()
        if not title:
            title = str(situation.get("description") or base.title).split(".")[0][:80].strip()
        listings.append(
            dataclasses.replace(
                base,
                id=f"cb:{seed.dialogue_id}",
                title=title,
                price=float(price),
                buyer_target=float(target),
            )
        )
    if not listings:
        raise ValueError(f"no corpus listings with prices to build {card.id} episodes from")
    return tuple(listings)
