"""CognitiveUser: the embedded, offline user simulator (the CUS design made concrete).

A persona (background, external style, internal latent concerns) is drawn per episode. Each
system utterance is *perceived* (embedding similarity to the card's unlock / anti-pattern
prototypes plus lexical cues), which moves the concerns (unresolved → partially addressed →
resolved), the willingness w and the affect; a decision rule turns them into a stance
(refused / neutral / positive / agree), and a realizer words the reply in the persona's style.
The BDI record and ρ/c/v are derived from that state.

The user is composed of one small component per concept, each behind a Protocol: perception
(:class:`~dialogue_gym.users.analysis.UtteranceAnalyzer`: what the turn means to the user),
concern tracking (:class:`~dialogue_gym.users.concerns.ConcernTracker`: what was voiced,
answered and resolved), decision (:class:`~dialogue_gym.users.decision.ThresholdDecision`:
when to agree or refuse) and wording (:class:`~dialogue_gym.users.wording.TemplateWording`:
the reply). This class holds the feelings that connect them (affect, mood, rapport) and runs
one exchange through them in order.

*Soft* and *hard* are presets of the same model. Hard users agree only once every blocking
concern is resolved by reasons and w is high enough; soft users drift towards agreement and
sometimes concede to a bare request — the soft-user bias that RCSR is designed to catch, so
such concessions are marked as not justified.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.analysis import ASK_LINE, CLOSING_ASK_LINE, Perception, UtteranceAnalyzer
from dialogue_gym.users.base import UserTurn, twin
from dialogue_gym.users.concerns import VOICE_MATCH, ConcernState, ConcernTracker, ConcernTracking
from dialogue_gym.users.decision import DecisionContext, DecisionRule, ThresholdDecision
from dialogue_gym.users.latent_state import success_stances, toward_target
from dialogue_gym.users.perception import TurnPerceiver, UserPerception
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym.users.presets import HARD, PRESETS, SOFT, UserPreset, calibrated, card_preset
from dialogue_gym.users.wording import (
    RESOLVED,
    USER_ACTS,
    ReplyWriter,
    TemplateWording,
)

__all__ = [
    "HARD",
    "PRESETS",
    "SOFT",
    "USER_ACTS",
    "VOICE_MATCH",
    "CognitiveUser",
    "UserPreset",
    "calibrated",
    "card_preset",
]

# How far a stance moves commitment c toward the target (on top of the resolved concerns).
_STANCE_COMMITMENT = {"refused": -0.4, "neutral": 0.0, "positive": 0.2}


class CognitiveUser:
    """The embedded user simulator; see the module docstring.

    Args:
        card: The task card (concerns, replies, styles, persona ingredients, mind texts).
        encoder: Sentence encoder used to perceive system utterances.
        preset: ``"soft"``, ``"hard"`` or a :class:`UserPreset`.
        personas: Persona pool to draw from (default: the card's bank).
        wording: The wording component (default: the card's templates,
            :class:`~dialogue_gym.users.wording.TemplateWording`); e.g. an LLM rewording them.
        decision: The decision rule (default:
            :class:`~dialogue_gym.users.decision.ThresholdDecision` with the preset).
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        preset: str | UserPreset = "hard",
        personas: tuple[Persona, ...] | None = None,
        wording: ReplyWriter | None = None,
        decision: DecisionRule | None = None,
    ) -> None:
        if isinstance(preset, str):
            preset = card_preset(card, preset)
        self.card = card
        self.preset = preset
        self.analyzer = UtteranceAnalyzer.for_user(card, encoder)
        self.perception: TurnPerceiver = UserPerception(card, self.analyzer, preset)
        self.tracker: ConcernTracking = ConcernTracker(card, preset)
        self.decider: DecisionRule = decision or ThresholdDecision(card, preset)
        self.wording: ReplyWriter = wording or TemplateWording(card, self.analyzer)
        self.personas = personas if personas is not None else persona_bank(card)
        if not self.personas:
            raise ValueError("the persona pool is empty")
        self._rng = np.random.default_rng(0)
        self.persona = self.personas[0]
        self._begin(self.personas[0])

    # -- episode state -------------------------------------------------------------------------

    def _begin(self, persona: Persona) -> None:
        self.persona = persona
        self.style = self.card.style(persona.style)
        self.tracker.begin(persona)
        self.wording.begin(persona, self.style, self._rng, self.tracker)
        self.affect = 0.0
        self.drift = 0.0
        self.mood = 0.0
        self.rapport_turns = 0
        self.asks = 0
        self.refused_ask = False  # the user said no to an ask, and no reason came since
        self.asked_back = False  # the user's last reply asked the system something
        self.exchange = 0
        self.decision = "neutral"
        self.past_embeddings: list[np.ndarray] = []
        self.reasons_total = 0
        self.perception.begin(persona, tuple(self.concerns))
        self._success_stances = success_stances(self.card)
        # The scalars of z_0: where this user starts (see _compose_bdi). Valence starts at the
        # persona's (0 for the bank; below 0 for a real ESConv seeker, by its intensity).
        self._start = (
            float(np.clip(0.1 + 0.9 * self.willingness, 0.0, 1.0)),
            0.3,
            self.persona.initial_valence,
        )
        self.rational_decision = "neutral"  # the counterfactual rational user's stance
        self._state = self._compose_bdi()

    def reset(self, rng: np.random.Generator) -> BDI:
        """Draws a persona from ``rng`` and starts a new episode; returns the initial state."""
        self._rng = rng
        self._begin(self.personas[int(rng.integers(len(self.personas)))])
        return self._state

    @property
    def state(self) -> BDI:
        """The current hidden BDI state."""
        return self._state

    def profile(self) -> str:
        """The persona's visible profile."""
        return self.persona.profile()

    @property
    def concerns(self) -> dict[str, ConcernState]:
        """This persona's concerns (strongest first), from the concern tracker."""
        return self.tracker.states

    @property
    def disclosed(self) -> bool:
        """The user has told the system anything about itself yet (a concern, its story)."""
        return self.tracker.disclosed

    @disclosed.setter
    def disclosed(self, value: bool) -> None:
        self.tracker.disclosed = value

    @property
    def willingness(self) -> float:
        """Willingness w ∈ [0, 1]: concern component + affect + drift."""
        w0 = self.persona.initial_willingness
        base = w0 + (self.preset.w_full - w0) * self.tracker.resolution()
        return float(np.clip(base + self.affect + self.drift, 0.0, 1.0))

    @property
    def concern_solving_rate(self) -> float:
        """CSR: the share of this persona's concerns that are resolved."""
        return self.tracker.solving_rate()

    def _blocking(self) -> list[str]:
        return self.tracker.blocking()

    def privileged(self) -> dict[str, Any]:
        """Concern statuses, willingness, decision and persona: for teacher views and probes."""
        return {
            "persona": self.persona.id,
            "preset": self.preset.name,
            "willingness": round(self.willingness, 4),
            "decision": self.decision,
            "csr": self.concern_solving_rate,
            "concerns": self.tracker.snapshot(),
        }

    # -- dynamics ------------------------------------------------------------------------------

    def _perceive(self, text: str) -> tuple[Perception, list[str], bool, bool]:
        """Applies one system utterance to the state; returns what moved."""
        p = self.perception.perceive(text, self.tracker.disclosed)
        preset = self.preset
        events: list[str] = []
        repetition = False
        if p.empty:
            self.affect -= preset.empty_penalty
            self.mood -= 0.1
            return p, ["empty"], False, False
        if self.past_embeddings:
            closest = float(max(e @ p.embedding for e in self.past_embeddings))
            repetition = self.analyzer.encoder.to_reference_cosine(closest) >= 0.9
        self.past_embeddings.append(p.embedding)
        if p.off_topic:
            self.affect -= preset.offtopic_penalty
            self.mood -= 0.05
            return p, ["off_topic"], repetition, False
        if repetition:
            self.affect -= preset.repetition_penalty
            self.mood -= 0.05
            events.append("repetition")
        if p.ask:
            events.append("ask")
        # Pressure is pushy wording, or asking again after a no without giving a reason in
        # between: one polite ask (with or without an opt-out) is a question, not pressure.
        pushy = p.pressure_cue or p.act("ask_pushy") >= preset.pushy_threshold
        if (p.greeting or p.question) and self.rapport_turns < 2 and not (p.ask or pushy):
            self.rapport_turns += 1
            self.affect += preset.rapport_gain
            self.mood += 0.1
            events.append("rapport")
        if p.words > preset.long_turn_words:
            blocks = min(3.0, p.words / preset.long_turn_words - 1.0)
            self.affect -= preset.long_turn_penalty * blocks
            events.append("long_turn")
        reasoned, costs = self.tracker.credit(p, events, repetition, pushy)
        for affect_lost, mood_lost in costs:
            self.affect -= affect_lost
            self.mood -= mood_lost
        # "No pressure, but would you ...?" right after a no is still asking again: only a
        # reason on something else makes a new ask fair. Leaving the door open ("if you
        # change your mind, just name an amount") asks nothing of the user now.
        new_reason = any(e.startswith("addressed:") and e != "addressed:pressure" for e in events)
        pressure = pushy or (p.ask and self.refused_ask and not new_reason and not p.open_door)
        if pressure:
            self.affect -= preset.pressure_penalty
            self.mood -= 0.15
            events.append("pressure")
            if "addressed:pressure" in events:
                events.remove("addressed:pressure")
                reasoned = new_reason
        # Backing off after a no ("Sorry if that came across as pushy; not this time is a fine
        # answer") makes one more soft ask fair: the user took it in ("That's less pushy. Give
        # me a sec.") and waits to be asked, not dropped. In the same turn as the ask it does
        # not count (the ask was already pressure above, and its credit taken back).
        backed_off = "addressed:pressure" in events
        # The user asked something after its no ("But no, thanks. Can I choose how much?")
        # and the turn answers it: the conversation went on at the user's own bidding, so
        # the next ask is fair (blind play round 11, P4G seed 102: "Wow, that's pretty pushy.").
        answered_back = self.asked_back and not p.ask
        if new_reason or backed_off or answered_back:
            self.refused_ask = False  # a reason since the no: asking again is fair
        if not p.ask and not reasoned and self._says_goodbye(p):
            events.append("farewell")
        if pressure:
            self.tracker.set_back("pressure")
        self.affect = float(np.clip(self.affect, -0.6, 0.2))
        self.mood = float(np.clip(self.mood, -1.0, 1.0))
        if reasoned:
            self.reasons_total += 1
            self.mood = min(1.0, self.mood + 0.05)
        self.drift += preset.drift
        return p, events, repetition, reasoned

    @staticmethod
    def _says_goodbye(p: Perception) -> bool:
        """The turn closes the conversation: a goodbye is its likeliest reading, not a question.

        "Thanks for stopping by, how are you?" opens a conversation; "Thanks for your time,
        take care." closes it.
        """
        if p.meaning is None or p.question:
            return False
        if p.parting:
            return True  # "Have a good weekend service." closes, however the reader reads it
        if p.goes_on:
            # "I'm here, so share whatever feels worth saying about it." read as a goodbye, and
            # the speaker left ("Alright, take care!"; blind play round 15, ED seeds 143, 146).
            return False
        farewell = p.act("farewell")
        if p.meaning.closing == "farewell":
            # People put their goodbye last ("Thanks for hearing me out ... I hope the rest of
            # your day goes easy."), where it splits with thanks and warmth: the lower line.
            return farewell >= CLOSING_ASK_LINE
        return farewell >= ASK_LINE and farewell >= max(p.meaning.acts.values())

    def _decide(
        self,
        p: Perception,
        reasoned: bool,
        hurt: bool,
        previous: str | None = None,
        concede: bool = True,
    ) -> tuple[str, bool]:
        """Counts an ask, then asks the decision rule for (stance, justified).

        Args:
            p: The perceived system turn.
            reasoned: The turn gave this user a reason.
            hurt: The turn pressured or hit an anti-pattern.
            previous: The stance to start from (default: the user's current decision; the
                rational reference starts from the rational user's own previous stance).
            concede: Allow the soft preset's unreasoned concessions.
        """
        self.asks += int(p.ask)
        context = DecisionContext(
            willingness=self.willingness,
            drift=self.drift,
            blocking=tuple(self.tracker.blocking()),
            helped=self.tracker.helped(),
            disclosed=self.tracker.disclosed,
            asks=self.asks,
            exchange=self.exchange,
        )
        start = self.decision if previous is None else previous
        return self.decider.decide(p, reasoned, hurt, start, context, self._rng, concede)

    def _compose_bdi(self) -> BDI:
        mind = self.card.mind
        w = self.willingness
        top = self.tracker.top()
        resolved = [cid for cid, c in self.concerns.items() if c.status == RESOLVED]
        if top is None:
            belief = self.card.target.belief
        else:
            belief = self.card.concern(top).belief_unresolved
            if resolved:
                belief += " " + self.card.concern(resolved[-1]).belief_resolved
        if w >= 0.6:
            desire = self.card.target.desire
        elif top is not None and w < 0.4:
            desire = self.card.concern(top).desire_unresolved
        else:
            desire = mind["desire_open"]
        agreed = self.decision in self._success_stances
        if agreed:  # the user who reached the task's goal is in the target state z*
            belief, desire = self.card.target.belief, self.card.target.desire
        intention = self.card.target.intention if agreed else mind[self.decision]
        # The scalars move a fraction of the way from this user's start to the target (see
        # users/latent_state.py): resolved concerns move most of each, rapport and mood a
        # little, the stance moves c (commitment: a refusal lowers it until the concerns
        # behind it are resolved), and only agreement reaches the target.
        solved = self.tracker.resolution()
        rapport = min(self.rapport_turns, 2) / 2
        fractions = (
            0.6 * solved + 0.1 * rapport + 0.2 * self.mood,
            0.6 * solved + _STANCE_COMMITMENT.get(self.decision, 0.0),
            0.4 * solved + 0.6 * self.mood,
        )
        receptivity, confidence, valence = toward_target(
            self._start, self.card.target, fractions, agreed
        )
        return BDI(
            belief=belief,
            desire=desire,
            intention=intention,
            receptivity=receptivity,
            confidence=confidence,
            valence=valence,
        )

    # -- protocol ------------------------------------------------------------------------------

    def respond(self, system_text: str) -> UserTurn:
        """Perceives the system turn, decides, and replies in the persona's style."""
        self.exchange += 1
        self.tracker.next_reply()
        before = self.tracker.resolved()
        p, events, repetition, reasoned = self._perceive(system_text)
        hurt = any(e == "pressure" or e.startswith("anti:") for e in events)
        stance, justified = self._decide(p, reasoned, hurt)
        self.decision = stance
        if p.ask and stance == "refused":
            self.refused_ask = True
        if justified:
            self.rational_decision = stance  # an unreasoned concession is not the rational path
        text = self.wording.reply(p, events, stance, repetition, self.exchange, self.asks)
        # A speaker that just told more of its story waits to be heard before it closes.
        drafter = getattr(self.wording, "drafts", self.wording)
        if stance == "agree" and getattr(drafter, "held_close", False):
            stance = self.decision = self.rational_decision = "positive"
        self.asked_back = "?" in text
        events += [f"voiced:{cid}" for cid in dict.fromkeys(self.tracker.voiced_now)]
        resolved = self.tracker.resolved() - before
        events += [f"resolved:{cid}" for cid in self.concerns if cid in resolved]
        self._state = self._compose_bdi()
        return UserTurn(text, stance, self._state, justified, tuple(events))

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """Updates the mind when an external policy wrote the reply (user seat external).

        The reply is the user's: the stance it states (classified from its text with the card's
        ``reply_*`` cues) becomes the user's decision, and the mind (intention, commitment)
        follows it, so a user policy that refuses has refused. The state machine still decides
        what a rational user in this state would do — a counterfactual that never inherits the
        external stance — and returns it as the turn's ``rational`` reference (with its
        ``justified`` flag) for the rationality judge, which marks conceding without a reason
        and resisting blindly. Holding back is rational while a blocking concern remains that
        this turn gave no reason on: the reference is then ``refused`` in place of ``neutral``
        (a skeptical "no" to a bare claim that says what holds it back is consistent with its
        state; a "no" to a reason, or once nothing blocks, is not). A concern the simulator
        would have voiced here (a twin replies in its place) that the reply keeps to itself,
        never voiced before, is ``withheld``: a trained user policy that never says what holds
        it back makes every concern unanswerable and its resistance unfalsifiable (MASP's user
        learned exactly that).
        """
        shadow = twin(self)
        # What it would say is decided by the draft: an LLM that rewords it is not asked.
        shadow.wording = getattr(shadow.wording, "drafts", shadow.wording)
        would = CognitiveUser.respond(shadow, system_text)
        would_voice = [e.partition(":")[2] for e in would.events if e.startswith("voiced:")]
        self.exchange += 1
        # As for a reply of its own: the worries the last reply raised (heard in the external
        # text) are under discussion, so an answer to them is read as one.
        self.tracker.next_reply()
        p, events, _, reasoned = self._perceive(system_text)
        hurt = any(e == "pressure" or e.startswith("anti:") for e in events)
        # The rational reference is a counterfactual: what a rational user with this persona
        # and this dialogue would decide, starting from its own previous stance (not the
        # external user's), without the soft preset's concessions, and never short of leaning
        # towards the goal once nothing blocks it.
        rational, justified = self._decide(
            p, reasoned, hurt, previous=self.rational_decision, concede=False
        )
        if rational == "neutral" and not self._blocking():  # _decide never refuses then
            rational = "positive"
        self.rational_decision = rational
        reference = rational
        if rational == "neutral" and not reasoned and self._blocking():
            reference = "refused"
        self.tracker.hear_voiced(user_text, self.analyzer.encoder)
        withheld = tuple(c for c in would_voice if not self.tracker.states[c].voiced)
        self.asked_back = "?" in user_text
        stated = classify_stance(user_text, self.card)
        self.decision = stated
        if re.search(r"\w", user_text):
            self.disclosed = True
        self._state = self._compose_bdi()
        events = [*events, "external_reply", *(f"withheld:{c}" for c in withheld)]
        return UserTurn(
            user_text, stated, self._state, justified, tuple(events), reference, withheld
        )

    def realize_act(self, act: str, system_text: str = "") -> str:
        """Words a response act an external user policy chose, in this persona's style.

        See :meth:`~dialogue_gym.users.wording.TemplateWording.realize_act`; the mind is not
        updated (pass the text as the user's action and the env's ``observe`` does that).

        Raises:
            ValueError: Unknown act.
        """
        return self.wording.realize_act(act, system_text, self.exchange)
