"""The scripted listener of EmpatheticDialogues (ED).

:class:`ScriptedListener` reflects the particular experience the speaker described, in the
speaker's own words, acknowledges the feeling they named and asks a follow-up; it never falls
back on a stock line. It reads only the observation (the history) and the public task card.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.baselines.reflection import (
    WORD,
    VoiceReader,
    cap,
    clauses,
    second_person,
    story_sentences,
    uncap,
    user_replies,
)

__all__ = ["SPEAKER_FEELINGS", "ScriptedListener"]

# Emotion words a speaker may use (the 32 EmpatheticDialogues labels and everyday variants),
# mapped to a family that decides how the listener acknowledges the feeling.
SPEAKER_FEELINGS = {
    "afraid": "fear",
    "scared": "fear",
    "terrified": "fear",
    "frightened": "fear",
    "anxious": "worry",
    "nervous": "worry",
    "apprehensive": "worry",
    "worried": "worry",
    "angry": "anger",
    "furious": "anger",
    "annoyed": "anger",
    "livid": "anger",
    "mad": "anger",
    "devastated": "loss",
    "heartbroken": "loss",
    "sad": "loss",
    "lonely": "lonely",
    "disappointed": "letdown",
    "ashamed": "self",
    "guilty": "self",
    "embarrassed": "self",
    "disgusted": "disgust",
    "jealous": "jealous",
    "proud": "pride",
    "confident": "pride",
    "prepared": "pride",
    "impressed": "pride",
    "excited": "joy",
    "joyful": "joy",
    "joy": "joy",
    "thrilled": "joy",
    "happy": "joy",
    "content": "calm",
    "hopeful": "hope",
    "grateful": "grateful",
    "thankful": "grateful",
    "nostalgic": "memory",
    "sentimental": "memory",
    "memories": "memory",
    "surprised": "surprise",
    "caring": "care",
    "faithful": "care",
    "trust": "care",
    "trusting": "care",
    "anticipating": "joy",
    "counting": "joy",
}

# How a feeling word reads after "you feel ..." when it is not an adjective itself.
_DISPLAY = {"counting": "excited", "joy": "joyful", "memories": "nostalgic", "trust": "trusting"}
_HAPPY = {"pride", "joy", "calm", "hope", "grateful", "memory", "surprise", "care"}

# A story about something still to come ("on Thursday", "next month", "I can't wait").
_AHEAD = re.compile(
    r"\b(next (week|month|year|spring|summer|fall|winter)|on (monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday)|this (weekend|spring|summer|fall|winter)|counting down|can'?t wait|"
    r"tomorrow|start .* on|won'?t be back|airs|booked|going to be|agreed to give)\b",
    re.IGNORECASE,
)

_ACKS = {
    "fear": "That sounds genuinely frightening",
    "worry": "No wonder you're on edge about it",
    "anger": "I'd be angry too, honestly",
    "loss": "That's a real loss, and it makes sense that it hurts this much",
    "lonely": "That kind of loneliness is hard to sit with",
    "letdown": "That's such a letdown after hoping for it",
    "self": "I can tell it's been weighing on you",
    "disgust": "Ugh, that's genuinely gross",
    "jealous": "That's a very human thing to feel",
    "pride": "You have every reason to feel good about that",
    "joy": "That's wonderful",
    "calm": "That sounds really peaceful",
    "hope": "That's a really hopeful sign",
    "grateful": "That's so kind, no wonder you're grateful",
    "memory": "That must have brought so much back",
    "surprise": "What a surprise that must have been",
    "care": "That says a lot about you",
    "neutral": "That sounds like a lot",
}


class ScriptedListener:
    """A sensible hand-written ED listener (see the module docstring).

    It finds the experience the speaker described (the longest first-person sentence of their
    first story), reflects it back in the second person and acknowledges the feeling they named;
    then it alternates specific follow-up questions, validation of that feeling for that event,
    and reflections of the details they add, answering what they voice (feeling silly about it,
    wanting to tell more) first. It never repeats a turn and never falls back on a stock line.

    Args:
        card: The ED task card.
        seed: Default seed (overridden by :meth:`reset`).
        encoder: Encoder used to recognize voiced needs.
        detect_threshold: Cosine similarity at which a reply sentence voices a need.
    """

    OPENING = "Hi there! How's your week been so far?"
    NUDGE = "I'm all ears. What happened?"
    INVITES = (
        "What happened after that? I'd really like to hear the rest.",
        "How did you react in the moment?",
        "What was going through your head when it happened?",
        "How are you feeling about it now, looking back?",
        "Have you been able to talk to anyone else about it?",
    )
    # Invitations for things that have not happened yet (a trip, an interview, a visit).
    AHEAD = (
        "What are you most looking forward to? Tell me everything.",
        "What part of it is on your mind the most?",
        "How are you getting ready for it?",
        "Have you told anyone else about it yet?",
    )
    # The first follow-up, by feeling family (painful feelings vs. happy ones).
    HOW: ClassVar[dict[str, str]] = {
        "loss": "How are you holding up?",
        "fear": "Are you okay now?",
        "worry": "How are you holding up?",
        "lonely": "How have you been coping?",
        "self": "How are you feeling about it now?",
        "anger": "What did you do?",
    }

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        encoder: str | Encoder = "minilm",
        detect_threshold: float = 0.55,
    ) -> None:
        self.card = card
        self.encoder = make_encoder(encoder)
        self.voices = VoiceReader(card, self.encoder, detect_threshold)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        self._rng = np.random.default_rng(seed)
        self._turn = 0
        self._plan = 0
        self._invites = 0
        self._validations = 0
        self._pending: list[str] = []
        self._answered: dict[str, int] = {}
        self._reflected: set[str] = set()
        self._ahead = False

    def _family(self, replies: list[str]) -> tuple[str, str]:
        for reply in replies:
            for word in WORD.findall(reply.lower()):
                if word in SPEAKER_FEELINGS:
                    return word, SPEAKER_FEELINGS[word]
        return "", "neutral"

    def _invite(self) -> str:
        self._invites += 1
        options = self.AHEAD if self._ahead else self.INVITES
        return options[(self._invites - 1) % len(options)]

    def _validate(self, event: str, word: str, family: str, answering: bool) -> str:
        self._validations += 1
        feeling = f"feel {_DISPLAY.get(word, word)}" if word else "feel the way you do"
        if family in _HAPPY:
            return f"Of course you {feeling}! {cap(event)}, and that really is a big deal."
        if answering or self._validations % 2:
            return f"You're not overreacting at all. {cap(event)}, so of course you {feeling}."
        return f"Anyone would {feeling} after that. {cap(event)}, and that's not a small thing."

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next listener turn."""
        self._turn += 1
        replies = user_replies(observation)
        if self._turn == 1:
            return self.OPENING
        last = replies[-1] if replies else ""
        for concern in reversed(self.voices.raised(last)):
            if concern in self._pending:
                self._pending.remove(concern)
            if self._answered.get(concern, 0) < 2:
                self._pending.insert(0, concern)
        told = [r for r in replies if story_sentences([r])]
        if not told:
            return self.NUDGE
        # The story is the longest thing they told first; later sentences add details.
        main = max(story_sentences([told[0]]), key=len)
        story = uncap(second_person(main))
        event = next((uncap(second_person(c)) for c in clauses(main)), story)
        word, family = self._family(replies)
        self._ahead = bool(_AHEAD.search(main))
        if not self._reflected:
            self._reflected.add(main)
            how = self.HOW.get(family, "How does it feel?" if self._ahead else "How did it feel?")
            return f"Wait, {story}? {_ACKS[family]}. {how}"
        if self._pending:
            concern = self._pending.pop(0)
            self._answered[concern] = self._answered.get(concern, 0) + 1
            if "validat" in concern:
                return self._validate(event, word, family, answering=True)
            if "share" in concern:
                return self._invite()
            return (
                f"It really isn't small. {cap(event)}, and of course that stays with you. "
                f"{_ACKS[family]}."
            )
        self._plan += 1
        step = self._plan % 3
        if step == 1:
            return self._invite()
        if step == 2:
            return self._validate(event, word, family, answering=False)
        details = [
            d
            for d in story_sentences(replies)
            if d not in self._reflected and not self.voices.acknowledges(d)
        ]
        if details:
            self._reflected.add(details[-1])
            return f"It makes sense that {uncap(second_person(details[-1]))}. {self._invite()}"
        return (
            f"I'm really glad you told me. {cap(event)}, and I can tell how much that means to you."
        )
