"""Shared reinforcement-learning math for the trainers (PPO curves now, GRPO later).

Everything operates on NumPy arrays (or anything array-like) and returns float64 arrays, so a
torch trainer converts once with ``torch.as_tensor``. One definition each:

* :func:`discounted_returns` — ``G_t = Σ_k γ^k r_{t+k}`` of one episode (the MASP γ = 0.97).
* :func:`normalize_advantages` — ``(A − mean) / (std + ε)`` over a batch.
* :func:`group_advantages` — GRPO's group-normalized advantages: each reward minus its
  group's mean, over the group's standard deviation.
* :func:`episode_outcomes` — SR and RCSR inputs of finished dialogue episodes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dialogue_gym import metrics
from dialogue_gym.mind import discounted_returns as _discounted_returns

__all__ = [
    "DEFAULT_GAMMA",
    "discounted_returns",
    "episode_outcomes",
    "group_advantages",
    "normalize_advantages",
]

DEFAULT_GAMMA = 0.97
"""The return discount of the MASP reference code."""


def discounted_returns(rewards: ArrayLike, gamma: float = DEFAULT_GAMMA) -> np.ndarray:
    """Per-step discounted returns ``G_t`` of one episode (via ``dialogue_gym.mind``).

    Raises:
        ValueError: ``gamma`` is outside [0, 1].
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    values = np.asarray(rewards, dtype=np.float64).reshape(-1)
    return np.asarray(_discounted_returns(values.tolist(), gamma), dtype=np.float64)


def normalize_advantages(advantages: ArrayLike, eps: float = 1e-8) -> np.ndarray:
    """``(A − mean(A)) / (std(A) + eps)``; a single value (or a constant batch) gives zeros."""
    values = np.asarray(advantages, dtype=np.float64)
    if values.size == 0:
        return values
    centered = values - values.mean()
    std = values.std()
    if std == 0.0:  # a constant batch carries no signal (and 0/0 with eps = 0)
        return np.zeros_like(values)
    return centered / (std + eps)


def group_advantages(
    rewards: ArrayLike, groups: Sequence[Hashable], eps: float = 1e-8
) -> np.ndarray:
    """GRPO advantages: each reward normalized within its group (same prompt / episode seed).

    Args:
        rewards: One scalar reward per sample.
        groups: The group key of each sample (same length).
        eps: Added to each group's standard deviation.

    Raises:
        ValueError: ``rewards`` and ``groups`` differ in length.
    """
    values = np.asarray(rewards, dtype=np.float64).reshape(-1)
    if len(values) != len(groups):
        raise ValueError(f"{len(values)} rewards but {len(groups)} group keys")
    out = np.zeros_like(values)
    index: dict[Hashable, list[int]] = {}
    for i, key in enumerate(groups):
        index.setdefault(key, []).append(i)
    for members in index.values():
        out[members] = normalize_advantages(values[members], eps)
    return out


def episode_outcomes(
    records: Iterable[Mapping[str, Any]], T: int, tau_q: float = metrics.TAU_Q
) -> dict[str, float]:
    """Success rate, rational success rate and mean turns of finished dialogue episodes.

    Args:
        records: The env's ``info["episode"]`` records.
        T: The exchange budget (success within ``T``).
        tau_q: The rationality threshold of RCSR.

    Returns:
        ``{"episodes", "sr", "rcsr", "turns"}`` (rates are 0 when there are no episodes).
    """
    rows = list(records)
    if not rows:
        return {"episodes": 0.0, "sr": 0.0, "rcsr": 0.0, "turns": 0.0}
    success = [metrics.success_within(r, T) for r in rows]
    rational = [metrics.rc_success_within(r, T, tau_q) for r in rows]
    return {
        "episodes": float(len(rows)),
        "sr": float(np.mean(success)),
        "rcsr": float(np.mean(rational)),
        "turns": float(np.mean([r.get("turns", T) for r in rows])),
    }
