"""Reports of evaluation runs: one self-contained HTML file, or md/csv leaderboard tables.

A *run directory* is what :func:`dialogue_gym.evaluate` (``dialogue-gym eval --out DIR``)
writes: ``DIR/episodes.jsonl`` (one record per episode) and ``DIR/summary.json``. Every number
in a report is recomputed from ``episodes.jsonl`` with :mod:`dialogue_gym.metrics`, so a run
that was interrupted (no ``summary.json`` yet) or resumed reports exactly what is on disk;
``summary.json`` only contributes the configuration stamp (``T``, ``τ_q``, versions) and the
LLM usage.

The HTML report is a single file with no external references (inline CSS, plots as inline
SVG images, no JavaScript): per run a summary table (SR@T, AT, RCSR@T with 95% bootstrap CIs,
episodes and errored episodes per agent × env; on negotiation tasks also the sale-to-list ratio
SL next to SR, with the agents ranked by it), soft-vs-hard bars, RCSR@t curves, the worst
case over user types, the errored episodes, and collapsible per-episode transcripts with the
per-exchange progress ``s_t``, the user's revealed BDI state, the judge's label and votes,
rationality ``q`` and the user's events. Given two runs it adds paired bootstrap differences
(run 2 − run 1) per (agent, env id), matched on episode seeds.

Errored episodes are never dropped silently: the metrics leave them out of every rate (see
:mod:`dialogue_gym.metrics`), the tables count them, and the HTML lists each with its error.

Example:
    >>> from dialogue_gym.report import markdown_table, write_report
    >>> write_report(["runs/a"], "runs/a/report.html")  # doctest: +SKIP
    >>> print(markdown_table(["runs/a", "runs/b"]))  # doctest: +SKIP

Command line::

    dialogue-gym report runs/a                      # writes runs/a/report.html
    dialogue-gym report runs/a runs/b --out cmp.html
    dialogue-gym report runs/a --format md          # the leaderboard table on stdout
"""

from __future__ import annotations

import argparse
import base64
import csv
import dataclasses
import datetime as _dt
import heapq
import html
import io
import json
import math
import os
import re
import textwrap
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeGuard

from dialogue_gym import metrics
from dialogue_gym.argtypes import int_range
from dialogue_gym.journal import (
    EPISODES_FILE,
    SUMMARY_FILE,
    JournalError,
    RecordKey,
    read_episodes,
)

__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_MAX_TRANSCRIPTS",
    "FORMATS",
    "ReportError",
    "Run",
    "add_parser",
    "csv_table",
    "curves_plot",
    "default_output",
    "html_report",
    "load_run",
    "load_runs",
    "markdown_table",
    "paired_rows",
    "run",
    "soft_hard_plot",
    "summary_rows",
    "worst_case_rows",
    "write_report",
]

DEFAULT_MAX_TRANSCRIPTS = 20
"""Transcripts shown per (agent, env id) in the HTML report unless told otherwise."""

FORMATS = ("html", "md", "csv")
"""Output formats of :func:`write_report` and ``dialogue-gym report --format``."""

# Per-episode fields only the transcripts need. They dominate a record's size, so records
# whose transcript will not be shown are stored without them.
_DETAIL_FIELDS = ("transcript", "states", "votes", "events", "initial_state")
# An env id of the shipped catalog: task, user type, version (``P4G-hard-v0``).
_USERS = re.compile(r"^(?P<task>.+)-(?P<users>soft|hard)(?:-(?P<version>v\d+))?$")
_BDI_TEXT = (("belief", "B"), ("desire", "D"), ("intention", "I"))
_BDI_SCALARS = (("receptivity", "ρ"), ("confidence", "c"), ("valence", "v"))
_MAX_ERROR_ROWS = 200


class ReportError(ValueError):
    """A run directory that cannot be reported on (missing, empty or corrupt files).

    A ``ValueError``, so the command line reports it as a one-line usage error (exit 2).
    """


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One run directory as read from disk.

    Attributes:
        path: The run directory.
        records: Its episode records in file order, without repeats: a repeated agent, env
            id, episode and seed keeps its first record unless that one is errored and a
            later one exists (a ``--retry-errored`` rerun), as a resumed evaluation does
            (:func:`dialogue_gym.journal.supersedes`).
            Records whose transcript is beyond the detail budget of :func:`load_run` lack the
            fields ``transcript``, ``states``, ``votes``, ``events`` and ``initial_state``.
        summary: The parsed ``summary.json``, or ``None`` when there is none (yet).
        duplicates: How many repeated records were left out.
    """

    path: Path
    records: list[dict[str, Any]]
    summary: dict[str, Any] | None = None
    duplicates: int = 0

    def groups(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """Records per (agent, env id), in first-appearance order, each sorted by episode."""
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for record in self.records:
            out.setdefault((record["agent"], record["env_id"]), []).append(record)
        for group in out.values():
            group.sort(key=_episode_order)
        return out

    def config(self, agent: str, env_id: str) -> dict[str, Any]:
        """The ``config`` stamp of ``summary.json`` for (agent, env id); ``{}`` when absent."""
        return self._stored(agent, env_id, "config")

    def usage(self, agent: str, env_id: str) -> dict[str, Any]:
        """LLM usage per component from ``summary.json`` for (agent, env id); ``{}`` if none."""
        return self._stored(agent, env_id, "usage")

    def _stored(self, agent: str, env_id: str, key: str) -> dict[str, Any]:
        for row in (self.summary or {}).get("summaries") or []:
            if isinstance(row, Mapping) and (row.get("agent"), row.get("env_id")) == (
                agent,
                env_id,
            ):
                value = row.get(key)
                return dict(value) if isinstance(value, Mapping) else {}
        return {}


def _episode_order(record: Mapping[str, Any]) -> tuple[int, int]:
    """Sort key: episode index, then seed (the order ``evaluate`` summarizes in)."""
    return int(record.get("episode") or 0), int(record.get("seed") or 0)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _DetailBudget:
    """Keeps the transcript fields of the records a report will show, strips the rest.

    Per (agent, env id) the records with the ``cap`` lowest episode indices are kept, and the
    ``2 · cap`` lowest-indexed errored ones (the report shows up to ``cap`` errored episodes
    beyond the first ``cap``). Memory thus stays bounded however large the run is.
    """

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        # Per group: max-heaps (negated order keys) of the keys of the records kept whole.
        self.first: dict[tuple[str, str], list[tuple[tuple[int, int], RecordKey]]] = {}
        self.errored: dict[tuple[str, str], list[tuple[tuple[int, int], RecordKey]]] = {}
        self.kept: dict[RecordKey, int] = {}  # record key -> number of heaps holding it

    def stored(
        self, records: Mapping[RecordKey, dict[str, Any]], key: RecordKey, new: bool
    ) -> None:
        """Takes the record just stored under ``key`` (``new``: the episode's first record).

        A replacing record (same episode, so same order key) keeps the place of the one it
        replaced: whole if that one was kept, stripped otherwise.
        """
        if self.cap is None:
            return
        record = records[key]
        if new:
            group = (record["agent"], record["env_id"])
            order = _episode_order(record)
            self._push(self.first.setdefault(group, []), self.cap, order, key, records)
            if record.get("errored"):
                heap = self.errored.setdefault(group, [])
                self._push(heap, 2 * self.cap, order, key, records)
        if not self.kept.get(key):
            _strip(record)

    def _push(
        self,
        heap: list[tuple[tuple[int, int], RecordKey]],
        size: int,
        order: tuple[int, int],
        key: RecordKey,
        records: Mapping[RecordKey, dict[str, Any]],
    ) -> None:
        if size <= 0:
            return
        negated = (-order[0], -order[1])
        if len(heap) < size:
            heapq.heappush(heap, (negated, key))
        elif negated > heap[0][0]:
            _, evicted = heapq.heapreplace(heap, (negated, key))
            self.kept[evicted] -= 1
            if not self.kept[evicted]:
                del self.kept[evicted]
                _strip(records[evicted])
        else:
            return
        self.kept[key] = self.kept.get(key, 0) + 1


def _strip(record: dict[str, Any]) -> None:
    for key in _DETAIL_FIELDS:
        record.pop(key, None)


def load_run(run_dir: str | Path, max_transcripts: int | None = None) -> Run:
    """Reads a run directory written by :func:`dialogue_gym.evaluate`.

    Args:
        run_dir: The directory holding ``episodes.jsonl`` (and usually ``summary.json``).
        max_transcripts: Keep the transcript fields only for the records the HTML report
            would show with this ``max_transcripts`` (bounded memory for large runs);
            ``None`` keeps them all, ``0`` none.

    Returns:
        The run.

    Raises:
        ReportError: The directory or its ``episodes.jsonl`` is missing, a line other than
            the last is not a JSON episode record (the message names the file and line),
            there are no records, or ``summary.json`` is not valid JSON. An incomplete last
            line (an interrupted write) is left out with a ``RuntimeWarning``, as
            ``evaluate`` does on resume (:class:`dialogue_gym.journal.JournalReader`).
    """
    path = Path(run_dir)
    if not path.exists():
        raise ReportError(f"{path}: no such run directory")
    if not path.is_dir():
        raise ReportError(f"{path}: not a directory (expected an `eval --out` directory)")
    episodes_path = path / EPISODES_FILE
    if not episodes_path.is_file():
        raise ReportError(
            f"{path}: no {EPISODES_FILE} here (is it the --out directory of `dialogue-gym eval`?)"
        )
    budget = _DetailBudget(max_transcripts)
    try:
        episodes = read_episodes(episodes_path, on_store=budget.stored)
    except JournalError as exc:
        raise ReportError(str(exc)) from None
    except OSError as exc:
        raise ReportError(f"{episodes_path}: cannot read ({exc.strerror or exc})") from None
    if not episodes.records:
        raise ReportError(f"{episodes_path}: no episode records (the run has not started?)")
    records = list(episodes.records.values())
    return Run(path, records, _load_summary(path / SUMMARY_FILE), episodes.duplicates)


def _load_summary(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: unreadable summary ({exc})") from None
    if not isinstance(summary, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(summary).__name__}")
    return summary


RunLike = str | Path | Run


def load_runs(
    run_dirs: RunLike | Sequence[RunLike], max_transcripts: int | None = None
) -> list[Run]:
    """Loads one or two runs (already loaded :class:`Run` objects pass through).

    Args:
        run_dirs: A run directory or :class:`Run`, or a sequence of one or two of them.
        max_transcripts: See :func:`load_run`.

    Returns:
        The runs, in the given order.

    Raises:
        ReportError: No run, more than two, or a run that cannot be read.
    """
    items = [run_dirs] if isinstance(run_dirs, (str, Path, Run)) else list(run_dirs)
    if not 1 <= len(items) <= 2:
        raise ReportError(f"a report takes one or two run directories, got {len(items)}")
    return [item if isinstance(item, Run) else load_run(item, max_transcripts) for item in items]


# --------------------------------------------------------------------------------------------
# Numbers (all from dialogue_gym.metrics)
# --------------------------------------------------------------------------------------------


def _horizon(records: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> int:
    """The exchange budget ``T`` of a group: from its records, else its config stamp."""
    horizons = [int(r["T"]) for r in records if r.get("T") is not None]
    if horizons:
        return max(horizons)
    return int(config.get("T") or metrics.DEFAULT_T)


def _tau_q(config: Mapping[str, Any]) -> float:
    value = config.get("tau_q")
    return float(value) if _is_number(value) else metrics.TAU_Q


def summary_rows(
    run: Run, n_resamples: int = metrics.N_BOOTSTRAP, seed: int = 0
) -> list[dict[str, Any]]:
    """One :func:`metrics.summarize` row per (agent, env id) of a run.

    With the default arguments the numbers equal those ``evaluate`` wrote to ``summary.json``
    for the same records (same order, same bootstrap seed).

    Args:
        run: The run.
        n_resamples: Bootstrap resamples for the 95% CIs.
        seed: Bootstrap seed.

    Returns:
        Rows with ``agent`` and ``env_id`` plus the :func:`metrics.summarize` keys (``n`` is
        the number of non-errored episodes, ``n_errored`` the errored ones).
    """
    rows = []
    for (agent, env_id), records in run.groups().items():
        config = run.config(agent, env_id)
        stats = metrics.summarize(
            records,
            T=_horizon(records, config),
            tau_q=_tau_q(config),
            n_resamples=n_resamples,
            seed=seed,
        )
        rows.append({"agent": agent, "env_id": env_id, **stats})
    return rows


def paired_rows(
    run_1: Run, run_2: Run, n_resamples: int = metrics.N_BOOTSTRAP, seed: int = 0
) -> list[dict[str, Any]]:
    """Paired bootstrap differences run 2 − run 1 per (agent, env id) present in both runs.

    Episodes are matched on their ``seed`` (the first record per seed of each run); pairs where
    either side errored are left out (:func:`metrics.pair_records`). SR, AT and RCSR use the
    smaller ``T`` of the two runs, so both sides are judged on the same budget.

    Args:
        run_1: The baseline run.
        run_2: The run compared with it.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        Rows with ``agent``, ``env_id``, ``T``, ``tau_q``, ``n_pairs``, ``left_out`` (episodes
        of either run without a usable partner) and ``sr``, ``at``, ``rcsr`` as
        :class:`metrics.PairedDiff`; negotiation tasks (both runs' records carry ``sl``) also
        ``sl``.
    """
    groups_2 = run_2.groups()
    rows = []
    for (agent, env_id), records_1 in run_1.groups().items():
        records_2 = groups_2.get((agent, env_id))
        if records_2 is None:
            continue
        config = run_1.config(agent, env_id)
        horizon = min(_horizon(records_1, config), _horizon(records_2, run_2.config(agent, env_id)))
        tau_q = _tau_q(config)
        # (run 2 record, run 1 record) pairs: the differences are run 2 − run 1.
        pairs = metrics.pair_records(_by_seed(records_2), _by_seed(records_1), key=("seed",))
        values: dict[str, tuple[list[float], list[float]]] = {}
        for name, per_episode in (
            ("sr", partial(metrics.success_within, t=horizon)),
            ("at", partial(metrics.turns_to_success, T=horizon)),
            ("rcsr", partial(metrics.rc_success_within, t=horizon, tau_q=tau_q)),
        ):
            values[name] = (
                [float(per_episode(new)) for new, _ in pairs],
                [float(per_episode(old)) for _, old in pairs],
            )
        if any(metrics.episode_sl(r) is not None for pair in pairs for r in pair):
            values["sl"] = (
                [metrics.episode_sl(new) or 0.0 for new, _ in pairs],
                [metrics.episode_sl(old) or 0.0 for _, old in pairs],
            )
        rows.append(
            {
                "agent": agent,
                "env_id": env_id,
                "T": horizon,
                "tau_q": tau_q,
                "n_pairs": len(pairs),
                "left_out": len(records_1) + len(records_2) - 2 * len(pairs),
                **{
                    name: metrics.paired_bootstrap_diff(
                        new, old, n_resamples=n_resamples, seed=seed
                    )
                    for name, (new, old) in values.items()
                },
            }
        )
    return rows


def _by_seed(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The first record per seed (records without a seed cannot be paired)."""
    first: dict[int, Mapping[str, Any]] = {}
    for record in records:
        if record.get("seed") is not None:
            first.setdefault(int(record["seed"]), record)
    return list(first.values())


def _task(env_id: str) -> str:
    """The task of an env id, as :meth:`EvalResult.worst_case` defines it (``P4G``)."""
    return env_id.split("-", 1)[0]


def worst_case_rows(run: Run) -> list[dict[str, Any]]:
    """Worst SR@T and RCSR@T over user types, per agent (:func:`metrics.worst_case`).

    Per agent, every task evaluated with two or more env ids gets a row (the worst over that
    task's users, as ``dialogue-gym eval`` prints it); an agent evaluated on several tasks also
    gets an ``all`` row, the worst over every env id it was evaluated on.

    Args:
        run: The run.

    Returns:
        Rows with ``agent``, ``users`` (the task, or ``"all"``), ``env_ids``, ``T`` and
        ``sr``/``rcsr`` as ``(worst env id, value)``; the value is ``nan`` when every group
        consists of errored episodes only. Negotiation tasks (records carrying ``sl``) also
        get ``sl``, the worst mean SL.
    """
    by_agent: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for (agent, env_id), records in run.groups().items():
        by_agent.setdefault(agent, {})[env_id] = records
    rows = []
    for agent, by_env in by_agent.items():
        sets: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for env_id, records in by_env.items():
            sets.setdefault(_task(env_id), {})[env_id] = records
        chosen = {task: envs for task, envs in sets.items() if len(envs) >= 2}
        if len(sets) >= 2:
            chosen["all"] = by_env
        for users, groups in chosen.items():
            horizon = max(
                _horizon(records, run.config(agent, env_id)) for env_id, records in groups.items()
            )
            config = run.config(agent, next(iter(groups)))
            row = {
                "agent": agent,
                "users": users,
                "env_ids": list(groups),
                "T": horizon,
                "sr": metrics.worst_case(groups, partial(metrics.success_rate, T=horizon)),
                "rcsr": metrics.worst_case(
                    groups, partial(metrics.rcsr, T=horizon, tau_q=_tau_q(config))
                ),
            }
            sl_groups = {
                env_id: records
                for env_id, records in groups.items()
                if any(metrics.episode_sl(r) is not None for r in records)
            }
            if sl_groups:  # negotiation env ids only: SL is undefined elsewhere
                row["sl"] = metrics.worst_case(sl_groups, metrics.sale_to_list)
            rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------
# Formatting helpers
# --------------------------------------------------------------------------------------------


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _num(value: Any, digits: int = 2, signed: bool = False) -> str:
    if _missing(value):
        return "n/a"
    if not _is_number(value):
        return str(value)
    return f"{float(value):+.{digits}f}" if signed else f"{float(value):.{digits}f}"


def _with_ci(row: Mapping[str, Any], key: str) -> str:
    """``0.70 [0.40, 1.00]`` (the format of :func:`metrics.format_table`)."""
    value, ci = row.get(key), row.get(f"{key}_ci")
    if _missing(value):
        return "n/a"
    if not ci or len(ci) != 2:
        return _num(value)
    return f"{_num(value)} [{_num(ci[0])}, {_num(ci[1])}]"


def _value(value: Any) -> str:
    """A per-episode value: integers as they are, other numbers with three decimals."""
    if _is_int(value):
        return str(value)
    return _num(value, 3) if _is_number(value) else str(value)


def _diff_text(diff: metrics.PairedDiff) -> str:
    if diff.n == 0:
        return "n/a"
    return f"{diff.mean:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}]"


def _p_text(diff: metrics.PairedDiff) -> str:
    return "n/a" if diff.n == 0 else f"{diff.p_value:.3g}"


def _t_label(rows: Sequence[Mapping[str, Any]]) -> str:
    """The common ``T`` of the rows, or ``T`` when they differ."""
    horizons = {row.get("T") for row in rows}
    return str(horizons.pop()) if len(horizons) == 1 else "T"


_OPTIONAL_HEADERS = {
    "csr": "CSR",
    "proactivity": "proactivity",
    "proactive_turns": "proactive turns",
}
"""Columns shown for tasks whose users have latent concerns (the CUS metrics), and titles."""


def _optional_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """CSR, proactivity and proactive turns, for tasks whose users have latent concerns."""
    return [key for key in _OPTIONAL_HEADERS if any(r.get(key) is not None for r in rows)]


def _has_sl(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any row is of a negotiation task (a deal judge): SL is shown next to SR."""
    return any(r.get("sl") is not None or "sl_ci" in r for r in rows)


def _ranked(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Leaderboard order: the agents of a negotiation env id ranked by SL (metrics.rank_rows)."""
    return [dict(row) for row in metrics.rank_rows(rows)]


# --------------------------------------------------------------------------------------------
# Markdown and CSV
# --------------------------------------------------------------------------------------------


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
    per_run = [_ranked(summary_rows(r, n_resamples, seed)) for r in runs]
    all_rows = [row for rows in per_run for row in rows]
    t = _t_label(all_rows)
    extra = _optional_columns(all_rows)
    sl = _has_sl(all_rows)
    headers = ["agent", "env", f"SR@{t} [95% CI]"] + (["SL [95% CI]"] if sl else [])
    headers += ["AT [95% CI]", f"RCSR@{t} [95% CI]"]
    headers += ["n", "errored"] + (["T"] if t == "T" else [])
    headers += [_OPTIONAL_HEADERS[key] for key in extra]
    numeric = [False, False] + [True] * (len(headers) - 2)
    two = len(runs) == 2
    if two:
        headers, numeric = ["run", *headers], [True, *numeric]
    body = []
    for index, rows in enumerate(per_run, start=1):
        for row in rows:
            cells = [row["agent"], row["env_id"], _with_ci(row, "sr")]
            cells += [_with_ci(row, "sl")] if sl else []
            cells += [_with_ci(row, "at"), _with_ci(row, "rcsr"), row["n"], row["n_errored"]]
            cells += [row["T"]] if t == "T" else []
            cells += [_num(row.get(key)) for key in extra]
            body.append([index, *cells] if two else cells)
    parts = [_md_table(headers, body, numeric)]
    if two:
        parts.append(f"run 1 = `{runs[0].path}`, run 2 = `{runs[1].path}`")
        diffs = paired_rows(runs[0], runs[1], n_resamples, seed)
        td = _t_label(diffs) if diffs else t
        parts.append("Paired differences, run 2 − run 1 (episodes matched on seed):")
        diff_sl = any("sl" in row for row in diffs)
        keys = ("sr", "sl", "at", "rcsr") if diff_sl else ("sr", "at", "rcsr")
        diff_body = []
        for row in diffs:
            cells = [row["agent"], row["env_id"], row["n_pairs"]]
            for key in keys:
                diff = row.get(key)
                cells += [_diff_text(diff), _p_text(diff)] if diff is not None else ["", ""]
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
    if _missing(value):
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
        for row in _ranked(summary_rows(r, n_resamples, seed)):
            flat = dict(row)
            for key in ("sr", "sl", "at", "rcsr"):
                low, high = row.get(f"{key}_ci") or (None, None)
                flat[f"{key}_ci_low"], flat[f"{key}_ci_high"] = low, high
            cells = [_csv_value(flat.get(column)) for column in CSV_COLUMNS]
            writer.writerow(([_csv_text(str(r.path))] if two else []) + cells)
    return buffer.getvalue()


# --------------------------------------------------------------------------------------------
# Plots (matplotlib figures without pyplot: no global backend state is touched)
# --------------------------------------------------------------------------------------------


PLOTS_HINT = 'pip install "dialogue-gym[report]"'
"""How to get the plots (matplotlib is the ``report`` extra)."""

_said_no_plots = False


def plots_available() -> bool:
    """Whether matplotlib imports (the ``report`` extra).

    The first time it does not, warns once that the report leaves out its plots (everything
    else is written as usual).
    """
    global _said_no_plots
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if not _said_no_plots:
            _said_no_plots = True
            warnings.warn(
                f"matplotlib is not installed: the report leaves out its plots ({PLOTS_HINT})",
                stacklevel=2,
            )
        return False
    return True


def _no_plot_html() -> str:
    return f'<p class="muted">Plot left out: matplotlib is not installed ({_e(PLOTS_HINT)}).</p>'


def _svg_image(figure: Any, alt: str, css_class: str = "plot") -> str:
    """The figure as an ``<img>`` holding an SVG data URI (self-contained, ids isolated)."""
    import matplotlib

    buffer = io.BytesIO()
    # Glyphs as paths: the SVG needs no font; a fixed hash salt and no date: same input,
    # same bytes.
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "dialogue-gym"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    width, height = (round(v * 96) for v in figure.get_size_inches())  # CSS px
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<img class="{css_class}" src="data:image/svg+xml;base64,{data}" '
        f'width="{width}" height="{height}" alt="{_e(alt)}">'
    )


def _plot_label(agent: str, width: int = 24) -> str:
    """A short agent name for plot labels: ``file.py:Class`` for a path, wrapped to ``width``."""
    name = agent.replace("\\", "/").rsplit("/", 1)[-1]
    return "\n".join(textwrap.wrap(name, width)) or name


def _agent_colors(agents: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    palette = [cmap(i) for i in range(cmap.N)]
    return {agent: palette[i % len(palette)] for i, agent in enumerate(agents)}


def _soft_hard_pairs(
    rows: Sequence[Mapping[str, Any]],
) -> list[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]]:
    """``(agent, task, soft row, hard row)`` for every agent × task run with both users."""
    found: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        match = _USERS.match(row["env_id"])
        if match is None:
            continue
        task = match["task"] + (f"-{match['version']}" if match["version"] else "")
        found.setdefault((row["agent"], task), {})[match["users"]] = row
    return [
        (agent, task, users["soft"], users["hard"])
        for (agent, task), users in found.items()
        if "soft" in users and "hard" in users
    ]


def _bar_values(
    rows: Sequence[Mapping[str, Any]], key: str
) -> tuple[list[float], list[list[float]]]:
    """Bar heights and asymmetric error bars from the CIs (undefined values: 0, no bar)."""
    heights, below, above = [], [], []
    for row in rows:
        value, (low, high) = row.get(key), row.get(f"{key}_ci") or (None, None)
        if value is None or _missing(value):
            heights.append(0.0)
            below.append(0.0)
            above.append(0.0)
            continue
        heights.append(float(value))
        low_ok, high_ok = not (low is None or _missing(low)), not (high is None or _missing(high))
        below.append(max(0.0, float(value) - float(low)) if low is not None and low_ok else 0.0)
        above.append(max(0.0, float(high) - float(value)) if high is not None and high_ok else 0.0)
    return heights, [below, above]


def soft_hard_plot(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Grouped bars of SR@T and RCSR@T, soft versus hard users, per agent × task.

    Args:
        rows: :func:`summary_rows` of one run.

    Returns:
        An ``<img>`` element, or ``None`` when no agent was run on both the ``-soft`` and the
        ``-hard`` env of a task, or matplotlib is not installed (:func:`plots_available`).
    """
    pairs = _soft_hard_pairs(rows)
    if not pairs or not plots_available():
        return None
    from matplotlib.figure import Figure

    t = _t_label([row for pair in pairs for row in pair[2:]])
    figure = Figure(figsize=(max(6.0, 2.0 * len(pairs) + 1.5), 5.2), layout="constrained")
    axes = figure.subplots(2, 1, sharex=True)
    positions = list(range(len(pairs)))
    width = 0.38
    for ax, key, title in zip(axes, ("sr", "rcsr"), (f"SR@{t}", f"RCSR@{t}"), strict=True):
        for offset, users, color, column in (
            (-width / 2, "soft", "#9ecae1", 0),
            (width / 2, "hard", "#2171b5", 1),
        ):
            chosen = [pair[2:][column] for pair in pairs]  # the soft or the hard row
            heights, errors = _bar_values(chosen, key)
            bars = ax.bar(
                [p + offset for p in positions],
                heights,
                width,
                yerr=errors,
                capsize=3,
                color=color,
                label=f"{users} users",
                error_kw={"elinewidth": 1, "ecolor": "#444444"},
            )
            labels = ["n/a" if _missing(row.get(key)) else f"{row[key]:.2f}" for row in chosen]
            ax.bar_label(bars, labels=labels, padding=2, fontsize=7, label_type="edge")
        ax.set_ylabel(title)
        ax.set_ylim(0, 1.18)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0].legend(loc="upper right", fontsize=8, ncols=2, frameon=False)
    axes[0].set_title("Soft vs hard users (95% bootstrap CIs)", fontsize=10)
    axes[1].set_xticks(
        positions, labels=[f"{_plot_label(agent)}\n{task}" for agent, task, _, _ in pairs]
    )
    return _svg_image(figure, f"Bar chart: SR@{t} and RCSR@{t} for soft versus hard users")


def curves_plot(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """RCSR@t (solid) and SR@t (dashed) for t = 1..T, one panel per env id, one line per agent.

    Args:
        rows: :func:`summary_rows` of one run.

    Returns:
        An ``<img>`` element, or ``None`` when there are no rows or matplotlib is not
        installed (:func:`plots_available`).
    """
    if not rows or not plots_available():
        return None
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    env_ids = list(dict.fromkeys(row["env_id"] for row in rows))
    colors = _agent_colors(list(dict.fromkeys(row["agent"] for row in rows)))
    columns = min(3, len(env_ids))
    lines = math.ceil(len(env_ids) / columns)
    figure = Figure(figsize=(4.0 * columns + 0.6, 3.0 * lines + 0.9), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False)
    for ax, env_id in zip(axes.flat, env_ids, strict=False):
        for row in rows:
            if row["env_id"] != env_id:
                continue
            color = colors[row["agent"]]
            rc = [math.nan if v is None else v for v in row.get("rcsr_curve") or []]
            sr = [math.nan if v is None else v for v in row.get("sr_curve") or []]
            ax.plot(range(1, len(rc) + 1), rc, marker="o", markersize=3, color=color)
            ax.plot(range(1, len(sr) + 1), sr, linestyle="--", color=color, alpha=0.45)
        horizon = max(len(row.get("rcsr_curve") or []) for row in rows if row["env_id"] == env_id)
        ax.set_xticks(range(1, horizon + 1))
        ax.set_xlim(0.7, horizon + 0.3)
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(env_id, fontsize=10)
        ax.set_xlabel("t (exchanges)")
        ax.set_ylabel("rate")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(env_ids) :]:
        ax.set_visible(False)
    handles = [
        Line2D([], [], color=c, marker="o", markersize=3, label=_plot_label(a))
        for a, c in colors.items()
    ]
    handles += [
        Line2D([], [], color="#555555", label="RCSR@t (solid)"),
        Line2D([], [], color="#555555", linestyle="--", alpha=0.6, label="SR@t (dashed)"),
    ]
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(2 * columns, len(handles)),
        frameon=False,
    )
    return _svg_image(figure, "Line chart: RCSR@t and SR@t for t = 1..T per env id and agent")


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


_CSS = """
:root { --fg:#1b1f24; --muted:#5b6470; --line:#d8dee4; --bg:#ffffff; --soft:#f6f8fa;
  --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; --accent:#0969da; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 24px 28px 64px; color: var(--fg);
  background: var(--bg); font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto,
  "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 24px 0 8px; }
p, li { max-width: 90ch; }
.muted { color: var(--muted); }
code { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: var(--soft); padding: 1px 4px; border-radius: 4px; }
nav ul { margin: 4px 0; padding-left: 20px; }
a { color: var(--accent); }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
.bad { color: var(--bad); font-weight: 600; }
.ok { color: var(--ok); font-weight: 600; }
.warn { color: var(--warn); font-weight: 600; }
figure { margin: 8px 0 16px; }
img.plot { display: block; max-width: 100%; height: auto; border: 1px solid var(--line);
  border-radius: 6px; background: #fff; }
figcaption { color: var(--muted); font-size: 12px; margin-top: 4px; max-width: 90ch; }
details { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; background: #fff; }
details > summary { cursor: pointer; padding: 6px 10px; list-style-position: inside; }
details[open] > summary { border-bottom: 1px solid var(--line); background: var(--soft); }
details > .body { padding: 8px 10px; overflow-x: auto; }
details.group > summary { font-weight: 600; }
table.transcript { width: 100%; table-layout: fixed; }
table.transcript col.t { width: 3.2em; } table.transcript col.s { width: 5em; }
table.transcript col.judge { width: 13em; } table.transcript col.q { width: 3.5em; }
table.transcript col.events { width: 10em; } table.transcript col.bdi { width: 30%; }
.turn { margin: 0 0 6px; white-space: pre-wrap; overflow-wrap: anywhere; }
.turn .role { display: inline-block; min-width: 4.2em; font-weight: 600; color: var(--muted); }
.turn.system .role { color: var(--accent); }
tr.success-turn td { box-shadow: inset 3px 0 0 var(--ok); }
tr.opening td { color: var(--muted); }
.bdi { font-size: 12px; overflow-wrap: anywhere; }
.bdi .scalars { font-variant-numeric: tabular-nums; white-space: nowrap; }
.bdi .changed { background: #fff8c5; }
.events { font-size: 12px; overflow-wrap: anywhere; }
.votes { color: var(--muted); font-size: 12px; }
pre.config { white-space: pre-wrap; font-size: 12px; margin: 0; }
"""


def _table(
    headers: Sequence[str], body: Sequence[Sequence[str]], numeric: Sequence[bool], cls: str = ""
) -> str:
    """An HTML table; cells are already escaped HTML."""
    head = "".join(
        f'<th{" class=num" if num else ""} scope="col">{h}</th>'
        for h, num in zip(headers, numeric, strict=True)
    )
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=num' if num else ''}>{c}</td>"
            for c, num in zip(cells, numeric, strict=True)
        )
        + "</tr>"
        for cells in body
    )
    attribute = f' class="{cls}"' if cls else ""
    return f"<table{attribute}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _summary_html(rows: Sequence[Mapping[str, Any]]) -> str:
    rows = _ranked(rows)
    t = _t_label(rows)
    extra = _optional_columns(rows)
    sl = _has_sl(rows)
    headers = ["agent", "env", "n", "errored", f"SR@{t} [95% CI]"]
    headers += (["SL [95% CI]"] if sl else []) + ["AT [95% CI]"]
    headers += [f"RCSR@{t} [95% CI]", "mean q"] + (["T"] if t == "T" else [])
    headers += [_OPTIONAL_HEADERS[key] for key in extra]
    body = []
    for row in rows:
        errored = row["n_errored"]
        cells = [_e(row["agent"]), _e(row["env_id"]), _e(row["n"])]
        cells.append(f'<span class="bad">{errored}</span>' if errored else "0")
        cells.append(_e(_with_ci(row, "sr")))
        cells += [_e(_with_ci(row, "sl"))] if sl else []
        cells += [_e(_with_ci(row, "at")), _e(_with_ci(row, "rcsr"))]
        cells.append(_e(_num(row.get("mean_q"))))
        cells += [_e(row["T"])] if t == "T" else []
        cells += [_e(_num(row.get(key))) for key in extra]
        body.append(cells)
    numeric = [False, False] + [True] * (len(headers) - 2)
    return _table(headers, body, numeric, "summary")


def _worst_html(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return (
            '<p class="muted">No agent was evaluated with two or more user types of a task '
            "(e.g. <code>P4G-soft</code> and <code>P4G-hard</code>).</p>"
        )
    t = _t_label(rows)
    sl = any("sl" in row for row in rows)
    body = []
    for row in rows:
        (sr_env, sr), (rc_env, rc) = row["sr"], row["rcsr"]
        users = "all env ids" if row["users"] == "all" else f"{row['users']} users"
        cells = [_e(row["agent"]), _e(users), _e(", ".join(row["env_ids"]))]
        cells += [_e(_num(sr)), _e(sr_env)]
        if sl:
            sl_env, sl_value = row.get("sl", ("", None))
            cells += [_e(_num(sl_value) if "sl" in row else ""), _e(sl_env)]
        body.append([*cells, _e(_num(rc)), _e(rc_env)])
    headers = ["agent", "over", "env ids", f"worst SR@{t}", "worst env"]
    headers += ["worst SL", "worst env"] if sl else []
    headers += [f"worst RCSR@{t}", "worst env"]
    numeric = [False, False, False] + [True, False] * ((len(headers) - 3) // 2)
    return _table(headers, body, numeric, "worst")


def _errors_html(run: Run) -> str:
    errored = [r for r in run.records if r.get("errored")]
    if not errored:
        return '<p class="muted">No episode errored.</p>'
    errored.sort(key=lambda r: (r["agent"], r["env_id"], *_episode_order(r)))
    shown = errored[:_MAX_ERROR_ROWS]
    body = [
        [
            _e(r["agent"]),
            _e(r["env_id"]),
            _e(r.get("episode", "")),
            _e(r.get("seed", "")),
            _e(r.get("error_source") or ""),
            _e(r.get("error") or ""),
        ]
        for r in shown
    ]
    note = (
        f'<p class="muted">Showing the first {len(shown)} of {len(errored)} errored episodes.</p>'
        if len(shown) < len(errored)
        else ""
    )
    intro = (
        f"<p>{len(errored)} episode(s) errored (an agent, action or backend failure). They are "
        "left out of every rate and counted in the <em>errored</em> column.</p>"
    )
    headers = ["agent", "env", "episode", "seed", "source", "error"]
    return intro + _table(headers, body, [False, False, True, True, False, False]) + note


def _usage_html(run: Run, rows: Sequence[Mapping[str, Any]]) -> str:
    body = []
    for row in rows:
        for component, counters in run.usage(row["agent"], row["env_id"]).items():
            if not isinstance(counters, Mapping):
                continue
            text = ", ".join(f"{k}={v}" for k, v in counters.items())
            body.append([_e(row["agent"]), _e(row["env_id"]), _e(component), _e(text)])
    if not body:
        return ""
    return "<h3>LLM usage</h3>" + _table(
        ["agent", "env", "component", "usage"], body, [False, False, False, False]
    )


def _config_html(run: Run, rows: Sequence[Mapping[str, Any]]) -> str:
    configs = {
        f"{row['agent']} · {row['env_id']}": run.config(row["agent"], row["env_id"]) for row in rows
    }
    configs = {name: config for name, config in configs.items() if config}
    if not configs:
        return '<p class="muted">No <code>summary.json</code> configuration stamp.</p>'
    text = json.dumps(configs, indent=2, ensure_ascii=False, sort_keys=True)
    return (
        '<details class="config"><summary>Configuration (from summary.json)</summary>'
        f'<div class="body"><pre class="config">{_e(text)}</pre></div></details>'
    )


def _bdi_html(state: Any, previous: Any) -> str:
    if not isinstance(state, Mapping):
        return '<span class="muted">—</span>' if state is None else _e(state)
    before = previous if isinstance(previous, Mapping) else {}

    def mark(key: str, content: str) -> str:
        changed = before and before.get(key) != state.get(key)
        return f'<span class="changed">{content}</span>' if changed else content

    scalars = []
    for key, symbol in _BDI_SCALARS:
        if key in state:
            signed = key == "valence"
            text = f'<span title="{key}">{symbol} {_e(_num(state[key], 2, signed))}</span>'
            scalars.append(mark(key, text))
    parts = [f'<div class="scalars">{" · ".join(scalars)}</div>'] if scalars else []
    known = {key for key, _ in _BDI_TEXT + _BDI_SCALARS}
    for key, letter in _BDI_TEXT:
        if key in state:
            parts.append(f"<div><b>{letter}</b> {mark(key, _e(state[key]))}</div>")
    for key, value in state.items():
        if key not in known:
            parts.append(f"<div><b>{_e(key)}</b> {mark(key, _e(value))}</div>")
    return f'<div class="bdi">{"".join(parts)}</div>'


def _votes_text(votes: Any) -> str:
    if not isinstance(votes, list) or not votes:
        return ""
    counts = Counter(str(v) for v in votes)
    return ", ".join(f"{label} ×{n}" if n > 1 else label for label, n in counts.items())


def _q_text(q: Any) -> str:
    """Rationality of a system turn: ``+1``, ``-1`` or ``0`` (empty when not recorded)."""
    if q is None:
        return ""
    return "0" if _is_number(q) and q == 0 else _num(q, 0, signed=True)


def _at(values: Any, index: int) -> Any:
    return values[index] if isinstance(values, list) and 0 <= index < len(values) else None


def _turn_html(turn: Any) -> str:
    if not isinstance(turn, Mapping):
        return ""
    role = str(turn.get("role", ""))
    css = "system" if role == "system" else "user"
    return (
        f'<div class="turn {css}"><span class="role">{_e(role)}</span> '
        f"{_e(turn.get('text', ''))}</div>"
    )


def _exchange_count(record: Mapping[str, Any]) -> int:
    return max(
        (
            len(record[key])
            for key in ("q", "s", "labels", "states", "votes", "events")
            if isinstance(record.get(key), list)
        ),
        default=0,
    )


def _split_transcript(
    record: Mapping[str, Any], exchanges: int
) -> tuple[list[Any], list[list[Any]], list[Any]]:
    """``(opening turns, [system, user] per judged exchange, trailing unjudged turns)``.

    A transcript is the corpus opening (``h0_turns``), then one system and one user turn per
    exchange; an episode that errored mid-exchange may end with a system turn and no reply.
    """
    transcript = list(record.get("transcript") or [])
    extra = len(transcript) - 2 * exchanges
    last_role = (
        transcript[-1].get("role") if transcript and isinstance(transcript[-1], Mapping) else None
    )
    trailing = 1 if extra >= 1 and record.get("errored") and last_role == "system" else 0
    opening = max(extra - trailing, 0)
    body = transcript[opening : len(transcript) - trailing]
    pairs = [body[2 * k : 2 * k + 2] for k in range(exchanges)]
    rest = body[2 * exchanges :] + transcript[len(transcript) - trailing :]
    return transcript[:opening], pairs, rest


def _outcome_html(record: Mapping[str, Any], horizon: int, tau_q: float) -> str:
    if record.get("errored"):
        source = record.get("error_source") or "?"
        return f'<span class="warn">⚠ errored ({_e(source)})</span>'
    if metrics.success_within(record, horizon):
        rc = metrics.rc_success_within(record, horizon, tau_q)
        rc_text = (
            '<span class="ok">counts for RCSR</span>'
            if rc
            else f'<span class="bad">not rational (mean q &lt; {tau_q:g}): no RCSR</span>'
        )
        return f'<span class="ok">✓ success at t={_e(record["success_turn"])}</span> · {rc_text}'
    return '<span class="bad">✗ no success</span>'


def _episode_html(record: Mapping[str, Any], horizon: int, tau_q: float) -> str:
    exchanges = _exchange_count(record)
    facts = [f"episode {_e(record.get('episode', '?'))}", f"seed {_e(record.get('seed', '?'))}"]
    facts.append(_outcome_html(record, horizon, tau_q))
    facts.append(f"{exchanges} exchange(s)")
    for key, label in (("persona", "persona"), ("return_system", "return")):
        if record.get(key) is not None:
            value = record[key]
            facts.append(f"{label} {_e(_value(value))}")
    summary = " · ".join(facts)

    details = []
    if record.get("errored"):
        details.append(f'<p class="warn">Error: {_e(record.get("error") or "unknown")}</p>')
    extras = [
        f"{key} = {_e(_value(record[key]))}"
        for key in (
            "return_user",
            "fallbacks",
            "csr",
            "proactivity",
            "proactive_turns",
            "deal_price",
            "utility",
            "sl",
        )
        if record.get(key) is not None
    ]
    if extras:
        details.append(f'<p class="muted">{" · ".join(extras)}</p>')
    if "transcript" not in record:
        details.append('<p class="muted">No transcript in this record.</p>')

    opening, pairs, rest = _split_transcript(record, exchanges)
    success_turn = record.get("success_turn") if record.get("success") else None
    rows = []
    initial = record.get("initial_state")
    if initial is not None:
        rows.append(
            '<tr class="initial"><td class="num">0</td><td class="muted">initial state, before '
            "the dialogue</td><td></td><td></td><td></td><td></td>"
            f"<td>{_bdi_html(initial, None)}</td></tr>"
        )
    for turn in opening:
        rows.append(
            f'<tr class="opening"><td class="num">–</td><td>{_turn_html(turn)}'
            '<span class="muted">(opening turn)</span></td><td></td><td></td><td></td><td></td>'
            "<td></td></tr>"
        )
    states = record.get("states")
    previous = initial
    for k in range(exchanges):
        turns = "".join(_turn_html(turn) for turn in pairs[k])
        s_value = _at(record.get("s"), k)
        label, score = _at(record.get("labels"), k), _at(record.get("scores"), k)
        judge = _e(label) if label is not None else ""
        if score is not None:
            judge += f' <span class="votes">({_e(_num(score, 2, signed=True))})</span>'
        votes = _votes_text(_at(record.get("votes"), k))
        if votes:
            judge += f'<div class="votes">votes: {_e(votes)}</div>'
        q = _at(record.get("q"), k)
        events = _at(record.get("events"), k)
        events_text = ", ".join(str(e) for e in events) if isinstance(events, list) else ""
        state = _at(states, k)
        css = ' class="success-turn"' if success_turn == k + 1 else ""
        rows.append(
            f'<tr{css}><td class="num">{k + 1}</td><td>{turns}</td>'
            f'<td class="num">{_e(_num(s_value, 3))}</td><td>{judge}</td>'
            f'<td class="num">{_e(_q_text(q))}</td>'
            f'<td class="events">{_e(events_text)}</td><td>{_bdi_html(state, previous)}</td></tr>'
        )
        previous = state if state is not None else previous
    for turn in rest:
        rows.append(
            f'<tr class="opening"><td class="num">–</td><td>{_turn_html(turn)}'
            '<span class="muted">(not judged: the episode errored)</span></td><td></td><td></td>'
            "<td></td><td></td><td></td></tr>"
        )
    if rows:
        details.append(
            '<table class="transcript"><colgroup><col class="t"><col class="text"><col class="s">'
            '<col class="judge"><col class="q"><col class="events"><col class="bdi"></colgroup>'
            '<thead><tr><th class="num">t</th><th>exchange</th><th class="num">s<sub>t</sub></th>'
            '<th>judge label (score)</th><th class="num">q</th><th>user events</th>'
            "<th>user's BDI state after (revealed)</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    return (
        f'<details class="episode"><summary>{summary}</summary>'
        f'<div class="body">{"".join(details)}</div></details>'
    )


def _select_transcripts(records: Sequence[Mapping[str, Any]], cap: int) -> list[Mapping[str, Any]]:
    """The first ``cap`` episodes plus up to ``cap`` errored ones beyond them, by episode."""
    first = list(records[:cap])
    errored = [r for r in records[cap:] if r.get("errored")][:cap]
    return sorted(first + errored, key=_episode_order)


def _transcripts_html(run: Run, max_transcripts: int) -> str:
    groups = run.groups()
    total = sum(len(records) for records in groups.values())
    blocks = []
    shown_total = 0
    for (agent, env_id), records in groups.items():
        config = run.config(agent, env_id)
        horizon, tau_q = _horizon(records, config), _tau_q(config)
        chosen = _select_transcripts(records, max_transcripts)
        shown_total += len(chosen)
        n_errored = sum(bool(r.get("errored")) for r in records)
        label = f"{agent} · {env_id} — {len(chosen)} of {len(records)} episode(s) shown"
        if n_errored:
            label += f", {n_errored} errored"
        episodes = "".join(_episode_html(r, horizon, tau_q) for r in chosen)
        blocks.append(
            f'<details class="group"><summary>{_e(label)}</summary>'
            f'<div class="body">{episodes or "<p class=muted>none shown</p>"}</div></details>'
        )
    note = (
        f"<p>Showing {shown_total} of {total} episode(s): per agent × env the first "
        f"{max_transcripts} episodes, plus up to {max_transcripts} errored ones beyond them "
        "(<code>--max-transcripts</code> sets the cap). Each exchange shows the system and "
        "user turns, the progress s<sub>t</sub>, the success judge's label, score and votes, "
        "the rationality q of the system turn, the user's events and the user's hidden BDI state "
        "after the exchange (revealed after the episode; changes are highlighted).</p>"
    )
    return note + "".join(blocks)


def _run_meta_html(run: Run) -> str:
    created = (run.summary or {}).get("created")
    stamps = [run.config(r["agent"], r["env_id"]) for r in run.records[:1]]
    stamp = stamps[0] if stamps else {}
    items = [f"<li>directory: <code>{_e(run.path)}</code></li>"]
    errored = sum(bool(r.get("errored")) for r in run.records)
    items.append(f"<li>{len(run.records)} episode record(s), {errored} errored</li>")
    if created:
        items.append(f"<li>evaluated: {_e(created)}</li>")
    for key, label in (("dialogue_gym_version", "dialogue_gym"), ("encoder", "encoder")):
        if stamp.get(key):
            items.append(f"<li>{label}: {_e(stamp[key])}</li>")
    if run.summary is None:
        items.append(
            f'<li class="warn">no {SUMMARY_FILE} (an unfinished run?): numbers come from '
            f"{EPISODES_FILE} alone</li>"
        )
    if run.duplicates:
        items.append(
            f"<li>{run.duplicates} repeated record(s) ignored (the first one kept, or the "
            "rerun of an errored one)</li>"
        )
    return f"<ul>{''.join(items)}</ul>"


def _run_section(
    run: Run, index: int, label: str, rows: Sequence[Mapping[str, Any]], n_resamples: int
) -> str:
    tau_q = {_tau_q(run.config(r["agent"], r["env_id"])) for r in rows}
    tau_text = ", ".join(f"{v:g}" for v in sorted(tau_q))
    parts = [f'<section id="run-{index}"><h2>{_e(label)}</h2>', _run_meta_html(run)]
    parts.append("<h3>Summary</h3>")
    parts.append(_summary_html(rows))
    parts.append(
        f'<p class="muted">SR@T: success within T exchanges; AT: exchanges to success, '
        f"failures counted as T; RCSR@T: successes whose mean rationality q up to the success "
        f"turn is at least τ<sub>q</sub> = {_e(tau_text)}. n counts non-errored episodes; "
        "errored ones are left out of every rate. 95% percentile-bootstrap CIs over episodes "
        f"({n_resamples:,} resamples).</p>"
    )
    if _has_sl(rows):
        parts.append(
            '<p class="muted">SL (negotiation): sale-to-list ratio (p<sub>deal</sub> − '
            "p<sub>listing</sub>) / (p<sub>buyer target</sub> − p<sub>listing</sub>) of the "
            "episode's deal, 0 without one; a deal at the asking price scores 0 and is not a "
            "success. The agents of a negotiation env are ranked by mean SL.</p>"
        )
    parts.append(_config_html(run, rows))
    parts.append("<h3>Soft vs hard users</h3>")
    plotting = plots_available()
    bars = soft_hard_plot(rows) if plotting else None
    if bars:
        parts.append(
            f"<figure>{bars}<figcaption>Light: soft (over-compliant) users; dark: hard users. "
            "Whiskers: 95% CIs. A large drop from soft to hard, or from SR to RCSR, means the "
            "agent wins over users who give in rather than users it convinced.</figcaption>"
            "</figure>"
        )
    elif not plotting:
        parts.append(_no_plot_html())
    else:
        parts.append(
            '<p class="muted">No agent was evaluated on both the <code>-soft</code> and the '
            "<code>-hard</code> env of a task.</p>"
        )
    parts.append("<h3>RCSR@t curves</h3>")
    curves = curves_plot(rows) if plotting else None
    if not plotting:
        parts.append(_no_plot_html())
    elif curves:
        parts.append(
            f"<figure>{curves}<figcaption>RCSR@t (solid) and SR@t (dashed) for t = 1..T per "
            "env id; one colour per agent.</figcaption></figure>"
        )
    parts.append("<h3>Worst case over users</h3>")
    parts.append(_worst_html(worst_case_rows(run)))
    parts.append("<h3>Errored episodes</h3>")
    parts.append(_errors_html(run))
    parts.append(_usage_html(run, rows))
    parts.append("</section>")
    return "".join(parts)


def _paired_html(diffs: Sequence[Mapping[str, Any]]) -> str:
    if not diffs:
        return '<p class="muted">No agent × env id is in both runs.</p>'
    t = _t_label(diffs)
    sl = any("sl" in row for row in diffs)
    keys = ("sr", "sl", "at", "rcsr") if sl else ("sr", "at", "rcsr")
    body = []
    for row in diffs:
        cells = [_e(row["agent"]), _e(row["env_id"]), _e(row["n_pairs"])]
        for key in keys:
            diff = row.get(key)
            if diff is None:
                cells += ["", ""]
                continue
            text = _e(_diff_text(diff))
            significant = diff.n and (diff.low > 0 or diff.high < 0)
            cells += [f"<b>{text}</b>" if significant else text, _e(_p_text(diff))]
        cells.append(_e(row["left_out"]))
        body.append(cells)
    headers = ["agent", "env", "pairs", f"ΔSR@{t} [95% CI]", "p"]
    headers += ["ΔSL [95% CI]", "p"] if sl else []
    headers += ["ΔAT [95% CI]", "p", f"ΔRCSR@{t} [95% CI]", "p", "left out"]
    return _table(headers, body, [False, False] + [True] * (len(headers) - 2), "paired")


def html_report(
    run_dirs: RunLike | Sequence[RunLike],
    max_transcripts: int = DEFAULT_MAX_TRANSCRIPTS,
    n_resamples: int = metrics.N_BOOTSTRAP,
    seed: int = 0,
) -> str:
    """The HTML report of one or two runs, as text (see the module docstring).

    Args:
        run_dirs: One or two run directories (or :class:`Run` objects).
        max_transcripts: Transcripts shown per (agent, env id): the first ones by episode
            index, plus up to as many errored ones beyond them.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        A complete, self-contained HTML document.

    Raises:
        ReportError: A run cannot be read, or ``max_transcripts`` is negative.
    """
    if max_transcripts < 0:
        raise ReportError(f"max_transcripts must be >= 0, got {max_transcripts}")
    runs = load_runs(run_dirs, max_transcripts=max_transcripts)
    rows = [summary_rows(r, n_resamples, seed) for r in runs]
    labels = [f"Run {i}: {r.path}" for i, r in enumerate(runs, start=1)]
    title = "dialogue_gym report — " + " vs ".join(str(r.path) for r in runs)

    from dialogue_gym import __version__

    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    toc = [f'<li><a href="#run-{i}">{_e(label)}</a></li>' for i, label in enumerate(labels, 1)]
    sections = [
        _run_section(r, i, label, rr, n_resamples)
        for i, (r, label, rr) in enumerate(zip(runs, labels, rows, strict=True), 1)
    ]
    if len(runs) == 2:
        toc.append('<li><a href="#paired">Paired differences (run 2 − run 1)</a></li>')
        sections.append(
            '<section id="paired"><h2>Paired differences (run 2 − run 1)</h2>'
            "<p>Per agent × env id present in both runs, episodes matched on their seed (the same "
            "user); pairs where either side errored are left out. Bold: the 95% CI excludes 0. "
            "p: two-sided paired-bootstrap p-value. For AT, negative is better.</p>"
            f"{_paired_html(paired_rows(runs[0], runs[1], n_resamples, seed))}</section>"
        )
    for i, (r, label) in enumerate(zip(runs, labels, strict=True), start=1):
        toc.append(f'<li><a href="#transcripts-{i}">Transcripts, {_e(label)}</a></li>')
        sections.append(
            f'<section id="transcripts-{i}"><h2>Transcripts — {_e(label)}</h2>'
            f"{_transcripts_html(r, max_transcripts)}</section>"
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        # Nothing may load or run: the file is self-contained, and dialogue text is escaped.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>dialogue_gym report</h1><p class="muted">Generated {_e(generated)} by '
        f"dialogue_gym {_e(__version__)} from {len(runs)} run(s).</p></header>"
        f"<nav><ul>{''.join(toc)}</ul></nav>{''.join(sections)}</body></html>\n"
    )


# --------------------------------------------------------------------------------------------
# Writing, command line
# --------------------------------------------------------------------------------------------


def default_output(run_dirs: Sequence[str | Path], fmt: str = "html") -> Path:
    """Where a report goes when no ``out`` is given.

    ``RUN_DIR/report.<ext>`` for one run; ``RUN_DIR2/compare.<ext>`` for two (next to the
    newer run, without overwriting its own report).

    Args:
        run_dirs: The run directories.
        fmt: ``html``, ``md`` or ``csv``.

    Returns:
        The output path.
    """
    name = "report" if len(run_dirs) == 1 else "compare"
    return Path(run_dirs[-1]) / f"{name}.{fmt}"


def write_report(
    run_dirs: str | Path | Sequence[str | Path],
    out: str | Path | None = None,
    fmt: str = "html",
    max_transcripts: int = DEFAULT_MAX_TRANSCRIPTS,
    n_resamples: int = metrics.N_BOOTSTRAP,
    seed: int = 0,
) -> Path:
    """Writes the report of one or two runs to a file.

    Args:
        run_dirs: One or two run directories (with two: run 2 is compared with run 1).
        out: Output file; default :func:`default_output`. Parent folders are created; the file
            is replaced atomically.
        fmt: ``html`` (the full report), ``md`` or ``csv`` (the leaderboard table).
        max_transcripts: HTML only: transcripts shown per (agent, env id).
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        The path written.

    Raises:
        ReportError: Unknown ``fmt``, a run that cannot be read, or an output that cannot be
            written.
    """
    if fmt not in FORMATS:
        raise ReportError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    dirs = [run_dirs] if isinstance(run_dirs, (str, Path)) else list(run_dirs)
    if fmt == "html":
        text = html_report(dirs, max_transcripts, n_resamples, seed)
    elif fmt == "md":
        text = markdown_table(dirs, n_resamples, seed)
    else:
        text = csv_table(dirs, n_resamples, seed)
    path = Path(out) if out is not None else default_output(dirs, fmt)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        if tmp.parent.is_dir():
            tmp.unlink(missing_ok=True)
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


_non_negative = int_range(0)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``report`` command to an :mod:`argparse` sub-parser collection.

    Args:
        subparsers: What ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The ``report`` parser.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write an HTML report (or md/csv leaderboard) of one or two eval runs",
        description="Report on `dialogue-gym eval --out` directories: one self-contained HTML "
        "file (tables with 95% CIs, plots, transcripts), or the leaderboard as Markdown or "
        "CSV. With two runs, paired bootstrap differences run 2 - run 1.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="an eval --out directory")
    parser.add_argument(
        "run_dir2",
        metavar="RUN_DIR2",
        type=Path,
        nargs="?",
        default=None,
        help="a second run, compared with the first (paired on episode seeds)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="output file (default: html to RUN_DIR/report.html, or RUN_DIR2/compare.html "
        "with two runs; md and csv to stdout)",
    )
    parser.add_argument("--format", choices=FORMATS, default="html", help="default: html")
    parser.add_argument(
        "--max-transcripts",
        type=_non_negative,
        default=DEFAULT_MAX_TRANSCRIPTS,
        metavar="N",
        help=f"transcripts shown per agent and env (default: {DEFAULT_MAX_TRANSCRIPTS})",
    )
    return parser


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Runs a parsed ``report`` command.

    Args:
        args: The namespace from the parser made by :func:`add_parser`.
        out: Where the table (md/csv without ``--out``) or the written path goes.

    Returns:
        0 (failures raise :class:`ReportError`, a usage error for the command line).
    """
    run_dirs = [args.run_dir] + ([args.run_dir2] if args.run_dir2 is not None else [])
    if args.format != "html" and args.out is None:
        table = markdown_table if args.format == "md" else csv_table
        out.write(table(run_dirs))
        return 0
    path = write_report(run_dirs, args.out, args.format, args.max_transcripts)
    print(f"Report: {path}", file=out)
    return 0
