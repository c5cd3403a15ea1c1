"""Summaries of evaluation runs: pairing, worst case, :func:`summarize`, ranking, the text table."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dialogue_gym.metrics.bootstrap import N_BOOTSTRAP, bootstrap_ci
from dialogue_gym.metrics.rates import (
    DEFAULT_T,
    TAU_Q,
    Record,
    check_horizon,
    episode_sl,
    is_errored,
    mean_or_nan,
    rc_success_within,
    rcsr_curve,
    sr_curve,
    success_within,
    turns_to_success,
    valid_records,
)

__all__ = [
    "DEFAULT_COLUMNS",
    "format_table",
    "pair_records",
    "rank_rows",
    "summarize",
    "worst_case",
]


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
        if other is None or is_errored(rec) or is_errored(other):
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
    check_horizon(T)
    all_records = list(records)
    valid = valid_records(all_records)
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
        "mean_q": _json_float(mean_or_nan(all_q)),
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
    return _json_float(mean_or_nan(values)) if values else None


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
