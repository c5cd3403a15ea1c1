"""The two SI-AVPO objectives, independent of how the policy is parameterized.

SI-AVPO (the CUS paper, ``../shared/seeds/002_*``) trains one policy π_θ with

    L_SI-AVPO = L_AOPD(P_int) + λ_st · L_STPR(d, {Δw_k})

**AOPD** (asymmetric on-policy self-distillation). The *same* network is evaluated at the
states of the student's own rollouts under two views: the privileged *teacher* view (the
observation plus the user's internal persona P_int) and the deployable *student* view (the
observation only). :func:`aopd_kl` is the per-state KL between the two action distributions;
L_AOPD is its mean over the student-rollout states. The teacher side is **stop-gradient**
(detached): the student is pulled towards the concern-aware teacher, never the reverse. The
paper's summary names "the KL between the teacher's and the student's distribution" without
fixing the order, so both are available:

    forward:  KL(sg(π_T) ‖ π_S) = Σ_a π_T(a) (log π_T(a) − log π_S(a))   (trainer default)
    reverse:  KL(π_S ‖ sg(π_T)) = Σ_a π_S(a) (log π_S(a) − log π_T(a))

Forward (mode-covering: the student keeps mass on every strategy the teacher uses, the
cross-entropy of classic distillation) is the trainer's default: at strategy level the
reverse, mode-seeking KL drove the student to a near-deterministic policy in our runs,
because a student that can only match the teacher by moving weights the teacher shares drags
the teacher along, and a point mass is where that chase ends (see
:func:`~dialogue_gym_agents.siavpo.train.siavpo_update` for the fixed θ_old targets).

**STPR** (state-transition policy refinement). Each rollout i of a group (the rollouts of one
episode seed and one view) ends with the binary outcome d_i ∈ {0, 1} (the user accepted or
not). Its trajectory-level advantage is the group-normalized terminal reward (GRPO's)::

    A_i = (d_i − mean_G d) / (std_G d + ε)                     (outcome_advantages)

and turn k of rollout i gets the credit::

    σ_i    = +1 if d_i = 1 else −1                            (the outcome's sign)
    c_i,k  = 1 + α   if σ_i · Δw_i,k >  δ                     (Δw agrees: reinforced)
             1 − β   if σ_i · Δw_i,k < −δ                     (Δw contradicts: suppressed)
             1       otherwise                                (no willingness change)
    A_i,k  = A_i · c_i,k                                      (stpr_advantages)

with α = ``reinforce`` (default 0.5), β = ``suppress`` (default 0.5) and the dead zone
δ = ``deadzone`` (default 1e-3; the simulator reports w to 4 decimals). L_STPR is the shared
clipped GRPO surrogate (:func:`~dialogue_gym_agents.common.grpo.grpo_loss`) on the turn
advantages A_i,k. With α = β = 0 every turn gets A_i: plain outcome-reward GRPO, the baseline
and the "w/o STPR" ablation.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike

from dialogue_gym_agents.common.rl import group_advantages

__all__ = [
    "KLDirection",
    "aopd_kl",
    "outcome_advantages",
    "stpr_advantages",
    "stpr_credit",
]

KLDirection = Literal["forward", "reverse"]


def aopd_kl(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    direction: KLDirection = "forward",
) -> torch.Tensor:
    """Per-row KL between the student-view and (detached) teacher-view distributions.

    Args:
        student_logits: ``(..., k)`` logits of the student view (gradients flow).
        teacher_logits: ``(..., k)`` logits of the teacher view (detached here).
        direction: ``"forward"`` for KL(sg π_T ‖ π_S), ``"reverse"`` for KL(π_S ‖ sg π_T).

    Returns:
        ``(...)`` non-negative KL values.

    Raises:
        ValueError: Shapes differ or the direction is unknown.
    """
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            f"student logits {tuple(student_logits.shape)} and teacher logits "
            f"{tuple(teacher_logits.shape)} differ"
        )
    log_s = torch.log_softmax(student_logits, dim=-1)
    log_t = torch.log_softmax(teacher_logits.detach(), dim=-1)
    if direction == "reverse":
        return (log_s.exp() * (log_s - log_t)).sum(dim=-1)
    if direction == "forward":
        return (log_t.exp() * (log_t - log_s)).sum(dim=-1)
    raise ValueError(f"direction must be 'reverse' or 'forward', got {direction!r}")


def outcome_advantages(
    outcomes: ArrayLike, groups: Sequence[Hashable], eps: float = 1e-8
) -> np.ndarray:
    """Trajectory-level advantages A_i: binary outcomes normalized within their group.

    Args:
        outcomes: One outcome per rollout (truthy: the user accepted).
        groups: The group key of each rollout (episode seed, and view).
        eps: Added to each group's standard deviation.

    Returns:
        ``(n,)`` float64 advantages (0 for every member of a group with one outcome).
    """
    rewards = np.asarray(outcomes, dtype=np.float64).reshape(-1)
    return group_advantages(rewards, groups, eps)


def stpr_credit(
    accepted: bool,
    delta_w: ArrayLike,
    reinforce: float = 0.5,
    suppress: float = 0.5,
    deadzone: float = 1e-3,
) -> np.ndarray:
    """The turn credits c_k of one rollout (module docstring).

    Args:
        accepted: The rollout's binary outcome d.
        delta_w: The willingness shift Δw_k of each turn.
        reinforce: α, added where Δw agrees in sign with the outcome.
        suppress: β, subtracted where it contradicts (β ≤ 1 keeps the advantage's sign).
        deadzone: δ: shifts with |Δw| ≤ δ count as no change.

    Returns:
        ``(K,)`` float64 credits.

    Raises:
        ValueError: ``reinforce`` < 0, ``suppress`` outside [0, 1] or ``deadzone`` < 0.
    """
    if reinforce < 0 or not 0.0 <= suppress <= 1.0 or deadzone < 0:
        raise ValueError(
            "need reinforce >= 0, 0 <= suppress <= 1 and deadzone >= 0, got "
            f"{reinforce}, {suppress}, {deadzone}"
        )
    signed = (1.0 if accepted else -1.0) * np.asarray(delta_w, dtype=np.float64).reshape(-1)
    credit = np.ones_like(signed)
    credit[signed > deadzone] += reinforce
    credit[signed < -deadzone] -= suppress
    return credit


def stpr_advantages(
    advantage: float,
    accepted: bool,
    delta_w: ArrayLike,
    reinforce: float = 0.5,
    suppress: float = 0.5,
    deadzone: float = 1e-3,
) -> np.ndarray:
    """Turn-level advantages A_k = A · c_k of one rollout (module docstring)."""
    return float(advantage) * stpr_credit(accepted, delta_w, reinforce, suppress, deadzone)
