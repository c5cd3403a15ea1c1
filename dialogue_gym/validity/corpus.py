"""What the validity benchmark reads from a real dialogue: its outcome and its exchanges.

Real outcomes (:func:`outcome_of`) are the task's own: the plug-in of the card whose
``[corpus] name`` the dialogue comes from says what its participants reached
(:meth:`dialogue_gym.cards.task_plugin.TaskPlugin.real_outcome`; P4G: the donation, ESConv: the fall
of the seeker's emotion intensity, CraigslistBargain: a deal and its utility — see
:mod:`dialogue_gym.plugins.p4g`, :mod:`dialogue_gym.plugins.esconv`,
:mod:`dialogue_gym.plugins.cb`); a corpus without one has no outcome.

Exchanges (:func:`exchanges_of`): consecutive turns of one side are joined; user turns before
the first system turn are dropped (the simulated user speaks only in reply); a last system
turn without a reply gets an empty one. CraigslistBargain's non-verbal events become short
texts: an offer ``"I offer $X."``, an accept ``"Deal: I accept $X."`` (the price of the offer
it accepts), ``"I reject that offer."`` and ``"I'm done, no deal."``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dialogue_gym.cards.task_plugin import plugin_for_corpus
from dialogue_gym.data import Dialogue, load_corpus
from dialogue_gym.data.errors import DataNotFoundError
from dialogue_gym.text.prices import format_price
from dialogue_gym.types import Outcome

__all__ = [
    "FAILED",
    "Outcome",
    "exchange_acts",
    "exchanges_of",
    "load_held_out",
    "load_train",
    "outcome_of",
    "parse_splits",
    "side_text",
]

FAILED = "failed"
"""Split token for ``FailedESConv.json`` (ESConv's original-schema negatives)."""

_EVENTS = {"offer", "accept", "reject", "quit"}


def outcome_of(dialogue: Dialogue) -> Outcome | None:
    """The real outcome of a dialogue (see the module docstring); ``None`` when unknown."""
    return plugin_for_corpus(dialogue.corpus).real_outcome(dialogue)


def _blocks(dialogue: Dialogue) -> list[tuple[str, list[str], set[str]]]:
    """The dialogue as alternating ``(role, texts, acts)`` blocks, from its first system turn."""
    prices = dialogue.situation.get("turn_prices") or (None,) * len(dialogue.turns)
    blocks: list[tuple[str, list[str], set[str]]] = []
    offer: float | None = None
    for turn, price in zip(dialogue.turns, prices, strict=False):
        text = turn.text
        if not text and turn.act in _EVENTS:
            if turn.act == "offer":
                offer = price
                text = (
                    f"I offer {format_price(price)}." if price is not None else "I make an offer."
                )
            elif turn.act == "accept":
                text = f"Deal: I accept {format_price(offer)}." if offer is not None else "Deal."
            elif turn.act == "reject":
                text = "I reject that offer."
            else:
                text = "I'm done, no deal."
        if not text:
            continue
        if blocks and blocks[-1][0] == turn.role:
            blocks[-1][1].append(text)
            blocks[-1][2].update(turn.acts)
        else:
            blocks.append((turn.role, [text], set(turn.acts)))
    while blocks and blocks[0][0] == "user":
        blocks.pop(0)
    return blocks


def exchanges_of(dialogue: Dialogue) -> list[tuple[str, str]]:
    """The dialogue as ``(system text, user text)`` exchanges (see the module docstring)."""
    blocks = _blocks(dialogue)
    exchanges = []
    for i in range(0, len(blocks), 2):
        system = " ".join(blocks[i][1])
        user = " ".join(blocks[i + 1][1]) if i + 1 < len(blocks) else ""
        exchanges.append((system, user))
    return exchanges


def exchange_acts(dialogue: Dialogue) -> list[frozenset[str]]:
    """The corpus labels of each exchange's system turns, parallel to :func:`exchanges_of`.

    An exchange whose system turns carry no label gets an empty set.
    """
    return [frozenset(acts) for role, _, acts in _blocks(dialogue) if role == "system"]


def side_text(exchanges: Sequence[tuple[str, str]], side: str, limit: int | None = None) -> str:
    """The text of one side (``"system"`` or ``"user"``) of the first ``limit`` exchanges."""
    index = 0 if side == "system" else 1
    return "\n".join(pair[index] for pair in exchanges[:limit])


def parse_splits(spec: str | Sequence[str]) -> tuple[str, ...]:
    """``"valid,test,failed"`` → ``("valid", "test", "failed")``.

    Raises:
        ValueError: No split, or ``train`` (never held out).
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    splits = tuple(dict.fromkeys(s.strip().lower() for s in items if s.strip()))
    if not splits:
        raise ValueError("--split: name at least one held-out split (test, valid, failed)")
    if "train" in splits:
        raise ValueError("--split: train is never held out (the text reference is fitted on it)")
    return splits


def load_held_out(corpus: str, data: str | Path | None, splits: Sequence[str]) -> list[Dialogue]:
    """The held-out dialogues of ``splits``.

    A split the loader does not name comes from the task's plug-in
    (:meth:`~dialogue_gym.cards.task_plugin.TaskPlugin.held_out_split`; ``failed``: ESConv's
    ``FailedESConv.json``).

    Raises:
        DataNotFoundError: No files (or no dialogues) of a split.
        ValueError: ``failed`` for a corpus whose plug-in has no such split.
    """
    plugin = plugin_for_corpus(corpus)
    dialogues: list[Dialogue] = []
    for split in splits:
        special = plugin.held_out_split(corpus, split, data)
        if special is not None:
            dialogues += special
        elif split == FAILED:
            raise ValueError(f"the {FAILED!r} split: {corpus}'s plug-in has no such split")
        else:
            dialogues += load_corpus(corpus, data, split=split)
    seen: set[str] = set()
    unique = []
    for d in dialogues:
        if d.id not in seen:
            seen.add(d.id)
            unique.append(d)
    return unique


def load_train(corpus: str, data: str | Path | None) -> list[Dialogue]:
    """The train split's dialogues with turns (empty when the corpus has none here)."""
    try:
        return [d for d in load_corpus(corpus, data, split="train") if d.turns]
    except DataNotFoundError:
        return []
