"""Reading run directories: :class:`Run`, :func:`load_run`, :func:`load_runs`.

Records come from :func:`dialogue_gym.evaluation.journal.read_episodes`, the reader
:func:`dialogue_gym.evaluate` resumes with, so a report counts exactly the episodes a resumed
evaluation would. Records whose transcript the HTML report will not show are stripped of
their transcript fields while loading, so memory stays bounded however large the run is.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.evaluation.journal import (
    EPISODES_FILE,
    SUMMARY_FILE,
    JournalError,
    RecordKey,
    read_episodes,
)

__all__ = ["ReportError", "Run", "RunLike", "episode_order", "load_run", "load_runs"]


# Per-episode fields only the transcripts need. They dominate a record's size, so records
# whose transcript will not be shown are stored without them.
_DETAIL_FIELDS = ("transcript", "states", "votes", "events", "initial_state")


class ReportError(ValueError):
    """A run directory that cannot be reported on (missing, empty or corrupt files).

    A ``ValueError``, so the command line reports it as a one-line usage error (exit 2).
    """


@dataclasses.dataclass
class Run:
    """One run directory as read from disk.

    Attributes:
        path: The run directory.
        records: Its episode records in file order, without repeats: a repeated agent, env
            id, episode and seed keeps its first record unless that one is errored and a
            later one exists (a ``--retry-errored`` rerun), as a resumed evaluation does
            (:func:`dialogue_gym.evaluation.journal.supersedes`).
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
            group.sort(key=episode_order)
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


def episode_order(record: Mapping[str, Any]) -> tuple[int, int]:
    """Sort key: episode index, then seed (the order ``evaluate`` summarizes in)."""
    return int(record.get("episode") or 0), int(record.get("seed") or 0)


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
            order = episode_order(record)
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
            ``evaluate`` does on resume (:class:`dialogue_gym.evaluation.journal.JournalReader`).
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
