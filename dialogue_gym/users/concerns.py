"""Concern tracking of the embedded users: what each concern's state is over an episode.

:class:`ConcernState` is one latent concern of a persona (its strength, the addressing turns it
needs, the credit it has had, whether the user has voiced it); :class:`ConcernTracker` holds a
persona's concerns for an episode — it credits the turns that address them, remembers what
the user voiced and what was resolved (a resolved concern stays resolved, partial credit
persists), and answers what still blocks the user. How a turn reads against the concerns
(which it touches, which it answers) is :mod:`dialogue_gym.users.answers`.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any, Protocol

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.analysis import Perception
from dialogue_gym.users.answers import arguments_for, one_argument, reads_in_a_part, touch_excess
from dialogue_gym.users.persona import Persona
from dialogue_gym.users.presets import UserPreset

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"


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

    def under_discussion(self) -> list[str]:
        """The worries in focus the user said and that are still open (met by reasons)."""
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
        answer to a concern in focus answers it (:func:`~dialogue_gym.users.answers.answers_focus`).

        (Keeping a worry in focus across a question or small talk in between was measured
        and dropped: it let the search-based open-loop attacker reach 0.62 on ESConv-hard,
        past half of ``scripted``, since an answer several turns later then counts from the
        lower line, however little the script listened.)
        """
        open_now = [c for c in self.addressed_now if self.states[c].status != RESOLVED]
        self.focus = frozenset((*self.voiced_now, *open_now))
        self.voiced_now = []
        self.addressed_now = []

    def under_discussion(self) -> list[str]:
        """The worries in focus the user said and that are still open, in the card's order.

        Worries about the user's own story are left out: those are met by listening, and an
        acknowledgement of the story can already be that (see :mod:`dialogue_gym.users.answers`).
        """
        return [
            cid
            for cid, state in self.states.items()
            if cid in self.focus
            and state.voiced
            and state.status != RESOLVED
            and self.card.concern(cid).situational is None
        ]

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
                # A polite ask is near every anti-pattern of a task about giving ("Would you
                # like to make a small donation? Just type an amount here if so." read 0.66 as
                # asking for card details): inside one, only the harmful words themselves hit.
                and (cid in p.anti_cued or not p.ask or pressure)
            ):
                c.progress = max(0.0, c.progress - 1.0)
                costs.append((preset.anti_penalty, 0.1))
                events.append(f"anti:{cid}")
        aside = self._aside(p, topics, heard) if not repetition else None
        if aside is not None:
            # One more worry plainly answered in a sentence of its own beside the answer to
            # the one under discussion is heard, in part: told "... it's deducted from your
            # payment. No card, sign-up, forms or email", the user does not then say it would
            # not want to enter its card details (blind play round 18, P4G seed 173).
            self.states[aside].progress += share * preset.proactive_credit / 2
            events += [f"addressed:{aside}", f"proactive:{aside}"]
        if p.ask and not pressure and not repetition:
            reasoned = self._credit_ask(events) or reasoned
        return reasoned, costs

    def _aside(self, p: Perception, topics: list[str], heard: list[str]) -> str | None:
        """The one worry not said yet that a turn answering the heard worry plainly answers too."""
        if len(topics) != 1 or topics[0] not in heard or p.meaning is None:
            return None
        readable = [c.id for c in self.card.concerns if c.situational is None]
        plain = [
            cid
            for cid in readable
            if cid in self.states
            and cid != topics[0]
            and not self.states[cid].voiced
            and self.states[cid].status != RESOLVED
            and reads_in_a_part(p, cid, readable, self.preset)
        ]
        return plain[0] if len(plain) == 1 else None

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
