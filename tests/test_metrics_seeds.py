"""Seed-level intervals: Student-t quantiles, per-seed CIs and paired per-seed differences."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dialogue_gym import metrics
from dialogue_gym.metrics.seeds import student_t_cdf, student_t_quantile

# Two-sided 95 % critical values of Student's t from the standard tables.
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 30: 2.042}


@pytest.mark.parametrize(("df", "expected"), sorted(T_975.items()))
def test_t_quantile_matches_the_tables(df: int, expected: float) -> None:
    assert student_t_quantile(0.975, df) == pytest.approx(expected, abs=5e-4)
    assert student_t_quantile(0.025, df) == pytest.approx(-expected, abs=5e-4)


def test_t_cdf_is_a_distribution_and_tends_to_the_normal() -> None:
    for df in (1, 2, 3, 6, 7):
        assert student_t_cdf(0.0, df) == pytest.approx(0.5)
        xs = np.linspace(-6, 6, 49)
        cdf = [student_t_cdf(float(x), df) for x in xs]
        assert all(b >= a for a, b in itertools.pairwise(cdf))
        assert student_t_cdf(1.3, df) + student_t_cdf(-1.3, df) == pytest.approx(1.0)
    assert student_t_cdf(1.96, 1000) == pytest.approx(0.975, abs=1e-3)
    assert student_t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi


def test_t_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="df"):
        student_t_cdf(1.0, 0)
    with pytest.raises(ValueError, match="df"):
        student_t_cdf(1.0, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="p must"):
        student_t_quantile(1.0, 3)


def test_seed_level_ci_is_the_t_interval() -> None:
    values = [0.40, 0.52, 0.46, 0.30, 0.58]
    ci = metrics.seed_level_ci(values)
    half = 2.776 * float(np.std(values, ddof=1)) / math.sqrt(5)
    assert ci.n == 5
    assert ci.mean == pytest.approx(0.452)
    assert ci.low == pytest.approx(0.452 - half, abs=1e-3)
    assert ci.high == pytest.approx(0.452 + half, abs=1e-3)


def test_seed_level_ci_edge_cases() -> None:
    assert metrics.seed_level_ci([]).n == 0
    one = metrics.seed_level_ci([0.3])
    assert (one.mean, one.low, one.high) == (0.3, -math.inf, math.inf)
    with pytest.raises(ValueError, match="NaN"):
        metrics.seed_level_ci([0.1, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        metrics.seed_level_ci([0.1, 0.2], confidence=1.0)


def test_paired_seed_diff_is_a_paired_t_test() -> None:
    a = [0.50, 0.62, 0.48, 0.55, 0.60]
    b = [0.40, 0.50, 0.45, 0.41, 0.52]
    d = metrics.paired_seed_diff(a, b)
    diff = np.subtract(a, b)
    se = float(diff.std(ddof=1)) / math.sqrt(5)
    assert d.n == 5
    assert d.mean == pytest.approx(float(diff.mean()))
    assert d.low == pytest.approx(d.mean - 2.776 * se, abs=1e-3)
    assert d.low > 0  # every seed improves: the interval excludes 0
    # t = 4.38 on 4 df: two-sided p = 0.0119 (tables).
    assert d.p_value == pytest.approx(0.00759, abs=2e-5)
    swapped = metrics.paired_seed_diff(b, a)
    assert swapped.mean == pytest.approx(-d.mean) and swapped.p_value == pytest.approx(d.p_value)


def test_paired_seed_diff_pairs_by_seed_not_by_pooling() -> None:
    # A large seed-to-seed spread shared by both methods cancels in the paired difference.
    a = [0.1, 0.9, 0.3, 0.7, 0.5]
    b = [x - 0.05 for x in a]
    d = metrics.paired_seed_diff(a, b)
    assert d.low == pytest.approx(0.05) and d.high == pytest.approx(0.05) and d.p_value == 0.0
    unpaired = metrics.seed_level_ci(np.subtract(a, 0.05))
    assert unpaired.high - unpaired.low > 0.5


def test_paired_seed_diff_edge_cases() -> None:
    assert metrics.paired_seed_diff([0.2, 0.3], [0.2, 0.3]).p_value == 1.0
    assert metrics.paired_seed_diff([], []).n == 0
    one = metrics.paired_seed_diff([0.5], [0.2])
    assert one.p_value == 1.0 and math.isinf(one.high)
    with pytest.raises(ValueError, match="one value per seed"):
        metrics.paired_seed_diff([0.1, 0.2], [0.1])


def test_paired_diff_verdict_needs_the_interval_to_exclude_zero() -> None:
    assert metrics.paired_seed_diff([0.5, 0.6, 0.7], [0.3, 0.4, 0.5]).verdict == "holds"
    assert metrics.paired_seed_diff([0.3, 0.4, 0.5], [0.5, 0.6, 0.7]).verdict == "reversed"
    assert metrics.paired_seed_diff([0.1, 0.6, 0.2], [0.3, 0.4, 0.5]).verdict == "inconclusive"
    assert metrics.paired_seed_diff([0.5], [0.3]).verdict == "inconclusive"  # one seed
