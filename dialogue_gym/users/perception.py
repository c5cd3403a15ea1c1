"""Perception of the embedded users: what one system turn means to *this* user.

:class:`UserPerception` is the perception component of
:class:`~dialogue_gym.users.cognitive.CognitiveUser` (a :class:`TurnPerceiver`). It reads a turn
with the card's :class:`~dialogue_gym.users.analysis.UtteranceAnalyzer` (prototype closeness,
cues, the sentence-level meaning reader) and then scores the card's *situational* concerns
against this persona's own story: those are met only by a turn (or one of its sentences) that
speaks to the user's situation more closely than to any other situation the card's personas
can have, once the user has told it. Reciting someone else's story, or a line that fits every
story, meets nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.persona import Persona
from dialogue_gym.users.presets import UserPreset

__all__ = ["TurnPerceiver", "UserPerception"]


class TurnPerceiver(Protocol):
    """Reads what a system turn means to the current user."""

    @property
    def encoder(self) -> Encoder:
        """The sentence encoder the user perceives with."""
        ...

    def begin(self, persona: Persona, concern_ids: tuple[str, ...]) -> None:
        """Starts an episode with ``persona`` (holding ``concern_ids``)."""
        ...

    def perceive(self, text: str, disclosed: bool) -> Perception:
        """The perception of ``text``; ``disclosed``: the user has told its story."""
        ...


class UserPerception:
    """The card's analyzer plus this persona's situation (see the module docstring).

    Args:
        card: The task card.
        analyzer: The card's utterance analyzer for users
            (:meth:`~dialogue_gym.users.analysis.UtteranceAnalyzer.for_user`).
        preset: The user preset (``situation_margin``).
    """

    def __init__(self, card: TaskCard, analyzer: UtteranceAnalyzer, preset: UserPreset) -> None:
        self.card = card
        self.analyzer = analyzer
        self.preset = preset
        self._situation: np.ndarray | None = None
        self._other_situations = np.zeros((0, 0), dtype=np.float32)
        # Concern id → its situational bonus, for the concerns met by the user's own story.
        self._bonuses = {c.id: c.situational for c in card.concerns if c.situational is not None}

    @property
    def encoder(self) -> Encoder:
        """The analyzer's sentence encoder."""
        return self.analyzer.encoder

    def begin(self, persona: Persona, concern_ids: tuple[str, ...]) -> None:
        """Encodes the persona's situation against the card's others (situational cards)."""
        self._situation = None
        self._other_situations = np.zeros((0, 0), dtype=np.float32)
        situation = persona.facts.get("situation")
        if situation and any(self.card.concern(c).situational is not None for c in concern_ids):
            others = [s for s in self.card.personas.slots.get("situation", ()) if s != situation]
            encoded = np.asarray(self.encoder.encode([situation, *others]))
            self._situation, self._other_situations = encoded[0], encoded[1:]

    def perceive(self, text: str, disclosed: bool) -> Perception:
        """Reads ``text``; the situational concerns score by this user's story (0 before it)."""
        p = self.analyzer.perceive(text)
        if p.empty:
            return p
        bonuses = {cid: bonus for cid, bonus in self._bonuses.items() if cid in p.unlock}
        if not bonuses:
            return p
        closeness = self.story_closeness(p, disclosed)
        # Situational concerns are met only by this user's story (the card's prototypes tell
        # other people's stories): by a row that speaks to it more than to any other story.
        margin = self.preset.situation_margin
        specific = max((own for own, other in closeness if own - other >= margin), default=0.0)
        for cid, bonus in bonuses.items():
            p.unlock[cid] = specific + bonus if specific > 0 else 0.0
        return dataclasses.replace(p, story=tuple(closeness)) if closeness else p

    def story_closeness(self, p: Perception, disclosed: bool) -> list[tuple[float, float]]:
        """How close the turn and each of its sentences are to this user's story and to another's.

        One ``(own, other)`` pair per row read — the whole turn, then each sentence when it
        has several (a reflection inside a longer reply still speaks to the story): the
        similarity to this user's situation and to the closest other situation of the card,
        on the reference cosine scale. Empty before the user has told its story. A turn
        speaks to the story (:attr:`~dialogue_gym.users.analysis.Perception.unlock`) in a row
        whose ``own`` beats its ``other`` by ``situation_margin``.
        """
        if self._situation is None or not disclosed:
            return []
        encoder = self.encoder
        rows = [p.embedding]
        if p.sentence_embeddings is not None and len(p.sentence_embeddings) > 1:
            rows.extend(p.sentence_embeddings)
        out = []
        for row in rows:
            own = float(encoder.to_reference_cosine(float(self._situation @ row)))
            other = float((self._other_situations @ row).max(initial=-1.0))
            out.append((own, float(encoder.to_reference_cosine(other))))
        return out
