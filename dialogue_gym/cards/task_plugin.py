"""Task plug-ins: the code of one task, named by its card (``[task] plugin``).

A task is a card (:mod:`dialogue_gym.cards.card`); what a card cannot say as data — a reader fitted
on the task's corpus, a corpus-specific persona — lives in the task's plug-in, one module per
task, which the card names::

    [task]
    id = "P4G"
    plugin = "dialogue_gym.plugins.p4g"     # or "mypkg.my_task:PLUGIN"

The module holds a :class:`TaskPlugin` (its ``PLUGIN`` attribute, or the attribute after
``:``). The generic core never imports a plug-in: it asks :func:`plugin_of` (a card) or
:func:`plugin_for_task` (a registered task id) for the card's plug-in and calls its hooks, and
a card without one gets :class:`TaskPlugin` itself, whose hooks are the generic behaviour.
``tests/test_task_plugins.py`` checks that the modules moved behind this interface compare no
task id. The shipped plug-ins are in :mod:`dialogue_gym.plugins`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.cards.schema import CardError
from dialogue_gym.types import DialogueRecord, LazyTable, Outcome, StanceReader

__all__ = [
    "CORPUS_CARDS",
    "GENERIC",
    "CorpusCards",
    "PluginCard",
    "PluginTable",
    "TaskPlugin",
    "name_task_card",
    "plugin_for_corpus",
    "plugin_for_task",
    "plugin_of",
]


class PluginCard(Protocol):
    """A card as far as finding its plug-in reads it."""

    @property
    def plugin(self) -> str | None:
        """``[task] plugin``: the plug-in's module (or ``"module:attr"``), or ``None``."""
        ...


class TaskPlugin:
    """The hooks a task's plug-in may override; each default is the generic behaviour.

    Subclass it in the task's module, override the hooks the task needs and bind an instance
    to ``PLUGIN``. A hook the core gains later gets a generic default here, so a plug-in written
    today keeps working.

    The mapping attributes add entries to the core's open tables once the card is registered
    (:mod:`dialogue_gym.plugin_index`); a string names a module (``"pkg.mod"``) or a class
    (``"pkg.mod:Class"``), imported only when used.

    Attributes:
        validity_targets: The human-replay validity benchmark's targets for the task
            (``{"replay_auc": 0.6, "judge_auc": 0.65}``; keys ``replay_auc``, ``replay_rho``,
            ``judge_auc``), read by :func:`dialogue_gym.validity.cells.cells`; generic: none.
        corpora: Corpus name → the module of its loader (:data:`dialogue_gym.data.CORPORA`,
            which says what a loader module holds); a card's ``[corpus] name`` is one of them.
        user_models: User model name → its class ``"module:Class"``, for a card's
            ``[task] user_model`` (:data:`dialogue_gym.users.USER_MODELS`).
        ask_detectors: Table name → a function returning a learned ask detector, for a card's
            ``[corpus] ask_reader`` (:data:`dialogue_gym.calibration.ASK_DETECTORS`).
        appeal_readers: Table name → a function returning a learned appeal reader, for a
            card's ``[corpus] appeal_reader`` (:data:`dialogue_gym.calibration.APPEAL_READERS`).

    A plug-in's calibration fitters register themselves (:func:`dialogue_gym.calibration.register`)
    when the plug-in module is imported.
    """

    validity_targets: Mapping[str, float] = MappingProxyType({})
    corpora: Mapping[str, str] = MappingProxyType({})
    user_models: Mapping[str, str] = MappingProxyType({})
    ask_detectors: Mapping[str, Callable[[], Callable[[str], bool]]] = MappingProxyType({})
    appeal_readers: Mapping[str, Callable[[], Callable[[str], frozenset[str]]]] = MappingProxyType(
        {}
    )

    def stance_reader(
        self, train: Sequence[DialogueRecord] = (), table: str | Path | None = None
    ) -> StanceReader | None:
        """The learned reader of a real user's replies for the success judge.

        Called by :func:`dialogue_gym.judges.user_text.reader_for`.

        Args:
            train: The task's train dialogues, for a reader fitted on the spot.
            table: A fitted table (``dialogue-gym data fit``'s output), read instead.

        Returns:
            The reader, or ``None`` (generic: the judge reads replies with the card's cues).
        """
        return None

    def persona_layers(self, card: TaskCard, seed: Any, base: Any) -> dict[str, Any]:
        """Persona fields read from a real participant (``make(..., data=...)``, validity).

        Called by :func:`dialogue_gym.users.corpus.personas_from_seeds` for each corpus seed,
        after the seed's situation became persona facts.

        Args:
            card: The task card.
            seed: The :class:`~dialogue_gym.data.records.EpisodeSeed` (``corpus``,
                ``profile``, ``situation``).
            base: The bank :class:`~dialogue_gym.users.persona.Persona` chosen for the seed.

        Returns:
            ``dataclasses.replace`` keyword arguments for the persona; generic: none (the bank
            persona's layers).
        """
        return {}

    def seed_users(
        self, card: TaskCard, seeds: Sequence[Any]
    ) -> tuple[str, tuple[Any, ...]] | None:
        """The users pinned to corpus seeds, for a user model that plays no persona.

        Called by :func:`dialogue_gym.env.components.corpus_pools` (``make(..., data=...)``) and
        the validity runner, which pin one item to a reset with ``options={name: item}``.

        Args:
            card: The task card.
            seeds: The corpus seeds (:class:`~dialogue_gym.data.records.EpisodeSeed`).

        Returns:
            The ``reset`` option's name and one item per usable seed, or ``None`` for the
            generic personas (:func:`dialogue_gym.users.corpus.personas_from_seeds`).

        Raises:
            ValueError: No usable seeds.
        """
        return None

    def held_out_split(self, corpus: str, split: str, data: str | Path | None) -> list[Any] | None:
        """A held-out split the corpus loader does not name (the validity benchmark's ``--split``).

        E.g. the dialogues the collection dropped.

        Called by :func:`dialogue_gym.validity.corpus.load_held_out` for a split other than
        ``test`` and ``valid``.

        Returns:
            The dialogues (:class:`~dialogue_gym.data.records.Dialogue`), or ``None``: the task
            has no such split (generic: none has).
        """
        return None

    def persona_background(self, persona: Any, seed: Any) -> str | None:
        """The background of a persona pinned to a corpus seed.

        Args:
            persona: The persona with :meth:`persona_layers` applied.
            seed: Its corpus seed.

        Returns:
            The background, or ``None`` for the generic one (the seed's situation, when the
            corpus gives one).
        """
        return None

    def profile_text(self, dialogue: DialogueRecord) -> str | None:
        """A corpus participant's profile as text, for the BDI annotator and its prior.

        Called by :func:`dialogue_gym.mentalizers.annotate.profile_text`. Outcome fields (a
        donation, a
        final survey score) must be left out.

        Returns:
            The text (``""``: the dialogue has no profile), or ``None`` for the generic
            listing of the profile's and situation's fields.
        """
        return None

    def real_outcome(self, dialogue: DialogueRecord) -> Outcome | None:
        """What a real dialogue's participants reached (the validity benchmark's truth).

        Called by :func:`dialogue_gym.validity.corpus.outcome_of`.

        Returns:
            The outcome, or ``None`` when the corpus does not say (generic: never).
        """
        return None


GENERIC = TaskPlugin()
"""The plug-in of a card that names none: every hook's generic behaviour."""


@functools.cache
def _load(spec: str) -> TaskPlugin:
    """Imports the plug-in ``"module"`` (its ``PLUGIN``) or ``"module:attr"``."""
    module_name, _, attr = spec.partition(":")
    try:
        plugin = getattr(importlib.import_module(module_name), attr or "PLUGIN")
    except (ImportError, AttributeError) as exc:
        raise CardError(f"task.plugin: cannot load {spec!r}: {exc}") from exc
    if not isinstance(plugin, TaskPlugin):
        raise CardError(f"task.plugin: {spec!r} is a {type(plugin).__name__}, not a TaskPlugin")
    return plugin


def plugin_of(card: PluginCard) -> TaskPlugin:
    """The plug-in a card names (imported on first use), or :data:`GENERIC` if it names none.

    Raises:
        CardError: The module cannot be imported, lacks the attribute, or it is not a
            :class:`TaskPlugin`.
    """
    return GENERIC if card.plugin is None else _load(card.plugin)


_CARD_OF_TASK: dict[str, str] = {}
"""Task id → the card (name or path) :func:`dialogue_gym.env.tasks.register_card` registered."""


def name_task_card(task_id: str, card: str) -> None:
    """Records the card of a registered task id (called by ``register_card``)."""
    _CARD_OF_TASK.setdefault(task_id, card)


def plugin_for_task(task_id: str) -> TaskPlugin:
    """The plug-in of a registered task id's card; :data:`GENERIC` for an unknown id.

    For layers handed an id rather than a card; the card is loaded (and validated) once.

    Raises:
        CardError: The card is invalid or its plug-in cannot be loaded.
    """
    card = _CARD_OF_TASK.get(task_id)
    return GENERIC if card is None else plugin_of(load_card(card))


class CorpusCards(LazyTable):
    """Corpus name → the registered card (name or path) whose ``[corpus] name`` it is.

    Read from the registered cards each time (a card registered later shows up); the first
    registered card of a corpus wins, and one that cannot be loaded is passed over (making its
    env reports it). Only cards registered with :func:`dialogue_gym.env.tasks.register_card`.
    """

    def _table(self) -> dict[str, str]:
        table: dict[str, str] = {}
        for source in list(_CARD_OF_TASK.values()):
            try:
                card = load_card(source)
            except (CardError, FileNotFoundError):
                continue
            if card.corpus is not None:
                table.setdefault(card.corpus.name, source)
        return table


CORPUS_CARDS: Mapping[str, str] = CorpusCards()
"""Corpus name → registered card (``{"p4g": "p4g", ...}``); see :class:`CorpusCards`."""


def plugin_for_corpus(corpus: str) -> TaskPlugin:
    """The plug-in of the first registered card whose ``[corpus] name`` is ``corpus``.

    For the layers that hold a corpus dialogue rather than a card (annotation, validity).

    Returns:
        That card's plug-in; :data:`GENERIC` when no registered card reads the corpus.
    """
    source = CORPUS_CARDS.get(corpus)
    return GENERIC if source is None else plugin_of(load_card(source))


class PluginTable(LazyTable):
    """Task id → one value of each registered card's plug-in, read when looked up.

    Tasks whose plug-in gives an empty value are left out, so a table of the plug-ins'
    ``validity_targets`` lists just the tasks that have targets.

    Args:
        value: The value of a plug-in.
    """

    def __init__(self, value: Callable[[TaskPlugin], Any]) -> None:
        self._value = value

    def _table(self) -> dict[str, Any]:
        table = {}
        for task in list(_CARD_OF_TASK):
            try:
                value = self._value(plugin_for_task(task))
            except (CardError, FileNotFoundError):
                continue
            if value:
                table[task] = value
        return table
