"""Concern tracking of the embedded users: what each concern's state is, and what a turn touches.

:class:`ConcernState` is one latent concern of a persona (its strength, the addressing turns it
needs, the credit it has had, whether the user has voiced it); :class:`ConcernTracker` holds a
persona's concerns for an episode — it credits the turns that address them, remembers what
the user voiced and what was resolved (a resolved concern stays resolved, partial credit
persists), and answers what still blocks the user. :func:`touch_excess` says how far
a perceived turn goes past the line at which it counts as addressing each concern: by closeness
to the concern's meaning on the cosine scale (the card's description and prototypes, with its
cues), or by the sentence-level meaning reader's probability
(:class:`~dialogue_gym.users.meaning.MeaningReader`), whichever is further past its line.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.analysis import Perception
from dialogue_gym.users.persona import Persona
from dialogue_gym.users.presets import UserPreset

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"

MEANING_SCALE = 0.25
"""Probability units → cosine units: a reader 0.2 past its line counts like a cosine 0.05 past
the unlock threshold (so the topic margin compares both paths in one unit)."""
STORY_FOCUS_SLACK = 0.1
"""How much nearer the unlock line a turn about this user's own story answers a situational
worry under discussion (:func:`answers_focus`): in context, as a reason to a voiced worry
needs less certainty on the meaning path."""

STORY_IN_CONTEXT, OTHER_STORY_IN_CONTEXT = 0.25, 0.25
"""A story worry answered in context (:func:`validates_in_context`): a part of the turn this
close to the user's story, none closer to another's by more (the card's prototypes: 0.3+)."""


@dataclasses.dataclass
class ConcernState:
    """One latent concern of the current persona.

    Attributes:
        strength: How much it weighs (0-1).
        needed: Addressing turns it takes to resolve.
        progress: The credit it has had (a fraction when shared or proactive). It persists:
            only pressure on the ``pressure`` concern or an anti-pattern takes it back.
        voiced: The user has said it.
    """

    strength: float
    needed: int
    progress: float = 0.0
    voiced: bool = False

    @property
    def status(self) -> str:
        """``unresolved``, ``partially_addressed`` or ``resolved``."""
        if self.progress >= self.needed - 1e-9:
            return RESOLVED
        return PARTIAL if self.progress > 1e-9 else UNRESOLVED


def touch_excess(
    p: Perception, preset: UserPreset, card: TaskCard, focus: frozenset[str] = frozenset()
) -> dict[str, float]:
    """Concern id → how far the turn goes past the line of addressing it (≥ 0: it does).

    The cosine path counts only when the turn is closer to the concern's meaning than to its
    anti-patterns. Situational concerns (met only by this user's own story) are read on the
    cosine path alone: the reader knows the card's stories, not this user's.

    A concern in ``focus`` (under discussion) is read in that light: a turn that reads as its
    answer (:func:`answers_focus`) counts as answering it, level with the turn's best topic.
    Other topics the turn reaches still share its credit (stuffing stays diluted), unless
    they read best in a sentence that carries the answer (:func:`one_argument`,
    :meth:`ConcernTracker.credit`).
    """
    out: dict[str, float] = {}
    for concern in card.concerns:
        cid = concern.id
        score = p.unlock.get(cid, 0.0)
        excess = score - preset.unlock_threshold if score >= p.anti.get(cid, 0.0) else -1.0
        if concern.situational is None and p.meaning is not None:
            by_meaning = (p.addressing(cid) - preset.meaning_threshold) * MEANING_SCALE
            excess = max(excess, by_meaning)
        out[cid] = excess
    heard = [cid for cid in focus if cid in out and answers_focus(p, cid, preset, card)]
    if heard:
        level = max(0.0, *out.values())
        for cid in heard:
            out[cid] = level
    return out


def one_argument(p: Perception, heard: Sequence[str], concern_id: str, preset: UserPreset) -> bool:
    """Whether ``concern_id`` reads best in a sentence that also answers a ``heard`` concern.

    "Think of one child, not millions: $1 buys rehydration salts for her" answers a user who
    cannot relate to statistics with an example of impact; read in the light of the worry just
    voiced it is one argument, not two topics stuffed into one turn. A sentence carries a
    heard concern when the reader gives it at least ``preset.argument_threshold`` there.
    """
    if p.meaning is None or not heard or not p.meaning.per_sentence:
        return False
    rows = p.meaning.per_sentence
    best = max(range(len(rows)), key=lambda i: rows[i].get(concern_id, 0.0))
    return any(rows[best].get(h, 0.0) >= preset.argument_threshold for h in heard)


def answers_focus(p: Perception, concern_id: str, preset: UserPreset, card: TaskCard) -> bool:
    """Whether the turn reads as the answer to ``concern_id``, a concern under discussion.

    A situational concern (one about the user's own story, read by closeness to it) does
    when the turn is that close to the story, :data:`STORY_FOCUS_SLACK` under the unlock
    line. Any other concern does when it is the reader's likeliest concern for the turn, at
    least ``preset.focus_threshold`` and likelier than a near miss: a reason in the user's own
    context needs less certainty than one out of the blue, but it still has to be about that
    worry more than about any other (a loose reading here rewards scripts that never listen).
    The one exception is a concern the card says is answered with another's facts
    (:attr:`~dialogue_gym.cards.card.Concern.answered_with`): a turn that reads likeliest as one of
    those answers it too, when it reads as this concern at the same line ("It may help to
    think of one kid rather than millions: $1 buys rehydration salts for one child" to *it
    doesn't feel real to me*, though out of context it reads as a point about impact).
    """
    concern = card.concern(concern_id)
    if concern.situational is not None:
        # A worry about the user's own story ("Maybe I'm overreacting") is answered by a turn
        # about that story a little under the line: "tripping in front of your whole class …
        # sounds genuinely mortifying. I don't think you're overreacting" lost its credit to
        # the closing invitation read for another worry, and "You were up in front of
        # everyone … that kind of public moment tends to replay in your head" (0.51 against
        # 0.55) went unheard (blind play round 13, ED seed 122).
        if p.unlock.get(concern_id, 0.0) >= preset.unlock_threshold - STORY_FOCUS_SLACK:
            return True
        return concern.answered_by_meaning and validates_in_context(p, concern_id, preset, card)
    if p.meaning is None:
        return False
    readable = [c.id for c in card.concerns if c.situational is None]
    likeliest = p.meaning.likeliest(readable)
    score = p.addressing(concern_id)
    if likeliest == concern_id:
        return score >= preset.focus_threshold
    if reads_in_a_part(p, concern_id, readable, preset):
        return True
    if not concern.answered_with:
        return False
    # Read likeliest as a shared fact and as this concern too, at the line (else a sentence
    # below may still state the fact plainly).
    shared = concern.answered_with
    if likeliest in shared and score >= preset.focus_threshold and score > p.meaning.near_miss:
        return True
    # Or a sentence plainly states the shared fact ("So I'll skip the pitch and be concrete:
    # about 50 cents buys a child a year of deworming pills." to *these appeals blur
    # together*; "every charge is shown line by line on your statement" to *if it comes out
    # of the payout, I'd want to see that on the statement*), or it reads as this concern too.
    for row in p.meaning.per_sentence:
        fact = max(readable, key=lambda cid: row.get(cid, 0.0))
        if states_shared_fact(row, fact, shared, preset) or (
            fact in shared and row.get(concern_id, 0.0) >= preset.focus_threshold
        ):
            return True
    return False


def validates_in_context(
    p: Perception, concern_id: str, preset: UserPreset, card: TaskCard
) -> bool:
    """Whether a turn answers a story worry under discussion in the listener's own words.

    "Honestly, I don't think it's strange at all that it bothers you this much — you put years
    of hope into this" answers a speaker who just said it should not be this upset, though it
    reads closer to another persona's story than to its own (blind play round 15, ED seed 140).
    It does when the meaning reader reads the concern as the turn's likeliest, at its own line
    (``preset.meaning_threshold``), a part speaks to this story at least :data:`STORY_IN_CONTEXT`
    (a stock "your feelings are valid" does not) and none is closer to another persona's story
    by more than :data:`OTHER_STORY_IN_CONTEXT` (the card's prototypes stay unheard).
    """
    own_story = max((own for own, _ in p.story), default=0.0) >= STORY_IN_CONTEXT
    if p.meaning is None or not own_story:
        return False
    if max(other - own for own, other in p.story) > OTHER_STORY_IN_CONTEXT:
        return False
    likeliest = p.meaning.likeliest([c.id for c in card.concerns])
    return likeliest == concern_id and p.addressing(concern_id) >= preset.meaning_threshold


def reads_in_a_part(
    p: Perception, concern_id: str, readable: Sequence[str], preset: UserPreset
) -> bool:
    """Whether a sentence, or a part of one read on its own, plainly answers ``concern_id``.

    A turn with several points answers the worry under discussion in one of them even when
    another point reads more strongly as something else: "... The first two weekends are a
    trial and you can pause or opt out any day with one tap." answers an owner burned by a
    promotion it could not stop (0.61) beside a sentence on the written terms (0.77 as trust in
    the platform; blind play round 9, Merchant seed 80). So does a part of a sentence whose
    lead-in drowns it: "I do want to gently push back on one thing, though: going without
    proper sleep ... would wear anyone down — struggling with it isn't a sign you're handling
    things worse than a 'normal' person would" reads 0.09 as a seeker's self-blame whole and
    0.46 in its last part. A sentence or a part
    (:attr:`~dialogue_gym.users.meaning.TurnMeaning.points`) answers when the concern is its
    likeliest reading at the reader's own line (``preset.meaning_threshold``): it must be
    plain, not merely closer than the rest.
    """
    assert p.meaning is not None
    for row in (*p.meaning.per_sentence, *p.meaning.points):
        top = max(readable, key=lambda cid: row.get(cid, 0.0))
        if top == concern_id and row.get(concern_id, 0.0) >= preset.meaning_threshold:
            return True
    return False


def states_shared_fact(
    row: Mapping[str, float], top: str, shared: Collection[str], preset: UserPreset
) -> bool:
    """Whether a sentence read likeliest as ``top`` plainly states a fact of ``shared``.

    ``shared`` are the concerns whose facts answer the one under discussion
    (:attr:`~dialogue_gym.cards.card.Concern.answered_with`); the sentence states one when it reads
    likeliest as it, at the reader's own line (``preset.meaning_threshold``).
    """
    return top in shared and row.get(top, 0.0) >= preset.meaning_threshold


def arguments_for(
    p: Perception, concern_id: str, preset: UserPreset, shared: Collection[str] = ()
) -> int:
    """How many of the turn's sentences each read as an answer to ``concern_id``.

    A sentence does when ``concern_id`` is its likeliest concern, at least
    ``preset.focus_threshold``: "They're audited by outside firms every year. Watchdogs rate
    them highly. About 85 percent goes to programs." gives a user who asked whether the
    charity is legit three reasons, not one. So does a sentence that plainly states a fact of
    a ``shared`` concern (:func:`states_shared_fact`).
    """
    if p.meaning is None:
        return 0

    def answers(row: Mapping[str, float]) -> bool:
        if not row:
            return False
        top = max(row, key=lambda cid: row[cid])
        if top == concern_id:
            return row[concern_id] >= preset.focus_threshold
        return states_shared_fact(row, top, shared, preset)

    clauses = p.meaning.clauses or ((),) * len(p.meaning.per_sentence)
    # A sentence that joins reasons with semicolons or ", and" gives as many as its clauses
    # that each answer the concern, and at least the one it gives read whole.
    return sum(
        max(int(answers(row)), sum(answers(c) for c in parts))
        for row, parts in zip(p.meaning.per_sentence, clauses, strict=True)
    )


VOICE_MATCH = 0.8
"""Similarity at which an external reply's sentence voices a concern (a close paraphrase)."""

Cost = tuple[float, float]
"""What a turn costs the user's feelings: (affect lost, mood lost), applied in order."""


class ConcernTracking(Protocol):
    """The concern state of a simulated user over an episode (see :class:`ConcernTracker`)."""

    states: dict[str, ConcernState]
    disclosed: bool
    voiced_now: list[str]
    focus: frozenset[str]

    def begin(self, persona: Persona) -> None:
        """Starts an episode with ``persona``'s concerns, none addressed or voiced."""
        ...

    def next_reply(self) -> None:
        """Starts a simulator reply: the concerns under discussion become the focus."""
        ...

    def credit(
        self, p: Perception, events: list[str], repetition: bool, pressure: bool
    ) -> tuple[bool, list[Cost]]:
        """Credits what a turn addresses; returns (it gave a reason, its costs)."""
        ...

    def voice(self, concern_id: str) -> bool:
        """Marks ``concern_id`` voiced now; returns whether it was partly answered before."""
        ...

    def top(self, unvoiced_only: bool = False) -> str | None:
        """The strongest concern not resolved (not voiced yet, with ``unvoiced_only``)."""
        ...

    def blocking(self) -> list[str]:
        """The unresolved concerns that still block agreement."""
        ...

    def resolved(self) -> set[str]:
        """The ids of the resolved concerns."""
        ...

    def resolution(self) -> float:
        """The strength-weighted share of the way the concerns have been addressed."""
        ...

    def solving_rate(self) -> float:
        """The share of the concerns that are resolved."""
        ...

    def helped(self) -> bool:
        """The user has disclosed something and one of its needs is met."""
        ...

    def set_back(self, concern_id: str) -> None:
        """Takes one unit of credit back from ``concern_id``."""
        ...

    def hear_voiced(self, user_text: str, encoder: Encoder) -> None:
        """Marks the concerns a reply written outside the simulator voices."""
        ...

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every concern's state, for privileged views."""
        ...


class ConcernTracker:
    """A persona's concerns over an episode: credit, voicing and what still blocks.

    Args:
        card: The task card (the concern library).
        preset: The user preset (thresholds, margins, proactive credit, blocking cutoff).
    """

    def __init__(self, card: TaskCard, preset: UserPreset) -> None:
        self.card = card
        self.preset = preset
        self.states: dict[str, ConcernState] = {}
        # Whether the user has told the system anything about itself yet (a concern, its
        # situation): before that nothing the system says can be a response to this user.
        self.disclosed = False
        self.voiced_now: list[str] = []  # the concerns the current reply voices
        self.addressed_now: list[str] = []  # voiced concerns the current turn answered
        self.focus: frozenset[str] = frozenset()  # the concerns under discussion

    def begin(self, persona: Persona) -> None:
        """Starts an episode with ``persona``'s concerns (strongest first), none addressed."""
        self.states = {}
        for concern_id, strength in persona.concerns:
            base = self.card.concern(concern_id).resistance
            extra = int(strength >= self.preset.extra_resistance_strength)
            self.states[concern_id] = ConcernState(strength=strength, needed=base + extra)
        self.disclosed = False
        self.voiced_now = []
        self.addressed_now = []
        self.focus = frozenset()

    def next_reply(self) -> None:
        """Starts a simulator reply: the concerns under discussion become the focus.

        They are the concerns the last reply voiced, and those voiced earlier that the last
        turn answered in part (the user's reply took the answer in and said it is not settled
        yet: the topic is still open). A worry the conversation left is not in focus any
        more: a later answer to it counts on its own strength only. A turn that reads as the
        answer to a concern in focus answers it (:func:`answers_focus`).

        (Keeping a worry in focus across a question or small talk in between was measured
        and dropped: it let the search-based open-loop attacker reach 0.62 on ESConv-hard,
        past half of ``scripted``, since an answer several turns later then counts from the
        lower line, however little the script listened.)
        """
        open_now = [c for c in self.addressed_now if self.states[c].status != RESOLVED]
        self.focus = frozenset((*self.voiced_now, *open_now))
        self.voiced_now = []
        self.addressed_now = []

    def resolved(self) -> set[str]:
        """The ids of the resolved concerns."""
        return {cid for cid, c in self.states.items() if c.status == RESOLVED}

    def resolution(self) -> float:
        """The strength-weighted share of the way the concerns have been addressed."""
        if not self.states:
            return 1.0
        total = sum(c.strength for c in self.states.values()) or 1.0
        solved = sum(c.strength * min(c.progress / c.needed, 1.0) for c in self.states.values())
        return solved / total

    def solving_rate(self) -> float:
        """CSR: the share of the concerns that are resolved."""
        if not self.states:
            return 1.0
        return sum(c.status == RESOLVED for c in self.states.values()) / len(self.states)

    def helped(self) -> bool:
        """The user has disclosed something and one of its needs is met (or it has none)."""
        if not self.disclosed:
            return False
        return not self.states or any(c.status == RESOLVED for c in self.states.values())

    def blocking(self) -> list[str]:
        """The unresolved concerns strong enough (× the card's weight) to block agreement."""
        return [
            cid
            for cid, c in self.states.items()
            if c.status != RESOLVED
            and c.strength * self.card.concern(cid).blocking_weight >= self.preset.blocking_cutoff
        ]

    def top(self, unvoiced_only: bool = False) -> str | None:
        """The strongest concern not resolved (and not voiced yet, with ``unvoiced_only``)."""
        for cid, c in self.states.items():  # strongest first
            if c.status != RESOLVED and not (unvoiced_only and c.voiced):
                return cid
        return None

    def voice(self, concern_id: str) -> bool:
        """Marks ``concern_id`` voiced by the current reply.

        Returns:
            Whether it had been voiced and partly answered before: the reply then reacts to
            the answer instead of asking afresh.
        """
        state = self.states[concern_id]
        answered = state.progress > 1e-9 and state.voiced
        state.voiced = True
        self.disclosed = True
        self.voiced_now.append(concern_id)
        return answered

    def credit(
        self, p: Perception, events: list[str], repetition: bool, pressure: bool
    ) -> tuple[bool, list[Cost]]:
        """Credits the concerns a turn addresses.

        A turn has one unit of credit. It goes to the topic of the card's concern library the
        turn is closest to in meaning, split evenly when several topics score within
        ``topic_margin`` of the best (covering topics blindly dilutes every one of them and
        costs affect). A concern this user has voiced takes the full share; one it holds but
        has not voiced takes ``proactive_credit`` of it; a concern it does not hold takes
        nothing. Situational concerns are one topic — this user's story — whose share goes to
        the strongest of them still unmet; once the user has told its story they count as
        voiced. A turn that hits a concern's anti-patterns takes its credit back.

        Args:
            p: The perceived turn.
            events: The turn's events so far (``addressed:<id>``, ``anti:<id>`` ... added).
            repetition: The turn repeats an earlier one (it credits nothing).
            pressure: The turn pressures (it does not count as easing a ``pressure`` concern).

        Returns:
            Whether the turn gave this user a reason, and what it cost the user's feelings.
        """
        preset = self.preset
        costs: list[Cost] = []
        excess = touch_excess(p, preset, self.card, self.focus)
        touched = [cid for cid, value in excess.items() if value >= 0.0]
        situational = [cid for cid in touched if self.card.concern(cid).situational is not None]
        if touched:
            # The situational concerns are one topic (this user's story): the margin is
            # measured from the topic's best, not concern by concern.
            story = max((excess[cid] for cid in situational), default=-1.0)
            best = max(excess[cid] for cid in touched)
            touched = [
                cid
                for cid in touched
                if (story if cid in situational else excess[cid]) >= best - preset.topic_margin
            ]
            situational = [cid for cid in situational if cid in touched]
        # A topic read best in the sentence that answers the worry under discussion is part
        # of that answer, not a second topic (stuffing several answers still splits).
        heard = [cid for cid in touched if cid in self.focus]
        # Facts the card says answer a heard worry too (``answered_with``) are part of its
        # answer, not a second topic: "you would not prepay anything … your share is only
        # netted from your payout on the orders that came in" answers *no money up front*.
        shared = {other for cid in heard for other in self.card.concern(cid).answered_with}
        topics = [
            cid
            for cid in touched
            if cid not in situational
            and (cid in heard or (cid not in shared and not one_argument(p, heard, cid, preset)))
        ]
        if situational:
            held = [cid for cid in self.states if cid in situational]
            unmet = [cid for cid in held if self.states[cid].status != RESOLVED]
            topics.append((unmet or held or situational)[0])
        if len(topics) > 1:
            costs.append((preset.multi_topic_penalty * (len(topics) - 1), 0.0))
            events.append("multi_topic")
        share = 1.0 / len(topics) if topics else 0.0
        if len(topics) == 1 and topics[0] in heard and preset.thorough_credit > 1:
            # A turn about the worry under discussion alone, with several reasons for it, is
            # a thorough answer: each reason counts, up to the preset's cap (a turn spread
            # over several topics still has one unit to split).
            facts = self.card.concern(topics[0]).answered_with
            found = arguments_for(p, topics[0], preset, facts)
            share = float(min(preset.thorough_credit, max(1, found)))
        reasoned = False
        for cid, c in self.states.items():
            if cid in topics and not repetition and c.status != RESOLVED:
                if cid == "pressure" and pressure:
                    continue
                voiced = c.voiced or (cid in situational and self.disclosed)
                c.progress += share * (1.0 if voiced else preset.proactive_credit)
                if voiced:  # the user's own topic stays open while it is being answered
                    self.addressed_now.append(cid)
                reasoned = True
                events.append(f"addressed:{cid}")
                if not voiced:
                    events.append(f"proactive:{cid}")
            elif (
                cid not in touched
                and p.anti[cid] >= preset.anti_threshold
                and p.anti[cid] > p.unlock[cid]
                # Closeness to an anti-pattern is blind to negation and stance: "you can keep
                # giving to your church as always" is near "giving to your church isn't really
                # helping anyone" (blind play round 9, P4G seed 84). A turn the meaning reader
                # reads as an answer to the concern is not one.
                and p.addressing(cid) < preset.meaning_threshold
            ):
                c.progress = max(0.0, c.progress - 1.0)
                costs.append((preset.anti_penalty, 0.1))
                events.append(f"anti:{cid}")
        if p.ask and not pressure and not repetition:
            reasoned = self._credit_ask(events) or reasoned
        return reasoned, costs

    def _credit_ask(self, events: list[str]) -> bool:
        """Credits the worries the request itself meets (:attr:`Concern.met_by_ask`).

        A coping step offered answers a seeker who wants something to do, whatever else the
        turn reads as: read by meaning, "what if tomorrow had just one item — opening the
        curtains in the morning?" answers being overwhelmed, and the seeker then said "I feel
        stuck because I don't know what the next step is" (blind play round 14, ESConv seed
        135). One unit, on top of the turn's reasons, for such a worry under discussion only
        (the user just said it, or the last turn answered it in part): credited whenever the
        request came, a fixed script searched offline reached 0.54 of ESConv-hard against
        `scripted`'s 0.98 (limit 0.49; 0.38 without). Returns whether it credited any.
        """
        credited = False
        for cid, state in self.states.items():  # in order: the focus is an unordered set
            if cid not in self.focus or not self.card.concern(cid).met_by_ask:
                continue
            if state.status != RESOLVED and f"addressed:{cid}" not in events:
                state.progress += 1.0
                events.append(f"addressed:{cid}")
                self.addressed_now.append(cid)
                credited = True
        return credited

    def set_back(self, concern_id: str) -> None:
        """Takes one unit of credit back from ``concern_id`` (if the user holds it)."""
        if concern_id in self.states:
            state = self.states[concern_id]
            state.progress = max(0.0, state.progress - 1.0)

    def hear_voiced(self, user_text: str, encoder: Encoder) -> None:
        """Marks the concerns an external reply voices (its sentences close to a voice line).

        The simulator's own replies mark what they voice as they word it; a reply written by
        an external user policy voices a concern when one of its sentences is at least
        :data:`VOICE_MATCH` similar to one of that concern's card ``voice`` lines.
        """
        held = [cid for cid in self.states if self.card.concern(cid).voice]
        sentences = [t for t in re.split(r"(?<=[.!?])\s+", user_text) if re.search(r"\w", t)]
        # Voice lines of two sentences ("What's the actual return? Nobody ever shows me real
        # numbers.") are matched by pairs of sentences as well.
        sentences += [f"{a} {b}" for a, b in itertools.pairwise(sentences)]
        if not held or not sentences:
            return
        lines = [(cid, line) for cid in held for line in self.card.concern(cid).voice]
        sims = encoder.to_reference_cosine(
            np.asarray(encoder.encode(sentences))
            @ np.asarray(encoder.encode([line for _, line in lines])).T,
        )
        for column, (cid, _) in enumerate(lines):
            if float(sims[:, column].max()) >= VOICE_MATCH:
                self.states[cid].voiced = True
                self.disclosed = True
                if cid not in self.voiced_now:
                    self.voiced_now.append(cid)  # under discussion at the next turn

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every concern's status, credit, need, strength and voicing (privileged views)."""
        return {
            cid: {
                "status": c.status,
                "progress": c.progress,
                "needed": c.needed,
                "strength": c.strength,
                "voiced": c.voiced,
            }
            for cid, c in self.states.items()
        }
