"""Saying back what a user told about itself: the moves built from the user's own words.

``reflect`` says back, in the second person, something the user told ("I found out my
friends had a group chat without me." → "It sounds like you found out your friends had a
group chat without you."); a story answer (a need met by the user's own story, ED's
``situational`` concerns) says back a part of the story and takes it seriously — what
happened, the feeling the user named for it, that the feeling is no overreaction, the details
added later — so that no two answers repeat each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dialogue_gym.env.wrappers.strategy_actions import split_sentences

__all__ = ["STORY_FORMS", "STORY_LEADS", "Story", "second_person", "statements"]


def statements(replies: Sequence[str]) -> list[str]:
    """What the user said about itself: its first-person sentences of five words or more."""
    return [
        sentence
        for reply in replies
        for sentence in split_sentences(reply)
        if not sentence.rstrip().endswith("?")
        and _FIRST_PERSON.search(sentence)
        and len(sentence.split()) >= 5
    ]


class Story:
    """What a user told of its story, and the ways of saying it back (a story answer).

    Attributes:
        said: What happened, said back: the first clause of the longest thing its first
            story reply told, in the second person.
        feel: The feeling it named for it ("feel sad"), or "feel the way you do".
        details: Its other statements (what a later story answer says back).
    """

    def __init__(self, said: str, feel: str, details: list[str]) -> None:
        self.said, self.feel, self.details = said, feel, details

    @classmethod
    def read(cls, replies: Sequence[str]) -> Story | None:
        """The story in ``replies``, or ``None`` before the user told one."""
        told = [s for s in (statements([r]) for r in replies) if s]
        if not told:
            return None
        main = max(told[0], key=lambda c: len(c.split()))
        feeling = _feeling(main)
        said = second_person(_clauses(main)[0]).rstrip(".!")
        details = [c for c in statements(replies) if c != main]
        return cls(said, f"feel {feeling}" if feeling else "feel the way you do", details)

    def form(self, step: int) -> str:
        """Story answer ``step`` of :data:`STORY_FORMS` then :data:`STORY_LEADS`."""
        forms = (*STORY_FORMS, *STORY_LEADS)
        said = self.said
        return forms[step].format(said=said, Said=said[:1].upper() + said[1:], feel=self.feel)

    def detail(self, statement: str) -> str:
        """A later detail said back and taken seriously."""
        return f"It makes sense that {second_person(statement)}"

    def all_forms(self) -> list[str]:
        """Every story answer it could get."""
        forms = [self.form(k) for k in range(len(STORY_FORMS) + len(STORY_LEADS))]
        return forms + [self.detail(c) for c in self.details]


STORY_FORMS = (
    "Wait, so {said}? That really is a big deal.",
    "Of course you {feel}. {Said}, and that's not a small thing.",
    "You're not overreacting at all. {Said}, so of course you {feel}.",
)
"""The first story answers, in turn: what happened, the feeling, that it is no overreaction."""

STORY_LEADS = (
    "I'm really glad you told me. {Said}, and I can tell how much that means to you.",
    "{Said}, and of course that stays with you.",
    "Anyone would feel the same. {Said}, and that's not a small thing.",
)
"""How what happened is taken seriously once every other part of the story was said back."""

_CLAUSE = re.compile(
    r",\s+(?:and|but|so)\s+|\s+(?:and|but|so|because)\s+(?=(?:it|I|i|that|this|now)\b)|[,;:]\s+"
)
_INTENSIFIERS = (
    r"(?:(?:really|so|very|too|a bit|kind of|pretty|super|totally|completely|quite|still|"
    r"a little|just|absolutely|honestly|incredibly|pure)\s+)"
)
_FEELING = re.compile(
    r"\b(?:(?:(?:I'?m|I am|I was|I've been) feeling|made me|left me|I'?m|I am|I was|I feel|"
    r"I felt|I've felt|I've been|feeling|felt)"
    rf"\s+{_INTENSIFIERS}*|got\s+{_INTENSIFIERS}+)([a-z]+)\b",
    re.I,
)
#: Words after "I'm" / "I was" that are not a feeling ("I'm going", "I was at ...").
_NOT_FEELINGS = frozenset(
    [
        "a",
        "an",
        "the",
        "at",
        "in",
        "on",
        "to",
        "going",
        "not",
        "finally",
        "still",
        "just",
        "about",
        "getting",
        "being",
        "doing",
        "trying",
        "starting",
        "working",
        "having",
        "always",
        "never",
        "also",
        "all",
        "back",
        "home",
        "out",
        "up",
        "there",
        "here",
        "off",
        "told",
        "asked",
        "given",
        "invited",
        "planning",
        "moving",
        "leaving",
        "looking",
        "waiting",
        "supposed",
        "able",
        "overseas",
        "away",
        "sure",
        "ready",
        "alone",
    ]
)


def _clauses(sentence: str) -> list[str]:
    """``sentence`` cut where a new clause starts ("..., and it made me sad").

    Parts of fewer than four words are dropped; a sentence with none left stays whole.
    """
    text = _OPENER.sub("", sentence.strip()).rstrip(".!")
    parts = [p.strip() for p in _CLAUSE.split(text) if p and len(p.split()) >= 4]
    return parts or [text]


def _feeling(sentence: str) -> str:
    """The feeling ``sentence`` names for itself ("it made me really sad" → "sad"), or ``""``."""
    words = [m.group(1).lower() for m in _FEELING.finditer(sentence)]
    named = [w for w in words if w not in _NOT_FEELINGS and not w.endswith("ing")]
    return named[-1] if named else ""  # the last: "while I was away ..., I'm devastated"


_OPENER = re.compile(
    r"^(?:(?:well|so|honestly|ha|oh|um|uh|okay|ok|yeah|anyway|ugh|wow|hm+|mm+|aw+|omg)\b[,.!]?\s*)+",
    re.I,
)
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|me|my|myself)\b", re.I)
_SWAPS = {
    "i": "you",
    "i'm": "you're",
    "im": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
}


def second_person(sentence: str) -> str:
    """``sentence`` said back to its speaker: "I was" → "you were", "my" → "your", ..."""
    text = sentence.strip().replace("\u2019", "'")
    text = _OPENER.sub("", text)  # "Well, I finally ..." is said back as "you finally ..."
    text = re.sub(r"\bI was\b", "you were", text, flags=re.I)
    text = re.sub(r"\bI am\b", "you are", text, flags=re.I)
    text = re.sub(r"\b[\w']+\b", lambda m: _SWAPS.get(m.group(0).lower(), m.group(0)), text)
    text = text[:1].lower() + text[1:] if not text[:2].isupper() else text
    return text if text[-1:] in ".!" else f"{text}."
