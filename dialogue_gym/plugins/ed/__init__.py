"""EmpatheticDialogues' plug-in (``envs/ed.toml``: ``plugin = "dialogue_gym.plugins.ed"``).

* :meth:`EDPlugin.profile_text`: the speaker's emotion and prompt, for the BDI annotator.

The corpus records no outcome, so :meth:`~dialogue_gym.cards.task_plugin.TaskPlugin.real_outcome`
stays generic (none).
"""

from __future__ import annotations

from types import MappingProxyType

from dialogue_gym.cards.task_plugin import TaskPlugin
from dialogue_gym.plugins._profile import clip
from dialogue_gym.types import DialogueRecord

__all__ = ["PLUGIN", "EDPlugin"]


class EDPlugin(TaskPlugin):
    """ED's hooks (see the module docstring)."""

    corpora = MappingProxyType({"ed": "dialogue_gym.plugins.ed.loader"})
    """The corpus loader (:mod:`dialogue_gym.plugins.ed.loader`)."""

    def profile_text(self, dialogue: DialogueRecord) -> str | None:
        """The emotion and the prompt the speaker was given."""
        situation = dialogue.situation
        parts = [
            f"{key}: {clip(situation[key], 500)}"
            for key in ("emotion", "prompt")
            if situation.get(key)
        ]
        return "; ".join(parts)


PLUGIN = EDPlugin()
