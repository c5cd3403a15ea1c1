"""Task cards: the environment catalog as data (TOML files in ``envs/``).

A card holds everything task-specific: roles and goal, the target BDI template, the success
judge's label map and threshold, lexical cues, the system strategy set with realizer templates,
the latent-concern library, user reply templates, persona styles and the ingredients of the
project-written persona bank. Cards shipped with the package live in ``dialogue_gym.catalog``
(the repository's ``envs/`` folder); users can load their own with a path.
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

from dialogue_gym.mind.bdi import BDI

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SCHEMA_VERSION = 1
FACETS = ("financial", "psychological", "operational")


class CardError(ValueError):
    """A task card is missing fields or holds invalid values."""


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


@dataclasses.dataclass(frozen=True)
class Style:
    """The persona's external layer: tone and surface wording."""

    id: str
    tone: str
    openers: tuple[str, ...]
    closers: tuple[str, ...]
    lowercase: bool = False
    verbosity: float = 1.0


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
    """

    count: int
    seed: int
    first_names: tuple[str, ...]
    background_templates: tuple[str, ...]
    slots: Mapping[str, tuple[str, ...]]
    ages: tuple[int, int] = (19, 71)


@dataclasses.dataclass(frozen=True)
class SuccessJudgeSpec:
    """Label set, label→reward map, success rule and number of sampled judgments.

    Attributes:
        labels: Label → reward.
        threshold: Success when the mean reward reaches it (rule ``"mean"``); for the deal
            judges (``kind = "deal"``), the buyer-normalized utility a deal must reach.
        n: Number of sampled judgments (votes).
        question: The judge's question (for LLM judges and people).
        kind: Embedded judge implementation: ``"state"`` (reads the user's stance) or
            ``"deal"`` (negotiation: deal detection and price extraction).
        rule: ``"mean"`` (mean reward ≥ threshold) or ``"label"`` (the majority label must be
            ``success_label``; EmpatheticDialogues).
        success_label: The label required by rule ``"label"``.
        decision_labels: Maps the simulator's stances (refused / neutral / positive / agree)
            onto this task's labels (identity when the task uses the stances as labels).
        inclusive: Whether a value exactly *at* ``threshold`` passes (``value >= threshold``,
            the default and the papers' convention) or only one above it (``value >
            threshold``). Card field ``judge.success.inclusive`` (optional, default ``true``);
            the shipped CB card sets ``false``, so a deal at the listing price (utility 0) is
            not a success. Read through :meth:`passes`.
    """

    labels: Mapping[str, float]
    threshold: float
    n: int
    question: str
    kind: str = "state"
    rule: str = "mean"
    success_label: str | None = None
    decision_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    inclusive: bool = True

    def passes(self, value: float, eps: float = 1e-9) -> bool:
        """Whether ``value`` meets the threshold (``>=`` when inclusive, else ``>``)."""
        if self.inclusive:
            return value >= self.threshold - eps
        return value > self.threshold + eps


@dataclasses.dataclass(frozen=True, eq=False)  # identity hash: cards key per-card caches
class TaskCard:
    """Everything task-specific about one dialogue task (see the module docstring).

    Besides the sections named in the module docstring: ``user_model`` names the user
    simulator family (``"cognitive"``; ``"seller"`` for negotiation), ``decision_trigger`` says
    whether the user decides only when the system asks (``"ask"``: persuasion, sales) or on any
    turn (``"any"``: empathy), and ``extra`` keeps any other top-level section of the TOML for
    task-specific components.
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


REQUIRED_MIND = ("desire_open", "refused", "neutral", "positive")
REQUIRED_REPLIES = (
    "greeting",
    "inquiry_open",
    "inquiry_concern",
    "refuse",
    "refuse_concern",
    "neutral",
    "positive",
    "agree",
    "pushback",
    "repetition",
    "offtopic",
    "empty",
)


# Top-level sections the parser reads; any other section is kept in ``TaskCard.extra`` for
# task-specific user models (e.g. a seller's pricing rules).
_SECTIONS = frozenset(
    {"schema_version", "task", "target", "judge", "cues", "strategies", "concerns"}
    | {"replies", "styles", "personas", "mind"}
)


def _choice(table: Mapping[str, Any], key: str, options: tuple[str, ...], default: str) -> str:
    value = table.get(key, default)
    if value not in options:
        raise CardError(f"task.{key} must be one of {options}, got {value!r}")
    return str(value)


def _get(table: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in table:
        raise CardError(f"{where}: missing required key {key!r}")
    return table[key]


def _texts(table: Mapping[str, Any], key: str, where: str, minimum: int = 1) -> tuple[str, ...]:
    value = _get(table, key, where)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CardError(f"{where}.{key}: expected a list of strings")
    if len(value) < minimum:
        raise CardError(f"{where}.{key}: expected at least {minimum} entries, got {len(value)}")
    return tuple(value)


def _patterns(table: Mapping[str, Any], key: str, where: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in _texts(table, key, where, minimum=0) if key in table else ():
        try:
            compiled.append(re.compile(pattern, re.IGNORECASE))
        except re.error as exc:
            raise CardError(f"{where}.{key}: bad regex {pattern!r}: {exc}") from exc
    return tuple(compiled)


# Older cards name three slots with dedicated keys; they map onto generic slots.
_LEGACY_SLOTS = {
    "occupations": "occupation",
    "life_situations": "situation",
    "giving_histories": "history",
}


def _persona_ingredients(p: Mapping[str, Any]) -> PersonaIngredients:
    slots = {slot: _texts(p, key, "personas") for key, slot in _LEGACY_SLOTS.items() if key in p}
    for slot in p.get("slots", {}):
        slots[slot] = _texts(p["slots"], slot, "personas.slots")
    templates = _texts(p, "background_templates", "personas")
    known = {"name", "age", *slots}
    for template in templates:
        used = set(re.findall(r"{(\w+)}", template))
        if used - known:
            raise CardError(f"personas.background_templates: unknown slots {used - known}")
    ages = tuple(int(a) for a in p.get("ages", (19, 71)))
    if len(ages) != 2 or ages[0] > ages[1]:
        raise CardError("personas.ages must be [low, high]")
    return PersonaIngredients(
        count=int(_get(p, "count", "personas")),
        seed=int(_get(p, "seed", "personas")),
        first_names=_texts(p, "first_names", "personas"),
        background_templates=templates,
        slots=slots,
        ages=(ages[0], ages[1]),
    )


def _success_judge(judge: Mapping[str, Any]) -> SuccessJudgeSpec:
    labels = {str(k): float(v) for k, v in _get(judge, "labels", "judge.success").items()}
    rule = judge.get("rule", "mean")
    if rule not in ("mean", "label"):
        raise CardError(f"judge.success.rule must be 'mean' or 'label', got {rule!r}")
    success_label = judge.get("success_label")
    if rule == "label" and success_label not in labels:
        raise CardError("judge.success.rule = 'label' needs a success_label from the labels")
    stances = ("refused", "neutral", "positive", "agree")
    mapping = {str(k): str(v) for k, v in judge.get("decision_labels", {}).items()}
    if not mapping and set(labels) == set(stances):
        mapping = {s: s for s in stances}
    if mapping and (set(mapping) != set(stances) or not set(mapping.values()) <= set(labels)):
        raise CardError(
            f"judge.success.decision_labels must map {stances} onto the labels {sorted(labels)}"
        )
    inclusive = judge.get("inclusive", True)
    if not isinstance(inclusive, bool):
        raise CardError(f"judge.success.inclusive must be true or false, got {inclusive!r}")
    return SuccessJudgeSpec(
        labels=labels,
        threshold=float(judge.get("threshold", 0.5)),
        n=int(judge.get("n", 3)),
        question=judge.get("question", ""),
        kind=judge.get("kind", "state"),
        rule=rule,
        success_label=success_label,
        decision_labels=mapping,
        inclusive=inclusive,
    )


def parse_card(data: Mapping[str, Any], source: str = "<memory>") -> TaskCard:
    """Validates a parsed TOML mapping and builds a :class:`TaskCard`.

    Raises:
        CardError: With the path of the offending key.
    """
    if data.get("schema_version") != SCHEMA_VERSION:
        raise CardError(f"{source}: schema_version must be {SCHEMA_VERSION}")
    task = _get(data, "task", source)
    target = _get(data, "target", source)
    judge = _get(_get(data, "judge", source), "success", f"{source}.judge")
    strategies = tuple(
        Strategy(
            name=_get(s, "name", "strategies"),
            description=s.get("description", ""),
            templates=_texts(s, "templates", f"strategies.{s.get('name')}"),
            addresses=tuple(s.get("addresses", ())),
            asks=bool(s.get("asks", False)),
        )
        for s in _get(data, "strategies", source)
    )
    concerns = []
    for c in _get(data, "concerns", source):
        where = f"concerns.{c.get('id')}"
        facet = _get(c, "facet", where)
        if facet not in FACETS:
            raise CardError(f"{where}.facet: {facet!r} is not one of {FACETS}")
        resistance = int(_get(c, "resistance", where))
        if resistance < 1:
            raise CardError(f"{where}.resistance must be >= 1")
        concerns.append(
            Concern(
                id=_get(c, "id", where),
                facet=facet,
                description=c.get("description", ""),
                resistance=resistance,
                blocking_weight=float(c.get("blocking_weight", 1.0)),
                voice=_texts(c, "voice", where),
                unlock=_texts(c, "unlock", where),
                unlock_cues=_patterns(c, "unlock_cues", where),
                anti=_texts(c, "anti", where),
                anti_cues=_patterns(c, "anti_cues", where),
                ack_partial=_texts(c, "ack_partial", where),
                ack_resolved=_texts(c, "ack_resolved", where),
                belief_unresolved=_get(c, "belief_unresolved", where),
                belief_resolved=_get(c, "belief_resolved", where),
                desire_unresolved=_get(c, "desire_unresolved", where),
                situational=float(c["situational"]) if "situational" in c else None,
            )
        )
    known = {c.id for c in concerns}
    for strategy in strategies:
        unknown = set(strategy.addresses) - known
        if unknown:
            raise CardError(f"strategies.{strategy.name}.addresses: unknown concerns {unknown}")
    replies_table = _get(data, "replies", source)
    replies = {key: _texts(replies_table, key, "replies") for key in REQUIRED_REPLIES}
    # Further reply kinds are kept for task-specific user models.
    replies.update(
        {key: _texts(replies_table, key, "replies") for key in replies_table if key not in replies}
    )
    styles = tuple(
        Style(
            id=_get(s, "id", "styles"),
            tone=s.get("tone", ""),
            openers=tuple(s.get("openers", ("",))),
            closers=tuple(s.get("closers", ("",))),
            lowercase=bool(s.get("lowercase", False)),
            verbosity=float(s.get("verbosity", 1.0)),
        )
        for s in _get(data, "styles", source)
    )
    personas = _persona_ingredients(_get(data, "personas", source))
    mind_table = _get(data, "mind", source)
    mind = {key: str(_get(mind_table, key, "mind")) for key in REQUIRED_MIND}
    cues_table = data.get("cues", {})
    cues = {key: _patterns(cues_table, key, "cues") for key in cues_table}
    max_exchanges = int(task.get("max_exchanges", 8))
    if max_exchanges < 1:
        raise CardError("task.max_exchanges must be >= 1")
    return TaskCard(
        id=_get(task, "id", "task"),
        title=task.get("title", task["id"]),
        description=_get(task, "description", "task"),
        system_role=_get(task, "system_role", "task"),
        user_role=_get(task, "user_role", "task"),
        goal=_get(task, "goal", "task"),
        user_goal=task.get("user_goal", ""),
        max_exchanges=max_exchanges,
        domain=_texts(task, "domain", "task"),
        target=BDI.from_dict(target),
        success_judge=_success_judge(judge),
        cues=cues,
        strategies=strategies,
        concerns=tuple(concerns),
        replies=replies,
        styles=styles,
        personas=personas,
        mind=mind,
        source=source,
        user_model=task.get("user_model", "cognitive"),
        decision_trigger=_choice(task, "decision_trigger", ("ask", "any"), "ask"),
        extra={k: v for k, v in data.items() if k not in _SECTIONS},
    )


def builtin_cards() -> list[str]:
    """Names of the cards shipped with the package (file stems, e.g. ``"p4g"``)."""
    root = resources.files("dialogue_gym.catalog")
    return sorted(p.name[: -len(".toml")] for p in root.iterdir() if p.name.endswith(".toml"))


@functools.lru_cache(maxsize=32)
def load_card(name_or_path: str | Path) -> TaskCard:
    """Loads a shipped card by name (``"p4g"``) or any card file by path.

    Raises:
        FileNotFoundError: No such card, with the names of the shipped ones.
        CardError: The card is invalid.
    """
    path = Path(name_or_path)
    if path.suffix == ".toml" and path.exists():
        return parse_card(tomllib.loads(path.read_text("utf-8")), source=str(path))
    resource = resources.files("dialogue_gym.catalog") / f"{str(name_or_path).lower()}.toml"
    if not resource.is_file():
        raise FileNotFoundError(
            f"no task card {name_or_path!r}; shipped cards: {', '.join(builtin_cards())}"
        )
    return parse_card(
        tomllib.loads(resource.read_text("utf-8")), source=f"dialogue_gym.catalog/{resource.name}"
    )
