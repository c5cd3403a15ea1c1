"""Personas grounded in real corpus records (``make(..., data=PATH)``).

Each :class:`~dialogue_gym.data.records.EpisodeSeed` of a held-out split becomes a persona:

* the *situation* comes from the corpus — ESConv's emotion type, problem type and the seeker's
  own description; EmpatheticDialogues' emotion and prompt — as persona facts (``situation``,
  ``emotion``, ``problem``), which reply templates and situational concerns use;
* the *task's own layers* come from the plug-in its card names
  (:meth:`dialogue_gym.task_plugin.TaskPlugin.persona_layers` and ``persona_background``):
  for P4G (:mod:`dialogue_gym.plugins.p4g`) the participant's survey sets the concerns,
  willingness, capacity, style and background; for ESConv (:mod:`dialogue_gym.plugins.esconv`)
  the seeker's initial emotion intensity sets its willingness, starting valence and concern
  strengths, and its emotion and problem types choose its concerns
  (:mod:`dialogue_gym.users.esconv_seeker`); a card without a plug-in keeps the bank layers;
* everything the corpus does not say (name, remaining facts, concerns for corpora without
  profiles or matching situations) comes from a bank persona chosen by a hash of the dialogue
  id, so the mapping is deterministic and independent of the episode seed.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from dialogue_gym.cards import TaskCard
from dialogue_gym.task_plugin import plugin_of
from dialogue_gym.users.persona import Persona, persona_bank

# Corpus situation keys → persona fact names.
_SITUATION_FACTS = {
    "situation": "situation",
    "prompt": "situation",
    "emotion_type": "emotion",
    "emotion": "emotion",
    "problem_type": "problem",
}


def personas_from_seeds(card: TaskCard, seeds: Iterable[Any]) -> tuple[Persona, ...]:
    """One persona per corpus episode seed (see the module docstring).

    Args:
        card: The task card (its bank supplies what the corpus does not say).
        seeds: :class:`~dialogue_gym.data.records.EpisodeSeed` records.

    Raises:
        ValueError: No seeds.
    """
    bank = persona_bank(card)
    plugin = plugin_of(card)  # the task's own layers (P4G's survey, ESConv's intensity)
    personas = []
    for seed in seeds:
        digest = hashlib.sha256(f"{seed.corpus}/{seed.dialogue_id}".encode()).hexdigest()
        base = bank[int(digest[:8], 16) % len(bank)]
        facts = dict(base.facts)
        for key, fact in _SITUATION_FACTS.items():
            value = seed.situation.get(key)
            if isinstance(value, str) and value.strip():
                facts[fact] = value.strip()
        fields: dict[str, Any] = {"id": f"{seed.corpus}:{seed.dialogue_id}"}
        fields.update(plugin.persona_layers(card, seed, base))
        persona = dataclasses.replace(base, facts=MappingProxyType(facts), **fields)
        if (background := plugin.persona_background(persona, seed)) is not None:
            persona = dataclasses.replace(persona, background=background)
        elif "situation" in facts and facts["situation"] != base.facts.get("situation"):
            persona = dataclasses.replace(
                persona, background=f"{persona.name} ({persona.age}): {facts['situation']}"
            )
        personas.append(persona)
    if not personas:
        raise ValueError(f"no corpus episodes to build {card.id} personas from")
    return tuple(personas)


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
    from dialogue_gym.users.seller import listing_bank  # the seller model is CB-only weight

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
