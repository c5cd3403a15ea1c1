"""An LM policy warm-started from an ``sft-lora`` checkpoint, or a fresh adapter.

The first step of every LM trainer (``lm-grpo``, ``masp --policy lm``, ``siavpo --policy lm``):
:func:`check_policy_sources` fails before any work on what :func:`build_policy` would load;
:func:`build_policy` loads it as a trainable :class:`~dialogue_gym_agents.common.lm.policy.
LMPolicy` whose frozen copy is the KL reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    load_checkpoint,
)
from dialogue_gym_agents.common.lm.policy import LMPolicy
from dialogue_gym_agents.common.seeding import derive_seed
from dialogue_gym_agents.sft.lora import ADAPTER_DIR, KIND

__all__ = ["build_policy", "check_policy_sources"]


def _sft_checkpoint(init: str | Path, seat: str, card: Any) -> Any:
    """The ``sft-lora`` checkpoint ``init``, verified, of ``seat``.

    Raises:
        CheckpointError: Missing, corrupt, of another kind/task, or of the other seat.
    """
    ckpt = load_checkpoint(init, kind=KIND, card=card, check_strategies=False)
    trained_seat = str(ckpt.config.get("seat", "system"))
    if trained_seat != seat:
        raise CheckpointMismatchError(
            f"{ckpt.path} clones the {trained_seat} seat, not the {seat} seat"
        )
    return ckpt


def check_policy_sources(
    card: Any, inits: Mapping[str, str | Path | None], model: str, device: str
) -> None:
    """Fails before any work for what :func:`build_policy` would load for these seats.

    Args:
        card: The task card.
        inits: Per seat, its ``sft-lora`` checkpoint, or ``None`` for a fresh adapter on
            ``model``.
        model: The base model of fresh adapters.
        device: The torch device.

    Raises:
        CheckpointError: An unusable checkpoint (missing, corrupt, another kind, task or seat).
        ModelNotFoundError: The base model path does not exist.
        ValueError: An unusable device.
    """
    from dialogue_gym_agents.common.lm import model as lm

    for seat, init in inits.items():
        if init is None:
            lm.check_model(model)
        else:
            _sft_checkpoint(init, seat, card)
    lm.resolve_device(device)


def build_policy(
    *,
    seat: str,
    init: str | Path | None,
    model: str,
    lora_r: int,
    lora_alpha: float,
    seed: int,
    device: str,
    dtype: str,
    card: Any,
    temperature: float,
    max_new_tokens: int,
    reference: Literal["copy", "base"] = "copy",
    backend: Any = None,
    batch_size: int = 8,
) -> tuple[LMPolicy, dict[str, Any]]:
    """An LM policy for ``seat``: from an ``sft-lora`` checkpoint, or a fresh adapter.

    Returns:
        The policy and what it was built from (for the manifest).

    Raises:
        CheckpointError: ``init`` is missing, corrupt, of another kind/task, or of the other
            seat.
        ModelNotFoundError: The base model path does not exist.
    """
    from dialogue_gym_agents.common.lm import model as lm
    from dialogue_gym_agents.common.lm.agent import load_adapter_model

    if init is not None:
        ckpt = _sft_checkpoint(init, seat, card)
        peft_model, tokenizer, info = load_adapter_model(
            ckpt, ADAPTER_DIR, device, trainable=True, dtype=dtype
        )
        source = {"init": str(ckpt.path), "content_hash": ckpt.manifest["content_hash"]}
        base_spec = str(ckpt.config["model"])
    else:
        base, tokenizer, info = lm.load_base(model, device=device, dtype=dtype)
        settings = lm.LoraSettings(r=lora_r, alpha=lora_alpha, dropout=0.0)
        peft_model = lm.attach_lora(base, settings, derive_seed(seed, seat))
        source = {"init": None}
        base_spec = model
    policy = LMPolicy(
        peft_model,
        tokenizer,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        reference=reference,
        backend=backend,
        batch_size=batch_size,
        name=f"lm-grpo-{seat}",
    )
    return policy, {**source, "model": base_spec, "base_model": info}
