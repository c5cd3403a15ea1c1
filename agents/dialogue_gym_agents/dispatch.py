"""Family-dispatching agent factories: one agent name works on every task of the catalog.

A task card names the family of hand-written agents that plays it (``[agents] family``:
``persuasion``, ``support``, ``listening``, ``negotiation`` or ``sales``; see
:mod:`dialogue_gym.cards.sections`), and each agent name here maps a family to the class that
plays it, so a new task of a known family needs no change here. ``scripted`` is the family's
sensible hand-written agent; ``pushy``, ``dismissive`` and ``lowball`` are the bad agents the
embedded worlds must punish (:data:`BAD_AGENT_OF_FAMILY` names each family's); ``stall`` is
``scripted`` without the ask (rapport and reasons only; see
:mod:`dialogue_gym_agents.baselines.stall`). Asking for a family an agent does not cover, or
for a card that names none, fails with the covered families.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.sections import TaskTable
from dialogue_gym.env.tasks import task_cards

SCRIPTED = {
    "persuasion": "dialogue_gym_agents.baselines.persuasion:ScriptedPersuader",
    "support": "dialogue_gym_agents.baselines.support:ScriptedSupporter",
    "listening": "dialogue_gym_agents.baselines.empathetic:ScriptedListener",
    "negotiation": "dialogue_gym_agents.baselines.bargain:ScriptedBuyer",
    "sales": "dialogue_gym_agents.baselines.sales:ScriptedSalesAgent",
}
PUSHY = {
    "persuasion": "dialogue_gym_agents.baselines.persuasion:PushyAgent",
    "sales": "dialogue_gym_agents.baselines.sales:PushySalesAgent",
}
DISMISSIVE = {
    "support": "dialogue_gym_agents.baselines.support:DismissiveAgent",
    "listening": "dialogue_gym_agents.baselines.support:DismissiveAgent",
}
LOWBALL = {"negotiation": "dialogue_gym_agents.baselines.bargain:LowballBuyer"}
STALL = {
    "persuasion": "dialogue_gym_agents.baselines.stall:StallPersuader",
    "support": "dialogue_gym_agents.baselines.stall:StallSupporter",
    "listening": "dialogue_gym_agents.baselines.stall:StallListener",
    "negotiation": "dialogue_gym_agents.baselines.stall:StallBuyer",
    "sales": "dialogue_gym_agents.baselines.stall:StallSalesAgent",
}
BAD_AGENT_OF_FAMILY = {
    "persuasion": "pushy",
    "sales": "pushy",
    "support": "dismissive",
    "listening": "dismissive",
    "negotiation": "lowball",
}
"""Agent family → the name of its bad agent (the one the embedded world must punish)."""


def bad_agent(card: TaskCard) -> str:
    """The name of the card's bad agent (``pushy``, ``dismissive`` or ``lowball``).

    Raises:
        ValueError: The card names no agent family, or one without a bad agent.
    """
    return BAD_AGENT_OF_FAMILY[_family(BAD_AGENT_OF_FAMILY, "bad agent", card)]


BAD_AGENT: Mapping[str, str] = TaskTable(
    lambda card: BAD_AGENT_OF_FAMILY.get(card.agent_family or ""), lambda: task_cards().values()
)
"""Task id → the name of the task's bad agent, read from the registered cards' families (for
code that holds a task id; with a card, use :func:`bad_agent`)."""


def _family(table: Mapping[str, str], name: str, card: TaskCard) -> str:
    family = card.agent_family
    if family is None:
        raise ValueError(
            f"agent {name!r}: card {card.id!r} names no agent family ([agents] family); "
            f"{name!r} covers the families {sorted(table)}"
        )
    if family not in table:
        raise ValueError(
            f"agent {name!r} has no version for the {family!r} family of task {card.id!r}; it "
            f"covers the families {sorted(table)}"
        )
    return family


def _build(
    table: Mapping[str, str], name: str, card: TaskCard, encoder: Any = None, **kwargs: Any
) -> Any:
    """Builds the class ``table`` names for ``card``'s family.

    ``encoder`` (the env's, from :func:`dialogue_gym.evaluate`) goes only to a class that
    takes one, so that an agent that encodes shares the env's encoder.
    """
    module, _, attr = table[_family(table, name, card)].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if encoder is not None and "encoder" in inspect.signature(cls).parameters:
        kwargs.setdefault("encoder", encoder)
    return cls(card=card, **kwargs)


def scripted(card: TaskCard, encoder: Any = None, **kwargs: Any) -> Any:
    """The task's sensible hand-written agent."""
    return _build(SCRIPTED, "scripted", card, encoder=encoder, **kwargs)


def pushy(card: TaskCard, **kwargs: Any) -> Any:
    """Asks for the goal every turn with pressure and no reasons (persuasion and sales)."""
    return _build(PUSHY, "pushy", card, **kwargs)


def dismissive(card: TaskCard, **kwargs: Any) -> Any:
    """Platitudes, premature advice and changes of subject (support and empathy)."""
    return _build(DISMISSIVE, "dismissive", card, **kwargs)


def lowball(card: TaskCard, **kwargs: Any) -> Any:
    """Insulting low offers and no arguments (negotiation)."""
    return _build(LOWBALL, "lowball", card, **kwargs)


def stall(card: TaskCard, encoder: Any = None, **kwargs: Any) -> Any:
    """Rapport and reasons, never the ask (for negotiation never a price; ED: stock sympathy)."""
    return _build(STALL, "stall", card, encoder=encoder, **kwargs)
