"""ESConv: readers of a real seeker's text, fitted on the train split where they are needed.

The embedded success judge reads a seeker's reply with the card's cue regexes. This fitter
learns two readers from the HF train split (910 conversations) instead. Its seekers carry no
per-turn labels (the HF export dropped the per-turn feedback) and every one of them reported
an improvement (final < initial emotion intensity), so "improved vs not" cannot be learned
from it directly. The two honest train-only signals, fixed before any held-out number was
looked at:

1. **closing** — a word/bigram logistic regression telling a seeker's *opening* replies (the
   first :data:`EDGE_REPLIES`, while the problem is being told) from their *closing* replies
   (the last :data:`EDGE_REPLIES`, after support that, in train, always helped).
   ``P(closing | reply)`` reads whether a reply sounds like a helped seeker's ending;
2. **fall** — a ridge regression of the seeker's reported intensity fall (initial − final, 1
   to 4 in train) on their last :data:`FALL_REPLIES` replies, for the conversations with both
   survey scores. Five-fold cross-validation on train (by id hash) gave a weak Spearman ρ of
   0.10 with the real fall, so it only grades how *far* a helped-sounding seeker got.

:class:`SeekerReader` turns them into the stance distribution the success judge votes from:
``neutral`` (the card's ``same``) with probability ``1 − p``, ``positive``
(``somewhat_better``) ``p · (1 − h)`` and ``agree`` (``resolved``) ``p · h``, where ``p`` is the
closing probability of the reply and ``h = clip((fall − 1) / 3, 0, 1)`` places the predicted
fall on the survey's 1–4 range. No train seeker got worse, so ``refused`` (``worse``) is never
read from text.

**Licence: the table does not ship.** ESConv is CC BY-NC 4.0; a table of word and word-pair
weights fitted on it is material adapted from the corpus, and the package is used commercially
too. So the reader is fitted where it is needed, from the corpus the user has: the validator
fits it on the train split it loads, and ``dialogue-gym data fit esconv --data DIR --out DIR``
writes a table :func:`dialogue_gym.judges.user_text.reader_for` can read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym.calibration.fit import CalibrationError, register
from dialogue_gym.calibration.text_reader import TextReader, fit_ridge, fit_softmax
from dialogue_gym.types import DialogueRecord

__all__ = [
    "EDGE_REPLIES",
    "FALL_REPLIES",
    "SeekerReader",
    "fit_esconv",
    "intensity_fall",
    "seeker_replies",
]

EDGE_REPLIES = 2
FALL_REPLIES = 3
SOFTMAX_L2 = 1e-2
RIDGE_L2 = 30.0
MIN_DF = 3
_FALL_RANGE = (1.0, 4.0)


def seeker_replies(dialogue: DialogueRecord) -> list[str]:
    """The seeker's replies: consecutive seeker turns joined into one reply.

    Seeker turns before the supporter's first turn are dropped (the simulated seeker speaks
    only in reply), as are turns without text.
    """
    replies: list[str] = []
    seen_supporter = False
    previous: str | None = None
    for turn in dialogue.turns:
        if not turn.text:
            continue
        if turn.role == "system":
            seen_supporter = True
        elif seen_supporter and previous == "user":
            replies[-1] = f"{replies[-1]} {turn.text}"
        elif seen_supporter:
            replies.append(turn.text)
        previous = turn.role
    return replies


def intensity_fall(dialogue: DialogueRecord) -> int | None:
    """Initial − final emotion intensity from the seeker survey; ``None`` if either is missing."""
    score = dialogue.situation.get("survey_score")
    seeker = score.get("seeker", {}) if isinstance(score, dict) else {}
    try:
        return int(str(seeker["initial_emotion_intensity"])) - int(
            str(seeker["final_emotion_intensity"])
        )
    except (KeyError, TypeError, ValueError):
        return None


@register(
    "esconv",
    corpus="esconv",
    version=1,
    description="seeker readers (closing-like reply; intensity fall of the last replies)",
)
def fit_esconv(dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """Fits the two seeker readers on ESConv train dialogues (module docstring).

    Raises:
        CalibrationError: Too few seeker replies or survey scores to fit on.
    """
    edge_texts: list[str] = []
    edge_labels: list[str] = []
    fall_texts: list[str] = []
    falls: list[int] = []
    for dialogue in dialogues:
        replies = seeker_replies(dialogue)
        if len(replies) < 2 * EDGE_REPLIES:
            continue
        edge_texts += replies[:EDGE_REPLIES] + replies[-EDGE_REPLIES:]
        edge_labels += ["opening"] * EDGE_REPLIES + ["closing"] * EDGE_REPLIES
        fall = intensity_fall(dialogue)
        if fall is not None:
            fall_texts.append(" ".join(replies[-FALL_REPLIES:]))
            falls.append(fall)
    if len(falls) < 10:
        raise CalibrationError("esconv: fewer than 10 train conversations with survey scores")
    closing = fit_softmax(
        edge_texts, edge_labels, ("opening", "closing"), l2=SOFTMAX_L2, min_df=MIN_DF
    )
    fall_reader = fit_ridge(fall_texts, falls, l2=RIDGE_L2, min_df=MIN_DF)
    return {
        "closing": {
            "n_replies": len(edge_texts),
            "edge_replies": EDGE_REPLIES,
            "l2": SOFTMAX_L2,
            "reader": closing.to_table(),
        },
        "fall": {
            "n_dialogues": len(falls),
            "last_replies": FALL_REPLIES,
            "l2": RIDGE_L2,
            "range": list(_FALL_RANGE),
            "by_fall": {str(v): falls.count(v) for v in sorted(set(falls))},
            "reader": fall_reader.to_table(),
        },
    }


class SeekerReader:
    """The stance distribution of a real seeker's reply (see the module docstring).

    Args:
        table: An ``esconv`` calibration table (:func:`fit_esconv`'s, with provenance).
    """

    def __init__(self, table: Mapping[str, Any]) -> None:
        try:
            parameters = table["parameters"]
            self.closing = TextReader.from_table(parameters["closing"]["reader"])
            self.fall = TextReader.from_table(parameters["fall"]["reader"])
            self.last_replies = int(parameters["fall"]["last_replies"])
            low, high = (float(v) for v in parameters["fall"]["range"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"esconv table: no usable readers ({exc})") from None
        self.low, self.span = low, high - low

    def distribution(self, history: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Stance → probability after the last user reply in ``history`` (``(role, text)``)."""
        replies = [text for role, text in history if role == "user"]
        if not replies:
            return {"neutral": 1.0}
        p = self.closing.probabilities(replies[-1])["closing"]
        fall = self.fall.value(" ".join(replies[-self.last_replies :]))
        h = min(max((fall - self.low) / self.span, 0.0), 1.0)
        return {"neutral": 1.0 - p, "positive": p * (1.0 - h), "agree": p * h}
