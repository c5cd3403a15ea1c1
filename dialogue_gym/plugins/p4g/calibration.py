"""Persuasion for Good: readers of the persuadee's stance and of the persuader's asks.

The embedded success judge reads a reply's stance with the card's cue regexes. For a real
persuadee they find ``agree`` in a quarter of the dialogues although over half donated: "I
would say five dollars", "okay don't worry I will donate" match no cue. This fitter learns the
stance from the 300 annotated dialogues instead (``AnnotatedData/300_dialog.csv``, load with
``format="annotated"``), their TRAIN split only (P4G has no official split; the loader's id
hash assigns 80/10/10, :func:`dialogue_gym.plugins.p4g.loader.split_of`).

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

**Asks.** The simulated persuadee decides only when it is asked, and the card's ``ask`` cue
regexes miss many ways real persuaders ask ("I would love for you to donate part of your
earnings to Save the Children"): 44 of 117 real donors of the held-out dialogues were never
asked in a way the cues see. The same kind of reader, fitted on the annotated train persuader
turns (their ``er_label_1`` acts), learns an ask from text: a turn is an ``ask`` when any of
its acts is in :data:`ASK_ACTS` (``proposition-of-donation``, ``ask-donation-amount``,
``ask-donate-more``: the three the card's ``[corpus] label_aliases`` map to its asking
strategy), else ``other``. :class:`AskDetector` calls a turn an ask at P(ask) >=
:data:`ASK_THRESHOLD` (0.5, the reader's own decision; not tuned). Cards name the table in
``[corpus] ask_reader`` and the users then treat a turn as an ask when either the cues or the
detector say so (:class:`~dialogue_gym.users.analysis.UtteranceAnalyzer`). On the annotated
persuader turns of the held-out splits (valid / test: 39 / 49 asks) the cues find 62 % / 61 %
of the asks (precision 0.86 / 0.86), the detector 72 % / 63 % (0.82 / 0.86), either 79 % /
69 % (0.78 / 0.77).

**Appeals.** A hard persuadee moves only for reasons that answer what holds it back, and the
users read a reason by the similarity of the turn to the card's own wording of each concern:
real persuaders reach that threshold in few turns, so replaying them gives their users almost
no reasons. The card's strategies say which concerns each of them answers (``addresses``), and
the annotated corpus says which strategies real persuaders used. So the fitter also learns one
reader per appeal of :data:`APPEAL_ACTS` (``credibility-appeal``, ``donation-information``,
``emotion-appeal``, ``foot-in-the-door``, ``logical-appeal``, ``personal-story``: the acts of
the P4G card's strategies that address a concern) on the same train persuader turns: the turn
is that appeal when one of its acts is, else ``other`` (a turn may make several). The same
settings again, fitted together (:func:`~dialogue_gym.calibration.text_reader.fit_softmax_many`:
each reader exactly as if alone); :class:`AppealReader` reads the appeals with P >=
:data:`APPEAL_THRESHOLD` (0.5). Cards name the table in ``[corpus] appeal_reader``, and a turn
read as an appeal then gets the card's cue bonus on the concerns its strategy addresses, as if
one of their cue regexes had matched (:class:`~dialogue_gym.users.analysis.UtteranceAnalyzer`).

The table (``tables/p4g.json``) holds the act → stance rule, the label counts and the readers
(vocabulary, per-class weights, biases: aggregate numbers, no dialogue text beyond the words
and word pairs of the vocabulary). P4G is Apache-2.0, so it ships.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from dialogue_gym.calibration.fit import CalibrationError, register, shipped_table
from dialogue_gym.calibration.text_reader import (
    STANCES,
    TextReader,
    features,
    fit_softmax,
    fit_softmax_many,
)
from dialogue_gym.types import DialogueRecord, TurnRecord

__all__ = [
    "AGREE_ACTS",
    "APPEAL_ACTS",
    "APPEAL_THRESHOLD",
    "ASK_ACTS",
    "ASK_THRESHOLD",
    "ITERATIONS",
    "L2",
    "MIN_DF",
    "POSITIVE_ACTS",
    "REFUSE_ACTS",
    "AppealReader",
    "AskDetector",
    "PersuadeeReader",
    "fit_p4g",
    "shipped_appeal_reader",
    "shipped_ask_detector",
    "shipped_reader",
    "turn_stance",
]

AGREE_ACTS = frozenset({"agree-donation", "provide-donation-amount", "confirm-donation"})
REFUSE_ACTS = frozenset({"disagree-donation", "disagree-donation-more"})
POSITIVE_ACTS = frozenset({"positive-reaction-to-donation"})
ASK_ACTS = frozenset({"proposition-of-donation", "ask-donation-amount", "ask-donate-more"})
ASK_THRESHOLD = 0.5
APPEAL_ACTS = (
    "credibility-appeal",
    "donation-information",
    "emotion-appeal",
    "foot-in-the-door",
    "logical-appeal",
    "personal-story",
)
APPEAL_THRESHOLD = 0.5
L2 = 1e-3
ITERATIONS = 400
MIN_DF = 3


def turn_stance(turn: TurnRecord) -> str:
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
    version=3,
    description="persuadee stance reader; persuader ask and appeal readers",
    format="annotated",
)
def fit_p4g(dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """Fits the persuadee stance, persuader ask and appeal readers on annotated train dialogues.

    See the module docstring for the labels.

    Raises:
        CalibrationError: No annotated persuadee turns (e.g. the unlabelled FullData format),
            a stance without any example, or no annotated ask or non-ask persuader turn.
    """
    texts, labels = _labelled_turns(dialogues, "user", turn_stance)
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
        "ask": _fit_asks(dialogues),
        "appeals": _fit_appeals(dialogues),
    }


def _fit_asks(dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """The ask reader's part of the table: its rule, label counts and reader."""
    texts, labels = _labelled_turns(
        dialogues, "system", lambda turn: "ask" if ASK_ACTS & set(turn.acts) else "other"
    )
    counts = Counter(labels)
    if counts["ask"] == 0 or counts["other"] == 0:
        raise CalibrationError(f"p4g: the ask reader needs ask and other turns, got {dict(counts)}")
    reader = fit_softmax(
        texts, labels, ("ask", "other"), l2=L2, iterations=ITERATIONS, min_df=MIN_DF
    )
    return {
        "rule": {"ask": sorted(ASK_ACTS), "other": "every other act"},
        "turns": {"n": len(texts), "ask": counts["ask"], "other": counts["other"]},
        "threshold": ASK_THRESHOLD,
        "reader": reader.to_table(),
    }


def _fit_appeals(dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """The appeal readers' part of the table: the rule, label counts and one reader per appeal.

    An appeal without both train turns that make it and turns that do not gets no reader (and
    is never read); a table may so hold none. The readers share one vocabulary (they read the
    same texts), stored once.
    """
    texts, made = _labelled_turns(dialogues, "system", lambda turn: frozenset(turn.acts))
    counts = {act: sum(act in m for m in made) for act in APPEAL_ACTS}
    fitted = [act for act in APPEAL_ACTS if 0 < counts[act] < len(texts)]
    tasks = [([act if act in m else "other" for m in made], (act, "other")) for act in fitted]
    readers = (
        fit_softmax_many(texts, tasks, l2=L2, iterations=ITERATIONS, min_df=MIN_DF) if tasks else []
    )
    return {
        "rule": {act: "a turn with this act, else other" for act in APPEAL_ACTS},
        "turns": {"n": len(texts), "by_appeal": counts},
        "threshold": APPEAL_THRESHOLD,
        "vocabulary": list(readers[0].vocabulary) if readers else [],
        "readers": {
            act: {k: v for k, v in r.to_table().items() if k != "vocabulary"}
            for act, r in zip(fitted, readers, strict=True)
        },
    }


Label = TypeVar("Label")


def _labelled_turns(
    dialogues: Sequence[DialogueRecord], role: str, label: Callable[[TurnRecord], Label]
) -> tuple[list[str], list[Label]]:
    """The texts of ``role``'s annotated, non-empty turns and their labels."""
    texts: list[str] = []
    labels: list[Label] = []
    for dialogue in dialogues:
        for turn in dialogue.turns:
            if turn.role == role and turn.acts and turn.text:
                texts.append(turn.text)
                labels.append(label(turn))
    return texts, labels


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


class AskDetector:
    """Whether a persuader's turn asks for the donation, by the fitted ask reader.

    Args:
        table: A ``p4g`` calibration table (:func:`fit_p4g`'s, with provenance).

    Raises:
        CalibrationError: The table has no usable ask reader (e.g. one the version 1 fitter
            wrote: rerun ``dialogue-gym data fit p4g``).
    """

    def __init__(self, table: Mapping[str, Any]) -> None:
        try:
            part = table["parameters"]["ask"]
            self.reader = TextReader.from_table(part["reader"])
            self.threshold = float(part["threshold"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"p4g table: no usable ask reader ({exc})") from None
        if "ask" not in self.reader.classes:
            raise CalibrationError("p4g table: the ask reader has no 'ask' class")

    def probability(self, text: str) -> float:
        """P(``text`` asks for the donation)."""
        return self.reader.probabilities(text)["ask"]

    def __call__(self, text: str) -> bool:
        """Whether ``text`` asks for the donation (P(ask) >= the table's threshold)."""
        return self.probability(text) >= self.threshold


class AppealReader:
    """Which appeals (:data:`APPEAL_ACTS`) a persuader's turn makes, by the fitted readers.

    Args:
        table: A ``p4g`` calibration table (:func:`fit_p4g`'s, with provenance).

    Raises:
        CalibrationError: The table has no usable appeal readers (e.g. one an older fitter
            wrote: rerun ``dialogue-gym data fit p4g``).
    """

    def __init__(self, table: Mapping[str, Any]) -> None:
        try:
            part = table["parameters"]["appeals"]
            vocabulary = part["vocabulary"]
            self.readers = {
                act: TextReader.from_table({**reader, "vocabulary": vocabulary})
                for act, reader in part["readers"].items()
            }
            self.threshold = float(part["threshold"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CalibrationError(f"p4g table: no usable appeal readers ({exc})") from None
        missing = [act for act, reader in self.readers.items() if act not in reader.classes]
        if missing:
            raise CalibrationError(f"p4g table: appeal readers without their class: {missing}")
        if any(len(reader.classes) != 2 for reader in self.readers.values()):
            raise CalibrationError("p4g table: every appeal reader has two classes (act, other)")
        # The readers share one vocabulary: a text's features are read once for all of them
        # (the users perceive every system turn with this) and each reader's two columns are
        # summed and normalized exactly as TextReader.probabilities would.
        self._columns = {f: i for i, f in enumerate(vocabulary)}
        self._weights = np.concatenate(
            [np.zeros((len(vocabulary), 0))]
            + [np.asarray(r.weights, dtype=float).T for r in self.readers.values()],
            axis=1,
        )
        self._bias = np.asarray([b for r in self.readers.values() for b in r.bias], dtype=float)
        self._own = [r.classes.index(act) for act, r in self.readers.items()]

    def probabilities(self, text: str) -> dict[str, float]:
        """Appeal → P(``text`` makes it), for every appeal with a reader."""
        found = sorted(self._columns[f] for f in features(text) if f in self._columns)
        z = self._bias + self._weights[found].sum(axis=0) if found else self._bias.copy()
        z = z.reshape(len(self.readers), 2)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return {
            act: float(p[row, own])
            for row, (act, own) in enumerate(zip(self.readers, self._own, strict=True))
        }

    def __call__(self, text: str) -> frozenset[str]:
        """The appeals ``text`` makes (P >= the table's threshold)."""
        return frozenset(a for a, p in self.probabilities(text).items() if p >= self.threshold)


@functools.cache
def shipped_appeal_reader() -> AppealReader:
    """The appeal readers of the shipped ``tables/p4g.json`` (read once)."""
    return AppealReader(shipped_table("p4g"))


@functools.cache
def shipped_ask_detector() -> AskDetector:
    """The ask detector of the shipped ``tables/p4g.json`` (read once)."""
    return AskDetector(shipped_table("p4g"))


@functools.cache
def shipped_reader() -> PersuadeeReader:
    """The reader of the shipped ``tables/p4g.json`` (read once)."""
    return PersuadeeReader(shipped_table("p4g"))
