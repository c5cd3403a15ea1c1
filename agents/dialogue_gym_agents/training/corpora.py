"""Which corpus trains which task, and how corpus strategy labels map to card strategies.

**Task → corpus** (the env's own mapping, ``dialogue_gym.env.CORPORA``):

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
except CB, whose public copies hold no train dialogues (only scenario tables), so CB trains on
its *valid* split. Merchant and Courier have no corpus: SFT fails with a clear error and the
planner trains with PPO only (``--pretrain-epochs 0``).

**Strategy labels → card strategies** (:data:`LABEL_ALIASES`; a corpus label equal to a card
strategy name maps to it, compared case-insensitively):

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.data import Dialogue, load_corpus
from dialogue_gym.env import CORPORA

__all__ = [
    "LABEL_ALIASES",
    "PLANNER_FORMATS",
    "SFT_FORMATS",
    "TRAIN_SPLITS",
    "LabelMapper",
    "corpus_of",
    "load_training_dialogues",
]

TRAIN_SPLITS: Mapping[str, str] = {"CB": "valid"}
"""Default training split per task (``train`` unless listed)."""

SFT_FORMATS: Mapping[str, str] = {"P4G": "full"}
"""Corpus format read for SFT per task (default: the loader's first format found)."""

PLANNER_FORMATS: Mapping[str, str] = {"P4G": "annotated", "CB": "ppdpp", "ED": "intents"}
"""Corpus format with strategy labels per task (ESConv's default format has them)."""

LABEL_ALIASES: Mapping[str, Mapping[str, str]] = {
    "P4G": {
        "ask-donation-amount": "proposition-of-donation",
        "ask-donate-more": "proposition-of-donation",
    },
}
"""Extra corpus label → card strategy mappings beyond identical names."""


def corpus_of(task: str) -> str:
    """The corpus of a task (``P4G`` → ``p4g``).

    Raises:
        ValueError: The task has no corpus (Merchant, Courier, custom cards).
    """
    if task not in CORPORA:
        raise ValueError(
            f"task {task!r} has no dialogue corpus to learn from (corpora exist for "
            f"{', '.join(sorted(CORPORA))})"
        )
    return CORPORA[task]


def load_training_dialogues(
    task: str,
    data: str | Path | None,
    split: str | None = None,
    format: str | None = None,
    max_dialogues: int | None = None,
    rng: np.random.Generator | None = None,
) -> list[Dialogue]:
    """Loads a task's training dialogues (with turns).

    Args:
        task: The task id.
        data: The data root (``None``: ``$DIALOGUE_GYM_DATA``).
        split: The split (default: :data:`TRAIN_SPLITS`, else ``train``).
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
    corpus = corpus_of(task)
    split = split or TRAIN_SPLITS.get(task, "train")
    dialogues = [d for d in load_corpus(corpus, data, split=split, format=format) if d.turns]
    if not dialogues:
        hint = (
            " (CB's public copies have no train dialogues: use --split valid)"
            if task == "CB"
            else ""
        )
        raise ValueError(f"the {corpus} {split} split holds no dialogues with turns{hint}")
    if max_dialogues is not None:
        if max_dialogues < 1:
            raise ValueError(f"max_dialogues must be >= 1, got {max_dialogues}")
        if max_dialogues < len(dialogues):
            generator = rng if rng is not None else np.random.default_rng(0)
            keep = np.sort(generator.choice(len(dialogues), size=max_dialogues, replace=False))
            dialogues = [dialogues[int(i)] for i in keep]
    return dialogues


class LabelMapper:
    """Maps a turn's corpus labels to a distribution over the card's strategies.

    Args:
        card: The task card.
        aliases: Extra label → strategy name mappings (default: :data:`LABEL_ALIASES`).

    Raises:
        ValueError: An alias names a strategy the card lacks.
    """

    def __init__(self, card: TaskCard, aliases: Mapping[str, str] | None = None) -> None:
        names = tuple(card.strategy_names)
        self.card = card
        self.index = {name.lower(): i for i, name in enumerate(names)}
        for label, target in (
            aliases if aliases is not None else LABEL_ALIASES.get(card.id, {})
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
