"""Tests for dialogue_gym.metrics (hand-computed cases, no wall-clock assertions)."""

from __future__ import annotations

import functools
import itertools
import json
import math
from typing import Any

import numpy as np
import pytest

from dialogue_gym import metrics
from dialogue_gym.metrics import (
    DEFAULT_T,
    N_BOOTSTRAP,
    TAU_Q,
    Interval,
    average_turns,
    bootstrap_ci,
    format_table,
    pair_records,
    paired_bootstrap_diff,
    rc_success_within,
    rcsr,
    rcsr_curve,
    sr_curve,
    success_rate,
    success_within,
    summarize,
    turns_to_success,
    worst_case,
)


def rec(
    success: bool,
    success_turn: int | None,
    q: list[int],
    errored: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    return {"success": success, "success_turn": success_turn, "q": q, "errored": errored, **extra}


# Valid (non-errored) episodes: r1, r2, r3, r5, r6, r7 -> N = 6.
R1 = rec(True, 3, [1, 1, -1])  # success at 3, mean q = 1/3 -> not RC
R2 = rec(True, 8, [1, 1, 1, -1, 1, 1, 1, 1])  # success at 8, mean q = 6/8 = 0.75 -> RC
R3 = rec(False, None, [1] * 8)  # failure -> AT counts 8
R4 = rec(True, 1, [1], errored=True)  # errored -> excluded everywhere
R5 = rec(True, 10, [1] * 10)  # success_turn > T -> not a success within 8, AT counts 8
R6 = rec(True, 2, [1, 1])  # success at 2, mean q = 1 -> RC
R7 = rec(True, 3, [1, 1])  # success at 3, q[2] missing -> counts 0 -> mean 2/3 -> not RC
RECORDS = [R1, R2, R3, R4, R5, R6, R7]


def test_constants() -> None:
    assert TAU_Q == 0.70
    assert DEFAULT_T == 8
    assert N_BOOTSTRAP == 10_000


def test_per_episode_predicates() -> None:
    assert success_within(R1, 3)
    assert not success_within(R1, 2)
    assert not rc_success_within(R1, 8)
    assert rc_success_within(R2, 8)
    assert not rc_success_within(R2, 7)
    assert not success_within(R3, 8)
    assert not success_within(R5, 8)
    assert success_within(R5, 10)
    assert not rc_success_within(R7, 8)  # missing q entry counts as 0
    assert turns_to_success(R1, 8) == 3
    assert turns_to_success(R3, 8) == 8
    assert turns_to_success(R5, 8) == 8
    assert turns_to_success(R5, 10) == 10
    # success flag false wins over a stray success_turn
    assert not success_within(rec(False, 2, [1, 1]), 8)


def test_rc_threshold_is_inclusive() -> None:
    r = rec(True, 10, [1] * 7 + [0] * 3)  # mean exactly 0.7
    assert rc_success_within(r, 10, tau_q=0.7)
    assert not rc_success_within(r, 10, tau_q=0.71)


def test_aggregate_metrics_hand_computed() -> None:
    assert success_rate(RECORDS) == pytest.approx(4 / 6)
    assert average_turns(RECORDS) == pytest.approx((3 + 8 + 8 + 8 + 2 + 3) / 6)
    assert rcsr(RECORDS) == pytest.approx(2 / 6)
    # The errored episode would be a success at turn 1; it must not change anything.
    without_errored = [r for r in RECORDS if not r["errored"]]
    assert success_rate(without_errored) == success_rate(RECORDS)
    assert average_turns(without_errored) == average_turns(RECORDS)
    assert rcsr(without_errored) == rcsr(RECORDS)


def test_curves_hand_computed() -> None:
    assert sr_curve(RECORDS) == pytest.approx([0, 1 / 6, 3 / 6, 3 / 6, 3 / 6, 3 / 6, 3 / 6, 4 / 6])
    assert rcsr_curve(RECORDS) == pytest.approx(
        [0, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 2 / 6]
    )


@pytest.mark.parametrize("T", [1, 3, 8, 10])
def test_curves_monotone_and_end_at_rate(T: int) -> None:
    sr_c = sr_curve(RECORDS, T)
    rc_c = rcsr_curve(RECORDS, T)
    assert len(sr_c) == len(rc_c) == T
    assert all(a <= b for a, b in itertools.pairwise(sr_c))
    assert all(a <= b for a, b in itertools.pairwise(rc_c))
    assert sr_c[-1] == success_rate(RECORDS, T)
    assert rc_c[-1] == rcsr(RECORDS, T)
    assert all(r <= s for r, s in zip(rc_c, sr_c, strict=True))


def test_empty_gives_nan() -> None:
    only_errored = [R4]
    for records in ([], only_errored):
        assert math.isnan(success_rate(records))
        assert math.isnan(average_turns(records))
        assert math.isnan(rcsr(records))
        assert all(math.isnan(v) for v in sr_curve(records))
        assert all(math.isnan(v) for v in rcsr_curve(records))
    ci = bootstrap_ci([])
    assert ci.n == 0 and math.isnan(ci.mean) and math.isnan(ci.low) and math.isnan(ci.high)
    d = paired_bootstrap_diff([], [])
    assert d.n == 0 and math.isnan(d.mean)


def test_invalid_T_raises() -> None:
    with pytest.raises(ValueError):
        success_rate(RECORDS, T=0)


def test_bootstrap_ci_basic_and_deterministic() -> None:
    values = [0.0, 1.0] * 20 + [1.0] * 10  # mean 0.6
    ci = bootstrap_ci(values, n_resamples=2_000, seed=1)
    assert isinstance(ci, Interval)
    assert ci.n == 50
    assert ci.mean == pytest.approx(0.6)
    assert ci.low <= ci.mean <= ci.high
    assert 0.0 <= ci.low < ci.high <= 1.0
    assert bootstrap_ci(values, n_resamples=2_000, seed=1) == ci
    # Quantiles of a binary sample are often identical across seeds; use continuous data.
    cont = [(i / 49) ** 2 for i in range(50)]
    ci_cont = bootstrap_ci(cont, n_resamples=2_000, seed=1)
    assert bootstrap_ci(cont, n_resamples=2_000, seed=1) == ci_cont
    assert bootstrap_ci(cont, n_resamples=2_000, seed=2) != ci_cont


def test_bootstrap_does_not_touch_global_rng() -> None:
    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    bootstrap_ci([0.0, 1.0, 1.0], n_resamples=100)
    assert np.random.random() == expected


def test_bootstrap_ci_narrows_with_more_data() -> None:
    small = bootstrap_ci([0.0, 1.0] * 10, n_resamples=2_000, seed=0)
    large = bootstrap_ci([0.0, 1.0] * 500, n_resamples=2_000, seed=0)
    assert small.mean == large.mean == pytest.approx(0.5)
    assert (large.high - large.low) < (small.high - small.low)


def test_bootstrap_ci_constant_values() -> None:
    ci = bootstrap_ci([3.0] * 7, n_resamples=500)
    assert (ci.mean, ci.low, ci.high, ci.n) == (3.0, 3.0, 3.0, 7)


def test_bootstrap_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics.bootstrap, "_CHUNK_ELEMENTS", 7)  # forces many small chunks
    values = [0.0, 1.0, 1.0, 0.0, 1.0]
    ci = bootstrap_ci(values, n_resamples=301, seed=5)
    assert ci.low <= ci.mean <= ci.high
    assert ci == bootstrap_ci(values, n_resamples=301, seed=5)


def test_bootstrap_invalid_args() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], n_resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], confidence=1.0)


def test_interval_str() -> None:
    assert str(Interval(0.45, 0.35, 0.55, 10)) == "0.450 [0.350, 0.550]"


def test_paired_diff_identical_is_zero() -> None:
    a = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    d = paired_bootstrap_diff(a, list(a), n_resamples=1_000)
    assert d.mean == 0.0
    assert d.low == 0.0 and d.high == 0.0
    assert d.p_value == 1.0
    assert d.n == 6


def test_paired_diff_clear_improvement() -> None:
    a = [1.0] * 40 + [0.0] * 10
    b = [0.0] * 40 + [1.0] * 10
    d = paired_bootstrap_diff(a, b, n_resamples=2_000, seed=3)
    assert d.mean == pytest.approx(0.6)
    assert 0.0 < d.low <= d.mean <= d.high
    assert d.p_value < 0.01
    assert paired_bootstrap_diff(a, b, n_resamples=2_000, seed=3) == d
    rev = paired_bootstrap_diff(b, a, n_resamples=2_000, seed=3)
    assert rev.mean == pytest.approx(-0.6)
    assert rev.high < 0.0


def test_paired_diff_p_value_in_range() -> None:
    a = [1.0, 0.0, 1.0, 0.0, 1.0]
    b = [0.0, 1.0, 1.0, 0.0, 0.0]
    d = paired_bootstrap_diff(a, b, n_resamples=1_000, seed=0)
    assert 0.0 <= d.p_value <= 1.0
    assert d.p_value > 0.05


def test_paired_diff_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="len"):
        paired_bootstrap_diff([1.0, 0.0], [1.0])


def test_pair_records() -> None:
    a = [
        rec(True, 1, [1], env_id="e", episode=0),
        rec(True, 1, [1], env_id="e", episode=1, errored=True),
        rec(True, 1, [1], env_id="e", episode=2),
        rec(True, 1, [1], env_id="e", episode=3),
        rec(True, 1, [1], env_id="f", episode=0),
    ]
    b = [
        rec(False, None, [0], env_id="f", episode=0),
        rec(False, None, [0], env_id="e", episode=3, errored=True),
        rec(False, None, [0], env_id="e", episode=1),
        rec(False, None, [0], env_id="e", episode=0),
    ]
    pairs = pair_records(a, b)
    keys = [(x["env_id"], x["episode"]) for x, _ in pairs]
    assert keys == [("e", 0), ("f", 0)]
    for x, y in pairs:
        assert (x["env_id"], x["episode"]) == (y["env_id"], y["episode"])
        assert x["success"] and not y["success"]


def test_pair_records_duplicate_and_missing_key() -> None:
    dup = [rec(True, 1, [1], env_id="e", episode=0)] * 2
    with pytest.raises(ValueError, match="duplicate"):
        pair_records(dup, [])
    with pytest.raises(ValueError, match="duplicate"):
        pair_records([], dup)
    with pytest.raises(ValueError, match="key"):
        pair_records([rec(True, 1, [1])], [])


def test_worst_case_picks_min() -> None:
    groups = {
        "patient": [rec(True, 1, [1]), rec(True, 2, [1, 1])],  # SR 1.0
        "impatient": [rec(True, 1, [1]), rec(False, None, [])],  # SR 0.5
        "hostile": [rec(False, None, []), rec(True, 3, [1, 1, 1]), rec(False, None, [])],
    }
    name, value = worst_case(groups, success_rate)
    assert name == "hostile"
    assert value == pytest.approx(1 / 3)
    name, value = worst_case(groups, functools.partial(rcsr, T=2))
    assert name == "hostile" and value == 0.0


def test_worst_case_ties_and_nan() -> None:
    groups = {
        "b": [rec(False, None, [])],
        "a": [rec(False, None, [])],
        "c": [rec(True, 1, [1], errored=True)],  # nan -> skipped
    }
    assert worst_case(groups, success_rate) == ("a", 0.0)
    name, value = worst_case({"z": [], "y": []}, success_rate)
    assert name == "y" and math.isnan(value)
    with pytest.raises(ValueError):
        worst_case({}, success_rate)


def test_summarize() -> None:
    s = summarize(RECORDS, n_resamples=500, seed=0)
    json.dumps(s, allow_nan=False)  # strict-JSON serialisable
    assert s["n"] == 6
    assert s["n_errored"] == 1
    assert s["sr"] == pytest.approx(4 / 6)
    assert s["at"] == pytest.approx(32 / 6)
    assert s["rcsr"] == pytest.approx(2 / 6)
    for key in ("sr", "at", "rcsr"):
        low, high = s[f"{key}_ci"]
        assert low <= s[key] <= high
    assert s["sr_curve"][-1] == pytest.approx(s["sr"])
    assert s["rcsr_curve"][-1] == pytest.approx(s["rcsr"])
    assert len(s["sr_curve"]) == len(s["rcsr_curve"]) == 8
    # pooled q over valid episodes: R1 1, R2 6, R3 8, R5 10, R6 2, R7 2 over 3+8+8+10+2+2
    assert s["mean_q"] == pytest.approx(29 / 33)
    assert summarize(RECORDS, n_resamples=500, seed=0) == s


def test_summarize_empty() -> None:
    s = summarize([R4], n_resamples=100)
    json.dumps(s, allow_nan=False)
    assert s["n"] == 0 and s["n_errored"] == 1
    assert s["sr"] is None and s["sr_ci"] == [None, None]
    assert s["mean_q"] is None


def test_format_table() -> None:
    rows = [
        {"agent": "masp_agent", "env_id": "ESConv-v0", **summarize(RECORDS, n_resamples=200)},
        {"agent": "random_baseline", "env_id": "ESConv-v0", **summarize([R4], n_resamples=200)},
    ]
    table = format_table(rows)
    lines = table.splitlines()
    assert len(lines) == 4
    assert "masp_agent" in table and "random_baseline" in table
    assert "SR@8" in lines[0] and "RCSR@8" in lines[0] and "AT" in lines[0]
    assert "errored" in lines[0]
    assert "0.67 [" in lines[2]
    assert "n/a" in lines[3]
    custom = format_table(rows, columns=["agent", "mean_q"])
    assert "mean q" in custom.splitlines()[0]
    assert "0.88" in custom
