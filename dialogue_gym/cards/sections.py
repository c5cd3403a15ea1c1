"""The card sections that tie a task to the rest of the package: catalog, corpus, agents, LLMs.

A built-in task is one TOML file in ``envs/``; these optional sections carry what other layers
used to keep in per-task tables, so adding a task touches nothing else:

``[catalog]``
    ``soft`` and ``hard``: what the task's soft and hard users are. The registry lists
    ``<id>-soft-v0`` and ``<id>-hard-v0`` as ``"<task.title>; soft: <soft>"`` (see
    :func:`dialogue_gym.env.registry.register_card`).
``[agents]``
    ``family``: which hand-written agents play the task (``dialogue_gym_agents.dispatch`` maps
    a family to its ``scripted``, bad and ``stall`` agents): ``persuasion``, ``support``,
    ``listening``, ``negotiation`` or ``sales``.
``[corpus]``
    ``name``: the real corpus the task's episodes come from with ``make(..., data=...)``, one of
    :data:`dialogue_gym.data.CORPORA` (a new corpus format needs a loader there);
    ``train_split`` (default ``"train"``), ``sft_format`` and ``planner_format`` (formats of that
    corpus the trainers read) and ``[corpus.label_aliases]`` (corpus strategy label → card
    strategy, beyond identical names).
``[llm]``
    Task-specific wording of the LLM prompts (:mod:`dialogue_gym.llm.prompts`):
    ``judge_speakers`` (the ``[system, user]`` names the paper's judge prompts use; default: the
    roles, capitalised), ``judge_prompt`` (the success judge's question and answers: ``stance``,
    ``support``, ``listening``, ``deal`` or ``generic``; default: told from the label set),
    ``[llm.stance_meanings]`` (a stance judge's explanation of each stance; ``{user}`` is the
    user role) and ``annotator_hints`` (calibration notes for the BDI annotator).

``[task] plugin``
    The task's plug-in: the module (``"dialogue_gym.plugins.p4g"``) or ``"module:attr"`` of
    the :class:`~dialogue_gym.cards.task_plugin.TaskPlugin` that holds the task's own code (see
    :mod:`dialogue_gym.cards.task_plugin`); without one the task gets the generic behaviour.

Every field is validated by :mod:`dialogue_gym.cards.schema`'s helpers, so a bad value is a
:class:`~dialogue_gym.cards.schema.CardError` naming the field.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from dialogue_gym.cards import schema
from dialogue_gym.cards.schema import CardError
from dialogue_gym.types import LazyTable, TaskLike

__all__ = [
    "AGENT_FAMILIES",
    "JUDGE_PROMPTS",
    "SECTIONS",
    "STANCES",
    "CatalogEntry",
    "CorpusSpec",
    "PromptWording",
    "TaskTable",
    "parse_agent_family",
    "parse_catalog",
    "parse_corpus",
    "parse_plugin",
    "parse_prompt_wording",
]

SECTIONS = frozenset({"catalog", "agents", "corpus", "llm", "annotator_hints", "brief"})
"""The top-level keys read here (``annotator_hints`` is the older top-level spelling)."""

AGENT_FAMILIES = ("persuasion", "support", "listening", "negotiation", "sales")
"""The families of hand-written agents a card can name (``[agents] family``)."""

JUDGE_PROMPTS = ("stance", "support", "listening", "deal", "generic")
"""The success-judge prompt styles (``[llm] judge_prompt``)."""

STANCES = ("refused", "neutral", "positive", "agree")

_SPLITS = ("train", "valid", "test")
_STYLE_LABELS = {
    "stance": STANCES,
    "support": ("worse", "same", "somewhat_better", "resolved"),
    "listening": ("worse", "same", "somewhat_better", "resolved"),
    "deal": ("deal", "no_deal"),
}
"""The label set each judge prompt style answers with (``generic``: any)."""
_DEFAULT_SOFT = "agreeable users who concede easily"
_DEFAULT_HARD = "users who yield only to reasons"


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """How the registry describes a card's two envs (``[catalog]``).

    Attributes:
        soft: What the soft users are (``"over-compliant donors"``).
        hard: What the hard users are (``"donors who yield only to reasons"``).
    """

    soft: str = _DEFAULT_SOFT
    hard: str = _DEFAULT_HARD

    def description(self, title: str, preset: str) -> str:
        """The registry's one line for ``preset`` (``"soft"``/``"hard"``) of a card titled so."""
        return f"{title}; {preset}: {getattr(self, preset)}"


@dataclasses.dataclass(frozen=True)
class CorpusSpec:
    """The task's real corpus and what training reads from it (``[corpus]``).

    Attributes:
        name: The corpus (a key of :data:`dialogue_gym.data.CORPORA`).
        train_split: The split the trainers read by default (the env's held-out episodes come
            from ``test``).
        sft_format: The corpus format behaviour cloning reads (``None``: the loader's choice).
        planner_format: The corpus format with strategy labels the planner reads (``None``:
            the loader's choice).
        label_aliases: Corpus strategy label → card strategy name, beyond identical names.
        ask_reader: A calibration table whose ask detector the users read besides the card's
            ``ask`` cues (a key of :data:`dialogue_gym.calibration.ASK_DETECTORS`, e.g.
            ``"p4g"``): a system turn is an ask when either says so. ``None``: the cues only.
        appeal_reader: A calibration table whose appeal readers the users read besides the
            concerns' unlock cues (a key of :data:`dialogue_gym.calibration.APPEAL_READERS`):
            a system turn read as making an appeal (a corpus strategy label, through
            ``label_aliases``) gets the cue bonus on the concerns that card strategy
            ``addresses``. ``None``: the cues only.
    """

    name: str
    train_split: str = "train"
    sft_format: str | None = None
    planner_format: str | None = None
    label_aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ask_reader: str | None = None
    appeal_reader: str | None = None


@dataclasses.dataclass(frozen=True)
class PromptWording:
    """The task-specific wording of the LLM judge, user and annotator prompts (``[llm]``).

    Attributes:
        judge_speakers: ``(system, user)`` speaker names in judge prompts, or ``None`` for the
            capitalised roles.
        judge_prompt: One of :data:`JUDGE_PROMPTS`, or ``None`` to tell it from the labels.
        stance_meanings: Stance → its explanation in a stance judge's prompt (``{user}`` is the
            user role); empty for the generic wording.
        annotator_hints: Calibration notes for the BDI annotator; empty for none.
    """

    judge_speakers: tuple[str, str] | None = None
    judge_prompt: str | None = None
    stance_meanings: Mapping[str, str] = dataclasses.field(default_factory=dict)
    annotator_hints: tuple[str, ...] = ()


Card = TypeVar("Card", bound=TaskLike)
"""The cards a :class:`TaskTable` reads (a :class:`~dialogue_gym.cards.card.TaskCard`)."""


class TaskTable(LazyTable, Generic[Card]):
    """A read-only table task id → one value of each card, computed from the cards when read.

    For code that holds a task id rather than a card (``TRAIN_SPLITS["CB"]``): the table is
    never built at import, and it follows the cards (a card registered later shows up). It is
    generic in the card type (anything with an ``id``,
    :class:`~dialogue_gym.types.TaskLike`), so these sections need not import the cards
    module that builds :class:`~dialogue_gym.cards.card.TaskCard` from them.

    Args:
        value: The value of a card; ``None`` or empty leaves the card's task out.
        cards: Returns the cards to read (e.g. the registered ones).
    """

    def __init__(self, value: Callable[[Card], Any], cards: Callable[[], Iterable[Card]]) -> None:
        self._value = value
        self._cards = cards

    def _table(self) -> dict[str, Any]:
        values = ((card.id, self._value(card)) for card in self._cards())
        return {task: value for task, value in values if value}

    def __repr__(self) -> str:
        return f"TaskTable({self._table()!r})"


def parse_catalog(data: Mapping[str, Any]) -> CatalogEntry:
    """The ``[catalog]`` section (optional; defaults describe soft and hard users generically).

    Raises:
        CardError: A description that is not a non-empty string, or an unknown key.
    """
    if "catalog" not in data:
        return CatalogEntry()
    section = schema.table(data, "catalog", "")
    _known_keys(section, "catalog", ("soft", "hard"))
    return CatalogEntry(
        soft=schema.text(section, "soft", "catalog", default=_DEFAULT_SOFT, empty=False),
        hard=schema.text(section, "hard", "catalog", default=_DEFAULT_HARD, empty=False),
    )


def parse_brief(data: Mapping[str, Any]) -> tuple[str, ...]:
    """``[brief] facts``: what a professional in the system's role knows (optional).

    Every agent sees these facts with its goal (:attr:`TaskCard.system_brief`), so a
    third-party agent can answer what a user asks without reading the card's example
    sentences; the users credit them in any words.

    Raises:
        CardError: ``facts`` is not a list of non-empty strings, or an unknown key.
    """
    if "brief" not in data:
        return ()
    section = schema.table(data, "brief", "")
    _known_keys(section, "brief", ("facts",))
    facts = schema.texts(section, "facts", "brief", minimum=0, default=[])
    if any(not fact.strip() for fact in facts):
        raise CardError("brief.facts: a fact is empty")
    return facts


_PLUGIN = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")


def parse_plugin(data: Mapping[str, Any]) -> str | None:
    """``[task] plugin``: the module (or ``"module:attr"``) of the task's plug-in (optional).

    Only the spelling is checked here; the module is imported when a hook is first asked for
    (:func:`dialogue_gym.cards.task_plugin.plugin_of`), so a card stays data.

    Raises:
        CardError: ``plugin`` is not a dotted module path, optionally with ``:attr``.
    """
    task = schema.table(data, "task", "")
    if "plugin" not in task:
        return None
    spec = schema.text(task, "plugin", "task", empty=False)
    if not _PLUGIN.match(spec):
        raise CardError(f"task.plugin: {spec!r} is not a module path ('pkg.module[:attr]')")
    return spec


def brief_text(goal: str, facts: tuple[str, ...]) -> str:
    """``goal`` followed by the brief's ``facts`` as a bulleted list (just ``goal`` without)."""
    if not facts:
        return goal
    return goal + "\n\nWhat you know:\n" + "\n".join(f"- {fact}" for fact in facts)


def parse_agent_family(data: Mapping[str, Any]) -> str | None:
    """``[agents] family`` (optional: a card without one has no hand-written agents).

    Raises:
        CardError: Not one of :data:`AGENT_FAMILIES`, or an unknown key.
    """
    if "agents" not in data:
        return None
    section = schema.table(data, "agents", "")
    _known_keys(section, "agents", ("family",))
    return schema.choice(section, "family", "agents", AGENT_FAMILIES)


def parse_corpus(data: Mapping[str, Any], strategy_names: tuple[str, ...]) -> CorpusSpec | None:
    """The ``[corpus]`` section, checked against the corpus loaders and the card's strategies.

    Args:
        data: The whole card.
        strategy_names: The card's strategy names (label aliases must name one).

    Raises:
        CardError: An unknown corpus, format or split, an alias to a strategy the card lacks,
            or an unknown key.
    """
    if "corpus" not in data:
        return None
    from dialogue_gym.data.corpora import CorpusLoaders  # loaded only for cards with data

    task = data.get("task")
    own = task.get("plugin") if isinstance(task, Mapping) else None
    own = own if isinstance(own, str) else None  # the card's own plug-in counts, registered or not
    corpora = CorpusLoaders(own)
    where = "corpus"
    section = schema.table(data, "corpus", "")
    _known_keys(
        section,
        where,
        (
            "name",
            "train_split",
            "sft_format",
            "planner_format",
            "label_aliases",
            "ask_reader",
            "appeal_reader",
        ),
    )
    name = schema.text(section, "name", where, empty=False)
    if name not in corpora:
        raise CardError(
            f"corpus.name: no corpus loader {name!r}; loaders exist for {sorted(corpora)} "
            "(a new corpus format needs a loader in the task's plug-in)"
        )
    formats = tuple(corpora[name].FORMATS)
    chosen = {}
    for key in ("sft_format", "planner_format"):
        value = schema.text(section, key, where, default=None) if key in section else None
        if value is not None and value not in formats:
            raise CardError(f"corpus.{key}: {value!r} is not a format of {name} {formats}")
        chosen[key] = value
    alias_table = schema.table(section, "label_aliases", where, default={})
    aliases = {
        str(label): schema.text(alias_table, label, "corpus.label_aliases") for label in alias_table
    }
    readers: dict[str, str | None] = {}
    for key, kind in (("ask_reader", "ask detector"), ("appeal_reader", "appeal reader")):
        readers[key] = None
        if key in section:
            readers[key] = schema.text(section, key, where, empty=False)
            from dialogue_gym.calibration import APPEAL_READERS, ASK_DETECTORS  # cards naming one

            table = ASK_DETECTORS if key == "ask_reader" else APPEAL_READERS
            known = table.with_plugin(own)
            if readers[key] not in known:
                raise CardError(f"corpus.{key}: no {kind} {readers[key]!r}; known: {sorted(known)}")
    for label, strategy in aliases.items():
        if strategy not in strategy_names:
            raise CardError(
                f"corpus.label_aliases.{label}: {strategy!r} is not one of the card's strategies "
                f"{list(strategy_names)}"
            )
    return CorpusSpec(
        name=name,
        train_split=schema.choice(section, "train_split", where, _SPLITS, "train"),
        sft_format=chosen["sft_format"],
        planner_format=chosen["planner_format"],
        label_aliases=aliases,
        ask_reader=readers["ask_reader"],
        appeal_reader=readers["appeal_reader"],
    )


def parse_prompt_wording(
    data: Mapping[str, Any], labels: Mapping[str, float], user_role: str
) -> PromptWording:
    """The ``[llm]`` section (and the older top-level ``annotator_hints``).

    Args:
        data: The whole card.
        labels: The success judge's labels (stance meanings need the four stances).
        user_role: The card's user role (the ``{user}`` of a stance meaning).

    Raises:
        CardError: A bad value, naming the field.
    """
    section = schema.table(data, "llm", "", default={})
    _known_keys(
        section, "llm", ("judge_speakers", "judge_prompt", "stance_meanings", "annotator_hints")
    )
    speakers = None
    if "judge_speakers" in section:
        names = schema.texts(section, "judge_speakers", "llm")
        if len(names) != 2 or not all(n.strip() for n in names):
            raise CardError(
                f"llm.judge_speakers: expected two names [system, user], got {list(names)!r:.120}"
            )
        speakers = (names[0], names[1])
    judge_prompt = None
    if "judge_prompt" in section:
        judge_prompt = schema.choice(section, "judge_prompt", "llm", JUDGE_PROMPTS)
        needed = _STYLE_LABELS.get(judge_prompt)
        if needed is not None and set(labels) != set(needed):
            raise CardError(
                f"llm.judge_prompt: {judge_prompt!r} answers with the labels {list(needed)}; "
                f"judge.success.labels are {sorted(labels)}"
            )
    meanings_table = schema.table(section, "stance_meanings", "llm", default={})
    meanings = {
        str(k): schema.text(meanings_table, k, "llm.stance_meanings", empty=False)
        for k in meanings_table
    }
    if meanings:
        if set(meanings) != set(STANCES) or set(labels) != set(STANCES):
            raise CardError(
                f"llm.stance_meanings: must explain exactly the stances {STANCES} of a stance "
                f"judge (labels {sorted(labels)}), got {sorted(meanings)}"
            )
        for stance, meaning in meanings.items():
            schema.format_template(meaning, f"llm.stance_meanings.{stance}", {"user": user_role})
    return PromptWording(
        judge_speakers=speakers,
        judge_prompt=judge_prompt,
        stance_meanings=meanings,
        annotator_hints=_hints(data, section),
    )


def _hints(data: Mapping[str, Any], section: Mapping[str, Any]) -> tuple[str, ...]:
    """``[llm] annotator_hints``, else the older top-level key (a string or a list of them)."""
    for parent, where in ((section, "llm"), (data, "card")):
        if "annotator_hints" not in parent:
            continue
        if isinstance(parent["annotator_hints"], str):
            return (schema.text(parent, "annotator_hints", where),)
        return schema.texts(parent, "annotator_hints", where, minimum=0)
    return ()


def _known_keys(section: Mapping[str, Any], where: str, known: tuple[str, ...]) -> None:
    unknown = sorted(str(k) for k in section if k not in known)
    if unknown:
        raise CardError(f"{where}: unknown keys {unknown}; known: {list(known)}")
