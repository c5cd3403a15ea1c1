"""Baseline system agents: ``random``, ``pushy`` and a hand-written ``scripted`` persuader.

They only read the observation (history, goal) and the public task card; none sees the
user's hidden state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym.realize import TemplateRealizer

USER_SPEAKER = 1


def _user_replies(observation: dict[str, Any]) -> list[str]:
    return [turn["text"] for turn in observation["history"] if turn["speaker"] == USER_SPEAKER]


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
        sims = np.asarray(self.encoder.encode(sentences)) @ self._matrix.T
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


class RandomAgent:
    """Picks a uniformly random strategy each turn and realizes it from the card's templates.

    Args:
        card: The task card.
        seed: Default seed (overridden by :meth:`reset`).
    """

    def __init__(self, card: TaskCard, seed: int | None = None) -> None:
        self.card = card
        self.realizer = TemplateRealizer(card, seed)
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the strategy choice and the realizer."""
        self._rng = np.random.default_rng(seed)
        self.realizer.reset(seed)

    def act(self, observation: dict[str, Any]) -> str:
        """Returns a random strategy's template."""
        return self.realizer.realize(int(self._rng.integers(len(self.card.strategies))))


class PushyAgent:
    """Asks for a donation every turn, with growing pressure and no reasons.

    Args:
        card: The task card (unused beyond the interface; the asks are P4G-specific).
    """

    ASKS = (
        "Hi! Will you donate to Save the Children today?",
        "Come on, please donate to Save the Children. Will you give?",
        "You really should donate. How much will you give right now?",
        "I'm asking again: please donate now, it only takes a second.",
        "Don't be cheap, just donate something right now. Will you?",
        "Last chance! You have to donate today. How much can you give?",
        "Everyone else donates. Please donate now, will you?",
        "Just say yes and donate right now, please.",
    )

    def __init__(
        self, card: TaskCard, seed: int | None = None, lines: tuple[str, ...] | None = None
    ) -> None:
        self.card = card
        self.lines = lines or self.ASKS
        self._turn = 0

    def reset(self, seed: int | None = None) -> None:
        """Starts over from the first ask."""
        self._turn = 0

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next ask (the lines in turn, then again from the first)."""
        text = self.lines[self._turn % len(self.lines)]
        self._turn += 1
        return text


# The scripted persuader's own answers to each P4G concern (hand-written, not the simulator's
# prototypes): what a sensible human persuader would say when the concern comes up.
ANSWERS: dict[str, tuple[str, ...]] = {
    "affordability": (
        (
            "I get that money matters. You could give just a few cents from this task "
            "payment; any amount is welcome and nothing comes out of your own pocket."
        ),
        (
            "There's no minimum at all. Even a dime from the task payment counts, and you "
            "keep the rest."
        ),
        (
            "Honestly, a tiny amount is fine. Whatever small sum feels comfortable to you "
            "still counts."
        ),
    ),
    "trust": (
        (
            "That's a fair question. Save the Children was founded in 1919, is audited every "
            "year, and watchdogs rate them highly for transparency."
        ),
        (
            "Charity watchdogs like Charity Navigator give them high ratings for "
            "transparency, and most of each dollar goes straight to programs for kids."
        ),
        (
            "You can verify all of this yourself on their website: annual reports, audited "
            "financial statements and their track record in over 100 countries."
        ),
    ),
    "efficacy": (
        (
            "A small gift does more than it seems: one dollar buys oral rehydration salts "
            "that can save a toddler with severe diarrhea."
        ),
        (
            "Small donations get pooled, so thousands of people giving fifty cents adds up to "
            "a fully stocked clinic."
        ),
        (
            "For a couple of dollars they can provide school supplies or a mosquito net, "
            "because they buy in bulk and it stretches further."
        ),
    ),
    "other_causes": (
        (
            "It's great that you already give locally. This wouldn't replace that; it's a "
            "small extra on top of the causes you already support."
        ),
        (
            "It doesn't have to be either-or. Children anywhere deserve a fair start, and a "
            "few cents here sits alongside your usual giving."
        ),
        (
            "I really respect the giving you already do. Think of this as one more child "
            "helped, in addition to your local causes."
        ),
    ),
    "pressure": (
        (
            "No pressure at all, honestly. It's completely your choice and it's totally fine "
            "to say no."
        ),
        (
            "I'm not going to push you. Take your time and think it over; I'll respect "
            "whatever you decide."
        ),
        (
            "I just want to share the information. It's up to you, and there are no hard "
            "feelings either way."
        ),
    ),
    "information": (
        (
            "Good question! Whatever amount you choose is deducted directly from your task "
            "payment, and the researchers send it straight to Save the Children."
        ),
        (
            "It works simply: you pick any amount between one cent and two dollars, and it "
            "comes out of what you earn here, with no extra step."
        ),
        (
            "Yes, it's real money: it's subtracted from your payment at payout and the "
            "research team forwards it to the charity."
        ),
    ),
    "detachment": (
        (
            "Imagine a seven-year-old girl named Amina who walks hours for water instead of "
            "going to school. A small gift helps keep her in class."
        ),
        (
            "Picture being a mother who can't afford medicine for her feverish baby. That "
            "fear feels the same anywhere in the world."
        ),
        (
            "One boy, Joseph, was so malnourished he couldn't walk; after a few weeks of "
            "treatment he was running and smiling again."
        ),
    ),
    "procedure_time": (
        (
            "It takes no extra time: no card, no sign-up, no personal details. You just name "
            "an amount here and it's handled automatically."
        ),
        (
            "You won't need to enter any payment details or give out your email; the amount "
            "simply comes off this payment."
        ),
        (
            "Nothing to fill out at all. You tell me a number and the researchers take care "
            "of the rest for you."
        ),
    ),
}


class ScriptedPersuader:
    """A sensible hand-written P4G persuader.

    It opens with rapport and an inquiry, listens for the concern the user raises (embedding
    similarity of the reply to the card's public concern ``voice`` lines), answers it with its
    own hand-written reasons (:data:`ANSWERS`) — again if the user still sounds unconvinced —
    offers a few reasons proactively, and asks for a small donation only when nothing the user
    raised is left unanswered. It never asks twice in a row except at the last exchange.

    Args:
        card: The task card.
        seed: Default seed (overridden by :meth:`reset`).
        encoder: Encoder used to recognize raised concerns.
        detect_threshold: Cosine similarity at which a reply sentence raises a concern.
    """

    OPENING = (
        "Hi there! How are you doing today? Have you ever heard of the charity Save the Children?"
    )
    PROBE = (
        "What do you think about donating to charities like this one? Is anything making "
        "you hesitate?"
    )
    WHY_NOT = "That's completely fine. May I ask what's holding you back? I'd like to understand."
    ASKS = (
        "Would you be willing to donate a small amount, even 50 cents of your task payment, "
        "to Save the Children? It's entirely your call.",
        "Would you consider giving a little, maybe 25 cents, from this task to help the "
        "children? No pressure either way.",
        "If you're open to it, would you donate any amount you like from your payment today? "
        "Even a few cents helps.",
    )
    MAX_ANSWERS = 3
    PROACTIVE = ("trust", "efficacy", "affordability")

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        encoder: str | Encoder = "minilm",
        detect_threshold: float = 0.55,
    ) -> None:
        self.card = card
        self.encoder = make_encoder(encoder)
        self.threshold = detect_threshold
        self.listener = ConcernListener(card, self.encoder, detect_threshold)
        self._answers = {
            c.id: ANSWERS.get(c.id)
            or tuple(t for s in card.strategies if c.id in s.addresses for t in s.templates)
            for c in card.concerns
        }
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        self._turn = 0
        self._pending: list[str] = []
        self._answered: dict[str, int] = {}
        self._last_answered: str | None = None
        self._asked_last = False
        self._asks = 0
        self._proactive = list(self.PROACTIVE)

    def _answer(self, concern: str) -> str:
        count = self._answered.get(concern, 0)
        self._answered[concern] = count + 1
        self._last_answered = concern
        answers = self._answers.get(concern) or ANSWERS["efficacy"]
        return answers[count % len(answers)]

    def _ask(self) -> str:
        self._asked_last = True
        self._asks += 1
        return self.ASKS[(self._asks - 1) % len(self.ASKS)]

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next persuader turn."""
        self._turn += 1
        replies = _user_replies(observation)
        last = replies[-1] if replies else ""
        stance = classify_stance(last, self.card) if last else "neutral"
        raised = self.listener.raised(last)
        for concern in reversed(raised):  # newest concern first
            if concern in self._pending:
                self._pending.remove(concern)
            if self._answered.get(concern, 0) < self.MAX_ANSWERS:
                self._pending.insert(0, concern)
        # Still unconvinced after an answer (and nothing new raised): answer the same again.
        previous, self._last_answered = self._last_answered, None
        if (
            previous
            and not raised
            and stance not in ("positive", "agree")
            and self._answered.get(previous, 0) < 2
            and previous not in self._pending
        ):
            self._pending.insert(0, previous)
        asked_last, self._asked_last = self._asked_last, False
        last_exchange = observation.get("exchange", self._turn - 1) >= self.card.max_exchanges - 1
        if self._turn == 1:
            return self.OPENING
        if last_exchange:
            return self._ask()
        if self._pending:
            return self._answer(self._pending.pop(0))
        if self._turn == 2:
            return self.PROBE
        if asked_last and stance == "refused":
            return self.WHY_NOT
        if stance in ("positive", "agree") and not asked_last:
            return self._ask()
        while self._proactive:
            concern = self._proactive.pop(0)
            if concern in self._answers and self._answered.get(concern, 0) == 0:
                return self._answer(concern)
        return self.WHY_NOT if asked_last else self._ask()
