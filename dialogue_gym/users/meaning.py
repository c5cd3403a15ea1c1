"""What a system turn *means* to a simulated user, read sentence by sentence.

The card's prototype sentences are a handful of ways to answer each concern; a person answers
it in any words. :class:`MeaningReader` is a small classifier on the sentence encoder, fitted on
the task's **perception set** (``envs/perception/<TASK>.toml``, shipped with the package): for
each concern, many differently worded turns that answer it and *hard negatives* that touch its
topic without answering it, and for each kind of turn that answers nothing (a polite ask, a
pushy one, rapport, a probe, an acknowledgement, off-topic talk, a goodbye) many examples of
that. The card's own ``unlock`` prototypes join their concern's examples and its ``anti``
prototypes the hard negatives.

A turn is read **per sentence**: every sentence gets a probability per class, and a concern's
score for the turn is its best sentence's. A four-sentence reply whose second sentence answers
the worry is read as answering it, however much else it says (the users' defences against
stuffing — one unit of credit split over the topics a turn touches, the cost of long turns —
still apply downstream). The set is written from the concern descriptions alone, never from
the benchmark's held-out replies (``benchmarks/data/skill_wording``).

The classifier is multinomial logistic regression (numpy, full-batch gradient descent with
class-balanced weights and L2), fitted once per card and encoder and cached on disk under
:func:`~dialogue_gym.mind.static.cache_root` (``meaning/``; keyed on the set, the encoder's
embeddings of it and the recipe, so a changed set or encoder refits); the embeddings of the set
are the encoder's, so ``minilm``, ``static`` and ``hashing`` each get their own fit.
Everything is deterministic: no random initialization, no sampling.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.mind.static import cache_root
from dialogue_gym.text.prices import mask_prices
from dialogue_gym.users.perception_sets import (
    ACTS,
    DEFAULT_L2,
    NEAR_MISS,
    PerceptionSet,
    PerceptionSetError,
    load_perception_set,
    parse_perception_set,
)

__all__ = [
    "ACTS",
    "ASKS",
    "NEAR_MISS",
    "MeaningReader",
    "PerceptionSet",
    "PerceptionSetError",
    "TurnMeaning",
    "has_requests",
    "load_perception_set",
    "parse_perception_set",
    "split_clauses",
    "split_points",
    "split_sentences",
]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w")
_WORDS = re.compile(r"\w+")


ASKS = ("ask_polite", "ask_pushy")
"""The acts that ask for the task's goal: read only on tasks that have a request."""
TAILS = ("pressure", "acknowledge", "farewell")
"""Readings of a sentence that can follow a request without replacing it as the turn's close:
an opt-out (read as answering the dislike of being pushed), a thanks, a goodbye."""


def has_requests(card: TaskCard) -> bool:
    """Whether the task has a request for the user to grant (ask cues or a learned detector).

    ED has none: there, "would you like to tell me more?" is an invitation to share (which
    answers the wish to share more), not an ask to be granted or refused.
    """
    return bool(card.cues.get("ask")) or (
        card.corpus is not None and card.corpus.ask_reader is not None
    )


_CLAUSE_BREAK = re.compile(r";\s+|,\s+and\s+")
"""Where a sentence's points meet: a semicolon or ", and". A colon or a dash introduces an
elaboration of one point ("it never asks for bank details: no card, no form"), not a second."""
CLAUSE_WORDS = 4
"""The fewest words of a clause read as a reason of its own (shorter ones are asides)."""


def split_clauses(sentence: str) -> list[str]:
    """The clauses a sentence joins into a list of points; ``[]`` when it is one.

    Writers join reasons with semicolons ("Fifty cents buys a year of deworming pills; small
    gifts are pooled, so they turn into real supplies.") or ", and" ("The audited statements
    are published online, and the watchdog's rating is public"): each clause is a reason of
    its own. A short piece ("if not, no worries") is an aside, not a clause.
    """
    return _split(sentence, _CLAUSE_BREAK)


def _split(sentence: str, breaks: re.Pattern[str]) -> list[str]:
    """The pieces of ``sentence`` between ``breaks``, asides dropped; ``[]`` unless two remain.

    An aside is a piece under :data:`CLAUSE_WORDS` words.
    """
    pieces = [p.strip() for p in breaks.split(sentence)]
    kept = [p for p in pieces if len(_WORDS.findall(p)) >= CLAUSE_WORDS]
    return kept if len(kept) >= 2 else []


_POINT_BREAK = re.compile(r";\s+|:\s+|,\s+and\s+|\s+(?:--?|[\u2013\u2014])\s+")
"""Where a sentence's parts meet, elaborations included: a semicolon, a colon, ", and", a
spaced dash (the encoders' view writes an em dash as "--")."""


def split_points(sentence: str) -> list[str]:
    """The parts of a sentence that can carry its point on their own; ``[]`` when it is one.

    Unlike :func:`split_clauses` (how many reasons a sentence gives) this also splits at a
    colon and a spaced dash: what follows a lead-in is often the point itself ("I do want to
    gently push back on one thing, though: going without sleep would wear anyone down —
    struggling with it isn't a sign you're coping worse than anyone else"), and read whole
    the lead-in drowns it. Parts under :data:`CLAUSE_WORDS` words are asides.
    """
    return _split(sentence, _POINT_BREAK)


def split_sentences(text: str, min_words: int = 3) -> list[str]:
    """The sentences of ``text``; a fragment under ``min_words`` words joins the next one.

    "Sure! The audit is public." reads as one sentence: an interjection carries no meaning of
    its own, and alone it would match any class by chance.
    """
    pieces = [p.strip() for p in _SENTENCE_END.split(text) if _WORD.search(p)]
    out: list[str] = []
    carry = ""
    for piece in pieces:
        piece = f"{carry} {piece}".strip() if carry else piece
        if len(piece.split()) < min_words:
            carry = piece
            continue
        carry = ""
        out.append(piece)
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


@dataclasses.dataclass(frozen=True)
class TurnMeaning:
    """What a turn means, read sentence by sentence.

    Attributes:
        concerns: Concern id → the probability that the turn's best sentence answers it.
        acts: Act (:data:`ACTS`) → the probability of its best sentence.
        near_miss: The best sentence's probability of touching a topic without answering it.
        sentences: How many sentences were read.
        leading: The classes that are some sentence's likeliest reading.
        closing: The last sentence's likeliest reading (``None`` for an empty turn).
        per_sentence: Per sentence, concern id → the probability that it answers that
            concern (which sentence carries which argument).
        closing_ask: The probability that the turn's closing request is an ask: that of the
            last sentence that is not an opt-out, a thanks or a goodbye ("..., would you like to
            give part of your $2? If the answer is no, that's completely fine."), when a polite
            ask is its likeliest reading (0 otherwise).
        clauses: Per sentence, the concern readings of its independent clauses when it joins
            several with semicolons or ", and" ("Fifty cents buys a year of deworming pills;
            small gifts are pooled into real supplies." carries two reasons), else an empty
            tuple.
        points: The concern readings of every part of a sentence that can carry its point on
            its own (:func:`split_points`), all sentences together; empty when no sentence
            has parts.
    """

    concerns: Mapping[str, float]
    acts: Mapping[str, float]
    near_miss: float
    sentences: int
    leading: frozenset[str] = frozenset()
    closing: str | None = None
    per_sentence: tuple[Mapping[str, float], ...] = ()
    closing_ask: float = 0.0
    clauses: tuple[tuple[Mapping[str, float], ...], ...] = ()
    points: tuple[Mapping[str, float], ...] = ()

    def likeliest(self, among: Sequence[str] | None = None) -> str | None:
        """The concern (of ``among``, default all) the turn reads likeliest as answering.

        ``None`` when it is no likelier than a near miss: the turn touches the topic without
        answering anything.
        """
        ids = list(self.concerns) if among is None else [c for c in among if c in self.concerns]
        if not ids:
            return None
        top = max(ids, key=lambda cid: self.concerns[cid])
        return top if self.concerns[top] > self.near_miss else None


def _fit_softmax(
    x: np.ndarray, y: np.ndarray, classes: int, l2: float = DEFAULT_L2, steps: int = 400
) -> np.ndarray:
    """Multinomial logistic regression by full-batch gradient descent (deterministic).

    Returns the ``(d + 1, classes)`` weights, the last row the bias. Classes are weighted by
    the inverse of their size, so a class with 20 examples counts as much as one with 60.
    """
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))]).astype(np.float64)
    counts = np.bincount(y, minlength=classes).astype(np.float64)
    weights = (1.0 / np.maximum(counts, 1.0))[y]
    weights *= n / weights.sum()
    onehot = np.zeros((n, classes))
    onehot[np.arange(n), y] = 1.0
    w = np.zeros((d + 1, classes))
    # Adam on the full batch: a fixed schedule, so the fit is a pure function of the data.
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    lr, beta1, beta2 = 0.05, 0.9, 0.999
    for step in range(1, steps + 1):
        logits = xb @ w
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        grad = xb.T @ ((probs - onehot) * weights[:, None]) / n
        grad[:-1] += l2 * w[:-1]
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad**2
        w -= lr * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + 1e-8)
    return w


_FITS: dict[tuple[str, str, str], np.ndarray] = {}
_FITS_LOCK = threading.Lock()
_FIT_VERSION = "softmax-adam-400-l2e-3-v1"
"""Names the fitting recipe in the disk cache key: change it with :func:`_fit_softmax`."""


def _fit_path(key: tuple[str, str, str], probe: np.ndarray) -> Path:
    """Where a fit is cached.

    The key also hashes the encoder's embeddings of a few lines of the set, so another
    encoder's weights under the same name never reuse a stale fit.
    """
    material = hashlib.sha256()
    material.update("\t".join((*key, _FIT_VERSION)).encode())
    material.update(np.round(probe, 4).astype(np.float32).tobytes())
    return cache_root() / "meaning" / f"{key[0]}-{material.hexdigest()[:24]}.npy"


def _load_fit(key: tuple[str, str, str], probe: np.ndarray, classes: int) -> np.ndarray | None:
    """A cached fit from an earlier process, or ``None`` (absent, unreadable or misshapen)."""
    path = _fit_path(key, probe)
    try:
        weights = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if weights.shape != (probe.shape[1] + 1, classes) or not np.isfinite(weights).all():
        return None
    return np.asarray(weights, dtype=np.float64)


def _store_fit(key: tuple[str, str, str], probe: np.ndarray, weights: np.ndarray) -> None:
    """Caches a fit on disk (atomically; a read-only cache folder only costs the refit)."""
    path = _fit_path(key, probe)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npy", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, weights, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        return


class MeaningReader:
    """Reads a turn's meaning per sentence (see the module docstring).

    Args:
        card: The task card.
        encoder: The sentence encoder the user perceives with (unit rows).
        examples: The perception set (default: the card's shipped one; without one the
            reader is fitted on the card's prototypes alone, ``unlock`` / ``anti`` — too few
            classes to trust, so the users build none then: :meth:`for_card`).
    """

    def __init__(
        self, card: TaskCard, encoder: Encoder, examples: PerceptionSet | None = None
    ) -> None:
        self.card = card
        self.encoder = encoder
        examples = examples if examples is not None else load_perception_set(card)
        self.concern_ids = tuple(c.id for c in card.concerns)
        requests = has_requests(card)
        acts = [
            a
            for a in ACTS
            if examples is not None and examples.turns.get(a) and (requests or a not in ASKS)
        ]
        self.classes = (*self.concern_ids, NEAR_MISS, *acts)
        texts: list[str] = []
        labels: list[int] = []

        def add(lines: Sequence[str], label: str) -> None:
            texts.extend(lines)
            labels.extend([self.classes.index(label)] * len(lines))

        for concern in card.concerns:
            add(concern.unlock, concern.id)
            add(concern.anti, NEAR_MISS)
            if examples is not None:
                add(examples.addressing.get(concern.id, ()), concern.id)
                add(examples.near_miss.get(concern.id, ()), NEAR_MISS)
        for act in acts:
            add(examples.turns[act] if examples is not None else (), act)
        if not texts:
            raise PerceptionSetError(f"card {card.id!r}: nothing to fit a meaning reader on")
        if card.user_model == "seller":
            # The seller reads buyer turns with their prices masked ("Would you take $N?"):
            # the reader learns from what it will read, not from numbers it never sees.
            texts = [mask_prices(t) for t in texts]
        digest = hashlib.sha256(
            "\n".join(f"{t}\t{y}" for t, y in zip(texts, labels, strict=True)).encode()
        )
        l2 = examples.l2 if examples is not None else DEFAULT_L2
        if l2 != DEFAULT_L2:  # the default keeps the keys of fits cached before sets had one
            digest.update(f"\nl2={l2!r}".encode())
        key = (card.id, getattr(encoder, "name", type(encoder).__name__), digest.hexdigest())
        with _FITS_LOCK:
            fitted = _FITS.get(key)
        if fitted is None:
            # The encoder's embeddings of a few of the set's lines fingerprint its weights.
            probe = np.asarray(encoder.encode(texts[:4]), dtype=np.float64)
            fitted = _load_fit(key, probe, len(self.classes))
            if fitted is None:
                x = np.asarray(encoder.encode(texts), dtype=np.float64)
                fitted = _fit_softmax(x, np.asarray(labels), len(self.classes), l2)
                _store_fit(key, probe, fitted)
            with _FITS_LOCK:
                _FITS[key] = fitted
        self._w = fitted
        self.examples = len(texts)

    @classmethod
    def for_card(cls, card: TaskCard, encoder: Encoder) -> MeaningReader | None:
        """The reader fitted on ``card``'s shipped perception set; ``None`` without one.

        A reader fitted on a card's few prototypes alone has a handful of classes, so any turn
        gets a sizeable probability for one of them: it would credit an ask as a reason. A
        card without a perception set is perceived by its prototypes and cues only.
        """
        examples = load_perception_set(card)
        return None if examples is None else cls(card, encoder, examples)

    def probabilities(self, embeddings: np.ndarray) -> np.ndarray:
        """Class probabilities (rows: the given sentence embeddings; columns: ``classes``)."""
        x = np.asarray(embeddings, dtype=np.float64).reshape(-1, self._w.shape[0] - 1)
        logits = x @ self._w[:-1] + self._w[-1]
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        return probs / probs.sum(axis=1, keepdims=True)

    def concern_rows(self, embeddings: np.ndarray) -> tuple[dict[str, float], ...]:
        """Per row of ``embeddings``, concern id → the probability that it answers that concern."""
        return self._concern_rows(self.probabilities(embeddings))

    def _concern_rows(self, probs: np.ndarray) -> tuple[dict[str, float], ...]:
        return tuple(
            {cid: float(row[i]) for i, cid in enumerate(self.concern_ids)} for row in probs
        )

    def polite_ask(self, embedding: np.ndarray) -> float:
        """The probability that a clause is a polite ask (0 unless it is its likeliest reading)."""
        row = self.probabilities(embedding)[0]
        return float(row.max()) if self.classes[int(row.argmax())] == "ask_polite" else 0.0

    def read(self, sentence_embeddings: np.ndarray, probes: Sequence[bool] = ()) -> TurnMeaning:
        """The meaning of a turn from the embeddings of its sentences (one row each).

        Args:
            sentence_embeddings: One row per sentence.
            probes: Per sentence, whether it is an open question by its form ("Is there
                anything you'd want to be sure of first?"): such a sentence closes the turn as
                a probe, never as an ask, however its words read (an ask must still read as
                one outright, at :data:`~dialogue_gym.users.analysis.ASK_LINE`).
        """
        if len(sentence_embeddings) == 0:
            zeros = dict.fromkeys(self.concern_ids, 0.0)
            return TurnMeaning(zeros, dict.fromkeys(ACTS, 0.0), 0.0, 0)
        probs = self.probabilities(sentence_embeddings)
        best = probs.max(axis=0)
        column = {name: float(best[i]) for i, name in enumerate(self.classes)}
        leading = frozenset(self.classes[int(i)] for i in probs.argmax(axis=1))
        return TurnMeaning(
            concerns={cid: column[cid] for cid in self.concern_ids},
            acts={act: column.get(act, 0.0) for act in ACTS},
            near_miss=column[NEAR_MISS],
            sentences=len(sentence_embeddings),
            leading=leading,
            closing="probe" if probes and probes[-1] else self.classes[int(probs[-1].argmax())],
            per_sentence=self._concern_rows(probs),
            closing_ask=self._closing_ask(probs, probes),
        )

    def _closing_ask(self, probs: np.ndarray, probes: Sequence[bool]) -> float:
        """See :attr:`TurnMeaning.closing_ask`."""
        flags = list(probes) if probes else [False] * len(probs)
        for row, probe in zip(probs[::-1], flags[::-1], strict=True):
            if probe:
                return 0.0
            reading = self.classes[int(row.argmax())]
            if reading in ASKS:
                # Only a polite ask: "I won't push." reads as a pushy one, and a turn that backs
                # off is no request.
                return float(row.max()) if reading == "ask_polite" else 0.0
            if reading not in TAILS:
                return 0.0
        return 0.0
