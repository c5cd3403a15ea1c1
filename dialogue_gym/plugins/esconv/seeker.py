"""ESConv seekers built from a real dialogue: initial emotion intensity and situation concerns.

A persona pinned to a real ESConv dialogue (:func:`dialogue_gym.users.corpus.personas_from_seeds`)
takes from the corpus what it says about the seeker:

* **Initial emotion intensity** (the seeker's pre-chat survey, 1–5). Where the seeker stands in
  the *train* split's intensity distribution — its mid-rank quantile
  ``q = P(I < k) + P(I = k) / 2`` — places it in the card bank's own ranges, so that the pinned
  seekers of the train split are spread over those ranges as the bank's personas are (the
  probability integral transform; nothing is fitted to an outcome):

  - initial willingness ``w0 = lo + (hi − lo)(1 − q)`` over the bank's willingness range (a
    more distressed seeker is further from feeling better; receptivity ρ0 = 0.1 + 0.9 w0
    follows);
  - concern strength ``lo + (hi − lo) q`` over the bank's strength range (on hard seekers a
    strength of 0.8 or more needs one more addressing turn);
  - starting valence ``v0 = −0.2 − 0.5 q``, over the −0.7 … −0.2 that the ESConv card tells its
    LLM annotator early valence usually lies in.

  The quantiles come from :data:`TRAIN_INTENSITY_COUNTS`, the counts of the HF train split
  (910 dialogues); :func:`intensity_counts` recomputes them and refuses any other split.
  The card's success rule is the seeker's stated state (``somewhat_better`` / ``resolved``),
  not a change of intensity, so the judge is unchanged: intensity moves only the start.
* **Concerns** from the dialogue's own ``emotion_type`` and ``problem_type`` where the card has
  a concern of that meaning (:data:`EMOTION_CONCERNS`, :data:`PROBLEM_CONCERNS`: a reading of
  the corpus's category names against the card's concern descriptions, written without looking
  at any outcome), in place of the bank persona's concerns chosen by the dialogue id's hash.
  Where neither category matches one of the card's concerns, the bank persona's are kept.

Without an intensity (PPDPP's files carry no survey) willingness and valence stay the bank
persona's and matched concerns take the middle of the bank's strength range.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.users.persona import STRENGTH_RANGE, WILLINGNESS_RANGE, Persona

__all__ = [
    "EMOTION_CONCERNS",
    "PROBLEM_CONCERNS",
    "TRAIN_INTENSITY_COUNTS",
    "VALENCE_RANGE",
    "intensity_counts",
    "intensity_quantile",
    "seeker_layers",
]

TRAIN_INTENSITY_COUNTS: Mapping[int, int] = {1: 2, 2: 31, 3: 173, 4: 401, 5: 303}
"""Seekers per initial emotion intensity in ESConv's HF train split (910 dialogues), as
:func:`intensity_counts` gives on ``load_corpus("esconv", DATA, split="train")``."""

VALENCE_RANGE = (-0.7, -0.2)
"""Starting valence of the most / least distressed seeker (the ESConv card's annotator hint:
"early on valence is usually negative (-0.7 to -0.2)")."""

EMOTION_CONCERNS: Mapping[str, str] = {
    "depression": "hopelessness",
    "anxiety": "overwhelm",
    "fear": "overwhelm",
    "nervousness": "overwhelm",
    "shame": "shame",
    "guilt": "shame",
    "sadness": "feeling_unheard",
    "anger": "feeling_unheard",
    "disgust": "feeling_unheard",
}
"""ESConv ``emotion_type`` → the card concern of that meaning (lower case; ``jealousy`` and
``pain`` have none)."""

PROBLEM_CONCERNS: Mapping[str, str] = {
    "ongoing depression": "hopelessness",
    "job crisis": "needs_concrete_step",
    "sleep problems": "needs_concrete_step",
    "breakup with partner": "isolation",
    "problems with friends": "isolation",
    "school bullying": "isolation",
    "academic pressure": "overwhelm",
    "procrastination": "overwhelm",
    "conflict with parents": "feeling_unheard",
    "issues with parents": "feeling_unheard",
    "issues with children": "feeling_unheard",
    "appearance anxiety": "shame",
    "alcohol abuse": "shame",
}
"""ESConv ``problem_type`` → the card concern of that meaning (lower case)."""


def intensity_counts(dialogues: Iterable[Any]) -> dict[int, int]:
    """Seekers per initial emotion intensity (1–5) among train-split ESConv dialogues.

    Args:
        dialogues: :class:`~dialogue_gym.data.Dialogue` records of the train split; those
            without an intensity are skipped.

    Raises:
        ValueError: A dialogue is not from ESConv's train split (named by id): held-out
            dialogues never enter the mapping.
    """
    counts = dict.fromkeys(range(1, 6), 0)
    for dialogue in dialogues:
        if dialogue.corpus != "esconv" or dialogue.split != "train":
            raise ValueError(
                f"intensity counts read ESConv's train split only; got {dialogue.id!r} "
                f"({dialogue.corpus}, split {dialogue.split!r})"
            )
        value = dialogue.profile.get("initial_emotion_intensity")
        if isinstance(value, int) and value in counts:
            counts[value] += 1
    return counts


def intensity_quantile(intensity: int, counts: Mapping[int, int] = TRAIN_INTENSITY_COUNTS) -> float:
    """The mid-rank quantile ``P(I < k) + P(I = k) / 2`` of intensity ``k`` in ``counts``.

    Raises:
        ValueError: ``intensity`` is not 1–5, or ``counts`` is empty.
    """
    if intensity not in range(1, 6):
        raise ValueError(f"emotion intensity must be 1-5, got {intensity!r}")
    total = sum(counts.values())
    if total <= 0:
        raise ValueError("no intensity counts")
    below = sum(n for k, n in counts.items() if k < intensity)
    return (below + counts.get(intensity, 0) / 2) / total


def _span(bounds: tuple[float, float], fraction: float) -> float:
    low, high = bounds
    return low + (high - low) * fraction


def _intensity(profile: Mapping[str, Any]) -> int | None:
    value = profile.get("initial_emotion_intensity")
    return value if isinstance(value, int) and value in range(1, 6) else None


def _situation_concerns(card: TaskCard, situation: Mapping[str, Any]) -> list[str]:
    """The card's concerns named by the dialogue's emotion then problem type (no repeats)."""
    known = {c.id for c in card.concerns}
    found: list[str] = []
    for key, table in (("emotion_type", EMOTION_CONCERNS), ("problem_type", PROBLEM_CONCERNS)):
        value = situation.get(key)
        concern = table.get(value.strip().lower()) if isinstance(value, str) else None
        if concern in known and concern not in found:
            found.append(concern)
    return found


def seeker_layers(
    card: TaskCard, profile: Mapping[str, Any], situation: Mapping[str, Any], base: Persona
) -> dict[str, Any]:
    """Persona fields of a real ESConv seeker (see the module docstring).

    Args:
        card: The ESConv card (its concerns).
        profile: The seed's profile (``initial_emotion_intensity`` where the corpus has it).
        situation: The seed's situation (``emotion_type``, ``problem_type``).
        base: The bank persona chosen for the dialogue (kept for what the corpus does not say).

    Returns:
        ``dataclasses.replace`` keyword arguments: ``concerns`` where the situation names card
        concerns, and with an intensity ``emotion_intensity``, ``initial_willingness`` and
        ``initial_valence``.
    """
    intensity = _intensity(profile)
    q = None if intensity is None else intensity_quantile(intensity)
    fields: dict[str, Any] = {}
    concerns = _situation_concerns(card, situation)
    if concerns:
        strength = round(_span(STRENGTH_RANGE, 0.5 if q is None else q), 3)
        fields["concerns"] = tuple((cid, strength) for cid in concerns)
    if intensity is not None and q is not None:
        fields["emotion_intensity"] = intensity
        fields["initial_willingness"] = round(_span(WILLINGNESS_RANGE, 1.0 - q), 3)
        fields["initial_valence"] = round(_span((VALENCE_RANGE[1], VALENCE_RANGE[0]), q), 3)
    return fields
