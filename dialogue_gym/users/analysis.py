"""What a simulated user perceives in a system utterance: embedding and lexical cues."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.mind.encoders import Encoder

_QUESTION_WORDS = re.compile(
    r"^\s*(what|how|why|do|does|did|have|has|are|is|would|could|can|will)\b", re.I
)


@dataclasses.dataclass(frozen=True)
class Perception:
    """Features of one system utterance as the user perceives it.

    Attributes:
        embedding: The utterance's unit embedding (zeros for an empty turn).
        empty: The turn had no words.
        off_topic: Nothing in it relates to the task.
        ask: It requests the task outcome (e.g. a donation).
        question: It asks the user something.
        greeting: It greets or builds rapport.
        pressure_cue: It uses pressure/guilt wording.
        unlock: Per concern id, the addressing score (max prototype similarity + cue bonus).
        anti: Per concern id, the anti-pattern score.
        domain: Max similarity to the task's on-topic prototypes.
    """

    embedding: np.ndarray
    empty: bool
    off_topic: bool
    ask: bool
    question: bool
    greeting: bool
    pressure_cue: bool
    unlock: dict[str, float]
    anti: dict[str, float]
    domain: float


class UtteranceAnalyzer:
    """Scores utterances against a card's prototypes with one encoder call per utterance.

    All prototype sentences (concern unlocks, anti-patterns, on-topic domain sentences) are
    encoded once into one matrix, so perceiving an utterance is one encoding plus one
    matrix-vector product.

    Args:
        card: The task card.
        encoder: Sentence encoder (unit rows).
        cue_bonus: Score added when a concern's regex cues match.
        off_topic_threshold: Similarity to the task (domain and concern prototypes) below
            which a turn without task cues is off-topic.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        cue_bonus: float = 0.15,
        off_topic_threshold: float = 0.25,
    ) -> None:
        self.card = card
        self.encoder = encoder
        self.cue_bonus = cue_bonus
        self.off_topic_threshold = off_topic_threshold
        texts: list[str] = []
        self._slices: dict[tuple[str, str], slice] = {}
        for concern in card.concerns:
            for kind, protos in (("unlock", concern.unlock), ("anti", concern.anti)):
                self._slices[(kind, concern.id)] = slice(len(texts), len(texts) + len(protos))
                texts.extend(protos)
        self._slices[("domain", "")] = slice(len(texts), len(texts) + len(card.domain))
        texts.extend(card.domain)
        self._protos = np.asarray(encoder.encode(texts), dtype=np.float32)
        # Every strategy template of the card is on-topic by construction, so the threshold
        # never exceeds 90% of the least relevant template's relevance (templates that are
        # on-topic through lexical cues alone, like greetings, do not count). This keeps crude
        # encoders (hashing) from calling real task talk off-topic.
        templates = [
            t
            for s in card.strategies
            for t in s.templates
            if not any(self._cue(name, t) for name in ("ask", "greeting", "pressure"))
        ]
        if templates:
            floor = float(self._relevance(np.asarray(encoder.encode(templates))).min())
            self.off_topic_threshold = min(off_topic_threshold, 0.9 * floor)

    def _relevance(self, embeddings: np.ndarray) -> np.ndarray:
        """Max similarity of each row to any prototype (domain, unlock or anti-pattern)."""
        return (embeddings @ self._protos.T).max(axis=1)

    def _cue(self, name: str, text: str) -> bool:
        return any(p.search(text) for p in self.card.cues.get(name, ()))

    def perceive(self, text: str, embedding: np.ndarray | None = None) -> Perception:
        """Returns the :class:`Perception` of ``text`` (pass ``embedding`` if already known)."""
        stripped = text.strip()
        if not re.search(r"\w", stripped):
            zero = np.zeros(self.encoder.dim, dtype=np.float32)
            scores = {c.id: 0.0 for c in self.card.concerns}
            return Perception(zero, True, False, False, False, False, False, scores, scores, 0.0)
        if embedding is None:
            embedding = np.asarray(self.encoder.encode([stripped])[0], dtype=np.float32)
        sims = self._protos @ embedding
        unlock: dict[str, float] = {}
        anti: dict[str, float] = {}
        for concern in self.card.concerns:
            u = float(sims[self._slices[("unlock", concern.id)]].max())
            a = float(sims[self._slices[("anti", concern.id)]].max())
            if any(p.search(stripped) for p in concern.unlock_cues):
                u += self.cue_bonus
            if any(p.search(stripped) for p in concern.anti_cues):
                a += self.cue_bonus
            unlock[concern.id] = u
            anti[concern.id] = a
        domain = float(sims[self._slices[("domain", "")]].max())
        ask = self._cue("ask", stripped)
        question = "?" in stripped or bool(_QUESTION_WORDS.match(stripped))
        question = question or self._cue("question", stripped)
        greeting = self._cue("greeting", stripped)
        pressure = self._cue("pressure", stripped)
        lexical = ask or greeting or pressure
        # On-topic means close to the task's domain sentences or to any concern prototype.
        off_topic = float(sims.max()) < self.off_topic_threshold and not lexical
        return Perception(
            embedding, False, off_topic, ask, question, greeting, pressure, unlock, anti, domain
        )
