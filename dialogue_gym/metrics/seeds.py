"""Uncertainty over training seeds: Student-t intervals of per-seed means and paired differences.

A claim about a *training method* ("MASP beats the planner") is a claim about what a new
training run would do, so its unit of replication is the training seed, not the evaluation
episode: pooling the episodes of three seeds into one bootstrap treats 150 episodes as 150
independent draws when they come from three policies, and gives intervals far too narrow
whenever seeds differ. Here each seed contributes one number (e.g. its hard-user RCSR@8 over the
same evaluation episodes) and the interval is the classic Student-t interval over those numbers
(``mean ± t_{(1+c)/2, n-1} · sd / √n``); two methods trained with the same seeds are compared by
the t-interval of their per-seed differences (a paired t-test).

The t distribution is evaluated in closed form for integer degrees of freedom (Abramowitz &
Stegun 26.7.3–4), so the module needs NumPy only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dialogue_gym.metrics.bootstrap import Interval, PairedDiff

__all__ = ["paired_seed_diff", "seed_level_ci", "student_t_cdf", "student_t_quantile"]


def _two_sided_mass(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom and t >= 0."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:  # A&S 26.7.3
        total, term = 0.0, c
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):  # coefficients 2/3, 2·4/(3·5), ...
                term *= (k - 1) / k * c * c
                total += term
        return (2.0 / math.pi) * (theta + s * total)
    total, term = 1.0, 1.0  # A&S 26.7.4
    for k in range(2, df - 1, 2):  # coefficients 1/2, 1·3/(2·4), ...
        term *= (k - 1) / k * c * c
        total += term
    return s * total


def student_t_cdf(t: float, df: int) -> float:
    """The cumulative distribution function of Student's t.

    Args:
        t: The point.
        df: Degrees of freedom, a positive integer.

    Raises:
        ValueError: If ``df`` is not a positive integer.
    """
    if int(df) != df or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    mass = _two_sided_mass(abs(t), int(df))
    return 0.5 + 0.5 * mass if t >= 0 else 0.5 - 0.5 * mass


def student_t_quantile(p: float, df: int) -> float:
    """The ``p``-quantile of Student's t (bisection on :func:`student_t_cdf`, to 1e-12).

    Raises:
        ValueError: If ``p`` is outside ``(0, 1)`` or ``df`` is not a positive integer.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        high *= 2.0
    while high - low > 1e-12 * max(1.0, high):
        mid = 0.5 * (low + high)
        if student_t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def _per_seed(values: Iterable[float], name: str) -> np.ndarray:
    arr = np.asarray(list(values), dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} holds NaN: every seed needs a value")
    return arr


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def seed_level_ci(per_seed: Iterable[float], confidence: float = 0.95) -> Interval:
    """Student-t interval of the mean of one value per training seed.

    Args:
        per_seed: One value per training seed (e.g. each seed's RCSR@8).
        confidence: Confidence level in ``(0, 1)``.

    Returns:
        The mean and interval, ``n`` being the number of seeds. With one seed the interval is
        unbounded (``-inf``, ``inf``); with none every field is ``nan`` and ``n`` is 0.

    Raises:
        ValueError: On a bad confidence level, a NaN or a non-1-D input.
    """
    _check_confidence(confidence)
    arr = _per_seed(per_seed, "per_seed")
    n = int(arr.shape[0])
    if n == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, 0)
    mean = float(arr.mean())
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1)
    half = student_t_quantile(0.5 + confidence / 2.0, n - 1) * float(arr.std(ddof=1)) / n**0.5
    return Interval(mean, mean - half, mean + half, n)


def paired_seed_diff(
    a: Iterable[float], b: Iterable[float], confidence: float = 0.95
) -> PairedDiff:
    """Paired Student-t comparison of two methods trained with the same seeds.

    Args:
        a: Per-seed values of method A.
        b: Per-seed values of method B, aligned with ``a`` by seed.
        confidence: Confidence level in ``(0, 1)``.

    Returns:
        The mean per-seed difference ``a - b``, its t-interval and the two-sided p-value of a
        paired t-test (``n`` = number of seeds). When every seed gives the same difference the
        interval collapses onto it and the p-value is 0 (or 1 for a zero difference); with
        fewer than two seeds the interval is unbounded and the p-value 1.

    Raises:
        ValueError: If ``a`` and ``b`` differ in length, or on a bad confidence level or a NaN.
    """
    _check_confidence(confidence)
    arr_a, arr_b = _per_seed(a, "a"), _per_seed(b, "b")
    if arr_a.shape != arr_b.shape:
        raise ValueError(
            f"paired_seed_diff needs one value per seed on both sides, got {arr_a.shape[0]} "
            f"and {arr_b.shape[0]}"
        )
    diff = arr_a - arr_b
    n = int(diff.shape[0])
    if n == 0:
        nan = float("nan")
        return PairedDiff(nan, nan, nan, nan, 0)
    mean = float(diff.mean())
    if n == 1:
        return PairedDiff(mean, -math.inf, math.inf, 1.0, 1)
    sd = float(diff.std(ddof=1))
    if sd == 0.0:
        return PairedDiff(mean, mean, mean, 1.0 if mean == 0.0 else 0.0, n)
    se = sd / n**0.5
    half = student_t_quantile(0.5 + confidence / 2.0, n - 1) * se
    p_value = 2.0 * (1.0 - student_t_cdf(abs(mean) / se, n - 1))
    return PairedDiff(mean, mean - half, mean + half, min(1.0, max(0.0, p_value)), n)
