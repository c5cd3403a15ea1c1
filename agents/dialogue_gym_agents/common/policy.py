"""What the GRPO trainer needs from a policy and from an env seat, whatever the parameterization.

The trainer (:mod:`dialogue_gym_agents.common.selfplay`) talks to a policy only through
:class:`GRPOPolicy` — sample actions with their log-probs, evaluate the log-probs of given
actions (with the KL to, or log-probs under, the frozen reference policy) — and to the env only
through a :class:`Seat`, which turns an observation into the policy's context and the policy's
action into the env's action. The strategy-level networks
(:mod:`dialogue_gym_agents.masp.strategy_policy`) and the LoRA causal LM
(:mod:`dialogue_gym_agents.common.lm.policy`) implement both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import torch
from torch import nn

__all__ = ["GRPOPolicy", "History", "PolicyOutput", "Seat"]

History = tuple[tuple[str, str], ...]
"""A dialogue prefix as ``(role, text)`` pairs, role ``"system"`` or ``"user"``."""


class PolicyOutput(NamedTuple):
    """A policy's evaluation of given actions (all tensors on the policy's device).

    Attributes:
        logp: Log-probs of the actions under the trained policy (with gradients), ``(B,)``
            per sample or ``(B, L)`` per token.
        mask: ``(B, L)`` valid-token mask for per-token log-probs, else ``None``.
        kl: An exact per-sample (or per-token) KL to the reference policy, or ``None``.
        logp_ref: Log-probs under the frozen reference policy (for the k3 KL estimate when
            ``kl`` is ``None``).
    """

    logp: torch.Tensor
    mask: torch.Tensor | None
    kl: torch.Tensor | None
    logp_ref: torch.Tensor | None


@runtime_checkable
class GRPOPolicy(Protocol):
    """What the GRPO trainer needs from a policy, whatever its parameterization."""

    def sample(
        self, contexts: Sequence[Any], generator: torch.Generator, greedy: bool = False
    ) -> tuple[list[Any], list[torch.Tensor]]:
        """Actions for a batch of contexts and their log-probs (detached; per token for LMs)."""
        ...

    def evaluate(self, contexts: Sequence[Any], actions: Sequence[Any]) -> PolicyOutput:
        """Log-probs of ``actions`` (with gradients) and the reference terms."""
        ...

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The parameters GRPO updates (never the reference's)."""
        ...

    def freeze_reference(self) -> None:
        """Makes the current policy the frozen KL reference (end of the warm start)."""
        ...


@runtime_checkable
class Seat(Protocol):
    """Connects a policy to one env seat for one episode at a time."""

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode (per-episode state, realizer seeds)."""
        ...

    def context(self, observation: Mapping[str, Any]) -> Any:
        """What the policy conditions on, from the seat's observation."""
        ...

    def env_action(self, action: Any, observation: Mapping[str, Any]) -> Any:
        """The env action (text, or ``{"utterance", "estimate"}``) for the policy's action."""
        ...
