"""Task cards: the environment catalog as data (TOML files in ``envs/``).

A card holds everything task-specific: roles and goal, the target BDI template, the success
judge's label map and threshold, lexical cues, the system strategy set with realizer templates,
the latent-concern library, user reply templates, persona styles and the ingredients of the
project-written persona bank, and (:mod:`dialogue_gym.cards.sections`) how the task ties into
the rest of the package: the registry's description of its soft and hard envs (``[catalog]``),
the family of hand-written agents that plays it (``[agents]``), its real corpus and training
formats (``[corpus]``), the task-specific wording of the LLM prompts (``[llm]``) and the facts
every agent is told (``[brief]``). Shipped cards live in ``dialogue_gym.catalog`` (``envs/``).

**Adding a task** is one TOML file in ``envs/`` (``import dialogue_gym`` registers its soft
and hard envs) or :func:`dialogue_gym.register_card`; a bad value is a :class:`CardError`
naming the file and field (:mod:`dialogue_gym.cards.schema`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from dialogue_gym.bdi import BDI
from dialogue_gym.cards import schema, sections
from dialogue_gym.cards.judge_spec import SuccessJudgeSpec, parse_success_judge
from dialogue_gym.cards.schema import CardError
from dialogue_gym.cards.sections import CatalogEntry, CorpusSpec, PromptWording

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SCHEMA_VERSION = 1
FACETS = ("financial", "psychological", "operational")


@dataclasses.dataclass(frozen=True)
class Strategy:
    """A system dialogue strategy and the templates that realize it as text."""

    name: str
    description: str
    templates: tuple[str, ...]
    addresses: tuple[str, ...] = ()
    asks: bool = False


@dataclasses.dataclass(frozen=True)
class Concern:
    """A latent user concern (CUS internal layer).

    Attributes:
        id: Identifier, e.g. ``"affordability"``.
        facet: ``financial``, ``psychological`` or ``operational``.
        description: One line for people.
        resistance: Resistance point: addressing turns needed to resolve it.
        blocking_weight: How strongly the concern blocks a decision while unresolved (0..1).
        voice: How the user raises it.
        unlock: Prototype system sentences that address it with a reason.
        unlock_cues: Regexes signalling unlocking content.
        anti: Prototype system sentences that make it worse (anti-patterns).
        anti_cues: Regexes signalling anti-patterns.
        ack_partial: User replies when it is partly addressed.
        ack_resolved: User replies when it is resolved.
        belief_unresolved: Belief text while unresolved.
        belief_resolved: Belief text once resolved.
        desire_unresolved: Desire text while it dominates.
        situational: When set, the concern is also addressed by talking about the user's own
            situation (persona fact ``situation``): the similarity of the system turn to it,
            plus this bonus, counts as an unlock score. Used where generic replies must not do
            (EmpatheticDialogues: being *accurately* heard).
        answered_with: Concerns whose facts answer this one too while it is under discussion
            (:func:`~dialogue_gym.users.answers.answers_focus`; docs/task-cards.md).
        met_by_ask: The task's request itself answers it (ESConv: a coping step offered).
        answered_by_meaning: A situational concern that a turn also answers by meaning while
            it is under discussion, in the listener's own words, when the turn does not tell
            another persona's story (ED: a worry that the feeling is silly is answered by "I
            don't think it's strange at all that it bothers you this much";
            :func:`~dialogue_gym.users.answers.answers_focus`).
    """

    id: str
    facet: str
    description: str
    resistance: int
    blocking_weight: float
    voice: tuple[str, ...]
    unlock: tuple[str, ...]
    unlock_cues: tuple[re.Pattern[str], ...]
    anti: tuple[str, ...]
    anti_cues: tuple[re.Pattern[str], ...]
    ack_partial: tuple[str, ...]
    ack_resolved: tuple[str, ...]
    belief_unresolved: str
    belief_resolved: str
    desire_unresolved: str
    situational: float | None = None
    answered_with: tuple[str, ...] = ()
    met_by_ask: bool = False
    answered_by_meaning: bool = False


@dataclasses.dataclass(frozen=True)
class Style:
    """The persona's external layer: tone, surface wording, sign-offs (said after a no only)."""

    id: str
    tone: str
    openers: tuple[str, ...]
    closers: tuple[str, ...]
    lowercase: bool = False
    verbosity: float = 1.0
    sign_offs: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class PersonaIngredients:
    """Inputs of the deterministic persona-bank generator.

    Attributes:
        count: Personas in the bank.
        seed: Seed of the generator.
        first_names: Names to draw from.
        background_templates: Templates using ``{name}``, ``{age}`` and any slot name.
        slots: Named value lists; each persona draws one value per slot (its *facts*, which
            reply templates may also use as ``{slot}`` placeholders).
        ages: Inclusive age range.
        unfit: Reply lines that cannot fit some personas (``[[personas.unfit]]``).
        paired: Slot → the slot it goes with (``[personas.paired]``): a paired slot takes the
            value at the index drawn for its lead, so the two lists are read side by side
            (an ED speaker's ``rest`` of the story is the rest of *its* ``situation``).
    """

    count: int
    seed: int
    first_names: tuple[str, ...]
    background_templates: tuple[str, ...]
    slots: Mapping[str, tuple[str, ...]]
    ages: tuple[int, int] = (19, 71)
    unfit: tuple[UnfitLines, ...] = ()
    paired: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class UnfitLines:
    """Reply lines a persona never says when one of its facts matches (``[[personas.unfit]]``).

    A speaker whose news is happy is not "this worked up" about it, and one whose event is
    still to come does not replay "how it felt right then": the card's reply lists are shared
    by every persona, so the lines that presuppose a kind of story are left out for the others.

    Attributes:
        fact: The slot whose value is tested (e.g. ``situation``).
        when: The rule applies when any of these regexes matches the persona's value.
        lines: Reply lines (templates, voice lines, reactions) matching any of these are then
            not said, while the list holds another line.
    """

    fact: str
    when: tuple[re.Pattern[str], ...]
    lines: tuple[re.Pattern[str], ...]

    def applies(self, facts: Mapping[str, str]) -> bool:
        """Whether a persona with these facts falls under the rule."""
        value = facts.get(self.fact, "")
        return any(pattern.search(value) for pattern in self.when)


@dataclasses.dataclass(frozen=True, eq=False)  # identity hash: cards key per-card caches
class TaskCard:
    """Everything task-specific about one dialogue task (see the module docstring).

    Besides the sections named in the module docstring: ``user_model`` names the user
    simulator family (``"cognitive"``; ``"seller"`` for negotiation), ``decision_trigger`` says
    whether the user decides only when the system asks (``"ask"``: persuasion, sales) or on any
    turn (``"any"``: empathy), and ``extra`` keeps any other top-level section of the TOML for
    task-specific components; ``catalog`` … ``plugin``: :mod:`dialogue_gym.cards.sections`.
    """

    id: str
    title: str
    description: str
    system_role: str
    user_role: str
    goal: str
    user_goal: str
    max_exchanges: int
    domain: tuple[str, ...]
    target: BDI
    success_judge: SuccessJudgeSpec
    cues: Mapping[str, tuple[re.Pattern[str], ...]]
    strategies: tuple[Strategy, ...]
    concerns: tuple[Concern, ...]
    replies: Mapping[str, tuple[str, ...]]
    styles: tuple[Style, ...]
    personas: PersonaIngredients
    mind: Mapping[str, str]
    source: str
    user_model: str = "cognitive"
    decision_trigger: str = "ask"
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    catalog: CatalogEntry = dataclasses.field(default_factory=CatalogEntry)
    corpus: CorpusSpec | None = None
    agent_family: str | None = None
    prompts: PromptWording = dataclasses.field(default_factory=PromptWording)
    brief: tuple[str, ...] = ()
    plugin: str | None = None

    @property
    def system_brief(self) -> str:
        """The system seat's goal with the ``[brief]`` facts: what every agent is told."""
        return sections.brief_text(self.goal, self.brief)

    def concern(self, concern_id: str) -> Concern:
        """Returns a concern by id."""
        for concern in self.concerns:
            if concern.id == concern_id:
                return concern
        raise KeyError(f"card {self.id!r} has no concern {concern_id!r}")

    def style(self, style_id: str) -> Style:
        """Returns a style by id."""
        for style in self.styles:
            if style.id == style_id:
                return style
        raise KeyError(f"card {self.id!r} has no style {style_id!r}")

    @property
    def strategy_names(self) -> tuple[str, ...]:
        """Strategy names in card order (the ``StrategyActions`` action indices)."""
        return tuple(s.name for s in self.strategies)

    @property
    def is_negotiation(self) -> bool:
        """Whether the goal is a price (a deal judge): success is a deal, ranked by its SL."""
        return self.success_judge.kind == "deal"


REQUIRED_MIND = ("desire_open", "refused", "neutral", "positive")
# fmt: off
REQUIRED_REPLIES = (
    "greeting", "inquiry_open", "inquiry_concern", "refuse", "refuse_concern", "neutral",
    "positive", "agree", "pushback", "repetition", "offtopic", "empty",
)
# fmt: on


# Sections the parser reads; any other is kept in ``TaskCard.extra`` (e.g. a seller's prices).
_SECTIONS = frozenset(
    {"schema_version", "task", "target", "judge", "cues", "strategies", "concerns", "replies"}
    | {"styles", "personas", "mind", *sections.SECTIONS}
)

# Older cards name three slots with dedicated keys; they map onto generic slots.
_LEGACY_SLOTS = {
    "occupations": "occupation",
    "life_situations": "situation",
    "giving_histories": "history",
}


def _unique(ids: list[str], where: str) -> None:
    seen = set()
    for value in ids:
        if value in seen:
            raise CardError(f"{where}: duplicate id {value!r}")
        seen.add(value)


def _persona_ingredients(p: Mapping[str, Any]) -> PersonaIngredients:
    slots = {
        slot: schema.texts(p, key, "personas") for key, slot in _LEGACY_SLOTS.items() if key in p
    }
    slot_table = schema.table(p, "slots", "personas", default={})
    for slot in slot_table:
        if not slot.isidentifier():
            raise CardError(f"personas.slots.{slot}: a slot name must be an identifier")
        slots[slot] = schema.texts(slot_table, slot, "personas.slots")
    ages_value = p.get("ages", [19, 71])
    if not isinstance(ages_value, list) or len(ages_value) != 2:
        raise CardError(f"personas.ages: expected [low, high], got {ages_value!r:.80}")
    ages = dict(zip(("ages[0]", "ages[1]"), ages_value, strict=True))
    low = schema.integer(ages, "ages[0]", "personas", 0, 150)
    high = schema.integer(ages, "ages[1]", "personas", 0, 150)
    if low > high:
        raise CardError(f"personas.ages: low ({low}) must not exceed high ({high})")
    templates = schema.texts(p, "background_templates", "personas")
    sample = {"name": "Alex", "age": low, **{slot: values[0] for slot, values in slots.items()}}
    for index, template in enumerate(templates):
        schema.format_template(template, f"personas.background_templates[{index}]", sample)
    unfit = []
    for index, rule in enumerate(schema.tables(p, "unfit", "personas") if "unfit" in p else ()):
        where = f"personas.unfit[{index}]"
        fact = schema.text(rule, "fact", where, empty=False)
        if fact not in slots:
            raise CardError(f"{where}.fact: unknown slot {fact!r}; slots: {sorted(slots)}")
        when, lines = schema.patterns(rule, "when", where), schema.patterns(rule, "lines", where)
        for key, value in (("when", when), ("lines", lines)):
            if not value:
                raise CardError(f"{where}.{key}: expected at least one regex")
        unfit.append(UnfitLines(fact, when, lines))
    paired = _paired_slots(p, slots)
    return PersonaIngredients(
        count=schema.integer(p, "count", "personas", 1, schema.MAX_PERSONAS),
        seed=schema.integer(p, "seed", "personas", 0, schema.MAX_SEED),
        first_names=schema.texts(p, "first_names", "personas"),
        background_templates=templates,
        slots=slots,
        ages=(low, high),
        unfit=tuple(unfit),
        paired=paired,
    )


def _paired_slots(p: Mapping[str, Any], slots: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """``[personas.paired]``: slot → its lead slot, both of the same length, the lead unpaired."""
    table = schema.table(p, "paired", "personas", default={})
    paired = {slot: schema.text(table, slot, "personas.paired", empty=False) for slot in table}
    for slot, lead in paired.items():
        where = f"personas.paired.{slot}"
        if slot not in slots or lead not in slots:
            raise CardError(f"{where}: {slot!r} and {lead!r} must be slots; slots: {sorted(slots)}")
        if lead == slot or lead in paired:
            raise CardError(f"{where}: the lead {lead!r} must be another, unpaired slot")
        if len(slots[slot]) != len(slots[lead]):
            raise CardError(
                f"{where}: {len(slots[slot])} values for the {len(slots[lead])} of {lead!r}"
            )
    return paired


def _target(target: Mapping[str, Any]) -> BDI:
    return BDI(
        belief=schema.text(target, "belief", "target"),
        desire=schema.text(target, "desire", "target"),
        intention=schema.text(target, "intention", "target"),
        receptivity=schema.number(target, "receptivity", "target", 0.0, 1.0),
        confidence=schema.number(target, "confidence", "target", 0.0, 1.0),
        valence=schema.number(target, "valence", "target", -1.0, 1.0),
    )


def _strategy(s: Mapping[str, Any], index: int) -> Strategy:
    where = f"strategies[{index}]"
    name = schema.text(s, "name", where, empty=False)
    where = f"strategies.{name}"
    return Strategy(
        name=name,
        description=schema.text(s, "description", where, default=""),
        templates=schema.texts(s, "templates", where),
        addresses=schema.texts(s, "addresses", where, minimum=0, default=[]),
        asks=schema.boolean(s, "asks", where, default=False),
    )


def _concern(c: Mapping[str, Any], index: int) -> Concern:
    concern_id = schema.text(c, "id", f"concerns[{index}]", empty=False)
    where = f"concerns.{concern_id}"
    return Concern(
        id=concern_id,
        facet=schema.choice(c, "facet", where, FACETS),
        description=schema.text(c, "description", where, default=""),
        resistance=schema.integer(c, "resistance", where, 1, 100),
        blocking_weight=schema.number(c, "blocking_weight", where, 0.0, 1.0, default=1.0),
        voice=schema.texts(c, "voice", where),
        unlock=schema.texts(c, "unlock", where),
        unlock_cues=schema.patterns(c, "unlock_cues", where),
        anti=schema.texts(c, "anti", where),
        anti_cues=schema.patterns(c, "anti_cues", where),
        ack_partial=schema.texts(c, "ack_partial", where),
        ack_resolved=schema.texts(c, "ack_resolved", where),
        belief_unresolved=schema.text(c, "belief_unresolved", where),
        belief_resolved=schema.text(c, "belief_resolved", where),
        desire_unresolved=schema.text(c, "desire_unresolved", where),
        situational=schema.number(c, "situational", where, -1.0, 1.0)
        if "situational" in c
        else None,
        answered_with=schema.texts(c, "answered_with", where, minimum=0, default=[]),
        met_by_ask=schema.boolean(c, "met_by_ask", where, default=False),
        answered_by_meaning=_answered_by_meaning(c, where),
    )


def _answered_by_meaning(c: Mapping[str, Any], where: str) -> bool:
    value = schema.boolean(c, "answered_by_meaning", where, default=False)
    if value and "situational" not in c:
        # Every other concern is read by meaning already; the flag would say nothing.
        raise CardError(
            f"{where}.answered_by_meaning: only a situational concern (one with `situational`) "
            "can set it; the others are read by meaning already"
        )
    return value


def _style(s: Mapping[str, Any], index: int) -> Style:
    style_id = schema.text(s, "id", f"styles[{index}]", empty=False)
    where = f"styles.{style_id}"
    return Style(
        id=style_id,
        tone=schema.text(s, "tone", where, default=""),
        openers=schema.texts(s, "openers", where, default=[""]),
        closers=schema.texts(s, "closers", where, default=[""]),
        lowercase=schema.boolean(s, "lowercase", where, default=False),
        verbosity=schema.number(s, "verbosity", where, 0.0, 10.0, default=1.0),
        sign_offs=schema.texts(s, "sign_offs", where, minimum=0, default=[]),
    )


def _parse(data: Mapping[str, Any], source: str) -> TaskCard:
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version != SCHEMA_VERSION:
        raise CardError(f"schema_version must be {SCHEMA_VERSION}, got {version!r}")
    task = schema.table(data, "task", "")
    task_id = schema.text(task, "id", "task", empty=False)
    judge = schema.table(schema.table(data, "judge", ""), "success", "judge")
    strategies = tuple(_strategy(s, i) for i, s in enumerate(schema.tables(data, "strategies", "")))
    if not strategies:
        raise CardError("strategies: expected at least one [[strategies]]")
    _unique([s.name for s in strategies], "strategies")
    concerns = tuple(_concern(c, i) for i, c in enumerate(schema.tables(data, "concerns", "")))
    _unique([c.id for c in concerns], "concerns")
    known = {c.id for c in concerns}
    links = [(f"strategies.{s.name}.addresses", s.addresses, known) for s in strategies]
    links += [(f"concerns.{c.id}.answered_with", c.answered_with, known - {c.id}) for c in concerns]
    for where, ids, allowed in links:
        if unknown := set(ids) - allowed:
            raise CardError(f"{where}: unknown concerns {unknown}")
    replies_table = schema.table(data, "replies", "")
    # The required kinds, then any further ones (kept for task-specific user models).
    kinds = dict.fromkeys([*REQUIRED_REPLIES, *(str(key) for key in replies_table)])
    replies = {key: schema.texts(replies_table, key, "replies") for key in kinds}
    styles = tuple(_style(s, i) for i, s in enumerate(schema.tables(data, "styles", "")))
    if not styles:
        raise CardError("styles: expected at least one [[styles]]")
    _unique([s.id for s in styles], "styles")
    personas = _persona_ingredients(schema.table(data, "personas", ""))
    mind_table = schema.table(data, "mind", "")
    mind = {key: schema.text(mind_table, key, "mind") for key in REQUIRED_MIND}
    cues_table = schema.table(data, "cues", "", default={})
    cues = {str(key): schema.patterns(cues_table, key, "cues") for key in cues_table}
    schema.check_extra_sections(data)
    success_judge = parse_success_judge(judge)
    user_role = schema.text(task, "user_role", "task", empty=False)
    return TaskCard(
        id=task_id,
        title=schema.text(task, "title", "task", default=task_id),
        description=schema.text(task, "description", "task"),
        system_role=schema.text(task, "system_role", "task", empty=False),
        user_role=user_role,
        goal=schema.text(task, "goal", "task"),
        user_goal=schema.text(task, "user_goal", "task", default=""),
        max_exchanges=schema.integer(task, "max_exchanges", "task", 1, schema.MAX_EXCHANGES, 8),
        domain=schema.texts(task, "domain", "task"),
        target=_target(schema.table(data, "target", "")),
        success_judge=success_judge,
        cues=cues,
        strategies=strategies,
        concerns=concerns,
        replies=replies,
        styles=styles,
        personas=personas,
        mind=mind,
        source=source,
        user_model=schema.text(task, "user_model", "task", default="cognitive", empty=False),
        decision_trigger=schema.choice(task, "decision_trigger", "task", ("ask", "any"), "ask"),
        extra={k: v for k, v in data.items() if k not in _SECTIONS},
        catalog=sections.parse_catalog(data),
        corpus=sections.parse_corpus(data, tuple(s.name for s in strategies)),
        agent_family=sections.parse_agent_family(data),
        prompts=sections.parse_prompt_wording(data, success_judge.labels, user_role),
        brief=sections.parse_brief(data),
        plugin=sections.parse_plugin(data),
    )


def parse_card(data: Mapping[str, Any], source: str = "<memory>") -> TaskCard:
    """Validates a parsed TOML mapping field by field (:mod:`dialogue_gym.cards.schema`).

    Raises:
        CardError: ``"<source>: <field>: <problem>"``, naming the file and the offending field.
    """
    if not isinstance(data, Mapping):
        raise CardError(f"{source}: expected a table of sections, got {type(data).__name__}")
    try:
        return _parse(data, source)
    except CardError as exc:
        raise CardError(f"{source}: {exc}") from None
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        # A safety net: every field is checked above, so this names a gap in the checks.
        raise CardError(f"{source}: invalid card ({type(exc).__name__}: {exc})") from exc


def builtin_cards() -> list[str]:
    """Names of the cards shipped with the package (file stems, e.g. ``"p4g"``)."""
    root = resources.files("dialogue_gym.catalog")
    return sorted(p.name[: -len(".toml")] for p in root.iterdir() if p.name.endswith(".toml"))


_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]*$")


@dataclasses.dataclass(frozen=True)
class CardHeader:
    """What the registry needs of a card, read without validating the rest of it.

    Attributes:
        id: ``task.id`` (the env ids' prefix).
        title: ``task.title``.
        catalog: The ``[catalog]`` section.
        source: The card's name (``"p4g"``) or path, as given.
        plugin: ``task.plugin`` as written (checked when the card loads), or ``None``.
    """

    id: str
    title: str
    catalog: CatalogEntry
    source: str
    plugin: str | None = None


def card_header(name_or_path: str | Path) -> CardHeader:
    """Reads a card's ``[task]`` id and title and its ``[catalog]`` (the TOML is parsed once).

    The registry needs no more; the whole card is validated when an env is made.

    Raises:
        FileNotFoundError: No such card.
        CardError: Invalid TOML, or an invalid id, title or ``[catalog]``.
    """
    data, source = _read(name_or_path)
    try:
        task = schema.table(data, "task", "")
        task_id = schema.text(task, "id", "task", empty=False)
        if not _TASK_ID.match(task_id):
            raise CardError(
                f"task.id: {task_id!r} starts the env ids (<id>-hard-v0): use letters, digits, "
                "'_' and '.' only, starting with a letter or digit"
            )
        title = schema.text(task, "title", "task", default=task_id)
        plugin = task["plugin"] if isinstance(task.get("plugin"), str) else None
        return CardHeader(task_id, title, sections.parse_catalog(data), str(name_or_path), plugin)
    except CardError as exc:
        raise CardError(f"{source}: {exc}") from None


@functools.lru_cache(maxsize=32)
def load_card(name_or_path: str | Path) -> TaskCard:
    """Loads a shipped card by name (``"p4g"``) or any card file by path.

    Raises:
        FileNotFoundError: No such card, with the names of the shipped ones.
        CardError: The card is invalid.
    """
    data, source = _read(name_or_path)
    return parse_card(data, source=source)


@functools.lru_cache(maxsize=32)
def _read(name_or_path: str | Path) -> tuple[Mapping[str, Any], str]:
    """The parsed TOML of a card (shared by :func:`card_header` and :func:`load_card`)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" and path.exists():
        return _toml(path.read_bytes(), str(path)), str(path)
    resource = resources.files("dialogue_gym.catalog") / f"{str(name_or_path).lower()}.toml"
    if not resource.is_file():
        shipped = ", ".join(builtin_cards())
        raise FileNotFoundError(f"no task card {name_or_path!r}; shipped cards: {shipped}")
    source = f"dialogue_gym.catalog/{resource.name}"
    return _toml(resource.read_bytes(), source), source


def _toml(raw: bytes, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CardError(f"{source}: not UTF-8 text ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CardError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise CardError(f"{source}: invalid TOML: nested too deeply") from None
