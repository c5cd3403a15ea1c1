"""What an evaluation reports: :class:`EvalResult`, the records kept in memory, seed blocks.

:func:`dialogue_gym.evaluate` returns an :class:`EvalResult`; with ``keep_records=False`` its
records keep only :data:`METRIC_FIELDS` (:func:`slim_record`). :class:`ProgressTally` keeps
the running SR/RCSR of the progress bar and :func:`per_seed_rows` breaks a pooled summary
down by base seed.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from dialogue_gym import metrics

__all__ = ["METRIC_FIELDS", "EvalResult", "ProgressTally", "per_seed_rows", "slim_record"]


METRIC_FIELDS = (
    *("agent", "env_id", "episode", "seed", "errored", "error", "error_source"),
    *("success", "success_turn", "T", "q", "sl", "utility", "csr", "proactivity"),
    "proactive_turns",
)
"""The record fields kept with ``keep_records=False``: those the metrics and tables read."""

_SHARED_TEXT = ("agent", "env_id", "error_source")


def slim_record(record: dict[str, Any], keep: bool) -> dict[str, Any]:
    """``record`` itself, or only its :data:`METRIC_FIELDS` (repeated strings shared)."""
    if keep:
        return record
    slim = {k: record[k] for k in METRIC_FIELDS if k in record}
    for key in _SHARED_TEXT:
        if isinstance(slim.get(key), str):
            slim[key] = sys.intern(slim[key])
    return slim


@dataclasses.dataclass
class EvalResult:
    """What :func:`dialogue_gym.evaluate` returns.

    Attributes:
        records: Episode records of the requested runs (resumed ones included), ordered by
            agent, env id and episode index; with ``keep_records=False`` only their
            :data:`METRIC_FIELDS`.
        summaries: One :func:`~dialogue_gym.metrics.summarize` row per (agent, env id), with
            ``agent``, ``env_id`` and ``config`` added.
        out: The output directory, or ``None`` when nothing was written.
    """

    records: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    out: Path | None = None

    def table(self, columns: Sequence[str] | None = None) -> str:
        """The summaries as a text table with 95% CIs (see :func:`metrics.format_table`).

        Rows in leaderboard order (:func:`metrics.rank_rows`): the agents of a negotiation
        env id (CB) ranked by mean SL, which the table shows next to SR.
        """
        return metrics.format_table(metrics.rank_rows(self.summaries), columns)

    def worst_case(self) -> dict[str, dict[str, dict[str, tuple[str, float]]]]:
        """Per agent and task evaluated with several user types: the worst SR@T and RCSR@T.

        The task of an env id is the part before its user type (``P4G`` of ``P4G-hard-v0``).
        Negotiation tasks (records carrying ``sl``) also get the worst mean SL (``"sl"``).

        Returns:
            ``{agent: {task: {"sr": (env_id, value), "rcsr": (env_id, value)}}}``, plus
            ``"sl": (env_id, value)`` for negotiation tasks.
        """
        out: dict[str, dict[str, dict[str, tuple[str, float]]]] = {}
        groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
        for record in self.records:
            task = str(record["env_id"]).split("-", 1)[0]
            by_env = groups.setdefault((record["agent"], task), {})
            by_env.setdefault(record["env_id"], []).append(record)
        for (agent, task), by_env in groups.items():
            if len(by_env) < 2:
                continue
            horizon = max(int(r.get("T", metrics.DEFAULT_T)) for g in by_env.values() for r in g)
            out.setdefault(agent, {})[task] = {
                "sr": metrics.worst_case(by_env, partial(metrics.success_rate, T=horizon)),
                "rcsr": metrics.worst_case(by_env, partial(metrics.rcsr, T=horizon)),
            }
            if any(metrics.episode_sl(r) is not None for g in by_env.values() for r in g):
                out[agent][task]["sl"] = metrics.worst_case(by_env, metrics.sale_to_list)
        return out


def per_seed_rows(
    records: Sequence[Mapping[str, Any]], seeds: Sequence[int], config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """SR, AT and RCSR (and SL on negotiation tasks) of each base seed's block."""
    out = []
    for base in seeds:
        block = [r for r in records if r["seed"] - r["episode"] == base]
        row = metrics.summarize(block, T=config["T"], tau_q=config["tau_q"])
        keys = ("n", "n_errored", "sr", "sl", "at", "rcsr")
        out.append({"seed": base, **{k: row[k] for k in keys if k in row}})
    return out


@dataclasses.dataclass
class ProgressTally:
    """Running SR/RCSR counts for the progress bar (O(1) per episode)."""

    T: int
    n: int = 0
    errored: int = 0
    successes: int = 0
    rc_successes: int = 0
    sl_total: float | None = None  # negotiation tasks only

    def add(self, record: Mapping[str, Any]) -> None:
        """Counts one finished (or resumed) episode record."""
        if record.get("errored"):
            self.errored += 1
            return
        self.n += 1
        self.successes += metrics.success_within(record, self.T)
        self.rc_successes += metrics.rc_success_within(record, self.T)
        sl = metrics.episode_sl(record)
        if sl is not None:
            self.sl_total = (self.sl_total or 0.0) + sl

    def postfix(self) -> dict[str, str]:
        """The bar's postfix: SR (and SL on negotiation tasks), RCSR and errored episodes."""
        if not self.n:
            return {"SR": "n/a", "RCSR": "n/a", "err": str(self.errored)}
        out = {"SR": f"{self.successes / self.n:.2f}"}
        if self.sl_total is not None:
            out["SL"] = f"{self.sl_total / self.n:.2f}"
        out["RCSR"] = f"{self.rc_successes / self.n:.2f}"
        out["err"] = str(self.errored)
        return out
