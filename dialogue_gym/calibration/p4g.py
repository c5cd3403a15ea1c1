"""Persuasion for Good: a reader of the persuadee's stance, learned from the annotated acts.

The embedded success judge reads a reply's stance with the card's cue regexes. For a real
persuadee they find ``agree`` in a quarter of the dialogues although over half donated: "I
would say five dollars", "okay don't worry I will donate" match no cue. This fitter learns the
stance from the 300 annotated dialogues instead (``AnnotatedData/300_dialog.csv``, load with
``format="annotated"``), their TRAIN split only (P4G has no official split; the loader's id
hash assigns 80/10/10, :func:`dialogue_gym.data.p4g.split_of`).

Each persuadee turn (its sentences' ``ee_label_1`` acts, joined) is labelled with a stance by
:func:`turn_stance`, the rule fixed before any held-out number was looked at:

- ``agree``: any of :data:`AGREE_ACTS` (``agree-donation``, ``provide-donation-amount``,
  ``confirm-donation``) — a stated commitment or amount wins over a partial refusal in the
  same turn ("not all of it, but $0.50");
- ``refused``: otherwise any of :data:`REFUSE_ACTS` (``disagree-donation``,
  ``disagree-donation-more``);
- ``positive``: otherwise ``positive-reaction-to-donation``;
- ``neutral``: every other act (questions, greetings, acknowledgements, negative reactions
  short of a refusal).

A word/bigram multinomial logistic regression
(:func:`~dialogue_gym.calibration.text_reader.fit_softmax`; :data:`L2`, :data:`ITERATIONS`,
:data:`MIN_DF`) is fitted on the turns' text → stance. The hyper-parameters were chosen on
train data only: fitted on the annotated train dialogues, the judge rule
(:func:`~dialogue_gym.calibration.text_reader.quantile_votes` on each reply) was scored
against the real donation of the FullData train dialogues that are not annotated (n = 562):
AUC 0.65 judged success / 0.68 best score at L2 = 0.001 (0.64 / 0.70 at 0.01), against 0.56
for the cue regexes; 0.645 / 0.67 (0.62 / 0.67 at 0.01) with the judge's rule of reading only
the replies the cues read as neutral. Reading the persuader's previous turn as well, or the
last two or three replies together, did not help. Of the two settings, 0.001 reads clear
statements more confidently ("Sure, put me down for $1.00." → three ``agree`` votes; at 0.01
one of them is ``neutral``).

The table (``tables/p4g.json``) holds the act → stance rule, the label counts and the reader
(vocabulary, per-class weights, biases: aggregate numbers, no dialogue text beyond the words
and word pairs of the vocabulary). P4G is Apache-2.0, so it ships.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dialogue_gym.calibration.fit import CalibrationError, register, shipped_table
from dialogue_gym.calibration.text_reader import STANCES, TextReader, fit_softmax

if TYPE_CHECKING:
    from dialogue_gym.data.records import Dialogue, Turn

__all__ = [
    "AGREE_ACTS",
    "ITERATIONS",
    "L2",
    "MIN_DF",
    "POSITIVE_ACTS",
    "REFUSE_ACTS",
    "PersuadeeReader",
    "fit_p4g",
    "shipped_reader",
    "turn_stance",
]

AGREE_ACTS = frozenset({"agree-donation", "provide-donation-amount", "confirm-donation"})
REFUSE_ACTS = frozenset({"disagree-donation", "disagree-donation-more"})
POSITIVE_ACTS = frozenset({"positive-reaction-to-donation"})
L2 = 1e-3
ITERATIONS = 400
MIN_DF = 3


def turn_stance(turn: Turn) -> str:
    """The stance of an annotated persuadee turn from its acts (module docstring)."""
    acts = set(turn.acts)
    if acts & AGREE_ACTS:
        return "agree"
    if acts & REFUSE_ACTS:
        return "refused"
    if acts & POSITIVE_ACTS:
        return "positive"
    return "neutral"


@register(
    "p4g",
    corpus="p4g",
    version=1,
    description="persuadee stance reader (words/bigrams -> refused/neutral/positive/agree)",
    format="annotated",
)
def fit_p4g(dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """Fits the persuadee stance reader on annotated P4G train dialogues (module docstring).

    Raises:
        CalibrationError: No annotated persuadee turns (e.g. the unlabelled FullData format),
            or a stance without any example.
    """
    texts: list[str] = []
    labels: list[str] = []
    for dialogue in dialogues:
        for turn in dialogue.turns:
            if turn.role == "user" and turn.acts and turn.text:
                texts.append(turn.text)
                labels.append(turn_stance(turn))
    if not texts:
        raise CalibrationError(
            "p4g: no annotated persuadee turns; fit the annotated format (300_dialog.csv)"
        )
    counts = Counter(labels)
    if set(counts) != set(STANCES):
        raise CalibrationError(f"p4g: every stance needs train turns, got {dict(counts)}")
    reader = fit_softmax(texts, labels, STANCES, l2=L2, iterations=ITERATIONS, min_df=MIN_DF)
    return {
        "rule": {
            "agree": sorted(AGREE_ACTS),
            "refused": sorted(REFUSE_ACTS),
            "positive": sorted(POSITIVE_ACTS),
            "neutral": "every other act",
        },
        "turns": {"n": len(texts), "by_stance": {s: counts[s] for s in STANCES}},
        "fit": {"l2": L2, "iterations": ITERATIONS, "min_df": MIN_DF},
        "reader": reader.to_table(),
    }


class PersuadeeReader:
    """The stance a real persuadee's reply states, by the fitted reader.

    Args:
        table: A ``p4g`` calibration table (:func:`fit_p4g`'s, with provenance).
    """

    def __init__(self, table: Mapping[str, Any]) -> None:
        try:
            self.reader = TextReader.from_table(table["parameters"]["reader"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"p4g table: no usable reader ({exc})") from None

    def distribution(self, history: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Stance → probability of the last user reply in ``history`` (``(role, text)``)."""
        reply = next((text for role, text in reversed(history) if role == "user"), "")
        return self.reader.probabilities(reply)


@functools.cache
def shipped_reader() -> PersuadeeReader:
    """The reader of the shipped ``tables/p4g.json`` (read once)."""
    return PersuadeeReader(shipped_table("p4g"))
