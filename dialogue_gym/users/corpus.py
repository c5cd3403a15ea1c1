"""Personas grounded in real corpus records (``make(..., data=PATH)``).

Each :class:`~dialogue_gym.data.records.EpisodeSeed` of a held-out split becomes a persona:

* the *situation* comes from the corpus — ESConv's emotion type, problem type and the seeker's
  own description; EmpatheticDialogues' emotion and prompt — as persona facts (``situation``,
  ``emotion``, ``problem``), which reply templates and situational concerns use;
* the *task's own layers* come from the plug-in its card names
  (:meth:`dialogue_gym.cards.task_plugin.TaskPlugin.persona_layers` and ``persona_background``):
  for P4G (:mod:`dialogue_gym.plugins.p4g`) the participant's survey sets the concerns,
  willingness, capacity, style and background; for ESConv (:mod:`dialogue_gym.plugins.esconv`)
  the seeker's initial emotion intensity sets its willingness, starting valence and concern
  strengths, and its emotion and problem types choose its concerns
  (:mod:`dialogue_gym.plugins.esconv.seeker`); a card without a plug-in keeps the bank layers;
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

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.task_plugin import plugin_of
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
