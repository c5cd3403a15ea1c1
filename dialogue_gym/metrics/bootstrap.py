"""Uncertainty: percentile-bootstrap CIs of a mean and paired-bootstrap differences.

Confidence intervals are percentile bootstraps over episodes (default 10,000 resamples)
drawn from ``np.random.default_rng(seed)`` (the global NumPy RNG is never touched). Two runs
evaluated on the same episodes are compared with a *paired* bootstrap: episode indices are
resampled jointly, i.e. the per-episode differences ``a_i - b_i`` are resampled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["N_BOOTSTRAP", "Interval", "PairedDiff", "bootstrap_ci", "paired_bootstrap_diff"]


N_BOOTSTRAP: int = 10_000
"""Default number of bootstrap resamples."""


# Upper bound on the number of index entries materialised at once by the bootstrap
# (4M int64 = 32 MiB).
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap confidence interval.

    Attributes:
        mean: Sample mean (point estimate).
        low: Lower CI bound.
        high: Upper CI bound.
        n: Number of values the estimate is based on.
    """

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class PairedDiff:
    """Mean paired difference ``a - b`` with a bootstrap CI and two-sided p-value.

    Attributes:
        mean: Observed mean difference ``mean(a) - mean(b)``.
        low: Lower CI bound of the difference.
        high: Upper CI bound of the difference.
        p_value: Two-sided bootstrap p-value (see :func:`paired_bootstrap_diff`).
        n: Number of pairs.
    """

    mean: float
    low: float
    high: float
    p_value: float
    n: int

    def __str__(self) -> str:
        return (
            f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}] "
            f"(p={self.p_value:.3g}, n={self.n})"
        )

    @property
    def verdict(self) -> str:
        """``holds`` (interval above 0), ``reversed`` (below 0) or ``inconclusive``.

        The benchmarks state a claim only where the interval excludes 0.
        """
        return "holds" if self.low > 0 else "reversed" if self.high < 0 else "inconclusive"


def _check_bootstrap_args(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _as_1d(values: Iterable[float], name: str) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement) of ``values``.

    The resample index matrix is generated in row chunks so that at most about
    ``_CHUNK_ELEMENTS`` indices exist at once.
    """
    n = values.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples, dtype=float)
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def _percentiles(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_ci(
    values: Iterable[float],
    n_resamples: int = N_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap confidence interval of the mean.

    Args:
        values: Per-episode values (e.g. success indicators or turns to success).
        n_resamples: Number of bootstrap resamples.
        confidence: Confidence level in ``(0, 1)``.
        seed: Seed for ``np.random.default_rng``; the result is deterministic given it.

    Returns:
        The mean and CI. For empty input, ``mean``, ``low`` and ``high`` are ``nan``
        and ``n`` is 0.

    Raises:
        ValueError: If ``n_resamples < 1``, ``confidence`` is outside ``(0, 1)`` or
            ``values`` is not one-dimensional.
    """
    _check_bootstrap_args(n_resamples, confidence)
    arr = _as_1d(values, "values")
    n = int(arr.shape[0])
    if n == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, 0)
    boot = _bootstrap_means(arr, n_resamples, seed)
    low, high = _percentiles(boot, confidence)
    return Interval(float(arr.mean()), low, high, n)


def paired_bootstrap_diff(
    a: Iterable[float],
    b: Iterable[float],
    n_resamples: int = N_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedDiff:
    """Paired bootstrap of the mean difference ``a - b`` over the same episodes.

    Episode indices are resampled jointly for ``a`` and ``b`` (equivalently, the per-episode
    differences ``a_i - b_i`` are resampled). The two-sided p-value is twice the fraction of
    resampled mean differences lying on the other side of zero from the observed difference
    (zero included, which is conservative), capped at 1. If the observed difference is exactly
    0 the p-value is 1.

    Args:
        a: Per-episode values of run A.
        b: Per-episode values of run B, aligned with ``a``.
        n_resamples: Number of bootstrap resamples.
        confidence: Confidence level in ``(0, 1)``.
        seed: Seed for ``np.random.default_rng``.

    Returns:
        The paired difference summary. For empty input all float fields are ``nan`` and
        ``n`` is 0.

    Raises:
        ValueError: If ``a`` and ``b`` differ in length, or on invalid bootstrap arguments.
    """
    _check_bootstrap_args(n_resamples, confidence)
    arr_a = _as_1d(a, "a")
    arr_b = _as_1d(b, "b")
    if arr_a.shape[0] != arr_b.shape[0]:
        raise ValueError(
            f"paired_bootstrap_diff needs equally long inputs aligned by episode, "
            f"got len(a)={arr_a.shape[0]} and len(b)={arr_b.shape[0]}"
        )
    n = int(arr_a.shape[0])
    if n == 0:
        nan = float("nan")
        return PairedDiff(nan, nan, nan, nan, 0)
    diff = arr_a - arr_b
    observed = float(diff.mean())
    boot = _bootstrap_means(diff, n_resamples, seed)
    low, high = _percentiles(boot, confidence)
    if observed > 0:
        p_value = min(1.0, 2.0 * float(np.mean(boot <= 0.0)))
    elif observed < 0:
        p_value = min(1.0, 2.0 * float(np.mean(boot >= 0.0)))
    else:
        p_value = 1.0
    return PairedDiff(observed, low, high, p_value, n)
