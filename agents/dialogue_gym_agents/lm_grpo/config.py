"""The ``lm-grpo`` run's settings (``dialogue-gym train lm-grpo --help``)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from dialogue_gym_agents.common.config import TrainConfig, option
from dialogue_gym_agents.common.rl import (
    DEFAULT_GAMMA,
)

__all__ = ["KIND", "LMGRPOConfig"]

KIND = "lm-grpo"
"""The checkpoint kind and agent name."""


@dataclasses.dataclass
class LMGRPOConfig(TrainConfig):
    """lm-grpo: GRPO of LoRA causal-LM policies on the env (system; optionally the user too)."""

    user: str = option("hard", "user preset of the env: hard or soft (the env is TASK-USER)")
    init: str | None = option(
        None,
        "sft-lora checkpoint of the system seat: warm start and KL reference (default: a "
        "fresh adapter on --model)",
    )
    user_init: str | None = option(
        None,
        "sft-lora checkpoint of the user seat: an LM plays the user (self-play) instead of "
        "the env's simulated user",
    )
    alternate: bool = option(
        False, "also update the LM user each iteration, after the system (needs --user-init)"
    )
    model: str = option("smollm2", "base model of a fresh adapter (without --init)")
    iterations: int = option(10, "outer iterations K (rollouts + one GRPO update per seat)")
    group_size: int = option(4, "rollouts per episode seed (one GRPO group)")
    groups: int = option(2, "episode seeds per iteration")
    max_exchanges: int | None = option(None, "exchange budget T of the env (default: the card's)")
    epochs: int = option(1, "GRPO epochs over each iteration's rollouts")
    minibatch_size: int = option(8, "rollout steps per gradient step")
    learning_rate: float = option(1e-5, "AdamW learning rate on the adapter")
    clip: float = option(0.2, "ratio clip epsilon")
    beta: float = option(0.04, "KL coefficient to the reference policy")
    gamma: float = option(DEFAULT_GAMMA, "return discount")
    max_grad_norm: float = option(1.0, "gradient-norm clip (0: off)")
    reference: Literal["copy", "base"] = option(
        "copy",
        "KL reference: copy (frozen copy of the warm-start adapter) or base (adapter disabled: "
        "the base model, = the SFT policy when it was merged into the base)",
    )
    temperature: float = option(0.75, "rollout sampling temperature of the system policy")
    user_temperature: float = option(
        0.9, "rollout temperature of the LM user (the paper's user-simulator temperature)"
    )
    eval_temperature: float = option(
        0.3, "temperature of the trained agent at evaluation (the paper's MASP decoding)"
    )
    max_new_tokens: int = option(64, "longest reply, in tokens")
    max_length: int = option(512, "prompt + reply tokens (the oldest turns are dropped to fit)")
    lora_r: int = option(16, "rank of a fresh adapter (without --init)")
    lora_alpha: float = option(32.0, "alpha of a fresh adapter")
    rollout_backend: str | None = option(
        None,
        "openai:NAME: sample the system's rollouts on an OpenAI-compatible server (vLLM) that "
        "serves the current adapter as NAME (default: local transformers)",
    )
    user_rollout_backend: str | None = option(
        None, "openai:NAME for the LM user's rollouts (default: local transformers)"
    )
    base_url: str | None = option(None, "URL of the rollout server (http://127.0.0.1:8000/v1)")
    sync_adapter: bool = option(
        True, "with --rollout-backend: push each update's adapter to the vLLM server"
    )
    device: str = option("auto", "torch device: auto, cpu, cuda, cuda:1")
    dtype: Literal["float32", "bfloat16", "float16"] = option(
        "float32", "weight dtype (bfloat16 on GPUs)"
    )
    batch_size: int = option(8, "rows per local generate call")

    def __post_init__(self) -> None:
        for flag, value in (
            ("--iterations", self.iterations),
            ("--group-size", self.group_size),
            ("--groups", self.groups),
            ("--epochs", self.epochs),
            ("--minibatch-size", self.minibatch_size),
            ("--max-new-tokens", self.max_new_tokens),
            ("--lora-r", self.lora_r),
            ("--batch-size", self.batch_size),
        ):
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
        if self.group_size < 2:
            raise ValueError("--group-size must be >= 2 (a group of one has no relative advantage)")
        if self.max_length <= self.max_new_tokens + 16:
            raise ValueError("--max-length must leave room for a prompt (> --max-new-tokens + 16)")
        for flag, value in (
            ("--temperature", self.temperature),
            ("--user-temperature", self.user_temperature),
            ("--eval-temperature", self.eval_temperature),
            ("--beta", self.beta),
            ("--max-grad-norm", self.max_grad_norm),
        ):
            if value < 0:
                raise ValueError(f"{flag} must be >= 0, got {value}")
        if self.clip <= 0 or self.learning_rate <= 0:
            raise ValueError("--clip and --learning-rate must be > 0")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"--gamma must be in [0, 1], got {self.gamma}")
        if self.alternate and not self.user_init:
            raise ValueError("--alternate needs --user-init (an LM user to update)")
        for flag, spec in (
            ("--rollout-backend", self.rollout_backend),
            ("--user-rollout-backend", self.user_rollout_backend),
        ):
            if spec is not None:
                if not spec.startswith("openai:") or len(spec) <= len("openai:"):
                    raise ValueError(f"{flag} must be openai:NAME, got {spec!r}")
                if not self.base_url:
                    raise ValueError(f"{flag} needs --base-url (the server's URL)")
