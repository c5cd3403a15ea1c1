"""The seller's old dynamics module: its names, now at home by concept.

The seller was a :class:`~dialogue_gym.plugins.cb.seller.SellerUser` on a dynamics mixin; it
is now composed of a perception (:mod:`~dialogue_gym.plugins.cb.seller_perception`), a
negotiation state (:mod:`~dialogue_gym.plugins.cb.seller_state`), a decision
(:mod:`~dialogue_gym.plugins.cb.seller_decision`) and a wording
(:mod:`~dialogue_gym.plugins.cb.seller_wording`). The names other code imported from here stay
importable.
"""

from __future__ import annotations

from dialogue_gym.judges.deal import accepts_price, states_deal
from dialogue_gym.plugins.cb.seller_state import (
    PARTIAL,
    RESOLVED,
    UNRESOLVED,
    ArgumentProgress,
    TurnEffect,
)

__all__ = [
    "PARTIAL",
    "RESOLVED",
    "UNRESOLVED",
    "ArgumentProgress",
    "TurnEffect",
    "accepts_price",
    "states_deal",
]
