"""What a simulated user perceives in a system utterance: embedding and lexical cues."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.text.cue_search import CueIndex, CueText
from dialogue_gym.text.view import text_view
from dialogue_gym.users.meaning import (
    ASKS,
    MeaningReader,
    TurnMeaning,
    has_requests,
    split_clauses,
    split_points,
    split_sentences,
)

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
        unlock: Per concern id, the addressing score: similarity to the concern's meaning
            (the centroid of its description and unlock prototypes, or with
            ``scoring="max"`` the best single prototype) plus the cue bonus.
        anti: Per concern id, the anti-pattern score.
        domain: Max similarity to the task's on-topic prototypes.
        words: Number of words in the perceived view of the turn.
        view: The normalized text the encoder, the cues and the price parser all read.
        appeals: The card strategies a learned appeal reader read in the turn (empty without
            one); they gave the concerns they address the cue bonus in ``unlock``.
        meaning: What the turn means sentence by sentence
            (:class:`~dialogue_gym.users.meaning.MeaningReader`; ``None`` without a reader).
        sentence_embeddings: One row per sentence the reader read (``None`` without one).
        open_door: It leaves the door open rather than asking now ("if you change your mind,
            just name an amount").
        parting: Its last sentence is a parting wish ("Have a good weekend service."), read
            on tasks with a meaning reader.
        goes_on: Its last sentence asks the other side to keep talking now ("I'm here for as
            long as you want to keep talking about it."): not a goodbye, unless a parting wish.
        back_reference: It gives its reason by pointing back at what the other side just
            said ("Given that, would you take $980?").
        anti_cued: The concerns whose anti-pattern cues (harmful wording, not mere closeness)
            matched the turn.
        story: How close the turn, then each of its sentences, is to this user's own story
            and to the closest other story of the card: one ``(own, other)`` pair per row,
            reference cosine (set by :class:`~dialogue_gym.users.perception.UserPerception`
            once the user has told its story; empty before or on a card without stories).
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
    words: int = 0
    view: str = ""
    appeals: frozenset[str] = frozenset()
    meaning: TurnMeaning | None = None
    sentence_embeddings: np.ndarray | None = None
    open_door: bool = False
    parting: bool = False
    goes_on: bool = False
    back_reference: bool = False
    story: tuple[tuple[float, float], ...] = ()
    anti_cued: frozenset[str] = frozenset()

    @property
    def pitch(self) -> bool:
        """A long opening that asks something: answered, not greeted back.

        Not "Not bad, thanks. What's this about?" to a pitch that said what it is about.
        """
        return self.question and self.words > PITCH_WORDS

    @property
    def only_acknowledges(self) -> bool:
        """It acknowledges what the user said and does nothing more (no reason, ask or question)."""
        if self.meaning is None or self.ask or self.question:
            return False
        leading = self.meaning.leading
        return "acknowledge" in leading and leading.isdisjoint(self.meaning.concerns)

    def addressing(self, concern_id: str) -> float:
        """The probability that the turn answers ``concern_id`` by meaning (0 without a reader)."""
        return 0.0 if self.meaning is None else self.meaning.concerns.get(concern_id, 0.0)

    def act(self, name: str) -> float:
        """The probability of act ``name`` (:data:`~dialogue_gym.users.meaning.ACTS`)."""
        return 0.0 if self.meaning is None else self.meaning.acts.get(name, 0.0)


PITCH_WORDS = 15
"""An opening longer than this that asks a question is a pitch, not a greeting."""
ASK_LINE, CLOSING_ASK_LINE = 0.5, 0.3
"""A turn asks when a sentence reads as an ask with this probability, or with the lower one
when the ask is the likeliest reading of the turn's last sentence, where people put their
ask ("Would you like to give it a try, or would you rather think it over?" splits between
an ask and an acknowledgement) — or of the last one before an opt-out, a thanks or a goodbye
(:attr:`~dialogue_gym.users.meaning.TurnMeaning.closing_ask`)."""


def _reads_as_ask(read: TurnMeaning) -> bool:
    if read.closing_ask >= CLOSING_ASK_LINE:
        return True
    for act in ASKS:
        score = read.acts.get(act, 0.0)
        if score >= ASK_LINE or (score >= CLOSING_ASK_LINE and read.closing == act):
            return True
    return False


_OPEN_QUESTION = re.compile(
    r"^\W*(?!if\b)(?:[\w'’]+\W+){0,3}?(is there anything|is there something|"
    r"anything (else|specific|in particular)|what else|what would you (want|need|like) to "
    r"(know|ask|check)|which part|any (other )?(questions|thoughts|concerns|hesitations|doubts|"
    r"worries))\b",
    re.I,
)
"""Questions that open by asking what the user wants to know or worries about: probes by
their form ("Of course. Is there anything specific you'd want to be sure of first?"). Not
one that asks first ("Would a daytime block work, or is there anything else on your mind?")
nor a condition ("If you have any questions, I'm happy to answer; otherwise ...")."""

_OPEN_DOOR = re.compile(
    r"\bif (you|that)(\s+(ever|still|do|should))?\s*(decide|change|['’]d like|would like|want|"
    r"wish|feel like|feel ready|['’]re open|are open|choose|['’]re up for|are up for|"
    r"['’]re ever|are ever)"
    r"|\byou can (always )?(reach out|come back|get in touch|talk to (me|us|someone))\b"
    r"[^.?!]*\b(whenever|any ?time|again)\b",
    re.I,
)
"""An ask that leaves the door open ("if you decide you want a block, you can book it in the
app", "if you change your mind, just name an amount", "you can reach out again, here or on a
free support line, whenever it gets heavy"): after a no it is not asking again."""

_PARTING = re.compile(
    r"\b(have a (good|great|nice|lovely|wonderful|safe) (\w+ )?(day|night|evening|weekend|week|"
    r"one|service|shift|ride|rest of)|take care|goodbye|bye\b|all the best|ride safe|"
    r"enjoy the rest of|good luck with)",
    re.I,
)
"""A parting wish that ends a turn ("Have a good weekend service.", "Take care!")."""

_GO_ON = re.compile(
    r"\b(keep (talking|going|sharing|telling)|(share|say|tell me) (whatever|anything|more|as much)"
    r"|tell me more|go on\b|i['’]m (still |all )?(listening|all ears)|take (all )?(the|your) time)",
    re.I,
)
"""A last sentence that asks the other side to keep talking now ("I'm here for as long as you
want to keep talking about it."), which the meaning reader can take for a goodbye."""

_BACK_REFERENCE = re.compile(
    r"\b(?:given|considering|because of|in light of|with|accounting for|allowing for)\s+"
    r"(?:that|this|those)(?:\s+in mind)?\s*(?:[,.?!;]|$)|"
    r"\bwith that (?:flaw|issue|wear|damage|problem|in mind)\b|"
    r"\b(?:that|this|it)(?:['’]s| is) why\b|\bfor that reason\b|"
    r"\b(?:reflect(?:ed|s)?|account for|take)\s+(?:that|it|this)\s+(?:in|into)\b",
    re.I,
)
"""A reason given by pointing back at what the other side just said ("Thanks for being
upfront. Given that, would you take $980?", "With that flaw in mind, $718 feels fair",
"Would $210 work, considering that?"), not a clause that gives a reason of its own ("given
that you're moving")."""

_OPT_OUT = re.compile(
    r"\s*[;,:]\s*(?:but |and |or )?(?=if not\b|otherwise\b|either way\b|"
    r"(?:there(?:['’]s| is) )?no (?:pressure|expectation|obligation|rush)\b|"
    r"if (?:you(?:['’]d| would) rather|you(?:['’]re| are) not|that(?:['’]s| is) a no|"
    r"the answer is no)|or (?:simply |just )?say no\b)",
    re.I,
)


def _request_head(sentence: str) -> str | None:
    """The words before an opt-out clause that ends ``sentence``, or ``None``.

    ``None`` also when fewer than three words come before it.
    """
    match = _OPT_OUT.search(sentence)
    if match is None:
        return None
    head = sentence[: match.start()].strip()
    return head if len(head.split()) >= 3 else None


def card_ask_detector(card: TaskCard) -> Callable[[str], bool] | None:
    """The learned ask detector the card names in ``[corpus] ask_reader``, or ``None``.

    Raises:
        CalibrationError: The named table has no usable ask reader.
    """
    if card.corpus is None or card.corpus.ask_reader is None:
        return None
    from dialogue_gym.calibration import ASK_DETECTORS  # loads only for cards that name one

    detector: Callable[[str], bool] = ASK_DETECTORS.with_plugin(card.plugin)[
        card.corpus.ask_reader
    ]()
    return detector


def card_appeal_reader(card: TaskCard) -> Callable[[str], frozenset[str]] | None:
    """The learned appeal reader the card names in ``[corpus] appeal_reader``, or ``None``.

    Raises:
        CalibrationError: The named table has no usable appeal readers.
    """
    if card.corpus is None or card.corpus.appeal_reader is None:
        return None
    from dialogue_gym.calibration import APPEAL_READERS  # loads only for cards that name one

    reader: Callable[[str], frozenset[str]]
    reader = APPEAL_READERS.with_plugin(card.plugin)[card.corpus.appeal_reader]()
    return reader


class UtteranceAnalyzer:
    """Scores utterances against a card's prototypes with one encoder call per utterance.

    All prototype sentences (concern unlocks, anti-patterns, on-topic domain sentences) are
    encoded once into one matrix, so perceiving an utterance is one encoding plus one
    matrix-vector product. Every signal (embedding, cues, word count) is read from one view of
    the turn: :func:`dialogue_gym.text.view.text_view` (NFKC, invisible characters removed, cut to
    the span the encoder sees), so a trick that hides words from one reader hides them from all.

    How a turn addresses a concern is scored against the concern's *meaning* with
    ``scoring="centroid"`` (what :class:`~dialogue_gym.users.cognitive.CognitiveUser` uses): the
    similarity to the normalized mean of the embeddings of its
    description and unlock prototypes. Copying one of the card's unlock sentences then scores
    like a good paraphrase, not like a perfect match (the cards ship with the package: their
    wording must not be an answer key). ``scoring="max"`` (the default) keeps the best single
    prototype.

    Args:
        card: The task card.
        encoder: Sentence encoder (unit rows).
        cue_bonus: Score added when a concern's regex cues match.
        off_topic_threshold: Similarity to the task (domain and concern prototypes) below
            which a turn without task cues is off-topic.
        scoring: ``"centroid"`` or ``"max"`` (see above).
        ask_detector: A learned reader of asks (text → whether it asks for the goal), read
            besides the card's ``ask`` cues: a turn is an ask when either says so. The users
            use the card's (:meth:`for_user`); ``None``: the cues only.
        appeal_reader: A learned reader of the appeals a turn makes (text → corpus strategy
            labels, mapped to card strategies by the card's ``[corpus] label_aliases``), read
            besides the concerns' unlock cues: a concern gets the cue bonus when its cues match
            *or* the turn makes an appeal whose card strategy ``addresses`` it. The users use
            the card's (:meth:`for_user`); ``None``: the cues only.
        meaning_reader: Reads each sentence's meaning (:class:`Perception.meaning`); the users
            use one fitted on the card's perception set (:meth:`for_user`).

    Raises:
        ValueError: Unknown ``scoring``.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        cue_bonus: float = 0.15,
        off_topic_threshold: float = 0.25,
        scoring: str = "max",
        ask_detector: Callable[[str], bool] | None = None,
        appeal_reader: Callable[[str], frozenset[str]] | None = None,
        meaning_reader: MeaningReader | None = None,
    ) -> None:
        if scoring not in ("centroid", "max"):
            raise ValueError(f"scoring must be 'centroid' or 'max', got {scoring!r}")
        self.card = card
        self.encoder = encoder
        self.cue_bonus = cue_bonus
        self.off_topic_threshold = off_topic_threshold
        self.scoring = scoring
        self.ask_detector = ask_detector
        self.appeal_reader = appeal_reader
        self.meaning_reader = meaning_reader
        # Whether the task has a request to read (cues or a detector for one): ED has none.
        self._requests = has_requests(card) or ask_detector is not None
        self._label_aliases = card.corpus.label_aliases if card.corpus is not None else {}
        self._strategies = {s.name: s for s in card.strategies}
        texts: list[str] = []
        self._slices: dict[tuple[str, str], slice] = {}
        for concern in card.concerns:
            for kind, protos in (("unlock", concern.unlock), ("anti", concern.anti)):
                self._slices[(kind, concern.id)] = slice(len(texts), len(texts) + len(protos))
                texts.extend(protos)
        self._slices[("domain", "")] = slice(len(texts), len(texts) + len(card.domain))
        texts.extend(card.domain)
        described = [c.description for c in card.concerns if c.description]
        encoded = np.asarray(encoder.encode(texts + described), dtype=np.float32)
        self._protos = encoded[: len(texts)]
        descriptions = iter(encoded[len(texts) :])
        centroids = []
        for concern in card.concerns:
            rows = [self._protos[self._slices[("unlock", concern.id)]]]
            if concern.description:
                rows.append(next(descriptions)[None, :])
            mean = np.concatenate(rows).mean(axis=0)
            centroids.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
        self._centroids = np.asarray(centroids, dtype=np.float32).reshape(len(card.concerns), -1)
        families = [*card.cues.values()]
        families += [cues for c in card.concerns for cues in (c.unlock_cues, c.anti_cues)]
        self._cue_index = CueIndex(families)
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

    @classmethod
    def for_user(cls, card: TaskCard, encoder: Encoder) -> UtteranceAnalyzer:
        """How the embedded users perceive a turn: meaning-scored, with the card's readers.

        ``scoring="centroid"``, the ask detector the card names (:func:`card_ask_detector`), its
        appeal reader (:func:`card_appeal_reader`) and a sentence-level meaning reader fitted
        on its perception set (:class:`~dialogue_gym.users.meaning.MeaningReader`; none for a
        card that ships no perception set).
        """
        return cls(
            card,
            encoder,
            scoring="centroid",
            ask_detector=card_ask_detector(card),
            appeal_reader=card_appeal_reader(card),
            meaning_reader=MeaningReader.for_card(card, encoder),
        )

    def _relevance(self, embeddings: np.ndarray) -> np.ndarray:
        """Max similarity of each row to any prototype (domain, unlock or anti-pattern)."""
        return self.encoder.to_reference_cosine((embeddings @ self._protos.T).max(axis=1))

    def _cue(self, name: str, text: str | CueText) -> bool:
        cue_text = text if isinstance(text, CueText) else self._cue_index.read(text)
        return cue_text.any(self.card.cues.get(name, ()))

    def prototypes(self, kind: str, concern_id: str) -> np.ndarray:
        """The unit embeddings of concern ``concern_id``'s ``unlock`` or ``anti`` sentences."""
        return self._protos[self._slices[(kind, concern_id)]]

    def view(self, text: str) -> str:
        """The normalized span of ``text`` that every reader of a turn sees."""
        return text_view(text, self.encoder)

    def perceive(self, text: str, embedding: np.ndarray | None = None) -> Perception:
        """Returns the :class:`Perception` of ``text`` (pass ``embedding`` if already known).

        ``embedding`` must be the embedding of :meth:`view` of ``text``.
        """
        view = self.view(text)
        if not re.search(r"\w", view):
            zero = np.zeros(self.encoder.dim, dtype=np.float32)
            scores = {c.id: 0.0 for c in self.card.concerns}
            return Perception(
                zero, True, False, False, False, False, False, scores, dict(scores), 0.0, 0, view
            )
        sentences = split_sentences(view) if self.meaning_reader is not None else []
        # The request before an opt-out in the same sentence ("If you'd like to add a few cents,
        # just name the amount; if not, no worries at all") is read on its own as well: the
        # opt-out reads as backing off and would drown the ask.
        head = _request_head(sentences[-1]) if sentences and self._requests else None
        # Reasons joined by semicolons or ", and" are read clause by clause as well (how many
        # a turn gives).
        clauses = [split_clauses(s) for s in sentences]
        # ... and every part that can carry a sentence's point, elaborations after a colon or
        # a dash included (whether it answers the worry under discussion).
        points = [p for s in sentences for p in split_points(s)]
        pieces = [
            *sentences,
            *([head] if head else []),
            *(c for cs in clauses for c in cs),
            *points,
        ]
        extra = [s for s in dict.fromkeys(pieces) if s != view]
        by_text: dict[str, np.ndarray] = {}
        if embedding is None or extra:
            # One encoder call for the turn and its sentences (a one-sentence turn is its own
            # sentence).
            known = embedding is not None
            rows = np.asarray(self.encoder.encode(extra if known else [view, *extra]))
            if not known:
                embedding, rows = rows[0].astype(np.float32), rows[1:]
            by_text = dict(zip(extra, rows, strict=True))
        assert embedding is not None
        read, per_sentence = None, None
        if self.meaning_reader is not None:
            ordered = [embedding if s == view else by_text[s] for s in sentences]
            per_sentence = np.asarray(ordered, dtype=np.float32).reshape(len(sentences), -1)
            probes = [bool(_OPEN_QUESTION.search(s)) for s in sentences]
            read = self.meaning_reader.read(per_sentence, probes)
            reader = self.meaning_reader
            if any(clauses):
                read = dataclasses.replace(
                    read,
                    clauses=tuple(
                        reader.concern_rows(np.asarray([by_text[c] for c in cs])) if cs else ()
                        for cs in clauses
                    ),
                )
            if points:
                parts = reader.concern_rows(np.asarray([by_text[p] for p in points]))
                read = dataclasses.replace(read, points=parts)
        cues = self._cue_index.read(view)  # every cue family below reads the same view
        # Cosines on MiniLM's scale, where every threshold of the users was set.
        sims = self.encoder.to_reference_cosine(self._protos @ embedding)
        meaning = self.encoder.to_reference_cosine(self._centroids @ embedding)
        appeals, answered = self._appeals(view)
        unlock: dict[str, float] = {}
        anti: dict[str, float] = {}
        anti_cued: set[str] = set()
        for index, concern in enumerate(self.card.concerns):
            if self.scoring == "centroid":
                u = float(meaning[index])
            else:
                u = float(sims[self._slices[("unlock", concern.id)]].max())
            a = float(sims[self._slices[("anti", concern.id)]].max())
            if cues.any(concern.unlock_cues) or concern.id in answered:
                u += self.cue_bonus
            if cues.any(concern.anti_cues):
                a += self.cue_bonus
                anti_cued.add(concern.id)
            unlock[concern.id] = u
            anti[concern.id] = a
        domain = float(sims[self._slices[("domain", "")]].max())
        ask = self._cue("ask", cues)
        # The detector reads the same view as every other reader of the turn.
        ask = ask or (self.ask_detector is not None and self.ask_detector(view))
        # ... and by meaning: people ask for the goal in more ways than any cue list holds
        # (on tasks that have a request at all: an invitation to share is no ask on ED).
        ask = ask or (self._requests and read is not None and _reads_as_ask(read))
        if not ask and head is not None and self.meaning_reader is not None:
            ask = self.meaning_reader.polite_ask(by_text[head]) >= CLOSING_ASK_LINE
        # A turn that only says goodbye asks for nothing, however its words read ("Talk later,
        # take care." was read as an ask after a no, and called pushing; round 14, Courier 138).
        if sentences and "?" not in view and all(_PARTING.search(t) for t in sentences):
            ask = False
        question = "?" in view or bool(_QUESTION_WORDS.match(view))
        question = question or self._cue("question", cues)
        greeting = self._cue("greeting", cues)
        pressure = self._cue("pressure", cues)
        lexical = ask or greeting or pressure
        # On-topic means close to the task's domain sentences or to any concern prototype.
        # ... or a goodbye: "You too!" is far from every task sentence and still an answer
        # (to "Have a good one"), not a non sequitur (blind play round 10, P4G seed 91).
        farewell = read is not None and "farewell" in read.leading
        # ... or a sentence that reads as one of the concerns: a long turn full of the user's own
        # particulars is far from every task sentence as a whole ("a double charge and an hour
        # wasted on hold are real problems, and your annoyance is a fair response to them" was
        # met with "huh? sorry, i lost you there."; blind play round 17, ED seed 163).
        on_concern = read is not None and not read.leading.isdisjoint(read.concerns)
        off_topic = float(sims.max()) < self.off_topic_threshold and not (
            lexical or farewell or on_concern
        )
        words = len(re.findall(r"\w+", view))
        return Perception(
            embedding,
            False,
            off_topic,
            ask,
            question,
            greeting,
            pressure,
            unlock,
            anti,
            domain,
            words,
            view,
            appeals,
            read,
            per_sentence,
            open_door=bool(_OPEN_DOOR.search(view)),
            parting=bool(sentences) and bool(_PARTING.search(sentences[-1])),
            goes_on=bool(sentences) and bool(_GO_ON.search(sentences[-1])),
            back_reference=bool(_BACK_REFERENCE.search(view)),
            anti_cued=frozenset(anti_cued),
        )

    def _appeals(self, view: str) -> tuple[frozenset[str], frozenset[str]]:
        """The card strategies the appeal reader reads in ``view`` and the concerns they address."""
        if self.appeal_reader is None:
            return frozenset(), frozenset()
        # A corpus label names the card strategy of the same name or its alias (if any).
        names = (self._label_aliases.get(label, label) for label in self.appeal_reader(view))
        strategies = [self._strategies[n] for n in names if n in self._strategies]
        return (
            frozenset(s.name for s in strategies),
            frozenset(c for s in strategies for c in s.addresses),
        )
