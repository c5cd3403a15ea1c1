"""ESConv's plug-in (``envs/esconv.toml``: ``plugin = "dialogue_gym.plugins.esconv"``).

* :meth:`ESConvPlugin.stance_reader`:
  :class:`~dialogue_gym.plugins.esconv.calibration.SeekerReader`.
  The corpus is CC BY-NC 4.0, so no table ships: it is read from a table
  ``dialogue-gym data fit esconv --out DIR`` wrote, or fitted on the train dialogues given.
* :meth:`ESConvPlugin.persona_layers`: a seeker pinned to a real ESConv dialogue
  (:mod:`dialogue_gym.plugins.esconv.seeker`).
* :meth:`ESConvPlugin.profile_text`: the emotion, problem and experience types, the initial
  emotion intensity and the seeker's situation, for the BDI annotator.
* :meth:`ESConvPlugin.real_outcome`: success = *improved*, the seeker's emotion intensity fell
  (final < initial); amount = the fall (initial − final, so larger is better). A
  ``FailedESConv.json`` dialogue without a final score counts as not improved (the collection
  dropped it as negative) with no amount; any other dialogue without both scores has no
  outcome.
* :meth:`ESConvPlugin.held_out_split`: ``failed``, the validity benchmark's extra held-out
  split (the dialogues of ``FailedESConv.json``).

The package holds the task's code: the corpus loader
(:mod:`~dialogue_gym.plugins.esconv.loader`), the seeker readers
(:mod:`~dialogue_gym.plugins.esconv.calibration`; importing the package registers the
``esconv`` fitter) and the seeker pinned to a real dialogue
(:mod:`~dialogue_gym.plugins.esconv.seeker`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dialogue_gym.calibration import fit, load_table
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.task_plugin import TaskPlugin
from dialogue_gym.plugins._profile import clip
from dialogue_gym.plugins.esconv import calibration as esconv_calibration
from dialogue_gym.plugins.esconv.seeker import seeker_layers
from dialogue_gym.types import DialogueRecord, Outcome, StanceReader

__all__ = ["FAILED", "PLUGIN", "ESConvPlugin"]

FAILED = "failed"
"""The held-out split of the dialogues ``FailedESConv.json`` holds."""


def _intensity(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


class ESConvPlugin(TaskPlugin):
    """ESConv's hooks (see the module docstring)."""

    validity_targets = MappingProxyType({"replay_auc": 0.70, "judge_auc": 0.70})
    """Issue 15's validity targets (:data:`dialogue_gym.validity.cells.TARGETS`)."""
    corpora = MappingProxyType({"esconv": "dialogue_gym.plugins.esconv.loader"})
    """The corpus loader (:mod:`dialogue_gym.plugins.esconv.loader`)."""

    def held_out_split(self, corpus: str, split: str, data: str | Path | None) -> list[Any] | None:
        """``failed``: the dialogues of ``FailedESConv.json`` (the collection dropped them)."""
        if split != FAILED:
            return None
        from dialogue_gym.data import load_corpus  # the loaders load only when read

        found = load_corpus(corpus, data, split="unsplit", format="original")
        return [d for d in found if d.situation.get("failed")]

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
