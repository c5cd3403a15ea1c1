"""The leaderboard as Markdown or CSV: :func:`markdown_table`, :func:`csv_table`."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from dialogue_gym import metrics
from dialogue_gym.report.cells import (
    OPTIONAL_HEADERS,
    diff_text,
    has_sl,
    missing,
    num,
    optional_columns,
    p_text,
    ranked,
    t_label,
    with_ci,
)
from dialogue_gym.report.load import RunLike, load_runs
from dialogue_gym.report.stats import paired_rows, summary_rows

__all__ = ["CSV_COLUMNS", "csv_table", "markdown_table"]


def _md_cell(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(
    headers: Sequence[str], body: Sequence[Sequence[Any]], numeric: Sequence[bool]
) -> str:
    lines = [
        "| " + " | ".join(_md_cell(h) for h in headers) + " |",
        "|" + "|".join("---:" if num else "---" for num in numeric) + "|",
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in cells) + " |" for cells in body]
    return "\n".join(lines)


def markdown_table(
    run_dirs: RunLike | Sequence[RunLike],
    n_resamples: int = metrics.N_BOOTSTRAP,
    seed: int = 0,
) -> str:
    """The leaderboard as a Markdown table: one row per (agent, env id).

    Columns: agent, env, SR@T [95% CI], AT [95% CI], RCSR@T [95% CI], n (non-errored
    episodes), errored, plus CSR and proactivity when a task reports them, and SL [95% CI]
    after SR@T when a negotiation task does (its agents ranked by SL, :func:`metrics.rank_rows`).
    With two runs a ``run`` column (1 or 2) comes first and a second table follows with the
    paired differences run 2 − run 1.

    Args:
        run_dirs: One or two run directories (or :class:`Run` objects).
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        The Markdown text, ending with a newline.

    Raises:
        ReportError: A run cannot be read.
    """
    runs = load_runs(run_dirs, max_transcripts=0)
    per_run = [ranked(summary_rows(r, n_resamples, seed)) for r in runs]
    all_rows = [row for rows in per_run for row in rows]
    t = t_label(all_rows)
    extra = optional_columns(all_rows)
    sl = has_sl(all_rows)
    headers = ["agent", "env", f"SR@{t} [95% CI]"] + (["SL [95% CI]"] if sl else [])
    headers += ["AT [95% CI]", f"RCSR@{t} [95% CI]"]
    headers += ["n", "errored"] + (["T"] if t == "T" else [])
    headers += [OPTIONAL_HEADERS[key] for key in extra]
    numeric = [False, False] + [True] * (len(headers) - 2)
    two = len(runs) == 2
    if two:
        headers, numeric = ["run", *headers], [True, *numeric]
    body = []
    for index, rows in enumerate(per_run, start=1):
        for row in rows:
            cells = [row["agent"], row["env_id"], with_ci(row, "sr")]
            cells += [with_ci(row, "sl")] if sl else []
            cells += [with_ci(row, "at"), with_ci(row, "rcsr"), row["n"], row["n_errored"]]
            cells += [row["T"]] if t == "T" else []
            cells += [num(row.get(key)) for key in extra]
            body.append([index, *cells] if two else cells)
    parts = [_md_table(headers, body, numeric)]
    if two:
        parts.append(f"run 1 = `{runs[0].path}`, run 2 = `{runs[1].path}`")
        diffs = paired_rows(runs[0], runs[1], n_resamples, seed)
        td = t_label(diffs) if diffs else t
        parts.append("Paired differences, run 2 − run 1 (episodes matched on seed):")
        diff_sl = any("sl" in row for row in diffs)
        keys = ("sr", "sl", "at", "rcsr") if diff_sl else ("sr", "at", "rcsr")
        diff_body = []
        for row in diffs:
            cells = [row["agent"], row["env_id"], row["n_pairs"]]
            for key in keys:
                diff = row.get(key)
                cells += [diff_text(diff), p_text(diff)] if diff is not None else ["", ""]
            diff_body.append([*cells, row["left_out"]])
        diff_headers = ["agent", "env", "pairs", f"ΔSR@{td} [95% CI]", "p"]
        diff_headers += ["ΔSL [95% CI]", "p"] if diff_sl else []
        diff_headers += ["ΔAT [95% CI]", "p", f"ΔRCSR@{td} [95% CI]", "p", "left out"]
        if diff_body:
            numeric = [False, False] + [True] * (len(diff_headers) - 2)
            parts.append(_md_table(diff_headers, diff_body, numeric))
        else:
            parts.append("(no agent × env id is in both runs)")
    return "\n\n".join(parts) + "\n"


CSV_COLUMNS = (
    "agent",
    "env_id",
    "T",
    "tau_q",
    "n",
    "n_errored",
    "sr",
    "sr_ci_low",
    "sr_ci_high",
    "sl",
    "sl_ci_low",
    "sl_ci_high",
    "at",
    "at_ci_low",
    "at_ci_high",
    "rcsr",
    "rcsr_ci_low",
    "rcsr_ci_high",
    "mean_q",
    "csr",
    "proactivity",
    "proactive_turns",
)
"""Columns of :func:`csv_table` (a ``run`` column comes first with two runs)."""


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a text cell as a formula."""


def _csv_text(value: str) -> str:
    """A text cell that spreadsheets show as text (a leading ``'`` before a formula start)."""
    return f"'{value}" if value.startswith(_FORMULA_START) else value


def _csv_value(value: Any) -> Any:
    if missing(value):
        return ""
    if isinstance(value, float):
        return repr(round(value, 6))
    if isinstance(value, str):
        return _csv_text(value)
    return value


def csv_table(
    run_dirs: RunLike | Sequence[RunLike],
    n_resamples: int = metrics.N_BOOTSTRAP,
    seed: int = 0,
) -> str:
    """The leaderboard as CSV: one row per (agent, env id), columns :data:`CSV_COLUMNS`.

    CI bounds are separate columns (``sr_ci_low``, ``sr_ci_high``, ...); undefined values
    (no non-errored episode) are empty cells, as are ``sl``/``sl_ci_*`` outside negotiation
    tasks, whose agents come in SL order (:func:`metrics.rank_rows`). With two runs a ``run``
    column holding the run directory comes first.

    Args:
        run_dirs: One or two run directories (or :class:`Run` objects).
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        The CSV text (header line first, one line per row, LF line ends).

    Raises:
        ReportError: A run cannot be read.
    """
    runs = load_runs(run_dirs, max_transcripts=0)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    two = len(runs) == 2
    writer.writerow((["run"] if two else []) + list(CSV_COLUMNS))
    for r in runs:
        for row in ranked(summary_rows(r, n_resamples, seed)):
            flat = dict(row)
            for key in ("sr", "sl", "at", "rcsr"):
                low, high = row.get(f"{key}_ci") or (None, None)
                flat[f"{key}_ci_low"], flat[f"{key}_ci_high"] = low, high
            cells = [_csv_value(flat.get(column)) for column in CSV_COLUMNS]
            writer.writerow(([_csv_text(str(r.path))] if two else []) + cells)
    return buffer.getvalue()
