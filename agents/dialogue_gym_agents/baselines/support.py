"""Agents for the support tasks: ESConv (emotional support) and EmpatheticDialogues (ED).

* :class:`ScriptedSupporter` (ESConv): greets and asks an open question, reflects and paraphrases
  what the seeker said, answers the needs the seeker voices (hopelessness, shame, loneliness,
  overwhelm, the cost of help), and offers one small, concrete suggestion only once the seeker
  sounds heard.
* :class:`ScriptedListener` (ED): reflects the particular experience the speaker described, in
  the speaker's own words, acknowledges the feeling they named and asks a follow-up; it never
  falls back on a stock line.
* :class:`DismissiveAgent` (both): platitudes, premature advice, minimizing and changing the
  subject.

All of them read only the observation (the history) and the public task card.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.cosine_scale import on_reference_scale
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.baselines.listening import ConcernListener

USER_SPEAKER = 1

# -- reading the other person's words --------------------------------------------------------------

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
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_FILLER = re.compile(
    r"^(hi|hey|hello|well|so|honestly|okay|ok|oh|um|uh|ugh|hm+|mm+|yeah|look|god|right|anyway|"
    r"actually|sorry|idk|honestly\?)\b[,.!?]*\s*",
    re.IGNORECASE,
)


def _user_replies(observation: dict[str, Any]) -> list[str]:
    return [turn["text"] for turn in observation["history"] if turn["speaker"] == USER_SPEAKER]


def _sentences(text: str) -> list[str]:
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

    return _WORD.sub(swap, text).rstrip(" .!?;:")


def _first_person_share(sentence: str) -> bool:
    words = [w.lower() for w in _WORD.findall(sentence)]
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


def _story_sentences(replies: list[str]) -> list[str]:
    """The other person's substantive first-person sentences, oldest first, without fillers."""
    seen: list[str] = []
    for reply in replies:
        for sentence in _sentences(reply):
            core = _strip_fillers(sentence)
            if _first_person_share(core) and not _META.search(core) and core not in seen:
                seen.append(core)
    return seen


def _clauses(sentence: str) -> list[str]:
    """Splits a long sentence at ", and" / ", so" / ", but" into its clauses."""
    parts = re.split(
        r",\s*(?:and|so|but)\s+|,\s*(?=because\b)|\s+and\s+(?=I\b|I'm\b|I've\b)",
        sentence,
        flags=re.IGNORECASE,
    )
    return [p.strip(" ,") for p in parts if len(_WORD.findall(p)) >= 3]


class _VoiceReader:
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
        sentences = _sentences(reply)
        if not sentences or self._matrix is None:
            return []
        embedded = self.encoder.encode(sentences)
        sims = on_reference_scale(self.encoder, embedded @ self._matrix.T)
        acks = (
            on_reference_scale(self.encoder, (embedded @ self._acks.T).max(axis=1))
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


# -- ESConv ----------------------------------------------------------------------------------------

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
        self.voices = _VoiceReader(card, self.encoder, detect_threshold)
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
            for word in reversed(_WORD.findall(reply.lower())):
                if word in SEEKER_FEELINGS:
                    return SEEKER_FEELINGS[word]
        return "worn down"

    def _gists(self, replies: list[str]) -> list[tuple[str, bool]]:
        """What the seeker described, oldest first, as second-person (text, is_clause) pairs.

        A clause ("you haven't slept in a week") can follow "It sounds like"; a noun phrase
        ("the pressure to keep your scholarship") needs a verb around it.
        """
        gists: list[tuple[str, bool]] = []
        for sentence in _story_sentences(replies):
            for clause in _clauses(sentence):
                text = second_person(clause)
                prefix = re.compile(
                    r"^((mostly )?(it'?s|it is) (about |all about )?|(mostly |all )?because of )",
                    re.IGNORECASE,
                )
                is_clause = not prefix.match(text)
                text = re.sub(r",? (mostly|honestly)$", "", prefix.sub("", text))
                text = text[:1].lower() + text[1:]
                if len(_WORD.findall(text)) >= 3 and all(text != g for g, _ in gists):
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
                f"I can hear how much this is weighing on you. {_cap(gist)}, and feeling {adj} "
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
        replies = _user_replies(observation)
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


# -- ED --------------------------------------------------------------------------------------------

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
        self.voices = _VoiceReader(card, self.encoder, detect_threshold)
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
            for word in _WORD.findall(reply.lower()):
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
            return f"Of course you {feeling}! {_cap(event)}, and that really is a big deal."
        if answering or self._validations % 2:
            return f"You're not overreacting at all. {_cap(event)}, so of course you {feeling}."
        return f"Anyone would {feeling} after that. {_cap(event)}, and that's not a small thing."

    def act(self, observation: dict[str, Any]) -> str:
        """Returns the next listener turn."""
        self._turn += 1
        replies = _user_replies(observation)
        if self._turn == 1:
            return self.OPENING
        last = replies[-1] if replies else ""
        for concern in reversed(self.voices.raised(last)):
            if concern in self._pending:
                self._pending.remove(concern)
            if self._answered.get(concern, 0) < 2:
                self._pending.insert(0, concern)
        told = [r for r in replies if _story_sentences([r])]
        if not told:
            return self.NUDGE
        # The story is the longest thing they told first; later sentences add details.
        main = max(_story_sentences([told[0]]), key=len)
        story = _uncap(second_person(main))
        event = next((_uncap(second_person(c)) for c in _clauses(main)), story)
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
                f"It really isn't small. {_cap(event)}, and of course that stays with you. "
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
            for d in _story_sentences(replies)
            if d not in self._reflected and not self.voices.acknowledges(d)
        ]
        if details:
            self._reflected.add(details[-1])
            return f"It makes sense that {_uncap(second_person(details[-1]))}. {self._invite()}"
        return (
            f"I'm really glad you told me. {_cap(event)}, and I can tell how much that means "
            "to you."
        )


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _uncap(text: str) -> str:
    """Lowercases the first letter unless it starts the pronoun "I" ("I'm", "I've" ...)."""
    return text if re.match(r"I\b", text) else text[:1].lower() + text[1:]


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
