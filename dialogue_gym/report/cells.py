"""How values read in the cells of a report: numbers, CIs, differences, HTML text.

Shared by the Markdown/CSV tables and the HTML report, so both print a value the same way
(the format of :func:`dialogue_gym.metrics.format_table`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from dialogue_gym import metrics

__all__ = [
    "OPTIONAL_HEADERS",
    "diff_text",
    "escape",
    "has_sl",
    "is_int",
    "is_number",
    "missing",
    "num",
    "optional_columns",
    "p_text",
    "ranked",
    "t_label",
    "value_text",
    "with_ci",
]


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int (``bool`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a float (``bool`` excluded)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def missing(value: Any) -> bool:
    """Whether ``value`` is undefined: ``None`` or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def num(value: Any, digits: int = 2, signed: bool = False) -> str:
    """A number with ``digits`` decimals (``n/a`` when undefined; other values as text)."""
    if missing(value):
        return "n/a"
    if not is_number(value):
        return str(value)
    return f"{float(value):+.{digits}f}" if signed else f"{float(value):.{digits}f}"


def with_ci(row: Mapping[str, Any], key: str) -> str:
    """``0.70 [0.40, 1.00]`` (the format of :func:`metrics.format_table`)."""
    value, ci = row.get(key), row.get(f"{key}_ci")
    if missing(value):
        return "n/a"
    if not ci or len(ci) != 2:
        return num(value)
    return f"{num(value)} [{num(ci[0])}, {num(ci[1])}]"


def value_text(value: Any) -> str:
    """A per-episode value: integers as they are, other numbers with three decimals."""
    if is_int(value):
        return str(value)
    return num(value, 3) if is_number(value) else str(value)


def diff_text(diff: metrics.PairedDiff) -> str:
    """``+0.10 [-0.05, +0.25]``: a paired difference with its CI (``n/a`` without pairs)."""
    if diff.n == 0:
        return "n/a"
    return f"{diff.mean:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}]"


def p_text(diff: metrics.PairedDiff) -> str:
    """The paired difference's two-sided p-value (``n/a`` without pairs)."""
    return "n/a" if diff.n == 0 else f"{diff.p_value:.3g}"


def t_label(rows: Sequence[Mapping[str, Any]]) -> str:
    """The common ``T`` of the rows, or ``T`` when they differ."""
    horizons = {row.get("T") for row in rows}
    return str(horizons.pop()) if len(horizons) == 1 else "T"


OPTIONAL_HEADERS = {
    "csr": "CSR",
    "proactivity": "proactivity",
    "proactive_turns": "proactive turns",
}
"""Columns shown for tasks whose users have latent concerns (the CUS metrics), and titles."""


def optional_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """CSR, proactivity and proactive turns, for tasks whose users have latent concerns."""
    return [key for key in OPTIONAL_HEADERS if any(r.get(key) is not None for r in rows)]


def has_sl(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any row is of a negotiation task (a deal judge): SL is shown next to SR."""
    return any(r.get("sl") is not None or "sl_ci" in r for r in rows)


def ranked(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Leaderboard order: the agents of a negotiation env id ranked by SL (metrics.rank_rows)."""
    return [dict(row) for row in metrics.rank_rows(rows)]


def escape(value: Any) -> str:
    """``value`` as HTML text (quotes escaped too: safe in attributes)."""
    return html.escape(str(value), quote=True)
