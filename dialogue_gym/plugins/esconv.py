"""ESConv's plug-in (``envs/esconv.toml``: ``plugin = "dialogue_gym.plugins.esconv"``).

* :meth:`ESConvPlugin.stance_reader`: :class:`~dialogue_gym.calibration.esconv.SeekerReader`.
  The corpus is CC BY-NC 4.0, so no table ships: it is read from a table
  ``dialogue-gym data fit esconv --out DIR`` wrote, or fitted on the train dialogues given.
* :meth:`ESConvPlugin.persona_layers`: a seeker pinned to a real ESConv dialogue
  (:mod:`dialogue_gym.users.esconv_seeker`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.calibration import esconv as esconv_calibration
from dialogue_gym.calibration import fit, load_table
from dialogue_gym.cards import TaskCard
from dialogue_gym.task_plugin import TaskPlugin
from dialogue_gym.types import DialogueRecord, StanceReader
from dialogue_gym.users.esconv_seeker import seeker_layers

__all__ = ["PLUGIN", "ESConvPlugin"]


class ESConvPlugin(TaskPlugin):
    """ESConv's hooks (see the module docstring)."""

    def stance_reader(
        self, train: Sequence[DialogueRecord] = (), table: str | Path | None = None
    ) -> StanceReader | None:
        """The seeker reader from ``table``, else fitted on ``train`` (``None`` without either).

        Raises:
            CalibrationError: ``train`` holds a dialogue of another split, or ``table`` is not
                a valid table of the task.
        """
        if table is not None:
            return esconv_calibration.SeekerReader(load_table(Path(table)))
        usable = [d for d in train if d.turns]
        return esconv_calibration.SeekerReader(fit("esconv", usable)) if usable else None

    def persona_layers(self, card: TaskCard, seed: Any, base: Any) -> dict[str, Any]:
        """Willingness, valence and concerns of a real seeker (its intensity and situation)."""
        if seed.corpus == "esconv":
            return seeker_layers(card, seed.profile, seed.situation, base)
        return {}


PLUGIN = ESConvPlugin()
