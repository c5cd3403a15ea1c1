"""How close ``encoder="static"`` reads real text to MiniLM, on text no fit saw.

The users compare every system turn with their card's concern prototypes and domain sentences
(a concern is addressed at cosine 0.55 on hard users). This script takes real turns of each
corpus's held-out split (``--split``, default ``test``), pairs each with its card's prototypes
and domain sentences, and compares the static encoder's cosines with MiniLM's:

* Spearman ρ of the pair cosines (ranking agreement), for the static encoder with its head
  (the default recipe) and for the bare token mean (``StaticRecipe(head=None)``);
* how many pairs reach 0.55 on MiniLM's scale (the static cosines read through their
  :meth:`~dialogue_gym.mind.static.StaticEncoder.to_reference_cosine` map, as the users read
  them), against MiniLM's count, and how many pairs both put there.

Neither the head nor the map was fitted on corpus text: both are fitted on the shipped cards'
sentences only, so every figure here is out of sample.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/static_fidelity.py --data ../shared/datasets
[--turns 600] [--split test]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dialogue_gym.cards.card import load_card
from dialogue_gym.data import load_corpus
from dialogue_gym.mind.minilm import MiniLMEncoder
from dialogue_gym.mind.static import StaticEncoder, StaticRecipe
from dialogue_gym.validity.stats import spearman

#: Corpus → the card whose prototypes its turns are compared with.
CORPORA = {"p4g": "p4g", "esconv": "esconv", "cb": "cb", "ed": "ed"}
THRESHOLD = 0.55


def corpus_turns(corpus: str, data: Path, split: str, limit: int) -> list[str]:
    """The first ``limit`` turns of three or more words of ``corpus``'s ``split``."""
    turns = [
        turn.text
        for dialogue in load_corpus(corpus, data, split=split)
        for turn in dialogue.turns
        if turn.text and len(turn.text.split()) >= 3
    ]
    return turns[:limit]


def card_targets(card_name: str) -> list[str]:
    """The card's concern prototypes and domain sentences (what a turn is compared with)."""
    card = load_card(card_name)
    return [*(line for concern in card.concerns for line in concern.unlock), *card.domain]


def main(argv: list[str] | None = None) -> int:
    """Prints the table; returns 0 (a measurement, no target)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the shared/datasets folder")
    parser.add_argument("--split", default="test", help="corpus split to read (test)")
    parser.add_argument("--turns", type=int, default=600, help="turns per corpus")
    args = parser.parse_args(argv)

    reference = MiniLMEncoder()
    encoders = {"head": StaticEncoder(), "bare": StaticEncoder(recipe=StaticRecipe(head=None))}
    print(f"static: {encoders['head'].name}; bare: {encoders['bare'].name}")
    header = (
        f"{'corpus':8s} {'pairs':>7s} {'rho head':>9s} {'rho bare':>9s}   "
        f"{'>=0.55 MiniLM':>13s} {'head':>6s} {'both':>6s} {'bare':>6s} {'both':>6s}"
    )
    print(header)
    print("-" * len(header))
    for corpus, card_name in CORPORA.items():
        turns = corpus_turns(corpus, args.data, args.split, args.turns)
        targets = card_targets(card_name)
        expected = (reference.encode(turns) @ reference.encode(targets).T).ravel()
        hit = expected >= THRESHOLD
        cells = []
        for encoder in encoders.values():
            cosines = (encoder.encode(turns) @ encoder.encode(targets).T).ravel()
            mapped = encoder.to_reference_cosine(cosines) >= THRESHOLD
            cells.append(
                (spearman(cosines, expected), int(mapped.sum()), int((mapped & hit).sum()))
            )
        (rho_head, n_head, both_head), (rho_bare, n_bare, both_bare) = cells
        print(
            f"{corpus:8s} {len(expected):7d} {rho_head:9.3f} {rho_bare:9.3f}   "
            f"{int(hit.sum()):13d} {n_head:6d} {both_head:6d} {n_bare:6d} {both_bare:6d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
