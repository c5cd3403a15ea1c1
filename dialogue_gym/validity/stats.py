"""Rank statistics with bootstrap confidence intervals: AUC, Spearman's ρ and rates.

Every figure of the validity report is a :class:`Cell`: the point estimate over the ``n``
dialogues it is computed on, and a percentile bootstrap interval from resampling those
dialogues with replacement (paired: every statistic of one resample sees the same dialogues).
Resamples in which a statistic is undefined (one class only, a constant column) are skipped;
a cell with fewer than two usable resamples has no interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["Cell", "auc", "bootstrap_cell", "mean", "ranks", "spearman"]

DEFAULT_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclasses.dataclass(frozen=True)
class Cell:
    """One reported figure.

    Attributes:
        value: The point estimate (``nan`` when undefined, e.g. one class only).
        low: Lower bound of the bootstrap interval (``nan`` without one).
        high: Upper bound of the bootstrap interval.
        n: Dialogues the figure is computed on.
    """

    value: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-ready: ``nan`` becomes ``None``."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else round(float(x), 4)

        return {
            "value": clean(self.value),
            "low": clean(self.low),
            "high": clean(self.high),
            "n": self.n,
        }

    def format(self) -> str:
        """``0.61 [0.53, 0.69] n=211`` (``n/a`` where undefined)."""
        if math.isnan(self.value):
            return f"n/a n={self.n}"
        if math.isnan(self.low):
            return f"{self.value:.2f} n={self.n}"
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}] n={self.n}"


def ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ranks starting at 1, ties sharing their average rank."""
    x = np.asarray(values, dtype=float)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)  # the rank of each distinct value's last copy
    return (upper - (counts - 1) / 2)[inverse.reshape(-1)]


def auc(scores: Sequence[float] | np.ndarray, labels: Sequence[bool] | np.ndarray) -> float:
    """The area under the ROC curve (Mann–Whitney; ties count one half); ``nan`` for one class."""
    y = np.asarray(labels, dtype=bool)
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return math.nan
    r = ranks(scores)
    return float((r[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's ρ (Pearson correlation of average ranks); ``nan`` when either is constant."""
    a, b = ranks(x), ranks(y)
    if len(a) < 3 or a.std() == 0 or b.std() == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def mean(x: Sequence[float] | np.ndarray) -> float:
    """The mean (``nan`` for no values)."""
    values = np.asarray(x, dtype=float)
    return float(values.mean()) if len(values) else math.nan


def bootstrap_cell(
    statistic: Callable[..., float],
    *columns: Sequence[float] | np.ndarray,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Cell:
    """A statistic of aligned columns with a percentile bootstrap interval over rows.

    Args:
        statistic: ``f(*columns) -> float`` (e.g. :func:`auc`, :func:`spearman`, :func:`mean`).
        *columns: Equally long columns, one row per dialogue.
        n_resamples: Bootstrap resamples (0: no interval).
        seed: Seed of the resampling (the same seed resamples the same rows for every cell of
            the same size, so cells of one report are paired).
        confidence: The interval's coverage.

    Raises:
        ValueError: Columns of different lengths.
    """
    arrays = [np.asarray(c, dtype=float) for c in columns]
    n = len(arrays[0]) if arrays else 0
    if any(len(a) != n for a in arrays):
        raise ValueError("bootstrap_cell: columns of different lengths")
    if n == 0:
        return Cell(math.nan, math.nan, math.nan, 0)
    value = statistic(*arrays)
    if math.isnan(value) or n_resamples <= 0:
        return Cell(value, math.nan, math.nan, n)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_resamples):
        rows = rng.integers(0, n, n)
        v = statistic(*(a[rows] for a in arrays))
        if not math.isnan(v):
            draws.append(v)
    if len(draws) < 2:
        return Cell(value, math.nan, math.nan, n)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Cell(value, float(low), float(high), n)
