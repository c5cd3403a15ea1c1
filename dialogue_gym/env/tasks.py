"""Tasks are cards: registering a card's envs, and finding a registered task's card by id.

A task is one card TOML (:mod:`dialogue_gym.cards.card`). :func:`register_card` registers its
``<task.id>-soft-v0`` and ``<task.id>-hard-v0`` envs, described from the card's ``task.title``
and ``[catalog]`` (``"Persuasion for Good; hard: donors who yield only to reasons"``);
``import dialogue_gym`` calls it for every card shipped in ``envs/`` (the package
``dialogue_gym.catalog``), and a third-party package calls it for its own card (see
:mod:`dialogue_gym.env.registry` for the ``dialogue_gym.envs`` entry points and
``"module:Task-hard-v0"`` ids).

:func:`task_cards` / :func:`task_card` give the card of a registered task id to the layers that
are handed an id rather than a card (training CLIs, benchmarks); code that holds a card reads
its sections directly (``card.corpus``, ``card.agent_family``, ``card.prompts``).

**Adding a built-in task** is one TOML file in ``envs/`` (plus a corpus loader in
:mod:`dialogue_gym.data` if it brings a new corpus format): the registry, the LLM prompts, the
real-corpus episodes, the training corpora and the hand-written agents all read it from there
(:mod:`dialogue_gym.cards.sections`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dialogue_gym.cards.card import TaskCard, card_header, load_card
from dialogue_gym.cards.sections import TaskTable
from dialogue_gym.cards.task_plugin import name_task_card
from dialogue_gym.env.registry import EnvSpec, RegistryError, load_plugins, register, registry
from dialogue_gym.plugin_index import note_plugin

__all__ = [
    "CORPUS_OF_TASK",
    "DIALOGUE_ENV",
    "PRESETS",
    "register_card",
    "task_card",
    "task_cards",
]

DIALOGUE_ENV = "dialogue_gym.env.dialogue_env:DialogueEnv"
"""The entry point of a card's envs (loaded by :func:`dialogue_gym.make`)."""

PRESETS = ("soft", "hard")
"""The user presets :func:`register_card` registers an env for."""


def register_card(
    card: str | Path,
    version: int = 0,
    entry_point: str | Callable[..., Any] = DIALOGUE_ENV,
    **kwargs: Any,
) -> list[EnvSpec]:
    """Registers a task card's envs: ``<task.id>-soft-vN`` and ``<task.id>-hard-vN``.

    Only the card's ``[task]`` id and title and its ``[catalog]`` are read now (the whole card
    is validated when an env is made). Registering the same card again is a no-op, so a plugin
    module may be both imported by a ``module:`` id and loaded as an entry point.

    Args:
        card: A shipped card's name (``"p4g"``) or the path of a card TOML (a third party's).
        version: N of the ids.
        entry_point: The env class or factory (default :class:`~dialogue_gym.DialogueEnv`).
        **kwargs: Further default constructor arguments of both envs.

    Returns:
        The two specs.

    Raises:
        FileNotFoundError: No such card.
        CardError: The card's id, title or ``[catalog]`` is invalid.
        RegistryError: One of the ids is registered already with another spec.
    """
    source = str(card)
    header = card_header(source)
    name_task_card(header.id, source)  # the task's plug-in is found through its card
    note_plugin(header.plugin)  # and adds its corpus loaders, user models, fitters
    specs = []
    for preset in PRESETS:
        env_id = f"{header.id}-{preset}-v{version}"
        wanted = {"card": source, "user": preset, **kwargs}
        known = registry.get(env_id)
        if known is not None and known.entry_point == entry_point and known.kwargs == wanted:
            specs.append(known)
            continue
        description = header.catalog.description(header.title, preset)
        specs.append(register(env_id, entry_point, description=description, **wanted))
    return specs


def _card_sources() -> dict[str, TaskCard | str | Path]:
    """Task id → the card (or its name/path) of every registered env built from a card."""
    load_plugins()
    sources: dict[str, TaskCard | str | Path] = {}
    for env_spec in registry.values():
        card = env_spec.kwargs.get("card")
        if isinstance(card, TaskCard):
            sources.setdefault(card.id, card)
        elif isinstance(card, str | Path):
            sources.setdefault(card_header(card).id, card)
    return sources


def task_cards() -> dict[str, TaskCard]:
    """The cards of the registered envs by task id (``{"P4G": <card>, ...}``).

    Loads (and validates) each card the first time; plugins are loaded first.

    Raises:
        CardError: A registered card is invalid.
    """
    return {
        task: card if isinstance(card, TaskCard) else load_card(card)
        for task, card in _card_sources().items()
    }


def task_card(task: str) -> TaskCard:
    """The card of a registered task id (``"P4G"``); only that card is loaded.

    Raises:
        RegistryError: No registered env plays that task (naming the tasks that exist).
        CardError: Its card is invalid.
    """
    sources = _card_sources()
    if task not in sources:
        raise RegistryError(f"no registered task {task!r}; tasks: {', '.join(sorted(sources))}")
    card = sources[task]
    return card if isinstance(card, TaskCard) else load_card(card)


CORPUS_OF_TASK: Mapping[str, str] = TaskTable(
    lambda card: card.corpus.name if card.corpus else None, lambda: task_cards().values()
)
"""Task id → corpus name (``{"P4G": "p4g", ...}``) of every registered card with a
``[corpus] name``."""
