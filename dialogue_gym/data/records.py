"""Corpus-independent records: :class:`Turn`, :class:`Dialogue` and :class:`EpisodeSeed`.

Every loader maps its corpus onto these records with one role convention: the *system* is the
seat an agent trains in (the one that steers the conversation toward the task goal), the
*user* is the other party.

- P4G: system = persuader (``B4 = 0``, ``er``), user = persuadee (``B4 = 1``, ``ee``).
- ESConv: system = supporter (``sys``, ``supporter``, ``listener``), user = seeker (``usr``,
  ``seeker``, ``speaker``).
- EmpatheticDialogues: system = listener, user = speaker (the first to talk, who shares the
  emotion).
- CraigslistBargain: system = buyer, user = seller.

``profile`` holds attributes of the *user-side* participant (P4G: the persuadee's Big-Five,
moral foundations, Schwartz values, decision style and demographics; CB: the seller's listing
and target); ``situation`` holds the task context (ESConv emotion and problem types and the
seeker's situation; ED emotion and prompt; CB item and prices).

The records are frozen; the ``profile`` and ``situation`` mappings are plain dicts so the
records pickle (vector envs), and must be treated as read-only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ACT_SEPARATOR", "ROLES", "Dialogue", "EpisodeSeed", "Turn", "seeds_from"]

ROLES = ("system", "user")
"""The two seats."""

ACT_SEPARATOR = "+"
"""Joins the distinct labels of a turn whose sentences carry different labels (P4G)."""


@dataclasses.dataclass(frozen=True)
class Turn:
    """One utterance.

    Attributes:
        role: ``"system"`` or ``"user"``.
        text: What was said, stripped of surrounding whitespace. Empty for a non-verbal event
            (a CraigslistBargain offer, accept, reject or quit).
        act: The corpus's strategy or dialogue-act label, when it has one. Where the corpus
            labels sentences (P4G), the distinct labels of the turn's sentences are joined with
            ``"+"`` in order of first appearance (e.g. ``"greeting+source-related-inquiry"``);
            :attr:`acts` splits them again.
    """

    role: str
    text: str
    act: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"Turn.role must be one of {ROLES}, got {self.role!r}")

    @property
    def acts(self) -> tuple[str, ...]:
        """The turn's labels as a tuple (empty when it has none)."""
        return tuple(self.act.split(ACT_SEPARATOR)) if self.act else ()


@dataclasses.dataclass(frozen=True)
class Dialogue:
    """One conversation of a corpus (or a scenario without turns, for CB train scenarios).

    Attributes:
        corpus: ``"p4g"``, ``"esconv"``, ``"ed"`` or ``"cb"``.
        id: Identifier, unique within the corpus and format (the corpus's own id where it has
            one, else ``<format>-<split>-<index>`` from the file position).
        split: ``"train"``, ``"valid"`` or ``"test"``; ``"unsplit"`` where the source has no
            split (the original ESConv schema); ``"unknown"`` where it cannot be told (a file
            whose name names no split, ED per-emotion files read without the split file).
        turns: The utterances in order.
        profile: Attributes of the user-side participant (see the module docstring).
        situation: The task context (see the module docstring).
    """

    corpus: str
    id: str
    split: str
    turns: tuple[Turn, ...]
    profile: Mapping[str, Any]
    situation: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.turns, tuple):
            object.__setattr__(self, "turns", tuple(self.turns))

    @property
    def system_turns(self) -> tuple[Turn, ...]:
        """The system's turns."""
        return tuple(t for t in self.turns if t.role == "system")

    @property
    def user_turns(self) -> tuple[Turn, ...]:
        """The user's turns."""
        return tuple(t for t in self.turns if t.role == "user")


@dataclasses.dataclass(frozen=True)
class EpisodeSeed:
    """What a data-grounded episode starts from.

    Attributes:
        corpus: The source corpus.
        dialogue_id: The source dialogue's id.
        profile: The user-side profile (copied from the dialogue).
        goal: The system's goal for the episode, in words.
        h0: A real opening context (the first turns of the source dialogue); may be empty.
        situation: The task context (copied from the dialogue).
    """

    corpus: str
    dialogue_id: str
    profile: Mapping[str, Any]
    goal: str
    h0: tuple[Turn, ...]
    situation: Mapping[str, Any]


def seeds_from(dialogues: Iterable[Dialogue], goal: str, h0_turns: int = 0) -> list[EpisodeSeed]:
    """Makes one episode seed per dialogue, in the same order.

    Args:
        dialogues: Loaded dialogues (any corpus).
        goal: The system's goal, e.g. the task card's goal text.
        h0_turns: How many opening turns of each dialogue to keep as ``h0`` (0: none). A
            dialogue shorter than that gives all its turns.

    Returns:
        The seeds.

    Raises:
        ValueError: ``h0_turns`` is negative.
    """
    if h0_turns < 0:
        raise ValueError(f"h0_turns must be >= 0, got {h0_turns}")
    return [
        EpisodeSeed(
            corpus=d.corpus,
            dialogue_id=d.id,
            profile=d.profile,
            goal=goal,
            h0=d.turns[:h0_turns],
            situation=d.situation,
        )
        for d in dialogues
    ]
