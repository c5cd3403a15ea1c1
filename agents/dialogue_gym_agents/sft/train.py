"""``dialogue-gym train sft``: behaviour cloning from a task's corpus, for either seat.

Methods (``--method``; each with its own config dataclass and ``--help``):

- ``retrieval`` → an ``sft-retrieval`` checkpoint: nearest-neighbour response retrieval over
  sentence embeddings of the dialogue history (:mod:`dialogue_gym_agents.sft.retrieval`).
- ``lora`` → an ``sft-lora`` checkpoint: LoRA fine-tuning of a causal LM on the seat's turns
  (:mod:`dialogue_gym_agents.sft.lora`; torch, transformers and peft load only when it trains).

A new method is a module with a config (a :class:`~dialogue_gym_agents.sft.config.SFTConfig`
subclass) and a ``train(config) -> Path``, listed in :data:`SFT_METHODS` below: registration is
this table, never an import side effect.

Example::

    dialogue-gym train sft --task P4G --seat system --method retrieval --out runs/sft-p4g
    dialogue-gym eval P4G-hard --agent sft-retrieval:runs/sft-p4g
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from dialogue_gym_agents.common.cli import run_trainer
from dialogue_gym_agents.sft import lora, retrieval
from dialogue_gym_agents.sft.config import SFTMethod

__all__ = ["SFT_METHODS", "main"]


SFT_METHODS: dict[str, SFTMethod] = {
    "retrieval": SFTMethod(retrieval.RetrievalConfig, retrieval.train_retrieval, retrieval.KIND),
    "lora": SFTMethod(lora.LoraSFTConfig, lora.train_lora, lora.KIND),
}
"""SFT method name → how to configure and train it (a new method adds its row here)."""


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
