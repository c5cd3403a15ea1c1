"""Evaluation: agents × env ids × seeds, resumable, and what it writes.

* :mod:`dialogue_gym.evaluation.run` — :func:`evaluate` and :class:`EvalResult`;
* :mod:`dialogue_gym.evaluation.agents` — agents from names, ``module:Class``, files, classes,
  factories or objects;
* :mod:`dialogue_gym.evaluation.executors` and :mod:`dialogue_gym.evaluation.episode_loop` —
  the lone-env, thread, vector and Ray executors, one episode as one record;
* :mod:`dialogue_gym.evaluation.journal`, :mod:`~dialogue_gym.evaluation.results`,
  :mod:`~dialogue_gym.evaluation.run_config` — ``episodes.jsonl`` (the one reader, shared
  with the report), the summary, a run's identity for resuming.

This package re-exports the names of the former module ``dialogue_gym.evaluation`` (now
:mod:`dialogue_gym.evaluation.run`).
"""

from __future__ import annotations

from dialogue_gym.evaluation.run import (
    EPISODES_FILE,
    MAX_EPISODES,
    METRIC_FIELDS,
    SUMMARY_FILE,
    AgentSpec,
    EvalResult,
    Job,
    evaluate,
)

__all__ = [
    "EPISODES_FILE",
    "MAX_EPISODES",
    "METRIC_FIELDS",
    "SUMMARY_FILE",
    "AgentSpec",
    "EvalResult",
    "Job",
    "evaluate",
]
