"""Persuasion for Good's plug-in (``envs/p4g.toml``: ``plugin = "dialogue_gym.plugins.p4g"``).

* :meth:`P4GPlugin.stance_reader`: :class:`~dialogue_gym.calibration.p4g.PersuadeeReader`
  from the shipped ``tables/p4g.json`` (Apache-2.0 data: the table ships).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dialogue_gym.calibration import p4g as p4g_calibration
from dialogue_gym.task_plugin import TaskPlugin
from dialogue_gym.types import DialogueRecord, StanceReader

__all__ = ["PLUGIN", "P4GPlugin"]


class P4GPlugin(TaskPlugin):
    """P4G's hooks (see the module docstring)."""

    def stance_reader(
        self, train: Sequence[DialogueRecord] = (), table: str | Path | None = None
    ) -> StanceReader | None:
        """The shipped persuadee reader (``train`` and ``table`` are not needed)."""
        return p4g_calibration.shipped_reader()


PLUGIN = P4GPlugin()
