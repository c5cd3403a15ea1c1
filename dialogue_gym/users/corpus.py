"""Personas grounded in real corpus records (``make(..., data=PATH)``).

Each :class:`~dialogue_gym.data.records.EpisodeSeed` of a held-out split becomes a persona:

* the *situation* comes from the corpus — ESConv's emotion type, problem type and the seeker's
  own description; EmpatheticDialogues' emotion and prompt — as persona facts (``situation``,
  ``emotion``, ``problem``), which reply templates and situational concerns use;
* for P4G the *participant profile* sets the internal and external layers: Big-Five traits,
  moral foundations, Schwartz values, decision style and demographics map onto concern
  strengths (e.g. low income → affordability, low care → detachment, a rational decision
  style → efficacy) and the speaking style (extraversion → chatty, neuroticism → skeptical …);
  the initial willingness is the person's donation propensity fitted on the train split's
  surveys and donations (:mod:`dialogue_gym.calibration.p4g_persona`), placed among the train
  persuadees' (quantile q) as ``0.1 + 0.35 q`` — the range the card's bank draws from;
* for ESConv the seeker's *initial emotion intensity* sets its initial willingness, starting
  valence and concern strengths, and its emotion and problem types choose its concerns where
  the card has matching ones (:mod:`dialogue_gym.users.esconv_seeker`);
* everything the corpus does not say (name, remaining facts, concerns for corpora without
  profiles or matching situations) comes from a bank persona chosen by a hash of the dialogue
  id, so the mapping is deterministic and independent of the episode seed.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from dialogue_gym.calibration.p4g_persona import shipped_propensity
from dialogue_gym.cards import TaskCard
from dialogue_gym.users.esconv_seeker import seeker_layers
from dialogue_gym.users.persona import Persona, persona_bank

# Corpus situation keys → persona fact names.
_SITUATION_FACTS = {
    "situation": "situation",
    "prompt": "situation",
    "emotion_type": "emotion",
    "emotion": "emotion",
    "problem_type": "problem",
}


def _trait(profile: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    """A numeric profile field scaled to [0, 1] (P4G columns carry a ``.x`` suffix)."""
    value = profile.get(f"{name}.x", profile.get(name))
    if not isinstance(value, (int, float)) or value != value:  # missing or NaN
        return None
    return min(1.0, max(0.0, (float(value) - low) / (high - low)))


def _p4g_layers(card: TaskCard, profile: Mapping[str, Any], base: Persona) -> dict[str, Any]:
    """Concerns, willingness, capacity and style of a P4G persuadee from their survey."""

    def t(name: str, low: float, high: float, default: float = 0.5) -> float:
        value = _trait(profile, name, low, high)
        return default if value is None else value

    income = t("income", 1, 11)
    strengths = {
        "affordability": 1.0 - income + (0.2 if profile.get("employment.x") == "Other" else 0.0),
        "trust": 1.0 - t("agreeable", 1, 5),
        "efficacy": 0.9 * t("rational", 1, 5) - 0.2 * t("intuitive", 1, 5) + 0.1,
        "other_causes": 0.8 * t("loyalty", 1, 6) + 0.2 * t("tradition", 1, 6) - 0.2,
        "pressure": 0.8 * t("freedom", 1, 6) + 0.3 * (1.0 - t("conform", 1, 6)) - 0.2,
        "information": 0.8 * (1.0 - t("open", 1, 5)) + 0.1,
        "detachment": 1.0 - 0.5 * (t("care", 1, 6) + t("universalism", 1, 6)),
        "procedure_time": 0.8 * t("conscientious", 1, 5) - 0.1,
    }
    known = {c.id for c in card.concerns}
    ranked = sorted(
        ((cid, round(min(1.0, max(0.0, s)), 3)) for cid, s in strengths.items() if cid in known),
        key=lambda pair: -pair[1],
    )
    concerns = tuple(pair for pair in ranked[:3] if pair[1] >= 0.35) or tuple(ranked[:1])
    # Where the survey answers nothing the fit reads, a hand-written warmth mix stands in.
    q = shipped_propensity().quantile(profile)
    if q is None:
        q = (t("care", 1, 6) + t("benevolence", 1, 6) + t("universalism", 1, 6)) / 3
    styles = {s.id for s in card.styles}
    traits = {
        "chatty": t("extrovert", 1, 5),
        "skeptical": t("neurotic", 1, 5),
        "warm": t("agreeable", 1, 5),
        "formal": t("conscientious", 1, 5),
    }
    style = max((s for s in traits if s in styles), key=traits.__getitem__, default=base.style)
    age = profile.get("age.x", profile.get("age"))
    return {
        "concerns": concerns,
        "initial_willingness": round(0.1 + 0.35 * q, 3),
        "capacity": round(0.25 + 1.75 * income, 2),
        "style": style,
        "age": int(age) if isinstance(age, (int, float)) and age == age else base.age,
    }


def _background(persona: Persona, profile: Mapping[str, Any]) -> str:
    # Sex is left out: the bank's first names carry no gender to agree with it.
    details = [
        str(profile[key])
        for key in ("edu.x", "employment.x", "marital.x", "ideology.x")
        if isinstance(profile.get(key), str) and profile[key]
    ]
    if not details:
        return persona.background
    return f"{persona.name} ({persona.age}): {', '.join(details).lower()}."


def personas_from_seeds(card: TaskCard, seeds: Iterable[Any]) -> tuple[Persona, ...]:
    """One persona per corpus episode seed (see the module docstring).

    Args:
        card: The task card (its bank supplies what the corpus does not say).
        seeds: :class:`~dialogue_gym.data.records.EpisodeSeed` records.

    Raises:
        ValueError: No seeds.
    """
    bank = persona_bank(card)
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
        if seed.corpus == "p4g" and seed.profile:
            fields.update(_p4g_layers(card, seed.profile, base))
        elif seed.corpus == "esconv":
            fields.update(seeker_layers(card, seed.profile, seed.situation, base))
        persona = dataclasses.replace(base, facts=MappingProxyType(facts), **fields)
        if seed.corpus == "p4g" and seed.profile:
            persona = dataclasses.replace(persona, background=_background(persona, seed.profile))
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
