"""Learned readers of a real user's text for the success judge, per task (opt-in).

:class:`~dialogue_gym.judges.embedded.StateSuccessJudge` reads the stance of a reply with the
card's cue regexes, written for the simulator's own wording. Given a reader
(``StateSuccessJudge(card, text_reader=reader)``), it reads an external reply the cues cannot
place (a real person's replayed turn, an LLM user's) with a reader fitted on the task's train
split instead (:mod:`dialogue_gym.calibration`), which the task's plug-in supplies
(:meth:`dialogue_gym.cards.task_plugin.TaskPlugin.stance_reader`). Nothing turns a reader on
implicitly: the same env gives the same judgments wherever it runs.
:func:`dialogue_gym.validity.validate` turns it on for the judges applied to full real
transcripts.

- **P4G** (:mod:`dialogue_gym.plugins.p4g`): the persuadee reader from the shipped table;
- **ESConv** (:mod:`dialogue_gym.plugins.esconv`): the seeker reader, from a table
  ``dialogue-gym data fit esconv --out DIR`` wrote or fitted on the train dialogues passed.

Other tasks (a card without a plug-in, or whose plug-in has no reader) have none (``None``).
To judge an LLM user's replies with the P4G reader::

    judge = functools.partial(StateSuccessJudge, text_reader=reader_for("P4G"))
    env = dialogue_gym.make("P4G-hard", user="llm-hard", success_judge=judge, backend=...)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dialogue_gym.cards.task_plugin import plugin_for_task
from dialogue_gym.types import StanceReader

if TYPE_CHECKING:
    from dialogue_gym.data.records import Dialogue

__all__ = ["StanceReader", "reader_for"]


def reader_for(
    task_id: str,
    train: Sequence[Dialogue] = (),
    table: str | Path | None = None,
) -> StanceReader | None:
    """The learned reader of external users' replies for the task ``task_id``.

    The reader comes from the plug-in the task's card names
    (:func:`dialogue_gym.cards.task_plugin.plugin_for_task`).

    Args:
        task_id: A registered card's id (``"P4G"``, ``"ESConv"``, ...).
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
    return plugin_for_task(task_id).stance_reader(train, table)
