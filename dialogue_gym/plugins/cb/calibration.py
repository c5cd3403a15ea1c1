"""CraigslistBargain: the seller's bottom line, fitted on the train split.

The seller's hidden bottom line is drawn per listing, as a fraction of the listing price, from
a preset's ``floor_range`` (:class:`~dialogue_gym.plugins.cb.seller_presets.SellerPreset`). This
fitter grounds those ranges in the train split. The basis is, in order of preference:

1. **deal prices** (``basis = "deal_price"``): deal price / listing price of the train
   dialogues that closed a deal (the last offer answered by ``accept``, its price from the
   rule-based ``dialogue_acts.price`` the loaders keep as ``situation["turn_prices"]``), when
   at least :data:`MIN_DEALS` are available — the official release's train split
   (``dialogue-gym data fetch cb``) has them;
2. **the buyers' targets** (``basis = "buyer_target"``): buyer target / listing price of the
   train scenarios, otherwise. The public copies hold no CB train dialogues, only the 5,202
   train *scenarios*; the buyer's target is the price the corpus briefed the buyer to reach,
   i.e. the corpus's own statement of how far a seller can be brought down.

The rule (stated before any held-out number was looked at): split the basis distribution at
its median; the **soft** seller's floors span its lower part, quantiles
:data:`SOFT_LEVELS` = (0.10, 0.50), the **hard** seller's its upper part, :data:`HARD_LEVELS`
= (0.50, 0.90). The outer 10 % on each side are left out so neither preset's bound is an
extreme of the corpus. Soft and hard thus stay distinct presets (every soft floor is at or
below every hard floor) on one calibrated core.

The table holds only aggregate numbers: counts and the quantiles of the two ratios at
:data:`LEVELS` (0, 0.05, …, 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.calibration.fit import CalibrationError, register
from dialogue_gym.types import DialogueRecord

__all__ = [
    "HARD_LEVELS",
    "LEVELS",
    "MIN_DEALS",
    "SOFT_LEVELS",
    "closing_offer",
    "deal_price",
    "fit_cb",
    "seller_floor_range",
]

LEVELS = tuple(round(i / 20, 2) for i in range(21))
"""The quantile levels the table records."""
SOFT_LEVELS = (0.10, 0.50)
HARD_LEVELS = (0.50, 0.90)
MIN_DEALS = 50
"""Fewest train deals with a price for the deal-price basis."""
_DIGITS = 4


def deal_price(dialogue: DialogueRecord) -> float | None:
    """The price of a dialogue's deal: its last offer, answered by ``accept``; else ``None``.

    A ``reject`` or ``quit`` after the last offer, or an offer without a price, is no priced
    deal.
    """
    offer, verdict = closing_offer(dialogue)
    return offer if verdict == "accept" else None


def closing_offer(dialogue: DialogueRecord) -> tuple[float | None, str | None]:
    """The dialogue's last offer (its price, ``None`` if it named none) and what answered it.

    The answer is the last ``accept``, ``reject`` or ``quit`` after that offer, else ``None``.
    """
    prices = dialogue.situation.get("turn_prices") or (None,) * len(dialogue.turns)
    offer: float | None = None
    verdict: str | None = None
    for turn, price in zip(dialogue.turns, prices, strict=False):
        if turn.act == "offer":
            offer, verdict = price, None
        elif turn.act in ("accept", "reject", "quit"):
            verdict = turn.act
    return offer, verdict


def _listing(dialogue: DialogueRecord) -> float | None:
    value = dialogue.situation.get("listing_price") or dialogue.situation.get("seller_target")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _quantiles(values: Sequence[float]) -> list[float] | None:
    if not values:
        return None
    return [round(float(q), _DIGITS) for q in np.quantile(np.asarray(values), LEVELS)]


def _at(quantiles: Sequence[float], level: float) -> float:
    return float(quantiles[LEVELS.index(level)])


@register("cb", corpus="cb", version=1, description="seller floor ranges (soft, hard)")
def fit_cb(dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """Fits the seller's floor ranges on CB train dialogues or scenarios (module docstring).

    Raises:
        CalibrationError: Neither enough priced deals nor any usable buyer target.
    """
    target_ratios: list[float] = []
    deal_ratios: list[float] = []
    above_listing = 0
    for d in dialogues:
        listing = _listing(d)
        if listing is None:
            continue
        target = d.situation.get("buyer_target")
        if isinstance(target, (int, float)) and 0 < target < listing:
            target_ratios.append(float(target) / listing)
        price = deal_price(d) if d.turns else None
        if price is not None and price > 0:
            if price > listing:
                above_listing += 1  # a floor is at most the listing price
            else:
                deal_ratios.append(price / listing)
    deals = _quantiles(deal_ratios)
    targets = _quantiles(target_ratios)
    if deals is not None and len(deal_ratios) >= MIN_DEALS:
        basis, quantiles = "deal_price", deals
    elif targets is not None:
        basis, quantiles = "buyer_target", targets
    else:
        raise CalibrationError("cb: no train deals with prices and no buyer targets to fit on")
    return {
        "levels": list(LEVELS),
        "buyer_target_ratio": {"n": len(target_ratios), "quantiles": targets},
        "deal_ratio": {
            "n": len(deal_ratios),
            "n_above_listing": above_listing,
            "quantiles": deals,
        },
        "basis": basis,
        "rule": {"soft": list(SOFT_LEVELS), "hard": list(HARD_LEVELS)},
        "floor_range": {
            "soft": [_at(quantiles, level) for level in SOFT_LEVELS],
            "hard": [_at(quantiles, level) for level in HARD_LEVELS],
        },
    }


def seller_floor_range(table: Mapping[str, Any], preset: str) -> tuple[float, float]:
    """The ``floor_range`` of the seller preset ``preset`` (``soft``/``hard``) in ``table``.

    Raises:
        CalibrationError: The table has no such preset.
    """
    ranges = table.get("parameters", {}).get("floor_range", {})
    if preset not in ranges:
        raise CalibrationError(f"cb table: no floor_range for preset {preset!r}")
    low, high = ranges[preset]
    return float(low), float(high)
