"""Reading the other person's words, for the scripted support agents (ESConv and ED).

Both :class:`~dialogue_gym_agents.baselines.support.ScriptedSupporter` and
:class:`~dialogue_gym_agents.baselines.empathetic.ScriptedListener` reflect what the user said in
the user's own words: its replies, their sentences and clauses with fillers stripped, the
first person turned into the second, and which of the card's concerns a reply voices.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder

__all__ = [
    "USER_SPEAKER",
    "WORD",
    "VoiceReader",
    "cap",
    "clauses",
    "second_person",
    "split_sentences",
    "story_sentences",
    "uncap",
    "user_replies",
]

USER_SPEAKER = 1

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

# First person -> second person, for reflecting someone's words back to them.
_SWAPS = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "im": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
    "am": "are",
    "we": "you",
    "us": "you",
    "our": "your",
    "ours": "yours",
    "ourselves": "yourselves",
    "we're": "you're",
    "we've": "you've",
}
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_FILLER = re.compile(
    r"^(hi|hey|hello|well|so|honestly|okay|ok|oh|um|uh|ugh|hm+|mm+|yeah|look|god|right|anyway|"
    r"actually|sorry|idk|honestly\?)\b[,.!?]*\s*",
    re.IGNORECASE,
)


def user_replies(observation: dict[str, Any]) -> list[str]:
    """The user's replies so far, oldest first."""
    return [turn["text"] for turn in observation["history"] if turn["speaker"] == USER_SPEAKER]


def split_sentences(text: str) -> list[str]:
    """The sentences of a text (split at sentence ends and line breaks), stripped."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _strip_fillers(sentence: str) -> str:
    previous = None
    while previous != sentence:
        previous, sentence = sentence, _FILLER.sub("", sentence).strip()
    return sentence


def second_person(text: str) -> str:
    """Turns a first-person clause into a second-person one ("my dog" -> "your dog").

    Past-tense "was" after "I" becomes "were"; the final punctuation is dropped.
    """
    text = re.sub(r"\bI was\b", "you were", text, flags=re.IGNORECASE)
    text = re.sub(r"\bI wasn't\b", "you weren't", text, flags=re.IGNORECASE)

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        return _SWAPS.get(word.lower(), word)

    return WORD.sub(swap, text).rstrip(" .!?;:")


def _first_person_share(sentence: str) -> bool:
    words = [w.lower() for w in WORD.findall(sentence)]
    personal = any(w in ("i", "i'm", "i've", "my", "me", "im") for w in words)
    about = bool(re.match(r"^(it'?s|it is|mostly it'?s)\b", sentence, re.IGNORECASE))
    return len(words) >= 5 and (personal or about)


# Asides about the talk itself ("sorry, I'm rambling"), not about what happened.
_META = re.compile(
    r"\b(saying this|rambling|unloading|dumping|makes sense|don'?t (really )?know|not sure|"
    r"hope that'?s okay|that'?s about it|anymore|where to start|tell you|listening|thanks|"
    r"thank you|sorry|talk to someone|explain|nice|relief|exactly|helps|good to|lighter|better)\b",
    re.IGNORECASE,
)


def story_sentences(replies: list[str]) -> list[str]:
    """The other person's substantive first-person sentences, oldest first, without fillers."""
    seen: list[str] = []
    for reply in replies:
        for sentence in split_sentences(reply):
            core = _strip_fillers(sentence)
            if _first_person_share(core) and not _META.search(core) and core not in seen:
                seen.append(core)
    return seen


def clauses(sentence: str) -> list[str]:
    """Splits a long sentence at ", and" / ", so" / ", but" into its clauses."""
    parts = re.split(
        r",\s*(?:and|so|but)\s+|,\s*(?=because\b)|\s+and\s+(?=I\b|I'm\b|I've\b)",
        sentence,
        flags=re.IGNORECASE,
    )
    return [p.strip(" ,") for p in parts if len(WORD.findall(p)) >= 3]


class VoiceReader:
    """Recognizes which of the card's (public) concern voice lines a reply resembles.

    A sentence closer to one of the card's acknowledgement lines (someone saying a need *was*
    met) than to any voice line does not count as raising a need.
    """

    def __init__(self, card: TaskCard, encoder: Encoder, threshold: float) -> None:
        self.encoder = encoder
        self.threshold = threshold
        voice = [(c.id, line) for c in card.concerns for line in c.voice]
        acks = [line for c in card.concerns for line in (*c.ack_partial, *c.ack_resolved)]
        self._ids = [cid for cid, _ in voice]
        self._matrix = encoder.encode([line for _, line in voice]) if voice else None
        self._acks = encoder.encode(acks) if acks else None

    def acknowledges(self, sentence: str) -> bool:
        """Whether a sentence is closer to an acknowledgement line than to any voice line."""
        if self._acks is None or self._matrix is None:
            return False
        embedded = self.encoder.encode([sentence])[0]
        return float((self._acks @ embedded).max()) > float((self._matrix @ embedded).max())

    def raised(self, reply: str) -> list[str]:
        """The card concerns whose voice lines a sentence of ``reply`` resembles, in order."""
        sentences = split_sentences(reply)
        if not sentences or self._matrix is None:
            return []
        embedded = self.encoder.encode(sentences)
        sims = self.encoder.to_reference_cosine(embedded @ self._matrix.T)
        acks = (
            self.encoder.to_reference_cosine((embedded @ self._acks.T).max(axis=1))
            if self._acks is not None
            else None
        )
        found: list[str] = []
        for index, row in enumerate(sims):
            best = int(np.argmax(row))
            if acks is not None and acks[index] > row[best]:
                continue
            if row[best] >= self.threshold and self._ids[best] not in found:
                found.append(self._ids[best])
        return found


def cap(text: str) -> str:
    """Uppercases the first letter."""
    return text[:1].upper() + text[1:]


def uncap(text: str) -> str:
    """Lowercases the first letter unless it starts the pronoun "I" ("I'm", "I've" ...)."""
    return text if re.match(r"I\b", text) else text[:1].lower() + text[1:]
