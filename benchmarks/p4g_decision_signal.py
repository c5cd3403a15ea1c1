"""What predicts who donated in P4G: the person's survey, or what the persuader did?

Issue 15 asks for decision dynamics fitted to real outcomes. Before fitting what a persuader's
turns do to a simulated persuadee, this script measures how much the turns say about the real
donation at all, on the FullData **train** split only (five folds by id hash, out-of-fold AUC):

* **survey** — the ``p4g-persona`` fit (:mod:`dialogue_gym.plugins.p4g.persona`),
  refitted inside each fold;
* **persuader turns** — the first ``T`` persuader turns as the embedded users perceive them
  (:meth:`~dialogue_gym.users.analysis.UtteranceAnalyzer.perceive`, MiniLM, with the card's
  shipped readers): asks read (card cues or the learned detector), the exchange of the first
  ask, and the number of turns making each card strategy the appeal readers read;
* **both** — the survey propensity's logit beside the persuader features.

It also prints each persuader feature's mean for donors and non-donors; the out-of-fold AUC of
the validator's text-only reference (:class:`~dialogue_gym.validity.reference.BagOfWords`) on
the persuader's *words* of the first 1, 2, 4 and 8 turns, with its heaviest words: the words
answer the real persuadee ("no problem", "awesome"), so they gain signal turn by turn where
the acts do not; and what a *judge* of
the persuadee's stated intention could reach at best: on the annotated train dialogues, the
annotators' intended donation (``B5`` > 0; none recorded counts as none stated) against the
real donation (AUC with a bootstrap 95 % interval) — people who say they will give do not all
give. No held-out dialogue is read. ::

    OMP_NUM_THREADS=1 python benchmarks/p4g_decision_signal.py --data ../shared/datasets
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

FOLDS = 5
T = 8


def _default_data() -> Path:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _split_standardized(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both sets standardized by the train set's means and deviations."""
    from dialogue_gym.plugins.p4g.persona import standardized

    mean, scale = train.mean(axis=0), train.std(axis=0) + 1e-9
    return standardized(train, mean, scale), standardized(test, mean, scale)


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the out-of-fold AUCs and the persuader features by outcome."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=_default_data(), help="data root")
    parser.add_argument("--encoder", default="minilm", help="encoder the users perceive with")
    args = parser.parse_args(argv)
    try:  # one torch thread: small batches on shared cores
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - the hashing encoder needs no torch
        pass

    from dialogue_gym.calibration import fit
    from dialogue_gym.cards.card import load_card
    from dialogue_gym.data import load_corpus
    from dialogue_gym.mind.encoders import make_encoder
    from dialogue_gym.plugins.p4g.persona import (
        TABLE,
        DonorPropensity,
        donated,
        logistic_regression,
    )
    from dialogue_gym.users.analysis import UtteranceAnalyzer
    from dialogue_gym.validity.corpus import exchanges_of
    from dialogue_gym.validity.stats import auc

    card = load_card("p4g")
    analyzer = UtteranceAnalyzer.for_user(card, make_encoder(args.encoder))
    strategies = [s.name for s in card.strategies if s.addresses]
    train = [
        d
        for d in load_corpus("p4g", args.data, split="train")
        if donated(d.profile) is not None and exchanges_of(d)
    ]
    names = ["asks read", "first ask at", *strategies]
    features, labels = [], []
    for dialogue in train:
        seen = [analyzer.perceive(system) for system, _ in exchanges_of(dialogue)[:T]]
        first = next((i + 1 for i, p in enumerate(seen) if p.ask), T + 1)
        made = [sum(name in p.appeals for p in seen) for name in strategies]
        features.append([sum(p.ask for p in seen), first, *made])
        labels.append(float(bool(donated(dialogue.profile))))
    x, y = np.asarray(features, dtype=float), np.asarray(labels)
    fold = np.array([int(hashlib.sha256(d.id.encode()).hexdigest()[:8], 16) % FOLDS for d in train])
    scores = {name: np.zeros(len(y)) for name in ("survey", "persuader turns", "both")}
    for k in range(FOLDS):
        inside, outside = fold != k, fold == k
        model = DonorPropensity(fit(TABLE, [d for d, i in zip(train, inside, strict=True) if i]))
        propensity = np.array([model.probability(d.profile) or 0.5 for d in train])
        logit = np.log(propensity / (1 - propensity))[:, None]
        scores["survey"][outside] = logit[outside, 0]
        for name, columns in (("persuader turns", x), ("both", np.hstack([logit, x]))):
            z_in, z_out = _split_standardized(columns[inside], columns[outside])
            w = logistic_regression(z_in, y[inside], l2=1.0, steps=30)
            scores[name][outside] = np.column_stack([np.ones(len(z_out)), z_out]) @ w
    print(
        f"P4G FullData train: {len(y)} persuadees, {int(y.sum())} donated; "
        f"{FOLDS}-fold out-of-fold AUC for donated (first {T} persuader turns)"
    )
    for name, score in scores.items():
        print(f"  {name:<16} {auc(score, y.astype(bool)):.3f}")
    print(f"persuader features (mean per dialogue, first {T} turns): donors / non-donors")
    for index, name in enumerate(names):
        column = x[:, index]
        print(f"  {name:<22} {column[y == 1].mean():.2f} / {column[y == 0].mean():.2f}")
    _persuader_words(train, y, fold)
    _stated_intention(args.data)
    return 0


def _persuader_words(train: Sequence[Any], y: np.ndarray, fold: np.ndarray) -> None:
    """Prints the text reference's out-of-fold AUC on the first k persuader turns' words."""
    from dialogue_gym.validity.corpus import exchanges_of, side_text
    from dialogue_gym.validity.reference import BagOfWords
    from dialogue_gym.validity.stats import auc

    labels = y.astype(bool)
    exchanges = [exchanges_of(d) for d in train]
    print("persuader words (text-only reference), out-of-fold AUC by turns read:")
    for turns in (1, 2, 4, T):
        texts = [side_text(e, "system", turns) for e in exchanges]
        score = np.zeros(len(y))
        for k in range(FOLDS):
            inside = [t for t, f in zip(texts, fold, strict=True) if f != k]
            outside = [t for t, f in zip(texts, fold, strict=True) if f == k]
            model = BagOfWords().fit(inside, labels[fold != k].tolist())
            score[fold == k] = model.predict(outside)
        print(f"  first {turns} turns   {auc(score, labels):.3f}")
    model = BagOfWords().fit([side_text(e, "system", T) for e in exchanges], labels)
    words = sorted(model.vocabulary, key=lambda w: model.weights[model.vocabulary[w]])
    print(f"  heaviest words for donated:     {', '.join(reversed(words[-12:]))}")
    print(f"  heaviest words for not donated: {', '.join(words[:12])}")


def _stated_intention(data: Path) -> None:
    """Prints how well the annotated stated intention tells who really donated (train)."""
    from dialogue_gym.data import load_corpus
    from dialogue_gym.plugins.p4g.persona import donated
    from dialogue_gym.validity.stats import auc, bootstrap_cell

    annotated = [
        d
        for d in load_corpus("p4g", data, split="train", format="annotated")
        if donated(d.profile) is not None
    ]
    stated = np.array([(d.profile.get("intended_donation") or 0.0) > 0 for d in annotated])
    gave = np.array([bool(donated(d.profile)) for d in annotated])
    cell = bootstrap_cell(lambda s, y: auc(s, y.astype(bool)), stated, gave, seed=0)
    print(
        f"stated intention (annotated B5 > 0) -> donated, {len(gave)} annotated train "
        f"dialogues: AUC {cell.format()}; stated and gave {int((stated & gave).sum())}, "
        f"stated and did not {int((stated & ~gave).sum())}, gave unstated "
        f"{int((~stated & gave).sum())}, neither {int((~stated & ~gave).sum())}"
    )


if __name__ == "__main__":
    sys.exit(main())
