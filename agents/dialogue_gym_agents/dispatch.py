"""Task-dispatching agent factories: one agent name works on every task of the catalog.

``scripted`` is the sensible hand-written agent of each task; ``pushy``, ``dismissive`` and
``lowball`` are the bad agents the embedded worlds must punish (:data:`BAD_AGENT` names each
task's); ``stall`` is ``scripted`` without the ask (rapport and reasons only; see
:mod:`dialogue_gym_agents.baselines.stall`). Each name maps a task id to the class that plays
it; asking for a task a name does not cover fails with the covered tasks.
"""

from __future__ import annotations

import importlib
from typing import Any

from dialogue_gym.cards import TaskCard

SCRIPTED = {
    "P4G": "dialogue_gym_agents.baselines.persuasion:ScriptedPersuader",
    "ESConv": "dialogue_gym_agents.baselines.support:ScriptedSupporter",
    "ED": "dialogue_gym_agents.baselines.support:ScriptedListener",
    "CB": "dialogue_gym_agents.baselines.bargain:ScriptedBuyer",
    "Merchant": "dialogue_gym_agents.baselines.sales:ScriptedSalesAgent",
    "Courier": "dialogue_gym_agents.baselines.sales:ScriptedSalesAgent",
}
PUSHY = {
    "P4G": "dialogue_gym_agents.baselines.persuasion:PushyAgent",
    "Merchant": "dialogue_gym_agents.baselines.sales:PushySalesAgent",
    "Courier": "dialogue_gym_agents.baselines.sales:PushySalesAgent",
}
DISMISSIVE = {
    "ESConv": "dialogue_gym_agents.baselines.support:DismissiveAgent",
    "ED": "dialogue_gym_agents.baselines.support:DismissiveAgent",
}
LOWBALL = {"CB": "dialogue_gym_agents.baselines.bargain:LowballBuyer"}
STALL = {
    "P4G": "dialogue_gym_agents.baselines.stall:StallPersuader",
    "ESConv": "dialogue_gym_agents.baselines.stall:StallSupporter",
    "ED": "dialogue_gym_agents.baselines.stall:StallListener",
    "CB": "dialogue_gym_agents.baselines.stall:StallBuyer",
    "Merchant": "dialogue_gym_agents.baselines.stall:StallSalesAgent",
    "Courier": "dialogue_gym_agents.baselines.stall:StallSalesAgent",
}
BAD_AGENT = {
    "P4G": "pushy",
    "Merchant": "pushy",
    "Courier": "pushy",
    "ESConv": "dismissive",
    "ED": "dismissive",
    "CB": "lowball",
}
"""Task id → the name of the task's bad agent (the one its embedded world must punish)."""


def _build(table: dict[str, str], name: str, card: TaskCard, **kwargs: Any) -> Any:
    if card.id not in table:
        raise ValueError(
            f"agent {name!r} has no version for task {card.id!r}; it covers {sorted(table)}"
        )
    module, _, attr = table[card.id].partition(":")
    return getattr(importlib.import_module(module), attr)(card=card, **kwargs)


def scripted(card: TaskCard, **kwargs: Any) -> Any:
    """The task's sensible hand-written agent."""
    return _build(SCRIPTED, "scripted", card, **kwargs)


def pushy(card: TaskCard, **kwargs: Any) -> Any:
    """Asks for the goal every turn with pressure and no reasons (persuasion and sales)."""
    return _build(PUSHY, "pushy", card, **kwargs)


def dismissive(card: TaskCard, **kwargs: Any) -> Any:
    """Platitudes, premature advice and changes of subject (support and empathy)."""
    return _build(DISMISSIVE, "dismissive", card, **kwargs)


def lowball(card: TaskCard, **kwargs: Any) -> Any:
    """Insulting low offers and no arguments (negotiation)."""
    return _build(LOWBALL, "lowball", card, **kwargs)


def stall(card: TaskCard, **kwargs: Any) -> Any:
    """Rapport and reasons, never the ask (for negotiation never a price; ED: stock sympathy)."""
    return _build(STALL, "stall", card, **kwargs)
