"""Learned readers of a real user's text: word/bigram linear models fitted on train splits.

The embedded judges read a reply's stance with the task card's cue regexes, written for the
simulator's own wording. Real people say "I would say five dollars" or "okay don't worry I will
donate", which no cue matches. A :class:`TextReader` is a small linear model over the words and
word pairs of a text, fitted on a corpus's train split by :mod:`dialogue_gym.calibration`
(``dialogue-gym data fit p4g``, ``... esconv``) and stored as a table of aggregate weights:

- ``kind = "softmax"``: a multinomial logistic regression over ordered classes (P4G: the
  persuadee's stance ``refused < neutral < positive < agree``, learned from the annotated
  persuadee acts); :meth:`TextReader.probabilities` gives the class distribution;
- ``kind = "ridge"``: a ridge regression of a number (ESConv: the seeker's fall in emotion
  intensity); :meth:`TextReader.value` gives the prediction.

Features are binary: the lower-cased words and adjacent word pairs of the text, numbers folded
into ``<num>`` and ``$`` kept as a word (so "$5", "5 dollars" and "20 cents" share features),
only those seen in at least ``min_df`` training texts. Fitting is deterministic (fixed
iterations of accelerated gradient descent, or one linear solve) and encoder-independent; the
weights are rounded to :data:`DIGITS` decimals so a table rewritten by rerunning the fit gives
the same bytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DIGITS",
    "STANCES",
    "TextReader",
    "features",
    "fit_ridge",
    "fit_softmax",
    "fit_softmax_many",
    "quantile_votes",
]

STANCES = ("refused", "neutral", "positive", "agree")
"""The user's stances, from the least to the most favourable to the task goal."""

DIGITS = 4
"""Decimals the fitted weights are rounded to (the table's precision)."""
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"<num>|[a-z]+(?:'[a-z]+)?|[$?!]")


def features(text: str) -> set[str]:
    """The binary features of ``text``: its words and adjacent word pairs (module docstring)."""
    words = _WORD.findall(_NUMBER.sub(" <num> ", text.lower()))
    return {*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))}


@dataclasses.dataclass(frozen=True)
class TextReader:
    """A fitted linear reader of text (see the module docstring).

    Attributes:
        kind: ``"softmax"`` (class probabilities) or ``"ridge"`` (one number).
        vocabulary: The features, in column order.
        classes: The class names (softmax), in the order of the weight rows; ``("value",)`` for
            ridge.
        weights: One row of per-feature weights per class.
        bias: One intercept per class.
    """

    kind: str
    vocabulary: tuple[str, ...]
    classes: tuple[str, ...]
    weights: tuple[tuple[float, ...], ...]
    bias: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in ("softmax", "ridge"):
            raise ValueError(f"TextReader.kind must be softmax or ridge, got {self.kind!r}")
        if len(self.weights) != len(self.classes) or len(self.bias) != len(self.classes):
            raise ValueError("TextReader: one weight row and one bias per class")
        if any(len(row) != len(self.vocabulary) for row in self.weights):
            raise ValueError("TextReader: every weight row has one weight per feature")

    @property
    def _matrix(self) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        cached = self.__dict__.get("_cached")
        if cached is None:
            columns = {f: i for i, f in enumerate(self.vocabulary)}
            w = np.asarray(self.weights, dtype=float).reshape(len(self.classes), -1).T
            cached = (columns, w, np.asarray(self.bias, dtype=float))
            object.__setattr__(self, "_cached", cached)  # a derived view of frozen fields
        return cached

    def logits(self, text: str) -> np.ndarray:
        """The linear scores of ``text``, one per class."""
        columns, w, b = self._matrix
        found = sorted(columns[f] for f in features(text) if f in columns)
        return b + w[found].sum(axis=0) if found else b.copy()

    def probabilities(self, text: str) -> dict[str, float]:
        """Class → probability of ``text`` (softmax readers)."""
        if self.kind != "softmax":
            raise ValueError("probabilities() needs a softmax reader")
        z = self.logits(text)
        p = np.exp(z - z.max())
        p /= p.sum()
        return {c: float(v) for c, v in zip(self.classes, p, strict=True)}

    def value(self, text: str) -> float:
        """The predicted number for ``text`` (ridge readers)."""
        if self.kind != "ridge":
            raise ValueError("value() needs a ridge reader")
        return float(self.logits(text)[0])

    def to_table(self) -> dict[str, Any]:
        """A JSON-able dict that :meth:`from_table` reads back identically."""
        return {
            "kind": self.kind,
            "vocabulary": list(self.vocabulary),
            "classes": list(self.classes),
            "weights": [list(row) for row in self.weights],
            "bias": list(self.bias),
        }

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> TextReader:
        """Reads :meth:`to_table`'s dict.

        Raises:
            ValueError: Malformed table.
        """
        try:
            return cls(
                kind=str(table["kind"]),
                vocabulary=tuple(str(f) for f in table["vocabulary"]),
                classes=tuple(str(c) for c in table["classes"]),
                weights=tuple(tuple(float(v) for v in row) for row in table["weights"]),
                bias=tuple(float(v) for v in table["bias"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a TextReader table: {exc}") from None


def quantile_votes(distribution: Mapping[str, float], n: int = 3) -> list[str]:
    """``n`` stance votes read off a stance distribution at evenly spaced quantiles.

    The ``i``-th of ``n`` votes is the stance at quantile ``(2i + 1) / 2n`` of the distribution
    over :data:`STANCES` in their order (for n = 3: 1/6, 1/2, 5/6): the votes ``n`` readers
    drawing from the distribution would cast in expectation, deterministically. Three ``agree``
    votes need P(agree) >= 5/6; two ``agree`` and one ``positive``, P(agree) >= 1/2 and
    P(positive or agree) >= 5/6.

    Args:
        distribution: Stance → probability (missing stances count 0; normalized here).
        n: Number of votes.

    Raises:
        ValueError: No probability mass, or an unknown stance.
    """
    unknown = sorted(set(distribution) - set(STANCES))
    if unknown:
        raise ValueError(f"unknown stances {unknown}; expected {STANCES}")
    mass = np.array([max(float(distribution.get(s, 0.0)), 0.0) for s in STANCES])
    if mass.sum() <= 0:
        raise ValueError("quantile_votes needs a distribution with positive mass")
    cumulative = np.cumsum(mass / mass.sum())
    votes = []
    for i in range(n):
        index = int(np.searchsorted(cumulative, (2 * i + 1) / (2 * n) - 1e-12))
        votes.append(STANCES[min(index, len(STANCES) - 1)])
    return votes


def _design(texts: Sequence[str], min_df: int) -> tuple[tuple[str, ...], np.ndarray]:
    """The vocabulary (features in >= ``min_df`` texts, sorted) and the binary design matrix."""
    sets = [features(t) for t in texts]
    frequency = Counter(f for s in sets for f in s)
    vocabulary = tuple(sorted(f for f, c in frequency.items() if c >= min_df))
    columns = {f: i for i, f in enumerate(vocabulary)}
    x = np.zeros((len(texts), len(vocabulary)))
    for row, found in enumerate(sets):
        x[row, [columns[f] for f in found if f in columns]] = 1.0
    return vocabulary, x


def _rounded(values: np.ndarray) -> tuple[float, ...]:
    # + 0.0 turns -0.0 into 0.0, so the JSON never differs by a sign of zero.
    return tuple(round(float(v), DIGITS) + 0.0 for v in values)


def fit_softmax(
    texts: Sequence[str],
    labels: Sequence[str],
    classes: Sequence[str],
    *,
    l2: float = 1e-3,
    iterations: int = 400,
    min_df: int = 3,
) -> TextReader:
    """Fits a multinomial logistic regression of ``labels`` on ``texts``' features.

    Args:
        texts: The training texts.
        labels: One class of ``classes`` per text.
        classes: The class names (the reader's row order).
        l2: L2 penalty on the weights (not the biases), per example.
        iterations: Steps of accelerated gradient descent (fixed: the fit is deterministic).
        min_df: Fewest training texts a feature must occur in.

    Raises:
        ValueError: Lengths differ, a label is not a class, or a class has no example.
    """
    (reader,) = fit_softmax_many(
        texts, [(labels, classes)], l2=l2, iterations=iterations, min_df=min_df
    )
    return reader


def fit_softmax_many(
    texts: Sequence[str],
    tasks: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    l2: float = 1e-3,
    iterations: int = 400,
    min_df: int = 3,
) -> list[TextReader]:
    """Fits one softmax reader per ``(labels, classes)`` task over the same texts, at once.

    Each task is fitted exactly as :func:`fit_softmax` would fit it alone (the tasks share
    the features and the step size, and nothing else): the design matrix, the costly part,
    is read once per step for all of them.

    Args:
        texts: The training texts.
        tasks: Per reader, one class of its ``classes`` per text and the class names.
        l2: L2 penalty on the weights (not the biases), per example.
        iterations: Steps of accelerated gradient descent (fixed: the fit is deterministic).
        min_df: Fewest training texts a feature must occur in.

    Raises:
        ValueError: No task, lengths differ, a label is not a class, or a class has no example.
    """
    if not tasks:
        raise ValueError("fit_softmax_many needs at least one task")
    blocks: list[slice] = []
    targets: list[np.ndarray] = []
    for labels, classes in tasks:
        if len(texts) != len(labels):
            raise ValueError("texts and labels differ in length")
        index = {c: i for i, c in enumerate(classes)}
        unknown = sorted({y for y in labels if y not in index})
        if unknown:
            raise ValueError(f"labels outside the classes {list(classes)}: {unknown}")
        y = np.zeros((len(labels), len(classes)))
        y[np.arange(len(labels)), [index[v] for v in labels]] = 1.0
        if (y.sum(axis=0) == 0).any():
            raise ValueError("every class needs at least one training example")
        start = sum(t.shape[1] for t in targets)
        blocks.append(slice(start, start + len(classes)))
        targets.append(y)
    y = np.concatenate(targets, axis=1)
    vocabulary, x = _design(texts, min_df)
    n = len(texts)
    prior = y.mean(axis=0)
    b = np.concatenate([np.log(prior[k]) - np.log(prior[k]).mean() for k in blocks])
    w = np.zeros((x.shape[1], y.shape[1]))
    # The softmax loss's gradient is (||x||^2 / 2)-Lipschitz in w per example; binary rows.
    lipschitz = 0.5 * float((x.sum(axis=1)).max(initial=1.0)) + l2
    step = 1.0 / lipschitz
    w_prev, b_prev = w.copy(), b.copy()
    for k in range(1, iterations + 1):
        momentum = (k - 1) / (k + 2)
        vw, vb = w + momentum * (w - w_prev), b + momentum * (b - b_prev)
        z = x @ vw + vb
        p = np.empty_like(z)
        for block in blocks:  # one softmax per task
            e = np.exp(z[:, block] - z[:, block].max(axis=1, keepdims=True))
            p[:, block] = e / e.sum(axis=1, keepdims=True)
        grad_w = x.T @ (p - y) / n + l2 * vw
        grad_b = (p - y).mean(axis=0)
        w_prev, b_prev = w, b
        w, b = vw - step * grad_w, vb - step * grad_b
    return [
        TextReader(
            kind="softmax",
            vocabulary=vocabulary,
            classes=tuple(classes),
            weights=tuple(_rounded(w[:, c]) for c in range(block.start, block.stop)),
            bias=_rounded(b[block]),
        )
        for (_, classes), block in zip(tasks, blocks, strict=True)
    ]


def fit_ridge(
    texts: Sequence[str], targets: Sequence[float], *, l2: float = 10.0, min_df: int = 3
) -> TextReader:
    """Fits a ridge regression of ``targets`` on ``texts``' features (intercept unpenalized).

    Args:
        texts: The training texts.
        targets: One number per text.
        l2: The ridge penalty (on the sum of squared errors).
        min_df: Fewest training texts a feature must occur in.

    Raises:
        ValueError: Lengths differ or no texts.
    """
    if len(texts) != len(targets) or not texts:
        raise ValueError("ridge: one target per text, and at least one text")
    vocabulary, x = _design(texts, min_df)
    t = np.asarray(targets, dtype=float)
    mean_x, mean_t = x.mean(axis=0), float(t.mean())
    xc = x - mean_x
    # The dual form (n x n) is the smaller system when features outnumber texts.
    gram = xc @ xc.T + l2 * np.eye(len(texts))
    w = xc.T @ np.linalg.solve(gram, t - mean_t)
    bias = mean_t - float(mean_x @ w)
    return TextReader(
        kind="ridge",
        vocabulary=vocabulary,
        classes=("value",),
        weights=(_rounded(w),),
        bias=_rounded(np.array([bias])),
    )
