"""CraigslistBargain's plug-in (``envs/cb.toml``: ``plugin = "dialogue_gym.plugins.cb"``).

* :meth:`CBPlugin.profile_text`: the item, its category, listing price, the seller's target
  and the listing text, for the BDI annotator.
* :meth:`CBPlugin.real_outcome`: success = a deal, the last offer answered by ``accept`` (the
  rule-based acts of the HF export; ``reject``/``quit`` = no deal); amount = the
  buyer-normalized utility of the offered price, for deals. Dialogues without these acts (the
  whole HF test split) have no outcome.
* :meth:`CBPlugin.seed_users`: a buyer's episodes pinned to real listings (the seller plays a
  listing, not a persona).

The package holds the task's code: the corpus loader (:mod:`~dialogue_gym.plugins.cb.loader`,
its release in :mod:`~dialogue_gym.plugins.cb.release`), the seller user model
(:mod:`~dialogue_gym.plugins.cb.seller`, composing ``seller_perception``, ``seller_state``,
``seller_decision`` and ``seller_wording``, on ``seller_listings`` and ``seller_presets``) and
its calibrated floors (:mod:`~dialogue_gym.plugins.cb.calibration`, shipped table in
``tables/``; importing the package registers the ``cb`` fitter). The deal
judge is generic (:mod:`dialogue_gym.judges.deal`): any negotiation card can name it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.task_plugin import TaskPlugin
from dialogue_gym.plugins._profile import clip, number
from dialogue_gym.plugins.cb.calibration import closing_offer
from dialogue_gym.text.prices import buyer_utility
from dialogue_gym.types import DialogueRecord, Outcome

__all__ = ["PLUGIN", "CBPlugin"]


class CBPlugin(TaskPlugin):
    """CB's hooks (see the module docstring)."""

    validity_targets = MappingProxyType({"replay_auc": 0.80, "replay_rho": 0.60, "judge_auc": 0.90})
    """Issue 15's validity targets (:data:`dialogue_gym.validity.cells.TARGETS`)."""
    corpora = MappingProxyType({"cb": "dialogue_gym.plugins.cb.loader"})
    """The corpus loader (:mod:`dialogue_gym.plugins.cb.loader`)."""
    user_models = MappingProxyType({"seller": "dialogue_gym.plugins.cb.seller:SellerUser"})
    """The card's ``[task] user_model = "seller"`` (:mod:`dialogue_gym.plugins.cb.seller`)."""

    def seed_users(
        self, card: TaskCard, seeds: Sequence[Any]
    ) -> tuple[str, tuple[Any, ...]] | None:
        """One seller listing per seed: the real title, category and prices."""
        from dialogue_gym.plugins.cb.seller_listings import listings_from_seeds  # seller weight

        return "listing", listings_from_seeds(card, seeds)

    def profile_text(self, dialogue: DialogueRecord) -> str | None:
        """The listing as the seller knows it (the buyer's target left out)."""
        profile, situation = dialogue.profile, dialogue.situation
        parts: list[str] = []
        item = profile.get("title") or situation.get("title")
        if item:
            parts.append(f"selling: {item}")
        if situation.get("category"):
            parts.append(f"category: {situation['category']}")
        listing = profile.get("listing_price", situation.get("listing_price"))
        if listing is not None:
            parts.append(f"listing price: ${number(listing)}")
        target = situation.get("seller_target", profile.get("target"))
        if target is not None:
            parts.append(f"seller's target price: ${number(target)}")
        if profile.get("description"):
            parts.append(f"listing text: {clip(profile['description'])}")
        return "; ".join(parts)

    def real_outcome(self, dialogue: DialogueRecord) -> Outcome | None:
        """A deal (and the buyer's utility), no deal, or ``None`` without the closing acts."""
        offer, verdict = closing_offer(dialogue)
        if verdict is None:
            return None
        if verdict != "accept":
            return Outcome(False, None)
        listing = dialogue.situation.get("listing_price")
        target = dialogue.situation.get("buyer_target")
        amount = None
        if offer is not None and listing and target is not None and float(target) < float(listing):
            amount = buyer_utility(offer, float(listing), float(target))
        return Outcome(True, amount)


PLUGIN = CBPlugin()
