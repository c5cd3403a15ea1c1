"""The text-only reference: a bag-of-words logistic regression (numpy only).

Next to every figure of the validity report stands what the same *inputs* predict without any
simulator: e.g. the first 8 persuader turns → donated. The model is fitted on the corpus's
train split; held-out dialogues never enter a fit that predicts them. Where the train split
cannot fit one (one class only, as ESConv's HF train split where every seeker improved, or no
dialogues, as CraigslistBargain's), it is *cross-fitted*: the held-out dialogues are cut into
``k`` folds by a hash of their id and each fold is predicted by a model fitted on the train
split plus the other folds. :func:`predict_held_out` returns, per held-out id, the ids its
model was fitted on, so this can be checked.

Features: lower-cased word unigrams and bigrams seen in at least two training documents (at
most :data:`MAX_FEATURES`, the most frequent), ``log(1 + tf) · idf``, rows L2-normalized.
The model: L2-regularized logistic regression fitted by accelerated gradient descent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

__all__ = ["MIN_CLASS", "BagOfWords", "ReferencePrediction", "predict_held_out", "tokens"]

MAX_FEATURES = 5000
MIN_CLASS = 5
"""Fewest training examples of each class for a fit on the train split alone."""
FOLDS = 5
_WORD = re.compile(r"[a-z0-9']+|[$?!]")


def tokens(text: str) -> list[str]:
    """Word unigrams and bigrams of ``text`` (lower-cased; ``$``, ``?`` and ``!`` kept)."""
    words = _WORD.findall(text.lower())
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


class BagOfWords:
    """Bag-of-words logistic regression.

    Args:
        l2: The L2 penalty on the weights (not the bias), per example.
        iterations: Gradient steps.
        max_features: Vocabulary size limit.
        tokenizer: Text → its tokens (default :func:`tokens`: word unigrams and bigrams; the
            act-only reference passes its own, :mod:`dialogue_gym.validity.acts`).
    """

    def __init__(
        self,
        l2: float = 1e-2,
        iterations: int = 300,
        max_features: int = MAX_FEATURES,
        tokenizer: Callable[[str], list[str]] = tokens,
    ) -> None:
        self.l2 = l2
        self.iterations = iterations
        self.max_features = max_features
        self.tokenizer = tokenizer
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0)
        self.weights = np.zeros(0)
        self.bias = 0.0

    def _matrix(self, texts: Sequence[str]) -> np.ndarray:
        x = np.zeros((len(texts), len(self.vocabulary)))
        for row, text in enumerate(texts):
            for token, count in Counter(self.tokenizer(text)).items():
                column = self.vocabulary.get(token)
                if column is not None:
                    x[row, column] = math.log1p(count)
        x *= self.idf
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.where(norms > 0, norms, 1.0)

    def fit(self, texts: Sequence[str], labels: Sequence[bool]) -> BagOfWords:
        """Fits on ``texts`` → ``labels``.

        Raises:
            ValueError: Fewer than two classes, or lengths differ.
        """
        y = np.asarray(labels, dtype=float)
        if len(texts) != len(y):
            raise ValueError("texts and labels differ in length")
        if len(set(y.tolist())) < 2:
            raise ValueError("the text reference needs both classes to fit")
        frequency: Counter[str] = Counter()
        for text in texts:
            frequency.update(set(self.tokenizer(text)))
        kept = sorted((t for t, c in frequency.items() if c >= 2), key=lambda t: (-frequency[t], t))
        self.vocabulary = {t: i for i, t in enumerate(kept[: self.max_features])}
        df = np.array([frequency[t] for t in self.vocabulary], dtype=float)
        self.idf = np.log((1 + len(texts)) / (1 + df)) + 1.0
        x = self._matrix(texts)
        n, d = x.shape
        w, b = np.zeros(d), float(np.log((y.mean() + 1e-6) / (1 - y.mean() + 1e-6)))
        # Rows have norm <= 1, so the loss gradient is (1/4 + l2)-Lipschitz.
        step = 1.0 / (0.25 + self.l2 + 0.25)
        w_prev, b_prev = w.copy(), b
        for k in range(1, self.iterations + 1):
            momentum = (k - 1) / (k + 2)
            vw, vb = w + momentum * (w - w_prev), b + momentum * (b - b_prev)
            p = 1 / (1 + np.exp(-(x @ vw + vb)))
            grad_w = x.T @ (p - y) / n + self.l2 * vw
            grad_b = float((p - y).mean())
            w_prev, b_prev = w, b
            w, b = vw - step * grad_w, vb - step * grad_b
        self.weights, self.bias = w, b
        return self

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """The probability of the positive class for each text."""
        if not self.vocabulary:
            raise ValueError("fit the text reference first")
        return 1 / (1 + np.exp(-(self._matrix(texts) @ self.weights + self.bias)))


@dataclasses.dataclass(frozen=True)
class ReferencePrediction:
    """The reference's prediction for one held-out dialogue.

    Attributes:
        probability: Predicted probability of the real success.
        fitted_on: Ids of the dialogues of the model that made it.
        mode: ``"train"`` (fitted on the train split) or ``"cross-fit"``.
    """

    probability: float
    fitted_on: frozenset[str]
    mode: str


def _fold(dialogue_id: str, k: int) -> int:
    return int(hashlib.sha256(f"fold/{dialogue_id}".encode()).hexdigest()[:8], 16) % k


def _usable(rows: Sequence[tuple[str, str, bool]]) -> bool:
    counts = Counter(label for _, _, label in rows)
    return counts[True] >= MIN_CLASS and counts[False] >= MIN_CLASS


def predict_held_out(
    train: Sequence[tuple[str, str, bool]],
    held_out: Sequence[tuple[str, str, bool]],
    folds: int = FOLDS,
    tokenizer: Callable[[str], list[str]] = tokens,
) -> dict[str, ReferencePrediction]:
    """Text-reference predictions for held-out dialogues.

    Args:
        train: ``(id, text, label)`` of the train split (dialogues with a known outcome).
        held_out: ``(id, text, label)`` of the held-out dialogues; labels are used only in
            cross-fitting, and never for the fold being predicted.
        folds: Folds of cross-fitting.
        tokenizer: Text → tokens for :class:`BagOfWords` (default: words and word pairs).

    Returns:
        Held-out id → prediction. Empty when no model can be fitted (one class in all data).

    Raises:
        ValueError: An id is both in ``train`` and ``held_out``.
    """
    train_ids = {i for i, _, _ in train}
    overlap = train_ids & {i for i, _, _ in held_out}
    if overlap:
        raise ValueError(f"held-out dialogues in the train split: {sorted(overlap)[:5]}")
    if not held_out:
        return {}
    if _usable(train):
        model = BagOfWords(tokenizer=tokenizer).fit(
            [t for _, t, _ in train], [y for _, _, y in train]
        )
        probs = model.predict([t for _, t, _ in held_out])
        fitted = frozenset(train_ids)
        return {
            i: ReferencePrediction(float(p), fitted, "train")
            for (i, _, _), p in zip(held_out, probs, strict=True)
        }
    result: dict[str, ReferencePrediction] = {}
    for k in range(folds):
        target = [row for row in held_out if _fold(row[0], folds) == k]
        rest = [*train, *(row for row in held_out if _fold(row[0], folds) != k)]
        if not target or len({y for _, _, y in rest}) < 2:
            continue
        model = BagOfWords(tokenizer=tokenizer).fit(
            [t for _, t, _ in rest], [y for _, _, y in rest]
        )
        probs = model.predict([t for _, t, _ in target])
        fitted = frozenset(i for i, _, _ in rest)
        for (i, _, _), p in zip(target, probs, strict=True):
            result[i] = ReferencePrediction(float(p), fitted, "cross-fit")
    return result


def modes(predictions: Mapping[str, ReferencePrediction]) -> str:
    """How the predictions were made (``train``, ``cross-fit``, or ``none``)."""
    found = sorted({p.mode for p in predictions.values()})
    return "+".join(found) or "none"
