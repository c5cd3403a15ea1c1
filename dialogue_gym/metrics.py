"""Episode-level metrics for proactive dialogue evaluation (MASP-style).

An *episode* is a sequence of at most ``T`` exchanges (system utterance followed by a user
reply). After every exchange a success judge decides whether the dialogue goal has been
reached and a rationality judge scores the system turn with ``q ∈ {+1, -1, 0}``.

Episode records
---------------
Every function here takes episode records as plain mappings (``dict`` as read from JSONL;
objects with attributes are *not* supported). The keys used are:

* ``success`` (``bool``): whether the success judge ever fired.
* ``success_turn`` (``int | None``): 1-based exchange index ``τ_s`` at which success was
  judged, ``None`` if never.
* ``q`` (``list[int]``): rationality score per exchange, ``q[0]`` belongs to exchange 1. It may
  be shorter than ``T`` when the episode ended early; a missing entry counts as ``0``.
* ``errored`` (``bool``, default ``False``): an agent/backend failure. Errored episodes are
  **excluded from every rate** and only counted separately (``n_errored``).
* Optional: ``T``, ``episode``, ``seed``, ``env_id``, ``agent`` (used for pairing/reporting
  only; the horizon used by a metric is always its ``T`` argument).
* ``sl`` (``float``, tasks with a deal judge only — CraigslistBargain): the episode's
  sale-to-list ratio, see below. Records without it (every other task) get no SL anywhere.

Metrics
-------
Let ``E`` be the non-errored episodes, ``N = |E|`` and ``𝟙[·]`` the indicator function.

* Success rate within ``t`` exchanges::

      SR@t = (1/N) Σ_e 𝟙[success_e ∧ 1 ≤ τ_s(e) ≤ t]

* Average turns, with failures (no success within ``T``) counted as ``T``::

      AT = (1/N) Σ_e (τ_s(e) if success within T else T)

* Rationality-constrained success rate with threshold ``τ_q`` (default 0.70)::

      RCSR@t = (1/N) Σ_e 𝟙[success_e ∧ τ_s(e) ≤ t ∧ (1/τ_s(e)) Σ_{k=1..τ_s(e)} q_k ≥ τ_q]

* Curves ``SR@t`` and ``RCSR@t`` for ``t = 1..T``; both are non-decreasing in ``t`` and their
  last points equal ``SR@T`` and ``RCSR@T``.
* Worst case over a user ensemble: ``min_g metric(E_g)``, reporting the minimising group.
* Sale-to-list ratio (PPDPP's SL) for negotiation tasks, whose records carry ``sl``::

      SL = (1/N) Σ_e sl_e,   sl_e = (p_deal − p_seller) / (p_buyer − p_seller), 0 without a deal

  where ``p_seller`` is the listing price (the seller's target) and ``p_buyer`` the buyer's
  target: the buyer-normalized utility of the first deal the judge recognized (1: the buyer's
  target, 0: the asking price or no deal, negative: above the asking price). SR alone can be
  gamed by capitulating ("Deal at $LISTING"), so negotiation leaderboards rank by SL
  (:func:`rank_rows`) and report it next to SR with a bootstrap CI.

Rates over an empty set (no non-errored episodes) are ``float('nan')``, never an exception.

Uncertainty
-----------
Confidence intervals are percentile bootstraps over episodes (default 10,000 resamples)
drawn from ``np.random.default_rng(seed)`` (the global NumPy RNG is never touched). Two runs
evaluated on the same episodes are compared with a *paired* bootstrap: episode indices are
resampled jointly, i.e. the per-episode differences ``a_i - b_i`` are resampled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_T",
    "N_BOOTSTRAP",
    "TAU_Q",
    "Interval",
    "PairedDiff",
    "average_turns",
    "bootstrap_ci",
    "episode_sl",
    "format_table",
    "pair_records",
    "paired_bootstrap_diff",
    "rank_rows",
    "rc_success_within",
    "rcsr",
    "rcsr_curve",
    "sale_to_list",
    "sl_from_steps",
    "sr_curve",
    "success_rate",
    "success_within",
    "summarize",
    "turns_to_success",
    "worst_case",
]

TAU_Q: float = 0.70
"""Default rationality threshold ``τ_q`` for RCSR."""

DEFAULT_T: int = 8
"""Default maximum number of exchanges per episode."""

N_BOOTSTRAP: int = 10_000
"""Default number of bootstrap resamples."""

Record = Mapping[str, Any]

# Upper bound on the number of index entries materialised at once by the bootstrap
# (4M int64 = 32 MiB).
_CHUNK_ELEMENTS = 4_000_000
# Tolerance for the floating-point comparison ``mean(q) >= tau_q``.
_EPS = 1e-12


# --------------------------------------------------------------------------------------------
# Per-episode predicates
# --------------------------------------------------------------------------------------------


def _is_errored(record: Record) -> bool:
    return bool(record.get("errored", False))


def _success_turn(record: Record) -> int | None:
    """Return ``τ_s`` if the episode succeeded, else ``None``."""
    if not record.get("success", False):
        return None
    turn = record.get("success_turn")
    if turn is None:
        return None
    return int(turn)


def success_within(record: Record, t: int) -> bool:
    """Whether the episode succeeded within the first ``t`` exchanges.

    Args:
        record: Episode record (mapping with ``success`` and ``success_turn``).
        t: Exchange budget (1-based, inclusive).

    Returns:
        ``True`` iff ``success`` is true and ``1 <= success_turn <= t``.
    """
    turn = _success_turn(record)
    return turn is not None and 1 <= turn <= t


def _mean_q_until(record: Record, turn: int) -> float:
    """Mean of ``q`` over exchanges ``1..turn``; missing entries count as 0."""
    q = list(record.get("q") or [])[:turn]
    return float(sum(q)) / turn


def rc_success_within(record: Record, t: int, tau_q: float = TAU_Q) -> bool:
    """Whether the episode is a rationality-constrained success within ``t`` exchanges.

    The episode must succeed at ``τ_s <= t`` and the mean of ``q`` over exchanges ``1..τ_s``
    must be at least ``tau_q``. Entries of ``q`` missing for exchanges ``<= τ_s`` count as 0.

    Args:
        record: Episode record (mapping with ``success``, ``success_turn`` and ``q``).
        t: Exchange budget (1-based, inclusive).
        tau_q: Rationality threshold.

    Returns:
        ``True`` iff the episode is an RC success within ``t`` exchanges.
    """
    if not success_within(record, t):
        return False
    turn = _success_turn(record)
    assert turn is not None  # guaranteed by success_within
    return _mean_q_until(record, turn) >= tau_q - _EPS


def turns_to_success(record: Record, T: int) -> int:
    """Number of exchanges to success, counting a failure within ``T`` as ``T``.

    Args:
        record: Episode record.
        T: Maximum number of exchanges.

    Returns:
        ``success_turn`` if the episode succeeded within ``T`` exchanges, else ``T``.
    """
    if success_within(record, T):
        turn = _success_turn(record)
        assert turn is not None
        return turn
    return T


def episode_sl(record: Record) -> float | None:
    """The episode's sale-to-list ratio, or ``None`` when the record has none (not a deal task).

    Reads ``sl`` (``None`` there counts as no deal: 0). Records written before ``sl`` existed
    fall back to ``utility`` of a successful deal (0 for a failure carrying ``utility``).

    Args:
        record: Episode record.

    Returns:
        ``sl`` as a float, or ``None``.
    """
    if "sl" in record:
        value = record["sl"]
        return 0.0 if value is None else float(value)
    if "utility" in record:
        value = record["utility"]
        return float(value) if record.get("success") and value is not None else 0.0
    return None


def sl_from_steps(steps: Iterable[Mapping[str, Any]]) -> float | None:
    """An episode's SL from its per-exchange infos (what an evaluator stores as ``sl``).

    Deal judges put ``utility`` into every exchange's infos (``None`` without a deal). The
    episode's SL is the utility of the first exchange judged a deal — a deal is final, so a
    later exchange cannot improve on it — and 0 when no exchange was.

    Args:
        steps: The system seat's infos, one per exchange, in order.

    Returns:
        The SL, or ``None`` when no info carries ``utility`` (the task has no deal judge).
    """
    seen = False
    for info in steps:
        if "utility" not in info:
            continue
        seen = True
        if info["utility"] is not None:
            return float(info["utility"])
    return 0.0 if seen else None


# --------------------------------------------------------------------------------------------
# Aggregate metrics
# --------------------------------------------------------------------------------------------


def _valid(records: Iterable[Record]) -> list[Record]:
    """Drop errored episodes."""
    return [r for r in records if not _is_errored(r)]


def _mean(values: Sequence[float]) -> float:
    return float(sum(values)) / len(values) if values else float("nan")


def _check_T(T: int) -> None:
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")


def success_rate(records: Iterable[Record], T: int = DEFAULT_T) -> float:
    """SR@T: fraction of non-errored episodes that succeed within ``T`` exchanges.

    Args:
        records: Episode records; errored ones are ignored.
        T: Exchange budget.

    Returns:
        The success rate in ``[0, 1]``, or ``nan`` if there are no non-errored episodes.
    """
    _check_T(T)
    return _mean([float(success_within(r, T)) for r in _valid(records)])


def average_turns(records: Iterable[Record], T: int = DEFAULT_T) -> float:
    """AT: average number of exchanges to success, failures counted as ``T``.

    Args:
        records: Episode records; errored ones are ignored.
        T: Exchange budget.

    Returns:
        Average turns in ``[1, T]``, or ``nan`` if there are no non-errored episodes.
    """
    _check_T(T)
    return _mean([float(turns_to_success(r, T)) for r in _valid(records)])


def rcsr(records: Iterable[Record], T: int = DEFAULT_T, tau_q: float = TAU_Q) -> float:
    """RCSR@T: rationality-constrained success rate.

    Args:
        records: Episode records; errored ones are ignored.
        T: Exchange budget.
        tau_q: Rationality threshold on the mean ``q`` up to the success turn.

    Returns:
        The RC success rate in ``[0, 1]``, or ``nan`` if there are no non-errored episodes.
    """
    _check_T(T)
    return _mean([float(rc_success_within(r, T, tau_q)) for r in _valid(records)])


def sale_to_list(records: Iterable[Record]) -> float:
    """SL: mean sale-to-list ratio over the non-errored episodes (see :func:`episode_sl`).

    Args:
        records: Episode records; errored ones are ignored.

    Returns:
        The mean SL, or ``nan`` if no non-errored record carries one (not a deal task).
    """
    valid = _valid(records)
    if not any(episode_sl(r) is not None for r in valid):
        return float("nan")
    return _mean([episode_sl(r) or 0.0 for r in valid])


def sr_curve(records: Iterable[Record], T: int = DEFAULT_T) -> list[float]:
    """SR@t for ``t = 1..T``.

    Args:
        records: Episode records; errored ones are ignored.
        T: Maximum exchange budget.

    Returns:
        ``T`` values (non-decreasing); all ``nan`` if there are no non-errored episodes.
    """
    _check_T(T)
    valid = _valid(records)
    return [_mean([float(success_within(r, t)) for r in valid]) for t in range(1, T + 1)]


def rcsr_curve(
    records: Iterable[Record],
    T: int = DEFAULT_T,
    tau_q: float = TAU_Q,
) -> list[float]:
    """RCSR@t for ``t = 1..T``.

    Args:
        records: Episode records; errored ones are ignored.
        T: Maximum exchange budget.
        tau_q: Rationality threshold.

    Returns:
        ``T`` values (non-decreasing); all ``nan`` if there are no non-errored episodes.
    """
    _check_T(T)
    valid = _valid(records)
    return [_mean([float(rc_success_within(r, t, tau_q)) for r in valid]) for t in range(1, T + 1)]


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Pairing, worst case, summaries
# --------------------------------------------------------------------------------------------


def _key_of(record: Record, key: Sequence[str], side: str) -> tuple[Any, ...]:
    missing = [k for k in key if k not in record]
    if missing:
        raise ValueError(f"record in {side} lacks pairing key field(s) {missing}: {dict(record)}")
    return tuple(record[k] for k in key)


def pair_records(
    records_a: Iterable[Record],
    records_b: Iterable[Record],
    key: Sequence[str] = ("env_id", "episode"),
) -> list[tuple[Record, Record]]:
    """Match episodes of two runs by a key, dropping pairs where either side errored.

    Args:
        records_a: Episode records of run A.
        records_b: Episode records of run B.
        key: Field names whose values identify an episode.

    Returns:
        ``(record_a, record_b)`` pairs in the order of ``records_a``; episodes present in
        only one run, or errored in either, are left out.

    Raises:
        ValueError: If a record lacks a key field or a key occurs twice within one run.
    """
    key = tuple(key)
    by_key_b: dict[tuple[Any, ...], Record] = {}
    for rec in records_b:
        k = _key_of(rec, key, "records_b")
        if k in by_key_b:
            raise ValueError(f"duplicate key {k} in records_b")
        by_key_b[k] = rec
    pairs: list[tuple[Record, Record]] = []
    seen_a: set[tuple[Any, ...]] = set()
    for rec in records_a:
        k = _key_of(rec, key, "records_a")
        if k in seen_a:
            raise ValueError(f"duplicate key {k} in records_a")
        seen_a.add(k)
        other = by_key_b.get(k)
        if other is None or _is_errored(rec) or _is_errored(other):
            continue
        pairs.append((rec, other))
    return pairs


def worst_case(
    groups: Mapping[str, Sequence[Record]],
    metric: Callable[[Sequence[Record]], float],
) -> tuple[str, float]:
    """Worst (minimum) value of ``metric`` over groups of episodes, e.g. user types.

    Groups whose metric is ``nan`` (e.g. only errored episodes) are skipped. Ties are
    broken by taking the first group in sorted name order.

    Args:
        groups: Mapping from group name to its episode records.
        metric: Function of a list of records, e.g. ``success_rate`` or ``rcsr``
            (use ``functools.partial`` to fix ``T``/``tau_q``).

    Returns:
        ``(group_name, value)`` of the worst group. If every group yields ``nan``, the first
        name in sorted order is returned with ``nan``.

    Raises:
        ValueError: If ``groups`` is empty.
    """
    if not groups:
        raise ValueError("worst_case needs at least one group")
    names = sorted(groups)
    best_name: str | None = None
    best_value = float("nan")
    for name in names:
        value = float(metric(groups[name]))
        if math.isnan(value):
            continue
        if best_name is None or value < best_value:
            best_name, best_value = name, value
    if best_name is None:
        return names[0], float("nan")
    return best_name, best_value


def _json_float(x: float) -> float | None:
    """Convert to a plain float, mapping ``nan`` to ``None`` for strict JSON."""
    x = float(x)
    return None if math.isnan(x) else x


def summarize(
    records: Iterable[Record],
    T: int = DEFAULT_T,
    tau_q: float = TAU_Q,
    n_resamples: int = N_BOOTSTRAP,
    seed: int = 0,
) -> dict[str, Any]:
    """Summary of one run, JSON-serialisable (strict JSON: undefined values are ``None``).

    Args:
        records: Episode records of the run.
        T: Exchange budget.
        tau_q: Rationality threshold.
        n_resamples: Bootstrap resamples for the CIs.
        seed: Bootstrap seed.

    Returns:
        A dict with keys ``n`` (non-errored episodes), ``n_errored``, ``T``, ``tau_q``,
        ``sr``, ``sr_ci`` (``[low, high]``), ``at``, ``at_ci``, ``rcsr``, ``rcsr_ci``,
        ``sr_curve``, ``rcsr_curve`` (lists of length ``T``), ``mean_q`` (mean of all ``q``
        entries recorded in non-errored episodes, pooled over exchanges), and ``csr``,
        ``proactivity`` and ``proactive_turns`` (means over episodes that carry them, else
        ``None``; see ``DialogueEnv._concern_metrics`` for their definitions). For tasks with
        a deal judge (records carrying ``sl``) also ``sl`` and ``sl_ci``: the mean
        sale-to-list ratio with its bootstrap CI (:func:`sale_to_list`); the keys are absent
        for other tasks. Values that are undefined because there are no non-errored episodes
        (or no ``q`` entries) are ``None`` instead of ``nan``.
    """
    _check_T(T)
    all_records = list(records)
    valid = _valid(all_records)
    n_errored = len(all_records) - len(valid)

    sr_vals = [float(success_within(r, T)) for r in valid]
    at_vals = [float(turns_to_success(r, T)) for r in valid]
    rc_vals = [float(rc_success_within(r, T, tau_q)) for r in valid]
    sr_ci = bootstrap_ci(sr_vals, n_resamples=n_resamples, seed=seed)
    at_ci = bootstrap_ci(at_vals, n_resamples=n_resamples, seed=seed)
    rc_ci = bootstrap_ci(rc_vals, n_resamples=n_resamples, seed=seed)
    all_q = [float(x) for r in valid for x in (r.get("q") or [])]
    sl: dict[str, Any] = {}
    if any(episode_sl(r) is not None for r in valid):
        sl_ci = bootstrap_ci(
            [episode_sl(r) or 0.0 for r in valid], n_resamples=n_resamples, seed=seed
        )
        sl = {
            "sl": _json_float(sl_ci.mean),
            "sl_ci": [_json_float(sl_ci.low), _json_float(sl_ci.high)],
        }

    return {
        "n": len(valid),
        "n_errored": n_errored,
        "T": int(T),
        "tau_q": float(tau_q),
        "sr": _json_float(sr_ci.mean),
        "sr_ci": [_json_float(sr_ci.low), _json_float(sr_ci.high)],
        "at": _json_float(at_ci.mean),
        "at_ci": [_json_float(at_ci.low), _json_float(at_ci.high)],
        "rcsr": _json_float(rc_ci.mean),
        "rcsr_ci": [_json_float(rc_ci.low), _json_float(rc_ci.high)],
        "sr_curve": [_json_float(v) for v in sr_curve(valid, T)],
        "rcsr_curve": [_json_float(v) for v in rcsr_curve(valid, T, tau_q)],
        "mean_q": _json_float(_mean(all_q)),
        # CUS metrics, present only for users with latent concerns.
        "csr": _optional_mean(valid, "csr"),
        "proactivity": _optional_mean(valid, "proactivity"),
        "proactive_turns": _optional_mean(valid, "proactive_turns"),
        # Negotiation tasks only: the sale-to-list ratio.
        **sl,
    }


def _optional_mean(records: Sequence[Record], key: str) -> float | None:
    """Mean of ``key`` over the records that carry it; ``None`` when none does."""
    values = [float(r[key]) for r in records if r.get(key) is not None]
    return _json_float(_mean(values)) if values else None


def _sort_value(row: Mapping[str, Any], key: str, sign: float) -> float:
    value = row.get(key)
    if value is None or _is_missing(value):
        return math.inf  # undefined values last
    return sign * float(value)


def rank_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Summary rows in leaderboard order: negotiation tasks ranked by SL.

    Every row keeps its place except the rows of an env id whose rows carry ``sl`` (a task
    with a deal judge, CraigslistBargain): those are reordered among their own places, best
    mean SL first (ties: higher SR, then lower AT, then the original order). SR alone is not a
    ranking there — a buyer who accepts the asking price at once scores SL 0 — and the AT of a
    deal that is not a success counts as T. Rows of other tasks are not reordered.

    Args:
        rows: :func:`summarize` rows with ``env_id`` (e.g. ``EvalResult.summaries``).

    Returns:
        A new list with the same rows.
    """
    out = list(rows)
    places: dict[Any, list[int]] = {}
    for index, row in enumerate(out):
        if row.get("sl") is not None or "sl_ci" in row:
            places.setdefault(row.get("env_id"), []).append(index)
    for indices in places.values():
        ranked = sorted(
            (out[i] for i in indices),
            key=lambda r: (
                _sort_value(r, "sl", -1.0),
                _sort_value(r, "sr", -1.0),
                _sort_value(r, "at", 1.0),
            ),
        )
        for i, row in zip(indices, ranked, strict=True):
            out[i] = row
    return out


# --------------------------------------------------------------------------------------------
# Text table
# --------------------------------------------------------------------------------------------

DEFAULT_COLUMNS: tuple[str, ...] = ("agent", "env_id", "n", "n_errored", "sr", "at", "rcsr")
"""Columns shown by :func:`format_table` when none are given."""

_CI_COLUMNS = {"sr": "SR@{T}", "sl": "SL", "at": "AT", "rcsr": "RCSR@{T}"}
_HEADERS = {
    "n_errored": "errored",
    "env_id": "env",
    "mean_q": "mean q",
    "csr": "CSR",
    "proactive_turns": "proactive turns",
}
_CUS_COLUMNS = ("csr", "proactivity", "proactive_turns")


def _is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _fmt_num(x: Any) -> str:
    return "n/a" if _is_missing(x) else f"{float(x):.2f}"


def _fmt_cell(row: Mapping[str, Any], col: str) -> str:
    value = row.get(col)
    if col in _CI_COLUMNS:
        ci = row.get(f"{col}_ci")
        if _is_missing(value):
            return "n/a"
        if ci is None or len(ci) != 2:
            return _fmt_num(value)
        return f"{_fmt_num(value)} [{_fmt_num(ci[0])}, {_fmt_num(ci[1])}]"
    if _is_missing(value):
        return "" if value is None else "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _fmt_num(value)
    if isinstance(value, (list, tuple)):
        return " ".join(_fmt_num(v) for v in value)
    return str(value)


def _header(col: str, rows: Sequence[Mapping[str, Any]]) -> str:
    if col in _CI_COLUMNS:
        horizons = {row.get("T") for row in rows}
        t_label = str(horizons.pop()) if len(horizons) == 1 and None not in horizons else "T"
        return _CI_COLUMNS[col].format(T=t_label)
    return _HEADERS.get(col, col)


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
) -> str:
    """Render summary rows as a plain-text, aligned table.

    Each row is a :func:`summarize` result extended with ``agent`` and ``env_id``. The
    ``sr``, ``sl``, ``at`` and ``rcsr`` columns are shown with their CIs as ``0.45 [0.35,
    0.55]`` (headers ``SR@T``, ``SL``, ``AT``, ``RCSR@T``, with the actual ``T`` when all rows
    share it). Rows are shown in the given order (see :func:`rank_rows` for leaderboards).
    Other columns show the raw value; numeric cells are right-aligned, text left-aligned.

    Args:
        rows: Summary rows.
        columns: Row keys to show, in order. Defaults to :data:`DEFAULT_COLUMNS`
            (agent, env, n, errored, SR@T, AT, RCSR@T), plus ``SL`` after SR@T when any row
            has it (negotiation tasks) and ``CSR``, ``proactivity`` and ``proactive turns``
            when any row has them.

    Returns:
        The table as a string (header, separator line and one line per row, no trailing
        newline).
    """
    cols = list(columns) if columns is not None else list(DEFAULT_COLUMNS)
    if columns is None and any(r.get("sl") is not None or "sl_ci" in r for r in rows):
        cols.insert(cols.index("sr") + 1, "sl")  # negotiation: SL next to SR
    if columns is None:
        # CUS tasks also report the concern solving rate and proactivity.
        cols += [c for c in _CUS_COLUMNS if any(r.get(c) is not None for r in rows)]
    headers = [_header(c, rows) for c in cols]
    body = [[_fmt_cell(row, c) for c in cols] for row in rows]
    numeric = [
        c in _CI_COLUMNS
        or all(isinstance(row.get(c), (int, float)) or row.get(c) is None for row in rows)
        for c in cols
    ]
    widths = [max([len(h)] + [len(line[i]) for line in body]) for i, h in enumerate(headers)]

    def render(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(w) if num else cell.ljust(w)
            for cell, w, num in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    lines = [render(headers), "  ".join("-" * w for w in widths)]
    lines.extend(render(line) for line in body)
    return "\n".join(lines)
