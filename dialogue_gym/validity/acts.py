"""The act-only reference: what the system's acts alone say about the real outcome.

The text-only reference (:mod:`dialogue_gym.validity.reference`) reads every word of the
replayed system turns. Real system turns are answers to the real user, so their words also
carry that user's reactions ("no problem, I understand" after a refusal, "awesome, $2 it is"
after a yes) — something a replay to a *simulated* user cannot legitimately use: the simulated
user did not say those things. What a simulator that reacts to what the system *does* can at
best recover is bounded instead by what the system's acts predict. This reference measures
that: the same bag-of-words model and the same fit (train split, or cross-fitted where the
train split cannot fit one), over the acts of the first ``T`` system turns only:

- where every dialogue (train and held-out) has corpus act labels on its first ``T`` system
  turns (ESConv's supporter strategies, CraigslistBargain's dialogue acts), the **labels**,
  FailedESConv's spellings read through the card's ``[corpus] label_aliases``;
- otherwise, where the card names learned readers of a turn's acts (P4G: ``[corpus]
  appeal_reader`` and ``ask_reader``, fitted on the annotated train dialogues), the acts the
  **readers** find in the text: every appeal read, and ``ask`` where the ask detector fires;
- otherwise there is no act-only reference.

Each system turn also contributes one ``turn`` token, so the model sees how many system turns
of the first ``T`` the dialogue had (a dialogue that ended early is replayed for fewer
exchanges too). docs/validity.md, "What the system's acts alone predict", reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dialogue_gym.data import Dialogue
from dialogue_gym.validity.corpus import exchange_acts, exchanges_of, outcome_of
from dialogue_gym.validity.reference import ReferencePrediction, predict_held_out

__all__ = ["ASK", "TURN", "act_reader", "act_rows", "act_source", "act_tokens", "predict_acts"]

ASK = "ask"
"""The act the learned ask detector reads (a turn that asks for the task's goal)."""
TURN = "turn"
"""The token every system turn adds (the dialogue's length within ``T``)."""
_SEPARATOR = "\n"


def act_tokens(document: str) -> list[str]:
    """The tokens of an act document: one per act and one :data:`TURN` per system turn.

    A document holds one line per system turn, its acts separated by ``|``.
    """
    found: list[str] = []
    for line in document.split(_SEPARATOR):
        found.append(TURN)
        found.extend(f"act={act}" for act in line.split("|") if act)
    return found


def _document(turns: Sequence[frozenset[str]]) -> str:
    return _SEPARATOR.join("|".join(sorted(acts)) for acts in turns)


def act_reader(card: Any) -> Callable[[str], frozenset[str]] | None:
    """The card's learned readers of a turn's acts, combined; ``None`` when it names none.

    The reader returns the corpus labels of the appeals the card's appeal reader reads and
    :data:`ASK` where its ask detector fires.
    """
    from dialogue_gym.users.analysis import card_appeal_reader, card_ask_detector

    appeals, asks = card_appeal_reader(card), card_ask_detector(card)
    if appeals is None and asks is None:
        return None

    def read(text: str) -> frozenset[str]:
        found = set(appeals(text)) if appeals is not None else set()
        if asks is not None and asks(text):
            found.add(ASK)
        return frozenset(found)

    return read


def _labelled_acts(card: Any, dialogue: Dialogue, budget: int) -> list[frozenset[str]] | None:
    """The corpus labels of the first ``budget`` system turns, or ``None`` if none has one."""
    aliases = card.corpus.label_aliases if card.corpus is not None else {}
    turns = [frozenset(aliases.get(a, a) for a in acts) for acts in exchange_acts(dialogue)]
    turns = turns[:budget]
    return turns if any(turns) else None


def act_source(card: Any, dialogues: Sequence[Dialogue], budget: int) -> str | None:
    """Where the act-only reference takes the acts of ``dialogues`` from (module docstring).

    Returns:
        ``"labels"``, ``"readers"`` or ``None`` (no act-only reference).
    """
    if dialogues and all(_labelled_acts(card, d, budget) is not None for d in dialogues):
        return "labels"
    if act_reader(card) is not None:
        return "readers"
    return None


def act_rows(
    card: Any, dialogues: Sequence[Dialogue], budget: int, source: str
) -> list[tuple[str, str, bool]]:
    """``(id, act document, real success)`` of the dialogues with a known outcome.

    Args:
        card: The task card (its aliases and readers).
        dialogues: The dialogues.
        budget: The number of system turns read (the env's ``T``).
        source: ``"labels"`` or ``"readers"`` (:func:`act_source`).

    Raises:
        ValueError: Unknown ``source``, or ``"readers"`` for a card without readers.
    """
    if source not in ("labels", "readers"):
        raise ValueError(f"act source must be 'labels' or 'readers', got {source!r}")
    reader = act_reader(card) if source == "readers" else None
    if source == "readers" and reader is None:
        raise ValueError(f"card {card.id!r} names no learned act readers")
    rows = []
    for dialogue in dialogues:
        outcome = outcome_of(dialogue)
        exchanges = exchanges_of(dialogue)[:budget]
        if outcome is None or not exchanges:
            continue
        if reader is not None:
            turns = [reader(system) for system, _ in exchanges]
        else:
            turns = _labelled_acts(card, dialogue, budget) or []
        rows.append((dialogue.id, _document(turns), outcome.success))
    return rows


def predict_acts(
    card: Any, train: Sequence[Dialogue], held_out: Sequence[Dialogue], budget: int
) -> tuple[str | None, dict[str, ReferencePrediction]]:
    """The act-only reference's predictions for ``held_out``, and where its acts came from.

    Fitted like the text reference (:func:`~dialogue_gym.validity.reference.predict_held_out`:
    on the train split, else cross-fitted; never on the dialogue predicted).

    Returns:
        ``(source, {held-out id: prediction})``; ``(None, {})`` when the card's dialogues have
        neither act labels nor learned readers.

    Raises:
        ValueError: A dialogue is in both sets.
    """
    known = [d for d in (*train, *held_out) if outcome_of(d) is not None and exchanges_of(d)]
    source = act_source(card, known, budget)
    if source is None:
        return None, {}
    predictions = predict_held_out(
        act_rows(card, train, budget, source),
        act_rows(card, held_out, budget, source),
        tokenizer=act_tokens,
    )
    return source, predictions
