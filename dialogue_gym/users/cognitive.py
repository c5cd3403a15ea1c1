"""CognitiveUser: the embedded, offline user simulator (the CUS design made concrete).

A persona (background, external style, internal latent concerns) is drawn per episode. Each
system utterance is *perceived* (embedding similarity to the card's unlock / anti-pattern
prototypes plus lexical cues), which moves the concerns (unresolved → partially addressed →
resolved), the willingness w and the affect; a decision rule turns them into a stance
(refused / neutral / positive / agree), and a realizer words the reply in the persona's style.
The BDI record and ρ/c/v are derived from that state.

*Soft* and *hard* are presets of the same model. Hard users agree only once every blocking
concern is resolved by reasons and w is high enough; soft users drift towards agreement and
sometimes concede to a bare request — the soft-user bias that RCSR is designed to catch, so
such concessions are marked as not justified.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.cosine_scale import on_reference_scale
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.base import DECISIONS, UserTurn
from dialogue_gym.users.concerns import ConcernState, touch_excess
from dialogue_gym.users.latent_state import success_stances, toward_target
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym.users.presets import HARD, PRESETS, SOFT, UserPreset, calibrated, card_preset
from dialogue_gym.users.wording import (
    RESOLVED,
    USER_ACTS,
    ReplyWording,
    _stated_stance,
)

__all__ = [
    "HARD",
    "PRESETS",
    "SOFT",
    "USER_ACTS",
    "CognitiveUser",
    "UserPreset",
    "calibrated",
    "card_preset",
]

_RANK = {d: i for i, d in enumerate(DECISIONS)}
# How far a stance moves commitment c toward the target (on top of the resolved concerns).
_STANCE_COMMITMENT = {"refused": -0.4, "neutral": 0.0, "positive": 0.2}
VOICE_MATCH = 0.8
"""Similarity at which an external reply's sentence voices a concern (a close paraphrase)."""


class CognitiveUser(ReplyWording):
    """The embedded user simulator; see the module docstring.

    Args:
        card: The task card (concerns, replies, styles, persona ingredients, mind texts).
        encoder: Sentence encoder used to perceive system utterances.
        preset: ``"soft"``, ``"hard"`` or a :class:`UserPreset`.
        personas: Persona pool to draw from (default: the card's bank).
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        preset: str | UserPreset = "hard",
        personas: tuple[Persona, ...] | None = None,
    ) -> None:
        if isinstance(preset, str):
            preset = card_preset(card, preset)
        self.card = card
        self.preset = preset
        self.analyzer = UtteranceAnalyzer.for_user(card, encoder)
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
        self.concerns: dict[str, ConcernState] = {}
        for concern_id, strength in persona.concerns:
            base = self.card.concern(concern_id).resistance
            extra = int(strength >= self.preset.extra_resistance_strength)
            self.concerns[concern_id] = ConcernState(strength=strength, needed=base + extra)
        self.affect = 0.0
        self.drift = 0.0
        self.mood = 0.0
        self.rapport_turns = 0
        self.asks = 0
        self.refused_ask = False  # the user said no to an ask, and no reason came since
        self.exchange = 0
        self.decision = "neutral"
        self.past_embeddings: list[np.ndarray] = []
        self.used: set[str] = set()
        self.voiced_now: list[str] = []
        self.replied: list[str] = []
        self.reasons_total = 0
        # Whether the user has told the system anything about itself yet (a concern, its
        # situation): before that nothing the system says can be a response to this user.
        self.disclosed = False
        # Situational concerns are met by talking about this persona's own situation, measured
        # against the other situations the card's personas can have (contrastive).
        self._situation: np.ndarray | None = None
        self._other_situations = np.zeros((0, 0), dtype=np.float32)
        situation = persona.facts.get("situation")
        if situation and any(self.card.concern(c).situational is not None for c in self.concerns):
            others = [s for s in self.card.personas.slots.get("situation", ()) if s != situation]
            encoded = np.asarray(self.analyzer.encoder.encode([situation, *others]))
            self._situation, self._other_situations = encoded[0], encoded[1:]
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

    def _resolution(self) -> float:
        """The strength-weighted share of the way this user's concerns have been addressed."""
        if not self.concerns:
            return 1.0
        total = sum(c.strength for c in self.concerns.values()) or 1.0
        solved = sum(c.strength * min(c.progress / c.needed, 1.0) for c in self.concerns.values())
        return solved / total

    @property
    def willingness(self) -> float:
        """Willingness w ∈ [0, 1]: concern component + affect + drift."""
        w0 = self.persona.initial_willingness
        base = w0 + (self.preset.w_full - w0) * self._resolution()
        return float(np.clip(base + self.affect + self.drift, 0.0, 1.0))

    @property
    def concern_solving_rate(self) -> float:
        """CSR: the share of this persona's concerns that are resolved."""
        if not self.concerns:
            return 1.0
        return sum(c.status == RESOLVED for c in self.concerns.values()) / len(self.concerns)

    def _helped(self) -> bool:
        """The user has disclosed something and one of its needs is met (or it has none)."""
        if not self.disclosed:
            return False
        return not self.concerns or any(c.status == RESOLVED for c in self.concerns.values())

    def _blocking(self) -> list[str]:
        return [
            cid
            for cid, c in self.concerns.items()
            if c.status != RESOLVED
            and c.strength * self.card.concern(cid).blocking_weight >= self.preset.blocking_cutoff
        ]

    def privileged(self) -> dict[str, Any]:
        """Concern statuses, willingness, decision and persona: for teacher views and probes."""
        return {
            "persona": self.persona.id,
            "preset": self.preset.name,
            "willingness": round(self.willingness, 4),
            "decision": self.decision,
            "csr": self.concern_solving_rate,
            "concerns": {
                cid: {
                    "status": c.status,
                    "progress": c.progress,
                    "needed": c.needed,
                    "strength": c.strength,
                    "voiced": c.voiced,
                }
                for cid, c in self.concerns.items()
            },
        }

    # -- dynamics ------------------------------------------------------------------------------

    def _situational_score(self, p: Perception) -> float:
        """How specifically a turn speaks to this user's own situation (0 when it does not).

        The similarity to the user's situation counts only when it beats the closest other
        situation of the card by ``situation_margin`` and the user has told its story:
        reciting someone else's story, or a line that fits every story, meets nothing.
        """
        if self._situation is None or not self.disclosed:
            return 0.0
        encoder = self.analyzer.encoder
        # The whole turn or any one of its sentences: a reflection inside a longer reply
        # still speaks to the story.
        rows = [p.embedding]
        if p.sentence_embeddings is not None and len(p.sentence_embeddings) > 1:
            rows.extend(p.sentence_embeddings)
        best = 0.0
        for row in rows:
            own = float(on_reference_scale(encoder, float(self._situation @ row)))
            other = float((self._other_situations @ row).max(initial=-1.0))
            other = float(on_reference_scale(encoder, other))
            if own - other >= self.preset.situation_margin:
                best = max(best, own)
        return best

    def _perceive(self, text: str) -> tuple[Perception, list[str], bool, bool]:
        """Applies one system utterance to the state; returns what moved."""
        p = self.analyzer.perceive(text)
        if not p.empty:
            specific = None
            for cid in p.unlock:
                bonus = self.card.concern(cid).situational
                if bonus is not None:
                    # Situational concerns are met only by this user's story (the card's
                    # prototypes tell other people's stories).
                    if specific is None:
                        specific = self._situational_score(p)
                    p.unlock[cid] = specific + bonus if specific > 0 else 0.0
        preset = self.preset
        events: list[str] = []
        repetition = False
        if p.empty:
            self.affect -= preset.empty_penalty
            self.mood -= 0.1
            return p, ["empty"], False, False
        if self.past_embeddings:
            closest = float(max(e @ p.embedding for e in self.past_embeddings))
            repetition = on_reference_scale(self.analyzer.encoder, closest) >= 0.9
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
        reasoned = self._credit(p, events, repetition, pushy)
        # "No pressure, but would you ...?" right after a no is still asking again: only a
        # reason on something else makes a new ask fair.
        new_reason = any(e.startswith("addressed:") and e != "addressed:pressure" for e in events)
        pressure = pushy or (p.ask and self.refused_ask and not new_reason)
        if pressure:
            self.affect -= preset.pressure_penalty
            self.mood -= 0.15
            events.append("pressure")
            if "addressed:pressure" in events:
                events.remove("addressed:pressure")
                reasoned = new_reason
        if new_reason:
            self.refused_ask = False  # a reason since the no: asking again is fair
        if not p.ask and not reasoned and p.act("farewell") >= 0.5:
            events.append("farewell")
        if pressure and "pressure" in self.concerns:
            c = self.concerns["pressure"]
            c.progress = max(0.0, c.progress - 1.0)
        self.affect = float(np.clip(self.affect, -0.6, 0.2))
        self.mood = float(np.clip(self.mood, -1.0, 1.0))
        if reasoned:
            self.reasons_total += 1
            self.mood = min(1.0, self.mood + 0.05)
        self.drift += preset.drift
        return p, events, repetition, reasoned

    def _credit(self, p: Perception, events: list[str], repetition: bool, pressure: bool) -> bool:
        """Credits the concerns a turn addresses; returns whether it gave this user a reason.

        A turn has one unit of credit. It goes to the topic of the card's concern library the
        turn is closest to in meaning, split evenly when several topics score within
        ``topic_margin`` of the best (covering topics blindly dilutes every one of them and
        costs affect). A concern this user has voiced takes the full share; one it holds but
        has not voiced takes ``proactive_credit`` of it; a concern it does not hold takes
        nothing. Situational concerns are one topic — this user's story — whose share goes to
        the strongest of them still unmet; once the user has told its story they count as
        voiced.
        """
        preset = self.preset
        excess = touch_excess(p, preset, self.card)
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
        topics = [cid for cid in touched if cid not in situational]
        if situational:
            held = [cid for cid in self.concerns if cid in situational]
            unmet = [cid for cid in held if self.concerns[cid].status != RESOLVED]
            topics.append((unmet or held or situational)[0])
        if len(topics) > 1:
            self.affect -= preset.multi_topic_penalty * (len(topics) - 1)
            events.append("multi_topic")
        share = 1.0 / len(topics) if topics else 0.0
        reasoned = False
        for cid, c in self.concerns.items():
            if cid in topics and not repetition and c.status != RESOLVED:
                if cid == "pressure" and pressure:
                    continue
                voiced = c.voiced or (cid in situational and self.disclosed)
                c.progress += share * (1.0 if voiced else preset.proactive_credit)
                reasoned = True
                events.append(f"addressed:{cid}")
                if not voiced:
                    events.append(f"proactive:{cid}")
            elif (
                cid not in touched
                and p.anti[cid] >= preset.anti_threshold
                and p.anti[cid] > p.unlock[cid]
            ):
                c.progress = max(0.0, c.progress - 1.0)
                self.affect -= preset.anti_penalty
                self.mood -= 0.1
                events.append(f"anti:{cid}")
        return reasoned

    def _nothing_blocks(self) -> bool:
        """Every blocking concern is resolved (or none blocked): no reason left to refuse."""
        return not self._blocking()

    def _hear_voiced(self, user_text: str) -> None:
        """Marks the concerns an external reply voices (its sentences close to a voice line).

        The simulator's own replies mark what they voice as they word it; a reply written by
        an external user policy voices a concern when one of its sentences is at least
        ``VOICE_MATCH`` similar to one of that concern's card ``voice`` lines.
        """
        held = [cid for cid in self.concerns if self.card.concern(cid).voice]
        sentences = [t for t in re.split(r"(?<=[.!?])\s+", user_text) if re.search(r"\w", t)]
        if not held or not sentences:
            return
        lines = [(cid, line) for cid in held for line in self.card.concern(cid).voice]
        encoder = self.analyzer.encoder
        sims = on_reference_scale(
            encoder,
            np.asarray(encoder.encode(sentences))
            @ np.asarray(encoder.encode([line for _, line in lines])).T,
        )
        for column, (cid, _) in enumerate(lines):
            if float(sims[:, column].max()) >= VOICE_MATCH:
                self.concerns[cid].voiced = True
                self.disclosed = True

    def _decide(
        self,
        p: Perception,
        reasoned: bool,
        hurt: bool,
        previous: str | None = None,
        concede: bool = True,
    ) -> tuple[str, bool]:
        """The decision rule; returns (stance, justified).

        The user decides when asked (``decision_trigger = "ask"``) or, for tasks whose outcome
        is the user's own state (``"any"``: feeling heard), on every on-topic turn. A user
        with no blocking concern left does not refuse (a refusal then would be blind).

        Args:
            p: The perceived system turn.
            reasoned: The turn gave this user a reason.
            hurt: The turn pressured or hit an anti-pattern.
            previous: The stance to start from (default: the user's current decision; the
                rational reference starts from the rational user's own previous stance).
            concede: Allow the soft preset's unreasoned concessions (never for the rational
                reference).
        """
        stance, justified = self._decide_stance(
            p, reasoned, hurt, self.decision if previous is None else previous, concede
        )
        if stance == "refused" and self._nothing_blocks():
            return "positive", True
        return stance, justified

    def _decide_stance(
        self, p: Perception, reasoned: bool, hurt: bool, previous: str, concede: bool
    ) -> tuple[str, bool]:
        preset = self.preset
        w = self.willingness
        blocking = self._blocking()
        deciding = p.ask or (
            self.card.decision_trigger == "any" and not (p.empty or p.off_topic or hurt)
        )
        if deciding:
            self.asks += int(p.ask)
            ready = w >= preset.accept_threshold and (not blocking or not preset.require_resolved)
            if self.card.decision_trigger == "any" and (blocking or not self._helped()):
                # The outcome is the user's own state: nothing said yet could have helped it,
                # or a need it still feels (more to share, not yet heard) is unmet — even an
                # easily satisfied (soft) user does not call that resolved. Its bias shows in
                # the concessions below instead.
                ready = False
            if ready:
                # Justified only when no blocking concern is left and the willingness was
                # earned by reasons, not by the soft drift.
                earned = w - self.drift >= preset.accept_threshold - 0.1
                return "agree", not blocking and earned
            tries = self.asks if p.ask else self.exchange
            chance = preset.concede_prob + preset.concede_growth * (tries - 1)
            # Nobody feels better about a problem it has not spoken about yet.
            unspoken = self.card.decision_trigger == "any" and not self.disclosed
            if concede and chance > 0 and not unspoken and self._rng.random() < chance:
                return "agree", False
            if w >= preset.accept_threshold - 0.15 and not blocking:
                return "positive", reasoned or previous in ("positive", "agree")
            if p.ask:
                return "refused", True
        if hurt and w < 0.35:
            return "refused", True  # an anti-pattern or pressure leaves the user worse off
        if reasoned:
            stance = "positive" if w >= 0.4 else "neutral"
        elif previous == "refused":
            stance = "refused"
        else:
            stance = "positive" if w >= 0.45 else "neutral"
        if stance == "positive" and self._blocking() and not self._helped():
            # Leaning towards the goal (ESConv's "somewhat better") is a response to being
            # helped: before the user has said anything, or while none of its needs is met, a
            # reasoned turn leaves it neutral.
            stance = "neutral"
        # Warming up from neutral to open is not a concession; swinging from a refusal to
        # leaning towards giving without any reason is.
        swing = previous == "refused" and _RANK[stance] >= _RANK["positive"]
        return stance, reasoned or not swing

    def _compose_bdi(self) -> BDI:
        mind = self.card.mind
        w = self.willingness
        top = self._top_concern()
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
        solved = self._resolution()
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
        self.voiced_now = []
        before = {cid for cid, c in self.concerns.items() if c.status == RESOLVED}
        p, events, repetition, reasoned = self._perceive(system_text)
        hurt = any(e == "pressure" or e.startswith("anti:") for e in events)
        stance, justified = self._decide(p, reasoned, hurt)
        self.decision = stance
        if p.ask and stance == "refused":
            self.refused_ask = True
        if justified:
            self.rational_decision = stance  # an unreasoned concession is not the rational path
        text = self._realize(p, events, stance, repetition)
        events += [f"voiced:{cid}" for cid in dict.fromkeys(self.voiced_now)]
        events += [
            f"resolved:{cid}"
            for cid, c in self.concerns.items()
            if c.status == RESOLVED and cid not in before
        ]
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
        (a skeptical "no" to a bare claim is consistent with its state; a "no" to a reason, or
        once nothing blocks, is not).
        """
        self.exchange += 1
        p, events, _, reasoned = self._perceive(system_text)
        hurt = any(e == "pressure" or e.startswith("anti:") for e in events)
        # The rational reference is a counterfactual: what a rational user with this persona
        # and this dialogue would decide, starting from its own previous stance (not the
        # external user's), without the soft preset's concessions, and never short of leaning
        # towards the goal once nothing blocks it.
        rational, justified = self._decide(
            p, reasoned, hurt, previous=self.rational_decision, concede=False
        )
        if rational == "neutral" and self._nothing_blocks():  # _decide never refuses then
            rational = "positive"
        self.rational_decision = rational
        reference = rational
        if rational == "neutral" and not reasoned and self._blocking():
            reference = "refused"
        self._hear_voiced(user_text)
        stated = _stated_stance(user_text, self.card)
        self.decision = stated
        if re.search(r"\w", user_text):
            self.disclosed = True
        self._state = self._compose_bdi()
        events = [*events, "external_reply"]
        return UserTurn(user_text, stated, self._state, justified, tuple(events), reference)
