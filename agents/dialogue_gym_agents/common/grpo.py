"""The GRPO objective, written once for every trainer (MASP, SI-AVPO, their LoRA variants).

MASP (Appendix B.4, Eqs. 23–25) updates each policy with a clipped ratio objective on
group-normalized advantages and a KL term to its supervised reference policy::

    A_i   = (G_i − mean_G) / (std_G + ε)                (rl.group_advantages)
    r_i   = exp(log π(y_i | o_i) − log π_old(y_i | o_i))
    L     = −E_i[min(r_i A_i, clip(r_i, 1 − ε_c, 1 + ε_c) A_i)] + β · KL(π ‖ π_ref)

:func:`grpo_loss` takes log-probabilities either per sample (shape ``(B,)``: a strategy
choice, or a whole utterance's summed token log-probs — the paper's response-level ratio) or
per token (shape ``(B, L)`` with a ``mask``: the usual token-level ratio of LM trainers). The
KL term is the non-negative, unbiased "k3" estimator of KL(π ‖ π_ref) on the sampled actions,
``exp(ref − new) − (ref − new) − 1``, averaged like the policy term (per token for LMs: the
paper's token-level KL). For small discrete action spaces, :func:`categorical_kl` gives the
exact KL between two distributions instead. Advantages, old and reference log-probs are
stop-gradient inputs (detached here, so a caller cannot leak gradients through them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

__all__ = ["GRPOLoss", "categorical_kl", "grpo_loss", "k3_kl", "pad_token_rows"]


@dataclasses.dataclass(frozen=True)
class GRPOLoss:
    """The loss and its parts (all scalars; only ``loss`` carries gradients).

    Attributes:
        loss: ``policy + beta · kl`` — minimize this.
        policy: The clipped-surrogate term (detached).
        kl: The KL estimate to the reference policy (detached).
        clip_fraction: Share of ratios outside ``[1 − clip, 1 + clip]`` (detached).
        ratio_mean: Mean importance ratio (detached; 1.0 on the first epoch of an update).
    """

    loss: torch.Tensor
    policy: torch.Tensor
    kl: torch.Tensor
    clip_fraction: torch.Tensor
    ratio_mean: torch.Tensor


def k3_kl(logp: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """Per-sample k3 estimate of KL(π ‖ π_ref) from log-probs of actions sampled from π.

    ``exp(ref − new) − (ref − new) − 1`` is zero when the two agree and positive otherwise.
    """
    delta = logp_ref.detach() - logp
    return torch.exp(delta) - delta - 1.0


def categorical_kl(logits: torch.Tensor, logits_ref: torch.Tensor) -> torch.Tensor:
    """Exact KL(softmax(logits) ‖ softmax(logits_ref)) over the last axis, per row."""
    logp = torch.log_softmax(logits, dim=-1)
    logq = torch.log_softmax(logits_ref.detach(), dim=-1)
    return (logp.exp() * (logp - logq)).sum(dim=-1)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Token-level: mean over each sample's valid tokens, then over samples."""
    if mask is None:
        return values.mean()
    weights = mask.to(values.dtype)
    per_sample = (values * weights).sum(dim=-1) / weights.sum(dim=-1).clamp_min(1.0)
    return per_sample.mean()


def grpo_loss(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    logp_ref: torch.Tensor | None = None,
    *,
    mask: torch.Tensor | None = None,
    clip: float = 0.2,
    beta: float = 0.04,
    kl: torch.Tensor | None = None,
) -> GRPOLoss:
    """The clipped GRPO objective with a KL penalty to the reference policy.

    Args:
        logp: Log-probs of the taken actions under the policy being trained, ``(B,)`` or
            ``(B, L)`` per token.
        logp_old: The same under the policy that sampled the rollouts (stop-gradient).
        advantages: Group-normalized advantages, ``(B,)`` (broadcast over tokens).
        logp_ref: Log-probs under the frozen reference policy, for the k3 KL estimate.
        mask: ``(B, L)`` with 1 for response tokens (token-level inputs only).
        clip: The ratio clip ε_c.
        beta: The KL coefficient β (0 disables the KL term).
        kl: A per-sample (or per-token) KL computed by the caller (e.g. the exact
            :func:`categorical_kl`), used instead of the k3 estimate.

    Returns:
        :class:`GRPOLoss`.

    Raises:
        ValueError: Shapes that do not match, a mask with per-sample inputs, ``clip`` ≤ 0,
            ``beta`` < 0, or ``beta`` > 0 with neither ``logp_ref`` nor ``kl``.
    """
    if logp.shape != logp_old.shape:
        raise ValueError(f"logp {tuple(logp.shape)} and logp_old {tuple(logp_old.shape)} differ")
    if advantages.shape != logp.shape[:1]:
        raise ValueError(
            f"advantages must have shape ({logp.shape[0]},), got {tuple(advantages.shape)}"
        )
    if mask is not None and (logp.dim() != 2 or mask.shape != logp.shape):
        raise ValueError("mask must have the shape of (B, L) token-level log-probs")
    if clip <= 0:
        raise ValueError(f"clip must be > 0, got {clip}")
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if beta > 0 and logp_ref is None and kl is None:
        raise ValueError("beta > 0 needs logp_ref (k3 estimate) or an explicit kl")

    adv = advantages.detach()
    if logp.dim() == 2:
        adv = adv.unsqueeze(-1)
    ratio = torch.exp(logp - logp_old.detach())
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * adv)
    policy = -_masked_mean(surrogate, mask)
    if kl is None:
        kl = k3_kl(logp, logp_ref) if logp_ref is not None else torch.zeros_like(logp)
    kl_term = _masked_mean(kl, mask if kl.shape == logp.shape else None)
    outside = ((ratio < 1.0 - clip) | (ratio > 1.0 + clip)).to(logp.dtype)
    return GRPOLoss(
        loss=policy + beta * kl_term,
        policy=policy.detach(),
        kl=kl_term.detach(),
        clip_fraction=_masked_mean(outside, mask).detach(),
        ratio_mean=_masked_mean(ratio, mask).detach(),
    )


def pad_token_rows(rows: Sequence[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """Per-token rows (e.g. old log-probs) left-aligned into a zero tensor shaped ``like``."""
    out = torch.zeros_like(like)
    for i, row in enumerate(rows):
        n = min(len(row), out.shape[1])
        out[i, :n] = row[:n].to(out.device, out.dtype)
    return out
