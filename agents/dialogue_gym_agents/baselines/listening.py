"""The closed-loop core of the hand-written ``scripted`` agents that persuade or sell.

:class:`ListeningAgent` is what a sensible human persuader or salesperson does in a short call,
reading only the dialogue and the public task card (never the user's hidden state): open with
rapport, ask what would make the user hesitate, listen for the concern the user raises
(:class:`ConcernListener` against the card's public ``voice`` lines, telling reactions to an
answer apart from newly raised worries), answer it with its own reasons until the user signals
it is settled, check once for anything else (even when the user already sounds keen: a soft
user sounds keen from drift alone, and agreeing then is not justified), and ask for the
commitment when nothing raised is pending (always on the last exchange, never twice in a row).
Task wording lives in the subclasses' tables: ``lines`` (``opening``, ``probe``,
``open_question``, ``anything_else``, ``why_not``, ``asks``), ``answers`` per concern and the
``proactive`` order of concerns worth raising unprompted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.encoders import Encoder, make_encoder

USER_SPEAKER = 1
LINE_KEYS = ("opening", "probe", "open_question", "anything_else", "why_not", "asks")


class ConcernListener:
    """Recognizes which concerns a user reply raises, from the card's public ``voice`` lines.

    A sentence raises the concern of its most similar voice line when the cosine similarity
    reaches ``threshold``. With ``reactions`` the listener also knows the card's public
    acknowledgement lines (``ack_partial`` / ``ack_resolved``): a sentence closer to one of
    those is the user *reacting* to what was said about a concern ("that split is better than
    I feared"), not raising it, and :meth:`reactions` reports it instead.

    Args:
        card: The task card.
        encoder: Sentence encoder.
        threshold: Cosine similarity at which a sentence raises a concern.
        concerns: Listen only for these concern ids (default: all of the card's).
        reactions: Tell reactions to a concern apart from raising it.
    """

    MIN_WORDS = 4

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        threshold: float,
        concerns: Iterable[str] | None = None,
        reactions: bool = False,
    ) -> None:
        wanted = set(concerns) if concerns is not None else {c.id for c in card.concerns}
        lines = [(c.id, "voice", line) for c in card.concerns if c.id in wanted for line in c.voice]
        if reactions:
            for c in card.concerns:
                if c.id in wanted:
                    lines += [(c.id, "partial", line) for line in c.ack_partial]
                    lines += [(c.id, "resolved", line) for line in c.ack_resolved]
        self.encoder = encoder
        self.threshold = threshold
        self._ids = [cid for cid, _, _ in lines]
        self._kinds = [kind for _, kind, _ in lines]
        self._matrix = np.asarray(encoder.encode([line for _, _, line in lines]))

    def heard(self, reply: str) -> list[tuple[str, str]]:
        """``(concern id, kind)`` per concern the reply mentions, in order of first mention.

        ``kind`` is ``"voice"`` (raised), ``"partial"`` (reacting to a partial answer) or
        ``"resolved"`` (reacting to an answer that settled it).
        """
        # Fillers ("We'll see.", "Go on.") match some line by chance; a worry takes more words.
        sentences = [s for s in re.split(r"[.!?]+", reply) if len(s.split()) >= self.MIN_WORDS]
        if not sentences or not self._ids:
            return []
        sims = self.encoder.to_reference_cosine(
            np.asarray(self.encoder.encode(sentences)) @ self._matrix.T
        )
        heard: dict[str, str] = {}
        for row in sims:
            best = int(np.argmax(row))
            if row[best] >= self.threshold and self._ids[best] not in heard:
                heard[self._ids[best]] = self._kinds[best]
        return list(heard.items())

    def raised(self, reply: str) -> list[str]:
        """The concern ids the reply's sentences raise, in order of first mention."""
        return [cid for cid, kind in self.heard(reply) if kind == "voice"]

    def reactions(self, reply: str) -> dict[str, str]:
        """Concern id → ``"partial"`` / ``"resolved"`` for the reactions in the reply."""
        return {cid: kind for cid, kind in self.heard(reply) if kind != "voice"}


class ListeningAgent:
    """A closed-loop persuader/sales agent (see the module docstring).

    Args:
        card: The task card.
        lines: The task's fixed lines (keys :data:`LINE_KEYS`; ``asks`` is a tuple).
        answers: Concern id → the agent's own reasons for it, used in order.
        proactive: Concerns to address unprompted when nothing raised is pending.
        seed: Default seed (the agent is deterministic; kept for the interface).
        encoder: Encoder used to recognize raised concerns and reactions.
        detect_threshold: Cosine similarity at which a reply sentence is recognized.
    """

    MAX_ANSWERS = 3

    def __init__(
        self,
        card: TaskCard,
        lines: Mapping[str, Any],
        answers: Mapping[str, tuple[str, ...]],
        proactive: Sequence[str],
        seed: int | None = None,
        encoder: str | Encoder = "minilm",
        detect_threshold: float = 0.55,
    ) -> None:
        missing = [key for key in LINE_KEYS if not lines.get(key)]
        if missing:
            raise ValueError(f"lines for task {card.id!r} lack {missing}")
        self.card = card
        self.lines = dict(lines)
        self._answers = {c.id: answers[c.id] for c in card.concerns if answers.get(c.id)}
        self._proactive_order = tuple(c for c in proactive if c in self._answers)
        self.encoder = make_encoder(encoder)
        self.threshold = detect_threshold
        self.listener = ConcernListener(
            card, self.encoder, detect_threshold, self._answers, reactions=True
        )
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        self._turn = 0
        self._pending: list[str] = []
        self._answered: dict[str, int] = {}
        self._heard: dict[str, None] = {}  # in the order heard
        self._settled: set[str] = set()
        self._last_answered: str | None = None
        self._asked_last = False
        self._asks = 0
        self._checked = False
        self._proactive = list(self._proactive_order)

    def _answer(self, concern: str) -> str:
        count = self._answered.get(concern, 0)
        self._answered[concern] = count + 1
        self._last_answered = concern
        answers = self._answers[concern]
        return answers[count % len(answers)]

    def _ask(self) -> str:
        self._asked_last = True
        self._asks += 1
        asks = self.lines["asks"]
        return str(asks[(self._asks - 1) % len(asks)])

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next turn."""
        replies = [t["text"] for t in observation["history"] if t["speaker"] == USER_SPEAKER]
        self._turn += 1
        last = replies[-1] if replies else ""
        stance = classify_stance(last, self.card) if last else "neutral"
        heard = self.listener.heard(last) if last else []
        raised = [c for c, kind in heard if kind == "voice"]
        reactions = {c: kind for c, kind in heard if kind != "voice"}
        if stance in ("positive", "agree"):
            # A satisfied echo of an answered concern ("ok, the margins work") is not a new one.
            raised = [c for c in raised if not self._answered.get(c)]
        self._heard.update(dict.fromkeys(raised))
        for concern, kind in reactions.items():
            if kind == "resolved":
                self._settled.add(concern)
            else:
                self._heard[concern] = None  # a partial reaction shows the worry is theirs
        for concern in reversed(raised):  # the newest concern first
            if concern in self._pending:
                self._pending.remove(concern)
            if self._answered.get(concern, 0) < self.MAX_ANSWERS:
                self._pending.insert(0, concern)
        self._pending = [c for c in self._pending if c not in self._settled]
        # An answer to something of theirs that did not settle it (no "resolved" reaction):
        # answer it again with the next reason, after anything new they raised. A flat reply
        # to a proactive answer means the point was not theirs, so the agent moves on.
        previous, self._last_answered = self._last_answered, None
        if (
            previous is not None
            and previous in self._heard
            and previous not in self._settled
            and previous not in self._pending
            and self._answered.get(previous, 0) < self.MAX_ANSWERS
        ):
            self._pending.append(previous)
        asked_last, self._asked_last = self._asked_last, False
        if self._turn == 1:
            return str(self.lines["opening"])
        last_exchange = observation.get("exchange", self._turn - 1) >= self.card.max_exchanges - 1
        if last_exchange and not asked_last:
            return self._ask()  # the last chance to ask; an unanswered point is lost anyway
        if self._turn == 2:
            return str(self.lines["probe"])
        if self._turn == 3 and not (set(raised) - set(self._answered)):
            # The pitch drew out nothing of their own (a reaction to the pitch is not their
            # main worry): ask for it before answering guesses.
            return str(self.lines["open_question"])
        if self._pending:
            return self._answer(self._pending.pop(0))
        unsettled = [
            c
            for c in self._heard
            if c not in self._settled and self._answered.get(c, 0) < self.MAX_ANSWERS
        ]
        if unsettled:
            return self._answer(min(unsettled, key=lambda c: self._answered.get(c, 0)))
        if asked_last and stance == "refused":
            return str(self.lines["why_not"])
        if not self._checked and not asked_last:
            # What they raised is settled: check for anything else before asking (sounding
            # keen is not the same as having nothing left to raise).
            self._checked = True
            return str(self.lines["anything_else"])
        if stance in ("positive", "agree") and not asked_last:
            return self._ask()  # they sound ready: ask while the iron is hot
        while self._proactive:
            concern = self._proactive.pop(0)
            if self._answered.get(concern, 0) == 0:
                return self._answer(concern)
        return str(self.lines["why_not"]) if asked_last else self._ask()
