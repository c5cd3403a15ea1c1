"""``dialogue-gym train sft``: behaviour cloning from a task's corpus, for either seat.

Methods (``--method``; each with its own config dataclass and ``--help``):

- ``retrieval`` → an ``sft-retrieval`` checkpoint: nearest-neighbour response retrieval over
  sentence embeddings of the dialogue history (:mod:`dialogue_gym_agents.retrieval`).

More methods register in :data:`SFT_METHODS` (``name → SFTMethod(config, train, kind)``), e.g.
LoRA fine-tuning of a causal LM, whose config subclasses :class:`SFTConfig`.

Example::

    dialogue-gym train sft --task P4G --seat system --method retrieval --out runs/sft-p4g
    dialogue-gym eval P4G-hard --agent sft-retrieval:runs/sft-p4g
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from dialogue_gym.cards import load_card
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents import retrieval
from dialogue_gym_agents.training.checkpoint import CheckpointWriter
from dialogue_gym_agents.training.cli import run_trainer
from dialogue_gym_agents.training.config import TrainConfig, config_to_dict, option
from dialogue_gym_agents.training.corpora import (
    SFT_FORMATS,
    TRAIN_SPLITS,
    corpus_of,
    load_training_dialogues,
)
from dialogue_gym_agents.training.seeding import generators
from dialogue_gym_agents.training.tracking import RunLogger

__all__ = ["SFT_METHODS", "RetrievalConfig", "SFTConfig", "SFTMethod", "main", "train_retrieval"]


@dataclasses.dataclass
class SFTConfig(TrainConfig):
    """Behaviour cloning from the task's corpus (settings shared by every SFT method)."""

    method: str = option(
        "retrieval",
        "SFT method, each with its own options (see --method NAME --help): retrieval "
        "(nearest-neighbour replies) or lora (LoRA fine-tuning of a causal LM); more register "
        "in dialogue_gym_agents.training.sft.SFT_METHODS",
    )
    seat: Literal["system", "user"] = option(
        "system", "seat to clone: system (persuader, supporter, ...) or user"
    )
    split: str | None = option(
        None, "corpus split to learn from (default: train; CB: valid, it has no train dialogues)"
    )
    format: str | None = option(None, "corpus format (default: P4G full, else the loader's)")
    max_dialogues: int | None = option(
        None, "learn from a random subset of this many dialogues (default: all)"
    )


@dataclasses.dataclass
class RetrievalConfig(SFTConfig):
    """sft-retrieval: nearest-neighbour response retrieval over history embeddings."""

    context_turns: int = option(3, "history turns embedded into a context key")
    decay: float = option(0.5, "weight factor per turn back in the history, in (0, 1]")
    top_k: int = option(5, "the agent draws among this many best responses (1: greedy)")
    position_weight: float = option(
        0.5, "score penalty per T of difference in the seat's turn position"
    )
    batch_size: int = option(256, "texts per encoder call while indexing")

    def __post_init__(self) -> None:
        retrieval.RetrievalParams(  # validates the scoring parameters early
            context_turns=self.context_turns,
            decay=self.decay,
            top_k=self.top_k,
            position_weight=self.position_weight,
        )
        if self.batch_size < 1:
            raise ValueError(f"--batch-size must be >= 1, got {self.batch_size}")


@dataclasses.dataclass(frozen=True)
class SFTMethod:
    """One SFT method.

    Attributes:
        config: Its config dataclass (a :class:`SFTConfig` subclass).
        train: ``train(config) -> checkpoint folder``.
        kind: The checkpoint kind / agent name that loads the result.
    """

    config: type[SFTConfig]
    train: Callable[[Any], Path]
    kind: str


def train_retrieval(config: RetrievalConfig) -> Path:
    """Builds an ``sft-retrieval`` checkpoint (see :mod:`dialogue_gym_agents.retrieval`).

    Raises:
        ValueError: Unknown task, a task without corpus, bad options, or an existing
            checkpoint at ``out`` without ``overwrite`` (a ``CheckpointError``).
        DataNotFoundError: The corpus is not found under the data root.
    """
    card = load_card(config.task)
    corpus_of(card.id)
    writer = CheckpointWriter(config.out, overwrite=config.overwrite)  # fail before any work
    run = generators(config.seed)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    split = config.split or TRAIN_SPLITS.get(card.id, "train")
    dialogues = load_training_dialogues(
        card.id,
        config.data,
        split=split,
        format=config.format or SFT_FORMATS.get(card.id),
        max_dialogues=config.max_dialogues,
        rng=run.numpy,
    )
    timings["load_s"] = time.perf_counter() - start
    encoder = make_encoder(config.encoder)
    params = retrieval.RetrievalParams(
        context_turns=config.context_turns,
        decay=config.decay,
        top_k=config.top_k,
        position_weight=config.position_weight,
        max_exchanges=card.max_exchanges,
    )
    with writer, RunLogger(writer.path, tensorboard=config.tensorboard) as log:
        start, cpu = time.perf_counter(), time.process_time()
        index = retrieval.build_index(
            dialogues, config.seat, encoder, params, config.batch_size, config.progress
        )
        files = retrieval.save_index(index, writer.path)
        timings["index_s"] = time.perf_counter() - start
        timings["index_cpu_s"] = time.process_time() - cpu
        log.log_dict(
            {"dialogues": len(dialogues), "responses": len(index), **timings}, 0, prefix="sft/"
        )
        log.close()
        return writer.commit(
            retrieval.KIND,
            card,
            config_to_dict(config),
            files,
            info={
                "corpus": corpus_of(card.id),
                "split": split,
                "dialogues": len(dialogues),
                "responses": len(index),
                "dim": int(index.keys.shape[1]),
                "max_exchanges": card.max_exchanges,
                "timings": timings,
            },
        )


SFT_METHODS: dict[str, SFTMethod] = {
    "retrieval": SFTMethod(RetrievalConfig, train_retrieval, retrieval.KIND),
}
"""SFT method name → how to configure and train it."""

# Registers SFT_METHODS["lora"] (torch/transformers/peft load only when it trains).
import dialogue_gym_agents.lm.sft_lora  # noqa: E402, F401


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``dialogue-gym train sft [--method NAME] OPTIONS``: the options depend on the method.

    Returns:
        0 on success (usage errors raise ``SystemExit``/``ValueError``).
    """
    prog = prog or "dialogue-gym train sft"
    argv = list(argv) if argv is not None else None
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--method", default="retrieval")
    known, _ = pre.parse_known_args(argv)
    if known.method not in SFT_METHODS:
        raise ValueError(
            f"unknown SFT method {known.method!r}; available: {', '.join(sorted(SFT_METHODS))}"
        )
    method = SFT_METHODS[known.method]
    return run_trainer(method.config, method.train, argv, prog=f"{prog} --method {known.method}")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
