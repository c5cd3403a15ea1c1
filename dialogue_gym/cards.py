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
    """Inputs of the deterministic persona-bank generator."""

    count: int
    seed: int
    first_names: tuple[str, ...]
    occupations: tuple[str, ...]
    life_situations: tuple[str, ...]
    giving_histories: tuple[str, ...]
    background_templates: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SuccessJudgeSpec:
    """Label set, label→reward map, success threshold and number of sampled judgments."""

    labels: Mapping[str, float]
    threshold: float
    n: int
    question: str


@dataclasses.dataclass(frozen=True, eq=False)  # identity hash: cards key per-card caches
class TaskCard:
    """Everything task-specific about one dialogue task (see the module docstring)."""

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
    labels = {str(k): float(v) for k, v in _get(judge, "labels", "judge.success").items()}
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
            )
        )
    known = {c.id for c in concerns}
    for strategy in strategies:
        unknown = set(strategy.addresses) - known
        if unknown:
            raise CardError(f"strategies.{strategy.name}.addresses: unknown concerns {unknown}")
    replies_table = _get(data, "replies", source)
    replies = {key: _texts(replies_table, key, "replies") for key in REQUIRED_REPLIES}
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
    p = _get(data, "personas", source)
    personas = PersonaIngredients(
        count=int(_get(p, "count", "personas")),
        seed=int(_get(p, "seed", "personas")),
        first_names=_texts(p, "first_names", "personas"),
        occupations=_texts(p, "occupations", "personas"),
        life_situations=_texts(p, "life_situations", "personas"),
        giving_histories=_texts(p, "giving_histories", "personas"),
        background_templates=_texts(p, "background_templates", "personas"),
    )
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
        success_judge=SuccessJudgeSpec(
            labels=labels,
            threshold=float(_get(judge, "threshold", "judge.success")),
            n=int(judge.get("n", 3)),
            question=judge.get("question", ""),
        ),
        cues=cues,
        strategies=strategies,
        concerns=tuple(concerns),
        replies=replies,
        styles=styles,
        personas=personas,
        mind=mind,
        source=source,
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
