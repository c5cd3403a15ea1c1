"""Learned readers of a real user's text for the success judge, per task (opt-in).

:class:`~dialogue_gym.judges.embedded.StateSuccessJudge` reads the stance of a reply with the
card's cue regexes, written for the simulator's own wording. Given a reader
(``StateSuccessJudge(card, text_reader=reader)``), it reads an external reply the cues cannot
place (a real person's replayed turn, an LLM user's) with a reader fitted on the task's train
split instead (:mod:`dialogue_gym.calibration`). Nothing turns a reader on implicitly: the same
env gives the same judgments wherever it runs. :func:`dialogue_gym.validity.validate` turns it
on for the judges applied to full real transcripts.

- **P4G**: :class:`~dialogue_gym.calibration.p4g.PersuadeeReader` from the shipped
  ``tables/p4g.json`` (Apache-2.0 data: the table ships);
- **ESConv**: :class:`~dialogue_gym.calibration.esconv.SeekerReader`. The corpus is CC BY-NC
  4.0, so no table ships: it is read from a table ``dialogue-gym data fit esconv --out DIR``
  wrote, or fitted on the train dialogues the caller passes.

Other tasks have no reader (``None``). To judge an LLM user's replies with the P4G reader::

    judge = functools.partial(StateSuccessJudge, text_reader=reader_for("P4G"))
    env = dialogue_gym.make("P4G-hard", user="llm-hard", success_judge=judge, backend=...)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dialogue_gym.calibration import esconv as esconv_calibration
from dialogue_gym.calibration import fit, load_table
from dialogue_gym.calibration import p4g as p4g_calibration

if TYPE_CHECKING:
    from dialogue_gym.data.records import Dialogue

__all__ = ["StanceReader", "reader_for"]


class StanceReader(Protocol):
    """Reads the stance distribution of the last user reply of a transcript."""

    def distribution(self, history: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Stance (``refused``/``neutral``/``positive``/``agree``) → probability."""
        ...


def reader_for(
    task_id: str,
    train: Sequence[Dialogue] = (),
    table: str | Path | None = None,
) -> StanceReader | None:
    """The learned reader of external users' replies for the task ``task_id``.

    Args:
        task_id: The card id (``"P4G"``, ``"ESConv"``, ...).
        train: The task's train dialogues: ESConv's reader is fitted on them when no
            ``table`` is given (about half a minute; held-out splits are refused by the fit).
        table: A table ``dialogue-gym data fit`` wrote (``esconv.json``), read instead of
            fitting.

    Returns:
        The reader, or ``None`` when the task has none or (ESConv) neither a table nor train
        dialogues were given.

    Raises:
        CalibrationError: ``train`` holds a dialogue of another split, or ``table`` is not a
            valid table of the task.
    """
    if task_id == "P4G":
        return p4g_calibration.shipped_reader()
    if task_id == "ESConv":
        if table is not None:
            return esconv_calibration.SeekerReader(load_table(Path(table)))
        usable = [d for d in train if d.turns]
        return esconv_calibration.SeekerReader(fit("esconv", usable)) if usable else None
    return None
