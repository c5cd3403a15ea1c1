"""ESConv's plug-in (``envs/esconv.toml``: ``plugin = "dialogue_gym.plugins.esconv"``).

* :meth:`ESConvPlugin.stance_reader`: :class:`~dialogue_gym.calibration.esconv.SeekerReader`.
  The corpus is CC BY-NC 4.0, so no table ships: it is read from a table
  ``dialogue-gym data fit esconv --out DIR`` wrote, or fitted on the train dialogues given.
* :meth:`ESConvPlugin.persona_layers`: a seeker pinned to a real ESConv dialogue
  (:mod:`dialogue_gym.users.esconv_seeker`).
* :meth:`ESConvPlugin.profile_text`: the emotion, problem and experience types, the initial
  emotion intensity and the seeker's situation, for the BDI annotator.
* :meth:`ESConvPlugin.real_outcome`: success = *improved*, the seeker's emotion intensity fell
  (final < initial); amount = the fall (initial − final, so larger is better). A
  ``FailedESConv.json`` dialogue without a final score counts as not improved (the collection
  dropped it as negative) with no amount; any other dialogue without both scores has no
  outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dialogue_gym.calibration import esconv as esconv_calibration
from dialogue_gym.calibration import fit, load_table
from dialogue_gym.cards import TaskCard
from dialogue_gym.plugins._profile import clip
from dialogue_gym.task_plugin import TaskPlugin
from dialogue_gym.types import DialogueRecord, Outcome, StanceReader
from dialogue_gym.users.esconv_seeker import seeker_layers

__all__ = ["PLUGIN", "ESConvPlugin"]


def _intensity(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


class ESConvPlugin(TaskPlugin):
    """ESConv's hooks (see the module docstring)."""

    validity_targets = MappingProxyType({"replay_auc": 0.70, "judge_auc": 0.70})
    """Issue 15's validity targets (:data:`dialogue_gym.validity.cells.TARGETS`)."""

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

    def profile_text(self, dialogue: DialogueRecord) -> str | None:
        """The seeker's situation and initial intensity (the final survey left out)."""
        profile, situation = dialogue.profile, dialogue.situation
        parts: list[str] = []
        for key, label in (
            ("emotion_type", "emotion"),
            ("problem_type", "problem"),
            ("experience_type", "experience"),
        ):
            if situation.get(key):
                parts.append(f"{label}: {situation[key]}")
        if profile.get("initial_emotion_intensity") is not None:
            parts.append(f"initial emotion intensity (1-5): {profile['initial_emotion_intensity']}")
        if situation.get("situation"):
            parts.append(f"situation: {clip(situation['situation'], 500)}")
        return "; ".join(parts)

    def real_outcome(self, dialogue: DialogueRecord) -> Outcome | None:
        """Improved (the intensity fell) and by how much (see the module docstring)."""
        score = dialogue.situation.get("survey_score")
        seeker = score.get("seeker", {}) if isinstance(score, dict) else {}
        start = _intensity(seeker.get("initial_emotion_intensity"))
        end = _intensity(seeker.get("final_emotion_intensity"))
        if start is not None and end is not None:
            return Outcome(end < start, float(start - end))
        return Outcome(False, None) if dialogue.situation.get("failed") else None


PLUGIN = ESConvPlugin()
