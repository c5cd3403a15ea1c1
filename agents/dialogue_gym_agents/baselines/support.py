"""Agents for emotional support (ESConv), and the dismissive agent of both support tasks.

* :class:`ScriptedSupporter` (ESConv): greets and asks an open question, reflects and paraphrases
  what the seeker said, answers the needs the seeker voices (hopelessness, shame, loneliness,
  overwhelm, the cost of help), and offers one small, concrete suggestion only once the seeker
  sounds heard.
* :class:`DismissiveAgent` (ESConv and ED): platitudes, premature advice, minimizing and
  changing the subject.

EmpatheticDialogues' listener is :mod:`~dialogue_gym_agents.baselines.empathetic`; both read
the user's words with :mod:`~dialogue_gym_agents.baselines.reflection`. All of them read only
the observation (the history) and the public task card.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.baselines.listening import ConcernListener
from dialogue_gym_agents.baselines.reflection import (
    WORD,
    VoiceReader,
    cap,
    clauses,
    second_person,
    story_sentences,
    user_replies,
)

__all__ = ["SEEKER_FEELINGS", "DismissiveAgent", "ScriptedSupporter", "second_person"]

# Emotion words a seeker may use, mapped to the adjective a supporter would reflect back.
SEEKER_FEELINGS = {
    "anxiety": "anxious",
    "anxious": "anxious",
    "nervous": "nervous",
    "nervousness": "nervous",
    "sadness": "sad",
    "sad": "sad",
    "depression": "low",
    "depressed": "low",
    "anger": "angry",
    "angry": "angry",
    "irritated": "on edge",
    "fear": "scared",
    "scared": "scared",
    "afraid": "scared",
    "shame": "ashamed",
    "ashamed": "ashamed",
    "embarrassed": "embarrassed",
    "frustration": "frustrated",
    "frustrated": "frustrated",
    "loneliness": "lonely",
    "lonely": "lonely",
    "alone": "alone",
    "guilt": "guilty",
    "guilty": "guilty",
    "hopelessness": "hopeless",
    "hopeless": "hopeless",
    "hurt": "hurt",
    "pathetic": "ashamed",
    "stupid": "ashamed",
    "drowning": "overwhelmed",
    "spinning": "overwhelmed",
    "numb": "numb",
    "tired": "exhausted",
    "exhausted": "exhausted",
}

# The supporter's own answers to each need a seeker may voice (hand-written; {adj} is the
# feeling heard in the seeker's words, {gist} a short reflection of what they described).
SUPPORTER_ANSWERS: dict[str, tuple[str, ...]] = {
    "hopelessness": (
        "I can hear how hopeless this feels right now. But you've come through hard times "
        "before, and feelings this heavy do ease, even if it's slowly. This is a hard "
        "chapter, not the end of your story.",
        "When you're this worn down, it's natural to feel it will never change. It won't "
        "feel like this forever, though, and the fact that you reached out today is already "
        "a first step.",
        "Hopelessness has a way of shrinking the future down to nothing. It isn't the whole "
        "truth, though: things can shift, and I'd like to help you find even one small "
        "reason to hope.",
    ),
    "shame": (
        "Please don't be so hard on yourself. Struggling with this isn't a sign that "
        "something is wrong with you; it's a human reaction, and it isn't your fault.",
        "There's nothing stupid or weak about struggling with this. A lot of people would "
        "feel the same in your place, and there's no deadline for getting over it.",
        "You're being much harsher with yourself than you'd ever be with a friend in the same "
        "spot. You deserve that same kindness, and there's nothing to be ashamed of here.",
    ),
    "isolation": (
        "You're not alone in this, even if it feels that way. I went through a stretch like "
        "this myself and kept it all inside, and I remember how lonely that was. I'm here "
        "with you now.",
        "It makes sense that you'd pull back when you're hurting. But you don't have to carry "
        "this on your own; I'm right here, and I'm glad you told me.",
        "Feeling cut off from everyone makes all of this heavier. Is there one person, even "
        "someone you haven't talked to in a while, you could let in a little? You matter to "
        "people more than it feels right now.",
    ),
    "overwhelm": (
        "That's so much at once, no wonder your head is spinning. You don't need to solve "
        "everything today; we can take it one small piece at a time.",
        "When it all piles up like that, everything feels urgent. Let's slow it down and set "
        "the rest aside for a moment: one thing at a time is plenty.",
        "It's a lot for anyone to hold at once. If we wrote it all down, which one thing would "
        "take the most weight off if it were handled first?",
    ),
    "cost_of_help": (
        "That's a real barrier, and it's good that you're even thinking about getting help. "
        "There are free options, though: support lines that cost nothing to call or text at "
        "any hour, and community clinics that charge based on income.",
        "A lot of people don't know this, but many schools and workplaces offer free "
        "confidential counselling, and peer support groups are usually free too.",
        "Money shouldn't decide whether you get support. Free crisis lines and low-cost "
        "sliding-scale counsellors exist exactly for this, and I can help you think through "
        "where to start.",
    ),
    "feeling_unheard": (
        "It sounds like you've been carrying {gist} mostly on your own, and whenever you try "
        "to talk about it, people rush past how much it hurts. I'm listening.",
        "What I'm hearing is that it isn't only {gist}; it's also feeling like nobody really "
        "takes in how heavy it is for you.",
        "You deserve to be really heard about {gist}, not hurried along. Take all the time you "
        "need; I'm not going anywhere.",
    ),
}


class ScriptedSupporter:
    """A sensible hand-written ESConv supporter (see the module docstring).

    It reads the seeker's stance from their words (the card's ``reply_*`` cues), recognizes the
    needs they voice by similarity to the card's public concern ``voice`` lines, reflects their
    own words back (in the second person), and suggests one small concrete step only when the
    seeker sounds heard (or asks for something practical), never right after a worse reply.

    Args:
        card: The ESConv task card.
        seed: Default seed (overridden by :meth:`reset`).
        encoder: Encoder used to recognize voiced needs.
        detect_threshold: Cosine similarity at which a reply sentence voices a need.
    """

    OPENING = (
        "Hi, I'm really glad you reached out. How are you feeling today, and what's been going on?"
    )
    OPEN_QUESTIONS = (
        "What's been the hardest part of all this for you?",
        "How has it been affecting you day to day, with sleep or eating or just getting through?",
        "When does it feel the heaviest?",
        "Is there anything else on your mind about it that you haven't said yet?",
    )
    SUGGESTIONS = (
        "One small idea, if it feels doable: maybe try writing down the thoughts that keep "
        "circling tonight, then close the notebook and let them wait until morning.",
        "It might help to text one person you trust tomorrow, even just to say you've had a "
        "hard week. You wouldn't have to explain everything.",
        "Maybe try a ten-minute walk tomorrow after lunch, with no goal except some air. Small "
        "things like that can take a little of the edge off.",
    )
    MAX_ANSWERS = 3  # answers to one worry before moving on
    BACK_OFF = (
        "I'm sorry, I jumped to advice too quickly.",
        "You're right, that was too soon for suggestions.",
        "Sorry, I got ahead of myself there.",
    )

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
        # Reads how the seeker took an answer (the card's public acknowledgement lines).
        self.reactions = ConcernListener(card, self.encoder, detect_threshold, reactions=True)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Forgets the previous episode."""
        self._rng = np.random.default_rng(seed)
        self._turn = 0
        self._pending: list[str] = []
        self._heard: dict[str, None] = {}  # concerns the seeker voiced, in order
        self._settled: set[str] = set()
        self._last_answered: str | None = None
        self._answered: dict[str, int] = {}
        self._reflections = 0
        self._questions = 0
        self._suggestions = 0
        self._suggested_last = False
        self._wants_step = False
        self._backed_off = 0
        self._backed_off_turn = 0
        self._said: set[str] = set()

    # -- reading -----------------------------------------------------------------------------

    def _feeling(self, replies: list[str]) -> str:
        for reply in reversed(replies):
            for word in reversed(WORD.findall(reply.lower())):
                if word in SEEKER_FEELINGS:
                    return SEEKER_FEELINGS[word]
        return "worn down"

    def _gists(self, replies: list[str]) -> list[tuple[str, bool]]:
        """What the seeker described, oldest first, as second-person (text, is_clause) pairs.

        A clause ("you haven't slept in a week") can follow "It sounds like"; a noun phrase
        ("the pressure to keep your scholarship") needs a verb around it.
        """
        gists: list[tuple[str, bool]] = []
        for sentence in story_sentences(replies):
            for clause in clauses(sentence):
                text = second_person(clause)
                prefix = re.compile(
                    r"^((mostly )?(it'?s|it is) (about |all about )?|(mostly |all )?because of )",
                    re.IGNORECASE,
                )
                is_clause = not prefix.match(text)
                text = re.sub(r",? (mostly|honestly)$", "", prefix.sub("", text))
                text = text[:1].lower() + text[1:]
                if len(WORD.findall(text)) >= 3 and all(text != g for g, _ in gists):
                    gists.append((text, is_clause))
        return gists

    # -- speaking ----------------------------------------------------------------------------

    @staticmethod
    def _frames(gist: str, is_clause: bool, adj: str) -> tuple[str, ...]:
        if is_clause:
            return (
                f"It sounds like {gist}. That's a lot to carry, and I can hear how {adj} you feel.",
                f"So if I'm understanding you, {gist}, and you've mostly been holding it in. It "
                f"makes sense that you feel {adj}.",
                f"What I'm hearing is that {gist}, and it's left you feeling {adj} and a bit on "
                "your own with it.",
                f"I can hear how much this is weighing on you. {cap(gist)}, and feeling {adj} "
                "about it makes complete sense.",
            )
        return (
            f"It sounds like {gist} has been really hard on you, and I can hear how {adj} you "
            "feel.",
            f"So if I'm understanding you, {gist} has been on your mind constantly, and you've "
            f"mostly been holding it in. It makes sense that you feel {adj}.",
            f"What I'm hearing is that {gist} has left you feeling {adj} and a bit on your own "
            "with it.",
            f"I can hear how much {gist} is weighing on you, and feeling {adj} about it makes "
            "complete sense.",
        )

    def _reflect(self, replies: list[str]) -> str:
        """Reflects something the seeker said, never in words already used this episode."""
        gists = self._gists(replies)
        adj = self._feeling(replies)
        index = self._reflections
        self._reflections += 1
        if not gists:
            return (
                f"It sounds like you've been carrying a lot, and I can hear how {adj} you feel. "
                "I'm listening."
            )
        candidates = [
            frames[(index + k) % len(frames)]
            for g in range(len(gists))
            for frames in [self._frames(*gists[(index + g) % len(gists)], adj)]
            for k in range(len(frames))
        ]
        fresh = [c for c in candidates if c not in self._said]
        text = (fresh or candidates)[0]
        self._said.add(text)
        return text

    def _answer(self, concern: str, replies: list[str]) -> str:
        count = self._answered.get(concern, 0)
        self._answered[concern] = count + 1
        self._last_answered = concern
        if concern == "feeling_unheard" and count % 2 == 0:
            return self._reflect(replies)
        answers = SUPPORTER_ANSWERS[concern]
        phrases = [g for g, is_clause in self._gists(replies) if not is_clause]
        gist = phrases[-1] if phrases else "everything you've been going through"
        return answers[count % len(answers)].format(gist=gist)

    def _suggest(self) -> str:
        self._suggested_last = True
        self._suggestions += 1
        return self.SUGGESTIONS[(self._suggestions - 1) % len(self.SUGGESTIONS)]

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next supporter turn."""
        self._turn += 1
        replies = user_replies(observation)
        last = replies[-1] if replies else ""
        stance = classify_stance(last, self.card) if last else "neutral"
        self._wants_step = False  # only a need voiced in the latest reply counts
        for concern in reversed(self.voices.raised(last)):
            if concern == "needs_concrete_step":
                self._wants_step = True
                continue
            self._heard[concern] = None
            if concern in self._pending:
                self._pending.remove(concern)
            if self._answered.get(concern, 0) < self.MAX_ANSWERS:
                self._pending.insert(0, concern)
        for concern, kind in self.reactions.reactions(last).items() if last else ():
            if kind == "resolved":
                self._settled.add(concern)
        self._pending = [c for c in self._pending if c not in self._settled]
        # An answer to the seeker's own worry that did not settle it: answer it again (after
        # anything new they raised) rather than moving on to a fresh reflection.
        previous, self._last_answered = self._last_answered, None
        if (
            previous in self._heard
            and previous not in self._settled
            and previous not in self._pending
            and self._answered.get(previous, 0) < self.MAX_ANSWERS
        ):
            self._pending.append(previous)
        suggested_last, self._suggested_last = self._suggested_last, False
        last_exchange = observation.get("exchange", self._turn - 1) >= self.card.max_exchanges - 1
        if self._turn == 1:
            return self.OPENING
        if suggested_last and stance == "refused":
            self._backed_off += 1
            self._backed_off_turn = self._turn
            sorry = self.BACK_OFF[(self._backed_off - 1) % len(self.BACK_OFF)]
            return f"{sorry} {self._reflect(replies)}"
        # Suggest only once the seeker sounds heard (their words sound better), or when they
        # asked for something practical and nothing they raised is left unanswered.
        ready = stance in ("positive", "agree") or (
            self._wants_step
            and self._reflections >= 2
            and (not self._backed_off or self._turn - self._backed_off_turn >= 3)
        )
        if ready and not self._pending and not suggested_last:
            return self._suggest()
        if self._pending:
            return self._answer(self._pending.pop(0), replies)
        if last_exchange and stance != "refused" and not self._backed_off:
            return self._suggest()
        question = self.OPEN_QUESTIONS[self._questions % len(self.OPEN_QUESTIONS)]
        self._questions += 1
        return f"{self._reflect(replies)} {question}"


# -- bad support -----------------------------------------------------------------------------------


class DismissiveAgent:
    """Platitudes, premature advice, minimizing and changing the subject (ESConv and ED).

    It opens with a casual greeting, then cycles through its stock lines in a seeded order.

    Args:
        card: The task card (``ESConv`` or ``ED``).
        seed: Default seed (overridden by :meth:`reset`).
    """

    LINES: ClassVar[dict[str, tuple[str, ...]]] = {
        "ESConv": (
            "Have you tried just going for a run? Exercise fixes pretty much everything.",
            "Everything happens for a reason, you know. Just cheer up!",
            "Honestly, it's not that big of a deal. Lots of people have it way worse.",
            "Anyway, I finally watched that new show everyone's talking about. So good.",
            "You need to just get over it and move on. Maybe try to keep yourself busy.",
            "Look on the bright side, at least you have your health.",
            "Why don't you just take a vacation or something? That usually sorts people out.",
            "You should try thinking positive. Good vibes only!",
        ),
        "ED": (
            "Oh, okay. Well, these things happen.",
            "That's not really a big deal, honestly.",
            "Anyway, I'm thinking of making pasta for dinner tonight.",
            "Same thing happened to me once, but worse. You'll get over it.",
            "Everything happens for a reason.",
            "You should just stop thinking about it.",
            "Cool. So, anything else going on?",
            "Eh, you'll forget about it in a week.",
        ),
    }
    OPENING = "Hey, what's up?"

    def __init__(self, card: TaskCard, seed: int | None = None) -> None:
        if card.id not in self.LINES:
            raise ValueError(f"DismissiveAgent covers {sorted(self.LINES)}, not {card.id!r}")
        self.card = card
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reshuffles the stock lines."""
        lines = self.LINES[self.card.id]
        self._order = [lines[i] for i in np.random.default_rng(seed).permutation(len(lines))]
        self._turn = 0

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next stock line."""
        self._turn += 1
        if self._turn == 1:
            return self.OPENING
        return self._order[(self._turn - 2) % len(self._order)]
