"""Which corpus trains which task, and how corpus strategy labels map to card strategies.

Everything here is read from the task card's ``[corpus]`` section
(:mod:`dialogue_gym.cards.sections`): its ``name``, ``train_split``, ``sft_format``,
``planner_format`` and ``label_aliases``. The shipped cards say:

=========  ==============  ==================  ====================  ===================
task       corpus          SFT material         planner labels        default split
=========  ==============  ==================  ====================  ===================
P4G        p4g             ``full`` (1,017)    ``annotated`` (300)    train (80 % by id)
ESConv     esconv          ``hf`` (1,300)      ``hf`` strategies      train (910)
ED         ed              ``intents``         ``intents`` labels     train
CB         cb              ``hf``               ``ppdpp`` acts         **valid** (see below)
Merchant   —               —                   —                      —
Courier    —               —                   —                      —
=========  ==============  ==================  ====================  ===================

The env's held-out episodes come from the *test* split, so training reads the *train* split —
except CB, whose public copies hold no train dialogues (only scenario tables), so its card
trains on the *valid* split. Merchant and Courier have no corpus: SFT fails with a clear error
and the planner trains with PPO only (``--pretrain-epochs 0``).

**Strategy labels → card strategies** (the card's ``[corpus.label_aliases]``; a corpus label
equal to a card strategy name maps to it, compared case-insensitively):

- P4G (annotated ``er_label_1``, 27 labels; the card has 13 strategies): the 13 identical
  names map to themselves; ``ask-donation-amount`` and ``ask-donate-more`` map to
  ``proposition-of-donation``. Unmapped (no card strategy): ``other``, ``acknowledgement``,
  ``thank``, ``praise-user``, ``positive-/neutral-/negative-to-inquiry``, ``closing``,
  ``off-task``, ``confirm-donation``, ``comment-partner``, ``you-are-welcome``.
- ESConv: the 8 strategies are the card's 8 names — all map.
- CB (PPDPP acts): the 11 acts are the card's 11 names — all map (the HF intents do not, so
  the planner reads the ``ppdpp`` format).
- ED (EmpatheticIntents labels): the 8 listener intents are the card's 8 names; the 32
  emotion labels and ``neutral`` are unmapped.

A turn with several labels becomes a soft target spread evenly over its distinct mapped
strategies; a turn with none is skipped. The trainer counts and reports unmapped labels.

The functions take a card or a registered task id (``"P4G"``, looked up with
:func:`dialogue_gym.env.tasks.task_card`). The task-id tables (:data:`TRAIN_SPLITS`, ...) are
views of the registered cards for callers that hold only an id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.sections import CorpusSpec, TaskTable
from dialogue_gym.data import Dialogue, load_corpus
from dialogue_gym.env.tasks import task_card, task_cards
from dialogue_gym.text.prices import offer_in
from dialogue_gym.validity.corpus import outcome_of

__all__ = [
    "LABEL_ALIASES",
    "PLANNER_FORMATS",
    "SFT_FORMATS",
    "TRAIN_SPLITS",
    "LabelMapper",
    "corpus_of",
    "corpus_spec",
    "dialogue_outcome",
    "load_training_dialogues",
    "successful_dialogues",
]


def _card(task: str | TaskCard) -> TaskCard:
    return task if isinstance(task, TaskCard) else task_card(task)


def corpus_spec(task: str | TaskCard) -> CorpusSpec:
    """The ``[corpus]`` section of a task's card.

    Raises:
        ValueError: The task has no corpus (Merchant, Courier, cards without ``[corpus]``).
    """
    card = _card(task)
    if card.corpus is None:
        with_corpus = sorted(t for t, c in task_cards().items() if c.corpus is not None)
        raise ValueError(
            f"task {card.id!r} has no dialogue corpus to learn from (no [corpus] in its card; "
            f"corpora exist for {', '.join(with_corpus)})"
        )
    return card.corpus


def corpus_of(task: str | TaskCard) -> str:
    """The corpus of a task (``P4G`` → ``p4g``).

    Raises:
        ValueError: The task has no corpus (Merchant, Courier, cards without ``[corpus]``).
    """
    return corpus_spec(task).name


def _corpus_table(field: Callable[[CorpusSpec], Any]) -> TaskTable:
    """Task id → one ``[corpus]`` field of each registered card that sets it."""
    return TaskTable(
        lambda card: field(card.corpus) if card.corpus else None, lambda: task_cards().values()
    )


TRAIN_SPLITS: Mapping[str, str] = _corpus_table(lambda corpus: corpus.train_split)
"""Default training split per task (the cards' ``[corpus] train_split``; ``train`` if unset)."""

SFT_FORMATS: Mapping[str, str] = _corpus_table(lambda corpus: corpus.sft_format)
"""Corpus format read for SFT per task (default: the loader's first format found)."""

PLANNER_FORMATS: Mapping[str, str] = _corpus_table(lambda corpus: corpus.planner_format)
"""Corpus format with strategy labels per task (ESConv's default format has them)."""

LABEL_ALIASES: Mapping[str, Mapping[str, str]] = _corpus_table(lambda corpus: corpus.label_aliases)
"""Extra corpus label → card strategy mappings beyond identical names, per task."""


def load_training_dialogues(
    task: str | TaskCard,
    data: str | Path | None,
    split: str | None = None,
    format: str | None = None,
    max_dialogues: int | None = None,
    rng: np.random.Generator | None = None,
) -> list[Dialogue]:
    """Loads a task's training dialogues (with turns).

    Args:
        task: The task card, or a registered task id.
        data: The data root (``None``: ``$DIALOGUE_GYM_DATA``).
        split: The split (default: the card's ``[corpus] train_split``).
        format: The corpus format (default: the loader's choice).
        max_dialogues: Keep a random subset of this many (drawn with ``rng``, kept in corpus
            order).
        rng: Generator for the subset (default: seed 0).

    Returns:
        The dialogues.

    Raises:
        ValueError: No corpus for the task, bad ``max_dialogues``, or the split holds no
            dialogue with turns (e.g. CB's train scenario tables).
        DataNotFoundError: The corpus files are not found.
    """
    card = _card(task)
    corpus = corpus_spec(card)
    split = split or corpus.train_split
    dialogues = [d for d in load_corpus(corpus.name, data, split=split, format=format) if d.turns]
    if not dialogues:
        hint = ""
        if split != corpus.train_split:
            hint = (
                f" ({card.id} trains on its {corpus.train_split} split, as its card says: use "
                f"--split {corpus.train_split})"
            )
        raise ValueError(f"the {corpus.name} {split} split holds no dialogues with turns{hint}")
    if max_dialogues is not None:
        if max_dialogues < 1:
            raise ValueError(f"max_dialogues must be >= 1, got {max_dialogues}")
        if max_dialogues < len(dialogues):
            generator = rng if rng is not None else np.random.default_rng(0)
            keep = np.sort(generator.choice(len(dialogues), size=max_dialogues, replace=False))
            dialogues = [dialogues[int(i)] for i in keep]
    return dialogues


def dialogue_outcome(dialogue: Dialogue) -> bool | None:
    """Whether a corpus dialogue succeeded, where the corpus records its outcome.

    The task plug-in's reading of the real outcome
    (:func:`dialogue_gym.validity.corpus.outcome_of`, the validity benchmark's truth): P4G, the
    persuadee donated; ESConv, the seeker's post-chat emotion intensity fell. CB asks more of a
    deal: one at or under the buyer's target (``situation["buyer_target"]``); the PPDPP copy
    records no deal price, so it is read from the text: the last price named before the first
    ``agree`` act (no ``agree``: no deal, ``False``). ``None`` where nothing is recorded: ED (no
    outcome at all), an ESConv dialogue without a survey, a CB one without a target or with an
    agree before any price.
    """
    if dialogue.corpus == "cb":
        return _deal_within_target(dialogue)
    outcome = outcome_of(dialogue)
    return None if outcome is None else outcome.success


def _deal_within_target(dialogue: Dialogue) -> bool | None:
    """CB: whether the dialogue's deal is at or under the buyer's target (see above)."""
    try:
        listing = float(dialogue.situation["listing_price"])
        target = float(dialogue.situation["buyer_target"])
    except (KeyError, TypeError, ValueError):
        return None
    price = None
    for turn in dialogue.turns:
        if "agree" in turn.acts:
            return None if price is None else price <= target
        named = offer_in(turn.text, reference=listing)
        price = named if named is not None else price
    return False


def successful_dialogues(dialogues: Sequence[Dialogue]) -> list[Dialogue]:
    """The dialogues whose recorded outcome is a success (filtered behaviour cloning).

    Raises:
        ValueError: No dialogue records an outcome (ED): there is nothing to filter by.
    """
    outcomes = [dialogue_outcome(d) for d in dialogues]
    if all(o is None for o in outcomes):
        corpus = dialogues[0].corpus if dialogues else "the"
        raise ValueError(f"{corpus} corpus dialogues record no outcome to keep the successes of")
    return [d for d, o in zip(dialogues, outcomes, strict=True) if o]


class LabelMapper:
    """Maps a turn's corpus labels to a distribution over the card's strategies.

    Args:
        card: The task card.
        aliases: Extra label → strategy name mappings (default: the card's
            ``[corpus.label_aliases]``).

    Raises:
        ValueError: An alias names a strategy the card lacks.
    """

    def __init__(self, card: TaskCard, aliases: Mapping[str, str] | None = None) -> None:
        names = tuple(card.strategy_names)
        self.card = card
        self.index = {name.lower(): i for i, name in enumerate(names)}
        for label, target in (
            aliases if aliases is not None else (card.corpus.label_aliases if card.corpus else {})
        ).items():
            if target not in names:
                raise ValueError(f"label alias {label!r} → {target!r}: no such strategy")
            self.index[label.lower()] = names.index(target)
        self.mapped: Counter[str] = Counter()
        self.unmapped: Counter[str] = Counter()

    def __call__(self, labels: Sequence[str]) -> np.ndarray | None:
        """The soft target of one turn's labels, or ``None`` when none maps (counted)."""
        hits: list[int] = []
        for label in labels:
            index = self.index.get(label.strip().lower())
            if index is None:
                self.unmapped[label] += 1
                continue
            self.mapped[label] += 1
            if index not in hits:
                hits.append(index)
        if not hits:
            return None
        target = np.zeros(len(self.card.strategies), dtype=np.float32)
        target[hits] = 1.0 / len(hits)
        return target

    def report(self) -> dict[str, object]:
        """Counts of mapped and unmapped labels (for logs and the checkpoint manifest)."""
        total = sum(self.mapped.values()) + sum(self.unmapped.values())
        return {
            "labels": total,
            "mapped": sum(self.mapped.values()),
            "unmapped": sum(self.unmapped.values()),
            "unmapped_by_label": dict(self.unmapped.most_common()),
        }
