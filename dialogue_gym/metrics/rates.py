"""Per-episode predicates and the rates over episodes: SR@t, AT, RCSR@t, SL, the curves.

The definitions are in :mod:`dialogue_gym.metrics`; errored episodes are left out of every
rate (:func:`valid_records`) and a rate over no episode is ``nan``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_T",
    "TAU_Q",
    "Record",
    "average_turns",
    "check_horizon",
    "episode_sl",
    "is_errored",
    "mean_or_nan",
    "rc_success_within",
    "rcsr",
    "rcsr_curve",
    "sale_to_list",
    "sl_from_steps",
    "sr_curve",
    "success_rate",
    "success_within",
    "turns_to_success",
    "valid_records",
]


TAU_Q: float = 0.70
"""Default rationality threshold ``τ_q`` for RCSR."""


DEFAULT_T: int = 8
"""Default maximum number of exchanges per episode."""


Record = Mapping[str, Any]


# Tolerance for the floating-point comparison ``mean(q) >= tau_q``.
_EPS = 1e-12


def is_errored(record: Record) -> bool:
    """Whether the episode errored (an agent/backend failure): left out of every rate."""
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


def valid_records(records: Iterable[Record]) -> list[Record]:
    """Drop errored episodes."""
    return [r for r in records if not is_errored(r)]


def mean_or_nan(values: Sequence[float]) -> float:
    """The mean of ``values``; ``nan`` when there are none."""
    return float(sum(values)) / len(values) if values else float("nan")


def check_horizon(T: int) -> None:
    """Raises ``ValueError`` unless the exchange budget ``T`` is at least 1."""
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
    check_horizon(T)
    return mean_or_nan([float(success_within(r, T)) for r in valid_records(records)])


def average_turns(records: Iterable[Record], T: int = DEFAULT_T) -> float:
    """AT: average number of exchanges to success, failures counted as ``T``.

    Args:
        records: Episode records; errored ones are ignored.
        T: Exchange budget.

    Returns:
        Average turns in ``[1, T]``, or ``nan`` if there are no non-errored episodes.
    """
    check_horizon(T)
    return mean_or_nan([float(turns_to_success(r, T)) for r in valid_records(records)])


def rcsr(records: Iterable[Record], T: int = DEFAULT_T, tau_q: float = TAU_Q) -> float:
    """RCSR@T: rationality-constrained success rate.

    Args:
        records: Episode records; errored ones are ignored.
        T: Exchange budget.
        tau_q: Rationality threshold on the mean ``q`` up to the success turn.

    Returns:
        The RC success rate in ``[0, 1]``, or ``nan`` if there are no non-errored episodes.
    """
    check_horizon(T)
    return mean_or_nan([float(rc_success_within(r, T, tau_q)) for r in valid_records(records)])


def sale_to_list(records: Iterable[Record]) -> float:
    """SL: mean sale-to-list ratio over the non-errored episodes (see :func:`episode_sl`).

    Args:
        records: Episode records; errored ones are ignored.

    Returns:
        The mean SL, or ``nan`` if no non-errored record carries one (not a deal task).
    """
    valid = valid_records(records)
    if not any(episode_sl(r) is not None for r in valid):
        return float("nan")
    return mean_or_nan([episode_sl(r) or 0.0 for r in valid])


def sr_curve(records: Iterable[Record], T: int = DEFAULT_T) -> list[float]:
    """SR@t for ``t = 1..T``.

    Args:
        records: Episode records; errored ones are ignored.
        T: Maximum exchange budget.

    Returns:
        ``T`` values (non-decreasing); all ``nan`` if there are no non-errored episodes.
    """
    check_horizon(T)
    valid = valid_records(records)
    return [mean_or_nan([float(success_within(r, t)) for r in valid]) for t in range(1, T + 1)]


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
    check_horizon(T)
    valid = valid_records(records)
    return [
        mean_or_nan([float(rc_success_within(r, t, tau_q)) for r in valid]) for t in range(1, T + 1)
    ]
