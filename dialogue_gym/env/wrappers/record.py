"""``RecordEpisodes``: append one JSON line per finished episode of a dialogue ``ParallelEnv``.

Each line holds the env's ``episode`` record (from the final infos), the seed the episode was
reset with (``null`` when unseeded), the transcript and one entry per completed exchange with
its success label/score, judge votes, q, s, Δs, the user events and both seats' rewards. The
file is opened in append mode, written and closed at the end of every episode, so nothing is
lost when a run crashes and several runs can share a file.

Example:
    >>> env = RecordEpisodes(dialogue_gym.make("P4G-hard"), "runs/episodes.jsonl")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

#: Per-exchange info keys copied into the ``exchanges`` entries (when present).
EXCHANGE_KEYS = (
    "success",
    "success_score",
    "success_label",
    "judge_votes",
    "judge_failures",
    "q",
    "s",
    "delta_s",
    "inference_error",
    "user_events",
    "privileged",
)


def to_jsonable(value: Any) -> Any:
    """Converts NumPy scalars/arrays, tuples, sets and objects with ``to_dict`` to JSON types.

    Non-finite floats become ``None`` (JSON has no NaN); unknown objects become ``repr`` text.
    """
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if callable(getattr(value, "to_dict", None)):
        return to_jsonable(value.to_dict())
    return repr(value)


class RecordEpisodes(BaseParallelWrapper):
    """A PettingZoo parallel wrapper that writes every finished episode as one JSONL line.

    A line is written when a ``step`` ends the episode (``env.agents`` becomes empty, or every
    seat is terminated or truncated); episodes abandoned by a ``reset`` before they end are not
    written. Keys of a line: ``env_id``, ``seed``, ``episode_index`` (0-based, per wrapper),
    ``episode`` (the env's episode record), ``transcript`` (``[{"speaker", "text"}]``) and
    ``exchanges`` (per completed exchange: ``exchange`` (1-based), ``rewards`` per seat, the
    :data:`EXCHANGE_KEYS` present in the infos, and ``fallbacks`` per seat).

    Args:
        env: The dialogue parallel env.
        path: The JSONL file (created with its parents if missing; lines are appended).

    Attributes:
        path: The JSONL file.
        episodes_written: Lines written by this wrapper.
    """

    def __init__(self, env: ParallelEnv, path: str | os.PathLike[str]) -> None:
        super().__init__(env)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()  # exists (maybe empty) from the start; lines are only appended
        self.episodes_written = 0
        self._seed: int | None = None
        self._exchanges: list[dict[str, Any]] = []
        self._pending_fallbacks: dict[str, list[Any]] = {}
        self._active = False

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Resets the env and starts recording a new episode."""
        observations, infos = self.env.reset(seed=seed, options=options)
        self._seed = seed
        self._exchanges = []
        self._pending_fallbacks = {}
        self._collect_fallbacks(infos)
        self._active = True
        return observations, infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        """Steps the env; writes the episode's line when the step ends it."""
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        self._collect_fallbacks(infos)
        first: Mapping[str, Any] = next(iter(infos.values()), {})
        if "success" in first:  # this step completed an exchange
            self._exchanges.append(self._exchange_entry(first, rewards))
        ended = not self.env.agents or all(
            terminations.get(a, False) or truncations.get(a, False) for a in rewards
        )
        if ended and self._active:
            self._active = False
            self._write(observations, infos)
        return observations, rewards, terminations, truncations, infos

    # -- internals -----------------------------------------------------------------------------

    def _collect_fallbacks(self, infos: Mapping[str, Any]) -> None:
        for seat, info in infos.items():
            if isinstance(info, Mapping) and info.get("fallbacks"):
                self._pending_fallbacks.setdefault(seat, []).extend(info["fallbacks"])

    def _exchange_entry(
        self, info: Mapping[str, Any], rewards: Mapping[str, float]
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {"exchange": len(self._exchanges) + 1}
        entry["rewards"] = {seat: float(r) for seat, r in rewards.items()}
        entry.update({key: info[key] for key in EXCHANGE_KEYS if key in info})
        entry["fallbacks"] = self._pending_fallbacks
        self._pending_fallbacks = {}
        return entry

    def _transcript(self, observations: Mapping[str, Any]) -> list[dict[str, str]]:
        history = getattr(self.env.unwrapped, "history", None)
        if history is not None:
            return [{"speaker": str(role), "text": str(text)} for role, text in history]
        seats = list(self.env.possible_agents)
        obs: Mapping[str, Any] = next(iter(observations.values()), {})
        return [{"speaker": seats[t["speaker"]], "text": t["text"]} for t in obs.get("history", ())]

    def _write(self, observations: Mapping[str, Any], infos: Mapping[str, Any]) -> None:
        episode = next(
            (i["episode"] for i in infos.values() if isinstance(i, Mapping) and "episode" in i),
            None,
        )
        env_id = (episode or {}).get("env_id") or getattr(self.env.unwrapped, "env_id", None)
        line = {
            "env_id": env_id,
            "seed": self._seed,
            "episode_index": self.episodes_written,
            "episode": episode,
            "transcript": self._transcript(observations),
            "exchanges": self._exchanges,
        }
        text = json.dumps(to_jsonable(line), ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
        self.episodes_written += 1

    def __repr__(self) -> str:
        return f"<RecordEpisodes {str(self.path)!r} of {self.env!r}>"
