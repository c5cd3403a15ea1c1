"""The ``lm-grpo`` agent: a policy of an ``lm-grpo`` checkpoint plays its seat.

``--agent lm-grpo:DIR`` plays the trained system policy (``seat=user``: the user policy, when
one was trained) through :class:`~dialogue_gym_agents.common.lm.agent.LMAgent`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym_agents.common.checkpoint import CheckpointMismatchError, load_checkpoint
from dialogue_gym_agents.common.lm.agent import LMAgent, build_lm_agent
from dialogue_gym_agents.common.lm.prompts import SEATS
from dialogue_gym_agents.lm_grpo.config import KIND

__all__ = ["lm_grpo"]


def lm_grpo(
    card: TaskCard,
    checkpoint: str | Path | None = None,
    seat: str = "system",
    seed: int | None = None,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    backend: str | None = None,
    base_url: str | None = None,
    device: str = "auto",
    batch_size: int = 8,
    **kwargs: Any,
) -> LMAgent:
    """The ``lm-grpo`` agent factory: ``--agent lm-grpo:DIR`` (the trained system policy).

    Args:
        card: The env's task card (must be the checkpoint's task).
        checkpoint: The folder written by ``dialogue-gym train lm-grpo``.
        seat: Which trained policy plays: ``system`` (default) or ``user`` (when trained).
        seed: Default episode seed.
        temperature: Override the evaluation temperature (0.3, the paper's MASP decoding).
        max_new_tokens: Override the reply limit.
        backend: ``openai:NAME`` to generate on an OpenAI-compatible server.
        base_url: The server's URL (with ``backend``).
        device: Torch device of the local model.
        batch_size: Rows per ``generate`` call of the local backend.
        **kwargs: Not used.

    Raises:
        CheckpointError: No checkpoint, a missing/corrupt one, another kind or task, or no
            policy for ``seat`` in it.
    """
    if seat not in SEATS:
        raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
    ckpt = load_checkpoint(checkpoint, kind=KIND, card=card, check_strategies=False)
    if seat not in ckpt.info.get("policies", []):
        raise CheckpointMismatchError(
            f"checkpoint {ckpt.path} holds no {seat} policy (it has "
            f"{ckpt.info.get('policies', [])})"
        )
    return build_lm_agent(
        card,
        ckpt,
        seat,
        seat,
        seed=seed,
        temperature=temperature,
        default_temperature=float(ckpt.config.get("eval_temperature", 0.3)),
        max_new_tokens=max_new_tokens,
        backend=backend,
        base_url=base_url,
        device=device,
        batch_size=batch_size,
        base=ckpt.info.get(f"{seat}_policy"),
    )
