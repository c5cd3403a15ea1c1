"""What every SFT method shares: the corpus-side settings and the method record.

Each method (:mod:`~dialogue_gym_agents.sft.retrieval`, :mod:`~dialogue_gym_agents.sft.lora`)
subclasses :class:`SFTConfig` with its own options; :data:`~dialogue_gym_agents.sft.train.
SFT_METHODS` lists them for ``dialogue-gym train sft --method NAME``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from dialogue_gym_agents.common.config import TrainConfig, option

__all__ = ["SFTConfig", "SFTMethod"]


@dataclasses.dataclass
class SFTConfig(TrainConfig):
    """Behaviour cloning from the task's corpus (settings shared by every SFT method)."""

    method: str = option(
        "retrieval",
        "SFT method, each with its own options (see --method NAME --help): retrieval "
        "(nearest-neighbour replies) or lora (LoRA fine-tuning of a causal LM); more register "
        "in dialogue_gym_agents.sft.train.SFT_METHODS",
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
