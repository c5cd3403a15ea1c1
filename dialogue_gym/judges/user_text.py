"""Which learned reader of a real user's text the success judge uses, per task.

:class:`~dialogue_gym.judges.embedded.StateSuccessJudge` reads the stance of a reply written by
an external policy (a real person's replayed turn, an LLM user) with a reader fitted on the
task's train split instead of the card's cue regexes (:mod:`dialogue_gym.calibration`):

- **P4G**: :class:`~dialogue_gym.calibration.p4g.PersuadeeReader` from the shipped
  ``tables/p4g.json`` (Apache-2.0 data: the table ships);
- **ESConv**: :class:`~dialogue_gym.calibration.esconv.SeekerReader`; the corpus is CC BY-NC
  4.0, so no table ships: it is read from ``$DIALOGUE_GYM_CALIBRATION/esconv.json`` (written
  by ``dialogue-gym data fit esconv --out DIR``) or fitted at first use on the train split
  under ``$DIALOGUE_GYM_DATA``, once per process. Without either, ``None``: the judge keeps
  the cue regexes and a warning says so.

Other tasks have no reader (``None``).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from dialogue_gym.calibration import CalibrationError, fit, load_table
from dialogue_gym.calibration import esconv as esconv_calibration
from dialogue_gym.calibration import p4g as p4g_calibration
from dialogue_gym.data import DataNotFoundError, load_corpus

__all__ = ["CALIBRATION_ENV", "DATA_ENV", "StanceReader", "reader_for"]

CALIBRATION_ENV = "DIALOGUE_GYM_CALIBRATION"
"""Environment variable naming a folder of user-fitted tables (``esconv.json``)."""
DATA_ENV = "DIALOGUE_GYM_DATA"
"""The data root the loaders read (an ESConv reader is fitted on its train split)."""


class StanceReader(Protocol):
    """Reads the stance distribution of the last user reply of a transcript."""

    def distribution(self, history: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Stance (``refused``/``neutral``/``positive``/``agree``) → probability."""
        ...


def _esconv_reader() -> esconv_calibration.SeekerReader | None:
    folder = os.environ.get(CALIBRATION_ENV)
    if folder and (Path(folder) / "esconv.json").is_file():
        return esconv_calibration.SeekerReader(load_table(Path(folder) / "esconv.json"))
    root = os.environ.get(DATA_ENV)
    problem = f"${DATA_ENV} is not set"
    if root:
        try:
            dialogues = [d for d in load_corpus("esconv", root, split="train") if d.turns]
            return esconv_calibration.SeekerReader(fit("esconv", dialogues))
        except (DataNotFoundError, CalibrationError, ValueError) as exc:
            problem = f"no ESConv train split under {root}: {exc}"
    warnings.warn(
        f"no ESConv seeker reader ({problem}; ESConv is CC BY-NC 4.0, so none ships): the "
        "success judge reads external seekers with the card's cue regexes. Set "
        f"${DATA_ENV} to the data root to fit one at first use, or ${CALIBRATION_ENV} to a "
        "folder with the esconv.json that `dialogue-gym data fit esconv` writes.",
        stacklevel=3,
    )
    return None


@functools.cache
def reader_for(task_id: str) -> StanceReader | None:
    """The reader of external users' replies for the task ``task_id`` (module docstring).

    Resolved once per process and task (an ESConv fit runs at most once).
    """
    if task_id == "P4G":
        return p4g_calibration.shipped_reader()
    if task_id == "ESConv":
        return _esconv_reader()
    return None
