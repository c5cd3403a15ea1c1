"""How long to train the static encoder's head: leave-one-card-out cross-validation.

The head (:mod:`dialogue_gym.mind.static_head`) learns to put the static table's pooled tokens
where MiniLM puts the shipped cards' sentences. Trained longer, it copies those sentences more
closely and reads new text worse. This script chooses the training length on card text
alone: for each shipped card in turn, it trains the head on the other cards' sentences and
measures, on the held-out card, how well the head's cosines of every pair of that card's
sentences rank like MiniLM's (Spearman ρ). It also prints the in-sample ρ (trained and
measured on every card), which only grows with training.

Nothing here reads a corpus, an agent, an episode or an outcome, so the choice cannot be
tuned to a benchmark. ``benchmarks/static_fidelity.py`` then measures the chosen head on real
corpus turns.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/static_head_cv.py [--epochs 30 60 100 300]``
(about 5 min on one core; it builds the bare static table once if it is not cached).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from dialogue_gym.mind.cosine_scale import calibration_texts
from dialogue_gym.mind.minilm import MiniLMEncoder
from dialogue_gym.mind.minilm_assets import normalize_rows
from dialogue_gym.mind.static import DEFAULT_HEAD, StaticEncoder, StaticRecipe
from dialogue_gym.mind.static_head import HeadConfig, apply_head, fit_head, pooled_features
from dialogue_gym.validity.stats import spearman


def pair_rho(head: dict[str, np.ndarray], features: np.ndarray, targets: np.ndarray) -> float:
    """Spearman ρ of the head's pair cosines against the targets' over every pair of rows."""
    out, ref = normalize_rows(apply_head(head, features)), normalize_rows(targets)
    upper = np.triu_indices(len(ref), k=1)
    return spearman((out @ out.T)[upper], (ref @ ref.T)[upper])


def cross_validate(
    config: HeadConfig,
    features: np.ndarray,
    targets: np.ndarray,
    cards: Sequence[np.ndarray],
) -> tuple[float, list[float]]:
    """In-sample ρ (pairs within each card, head trained on all) and per held-out card ρ."""
    head = fit_head(features, targets, config)
    inside = float(np.mean([pair_rho(head, features[rows], targets[rows]) for rows in cards]))
    held_out = []
    for rows in cards:
        train = np.setdiff1d(np.arange(len(features)), rows)
        head = fit_head(features[train], targets[train], config)
        held_out.append(pair_rho(head, features[rows], targets[rows]))
    return inside, held_out


def main(argv: list[str] | None = None) -> int:
    """Prints the table; returns 0 (a measurement, no target)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--epochs", type=int, nargs="+", default=[30, 60, 100, 300], help="lengths to compare"
    )
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.epochs):
        parser.error("--epochs must be positive")
    import torch

    torch.set_num_threads(1)  # as the builder trains it: the same sums on every machine

    # The bare table: the head reads its rows, so it is the same whatever the head.
    bare = StaticEncoder(recipe=StaticRecipe(head=None))
    table = np.load(bare.path / "embeddings.npy", allow_pickle=False).astype(np.float32)
    groups = calibration_texts()
    texts = list(dict.fromkeys(text for group in groups for text in group))
    index = {text: i for i, text in enumerate(texts)}
    cards = [np.asarray(sorted({index[t] for t in group})) for group in groups]
    features = pooled_features(table, [bare.token_ids(text) for text in texts])
    targets = np.asarray(MiniLMEncoder().encode(texts), dtype=np.float32)
    print(f"{len(texts)} card sentences, {len(cards)} cards; default: {DEFAULT_HEAD.epochs} epochs")
    header = f"{'epochs':>6s} {'rho in-sample':>13s} {'rho held-out card':>17s}   per card"
    print(header)
    print("-" * (len(header) + 30))
    for epochs in args.epochs:
        start = time.perf_counter()
        config = dataclasses.replace(DEFAULT_HEAD, epochs=epochs)
        inside, held_out = cross_validate(config, features, targets, cards)
        per_card = " ".join(f"{rho:.2f}" for rho in held_out)
        print(
            f"{epochs:6d} {inside:13.3f} {np.mean(held_out):17.3f}   {per_card}"
            f"  ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
