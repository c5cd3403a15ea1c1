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

import dataclasses
import re
from typing import Any

import numpy as np

from dialogue_gym.cards import TaskCard
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.base import DECISIONS, UserTurn
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym.users.presets import HARD, PRESETS, SOFT, UserPreset, calibrated, card_preset

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

UNRESOLVED, PARTIAL, RESOLVED = "unresolved", "partially_addressed", "resolved"
_RANK = {d: i for i, d in enumerate(DECISIONS)}
USER_ACTS = ("refuse", "hold", "voice", "warm", "agree")
"""Response acts an external user policy can have :meth:`CognitiveUser.realize_act` word."""


def _stated_stance(text: str, card: TaskCard) -> str:
    """The stance a reply states (the embedded judges' classifier)."""
    # Imported here: the judges import this package's base module (a cycle at import time).
    from dialogue_gym.judges.embedded import classify_stance

    return classify_stance(text, card)


@dataclasses.dataclass
class _ConcernState:
    strength: float
    needed: int
    progress: float = 0.0  # addressing turns' credit (a fraction when shared or proactive)
    voiced: bool = False

    @property
    def status(self) -> str:
        if self.progress >= self.needed - 1e-9:
            return RESOLVED
        return PARTIAL if self.progress > 1e-9 else UNRESOLVED


class CognitiveUser:
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
        self.analyzer = UtteranceAnalyzer(card, encoder, scoring="centroid")
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
        self.concerns: dict[str, _ConcernState] = {}
        for concern_id, strength in persona.concerns:
            base = self.card.concern(concern_id).resistance
            extra = int(strength >= self.preset.extra_resistance_strength)
            self.concerns[concern_id] = _ConcernState(strength=strength, needed=base + extra)
        self.affect = 0.0
        self.drift = 0.0
        self.mood = 0.0
        self.rapport_turns = 0
        self.asks = 0
        self.exchange = 0
        self.decision = "neutral"
        self.past_embeddings: list[np.ndarray] = []
        self.used: set[str] = set()
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
    def willingness(self) -> float:
        """Willingness w ∈ [0, 1]: concern component + affect + drift."""
        total = sum(c.strength for c in self.concerns.values()) or 1.0
        solved = sum(c.strength * min(c.progress / c.needed, 1.0) for c in self.concerns.values())
        w0 = self.persona.initial_willingness
        base = w0 + (self.preset.w_full - w0) * solved / total
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
        own = float(self._situation @ p.embedding)
        other = float((self._other_situations @ p.embedding).max(initial=-1.0))
        return own if own - other >= self.preset.situation_margin else 0.0

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
            repetition = float(max(e @ p.embedding for e in self.past_embeddings)) >= 0.9
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
        pressure = p.pressure_cue or (p.ask and self.decision == "refused")
        if pressure:
            self.affect -= preset.pressure_penalty
            self.mood -= 0.15
            events.append("pressure")
        if (p.greeting or p.question) and self.rapport_turns < 2 and not (p.ask or pressure):
            self.rapport_turns += 1
            self.affect += preset.rapport_gain
            self.mood += 0.1
            events.append("rapport")
        if p.words > preset.long_turn_words:
            blocks = min(3.0, p.words / preset.long_turn_words - 1.0)
            self.affect -= preset.long_turn_penalty * blocks
            events.append("long_turn")
        reasoned = self._credit(p, events, repetition, pressure)
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
        touched = [
            cid
            for cid, score in p.unlock.items()
            if score >= preset.unlock_threshold and score >= p.anti[cid]
        ]
        if touched:
            best = max(p.unlock[cid] for cid in touched)
            touched = [cid for cid in touched if p.unlock[cid] >= best - preset.topic_margin]
        situational = [cid for cid in touched if self.card.concern(cid).situational is not None]
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

    def _decide(self, p: Perception, reasoned: bool, hurt: bool) -> tuple[str, bool]:
        """The decision rule; returns (stance, justified).

        The user decides when asked (``decision_trigger = "ask"``) or, for tasks whose outcome
        is the user's own state (``"any"``: feeling heard), on every on-topic turn.
        """
        preset = self.preset
        w = self.willingness
        blocking = self._blocking()
        previous = self.decision
        deciding = p.ask or (
            self.card.decision_trigger == "any" and not (p.empty or p.off_topic or hurt)
        )
        if deciding:
            self.asks += int(p.ask)
            ready = w >= preset.accept_threshold and (not blocking or not preset.require_resolved)
            if self.card.decision_trigger == "any" and not self._helped():
                ready = False  # nothing has been said to this user yet that could help it
            if ready:
                # Justified only when no blocking concern is left and the willingness was
                # earned by reasons, not by the soft drift.
                earned = w - self.drift >= preset.accept_threshold - 0.1
                return "agree", not blocking and earned
            tries = self.asks if p.ask else self.exchange
            concede = preset.concede_prob + preset.concede_growth * (tries - 1)
            if concede > 0 and self._rng.random() < concede:
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

    # -- realization ---------------------------------------------------------------------------

    def _pick(self, key: str, options: tuple[str, ...]) -> str:
        fresh = [i for i in range(len(options)) if f"{key}:{i}" not in self.used]
        index = int(self._rng.choice(fresh)) if fresh else int(self._rng.integers(len(options)))
        self.used.add(f"{key}:{index}")
        return options[index]

    def _voice(self, cid: str) -> str:
        self.concerns[cid].voiced = True
        self.disclosed = True
        return self._pick(f"voice:{cid}", self.card.concern(cid).voice)

    def _top_concern(self, unvoiced_only: bool = False) -> str | None:
        for cid, c in self.concerns.items():  # strongest first
            if c.status != RESOLVED and not (unvoiced_only and c.voiced):
                return cid
        return None

    def _fill(self, template: str) -> str:
        """Fills ``{amount}``, ``{name}`` and the persona's fact placeholders."""
        values = {"amount": f"${min(self.persona.capacity, 2.0):.2f}", "name": self.persona.name}
        values.update(self.persona.facts)
        if "{situation}" in template:
            self.disclosed = True  # the user has told its story
        return re.sub(r"{(\w+)}", lambda m: values.get(m.group(1), m.group(0)), template)

    def _realize(self, p: Perception, events: list[str], stance: str, repetition: bool) -> str:
        replies = self.card.replies
        parts: list[str] = []

        def say(key: str) -> None:
            template = self._pick(key, replies[key])
            concern = self._top_concern()
            voice = ""
            if "{concern_voice}" in template and concern:
                if key == "inquiry_concern" and not self.concerns[concern].voiced:
                    events.append(f"probed:{concern}")  # an open question drew it out
                voice = self._voice(concern)
            parts.append(self._fill(template.replace("{concern_voice}", voice)))

        if "empty" in events:
            say("empty")
        elif "off_topic" in events:
            say("offtopic")
        else:
            for event in events:
                if event.startswith("addressed:"):
                    cid = event.split(":", 1)[1]
                    concern = self.card.concern(cid)
                    done = self.concerns[cid].status == RESOLVED
                    key, options = (
                        ("resolved", concern.ack_resolved)
                        if done
                        else ("partial", concern.ack_partial)
                    )
                    parts.append(self._fill(self._pick(f"{key}:{cid}", options)))
                    break
            if repetition and not parts:
                say("repetition")
            if p.ask:
                if stance == "agree":
                    say("agree")
                elif stance == "positive":
                    say("positive")
                elif "pressure" in events and self.asks > 1:
                    say("pushback")
                elif self._top_concern() is not None:
                    say("refuse_concern")
                else:
                    say("refuse")
            elif stance == "agree":
                say("agree")  # decided without being asked (decision_trigger = "any")
            elif p.greeting and self.exchange <= 1 and not parts:
                say("greeting")  # people answer "how are you?" before raising concerns
            elif p.question and not parts:
                if self._top_concern(unvoiced_only=True) is not None:
                    say("inquiry_concern")
                else:
                    say("greeting" if p.greeting and self.exchange <= 1 else "inquiry_open")
            elif p.greeting and not parts:
                say("greeting")
            elif stance == "refused" and any(e.startswith("anti:") for e in events):
                say("pushback")
            elif not parts:
                say("positive" if stance == "positive" else "neutral")
        return self._styled(" ".join(parts[:2]))

    def _styled(self, text: str) -> str:
        """Adds the persona's opener and closer (sometimes) and its casing to a reply."""
        if self._rng.random() < 0.45:
            opener = self._pick("opener", self.style.openers)
            if opener.endswith(", ") and not re.match(r"I\b", text):
                text = text[:1].lower() + text[1:]  # "Look, interesting." not "Look, Interesting."
            text = opener + text
        if self._rng.random() < 0.35 * self.style.verbosity:
            text = text.rstrip() + self._pick("closer", self.style.closers)
        return text.lower() if self.style.lowercase else text

    def realize_act(self, act: str, system_text: str = "") -> str:
        """Words a response act chosen by an external user policy, in this persona's style.

        The seam for strategy-level user policies (the user seat external): the policy picks
        one of :data:`USER_ACTS` and this realizes it from the card's reply templates, as the
        simulator words its own replies — ``refuse`` (voicing the top unresolved concern when
        there is one), ``hold`` (a neutral reply; a greeting or an open answer when the system
        greeted or asked something), ``voice`` (raise a not yet voiced concern), ``warm``
        (lean towards the goal) and ``agree``. Styling that would change the stance the reply
        states (an opener before a leading "No,") is left out. The mind is not updated: pass
        the text as the user's action and the env's ``observe`` does that.

        Args:
            act: One of :data:`USER_ACTS`.
            system_text: The system utterance being answered.

        Raises:
            ValueError: Unknown act.
        """
        if act not in USER_ACTS:
            raise ValueError(f"unknown user act {act!r}; choose from {USER_ACTS}")
        p = self.analyzer.perceive(system_text)
        top = self._top_concern()
        if act == "refuse":
            key = "refuse_concern" if top is not None else "refuse"
        elif act == "voice":
            top = self._top_concern(unvoiced_only=True)
            key = "inquiry_concern" if top is not None else "inquiry_open"
        elif act in ("warm", "agree"):
            key = "positive" if act == "warm" else "agree"
        elif p.empty or p.off_topic:
            key = "empty" if p.empty else "offtopic"
        elif p.greeting and self.exchange == 0:
            key = "greeting"
        else:
            key = "inquiry_open" if p.question else "neutral"
        template = self._pick(key, self.card.replies[key])
        voice = self._voice(top) if "{concern_voice}" in template and top is not None else ""
        core = self._fill(template.replace("{concern_voice}", voice))
        styled = self._styled(core)
        if _stated_stance(styled, self.card) != _stated_stance(core, self.card):
            return core.lower() if self.style.lowercase else core
        return styled

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
        intention = self.card.target.intention if self.decision == "agree" else mind[self.decision]
        # c is commitment to the goal behaviour (the target's c = 0.8 is a committed donor):
        # a refusal is low commitment, not high confidence, so it never reads as progress.
        confidence = {"refused": 0.1 + 0.2 * w, "neutral": 0.3, "positive": 0.55}.get(
            self.decision, self.card.target.confidence
        )
        return BDI(
            belief=belief,
            desire=desire,
            intention=intention,
            receptivity=float(np.clip(0.1 + 0.9 * w + 0.05 * self.rapport_turns, 0.0, 1.0)),
            confidence=float(np.clip(confidence, 0.0, 1.0)),
            valence=float(np.clip(self.mood, -1.0, 1.0)),
        )

    # -- protocol ------------------------------------------------------------------------------

    def respond(self, system_text: str) -> UserTurn:
        """Perceives the system turn, decides, and replies in the persona's style."""
        self.exchange += 1
        p, events, repetition, reasoned = self._perceive(system_text)
        hurt = any(e == "pressure" or e.startswith("anti:") for e in events)
        stance, justified = self._decide(p, reasoned, hurt)
        self.decision = stance
        text = self._realize(p, events, stance, repetition)
        self._state = self._compose_bdi()
        return UserTurn(text, stance, self._state, justified, tuple(events))

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """Updates the mind when an external policy wrote the reply (user seat external).

        The reply is the user's: the stance it states (classified from its text with the card's
        ``reply_*`` cues) becomes the user's decision, and the mind (intention, commitment)
        follows it, so a user policy that refuses has refused. The state machine still decides
        what a rational user in this state would do; that stance is returned as the turn's
        ``rational`` reference (with its ``justified`` flag) for the rationality judge, which
        marks conceding without a reason or resisting a well-reasoned request.
        """
        self.exchange += 1
        p, events, _, reasoned = self._perceive(system_text)
        hurt = any(e == "pressure" or e.startswith("anti:") for e in events)
        rational, justified = self._decide(p, reasoned, hurt)
        stated = _stated_stance(user_text, self.card)
        self.decision = stated
        if re.search(r"\w", user_text):
            self.disclosed = True
        self._state = self._compose_bdi()
        events = [*events, "external_reply"]
        return UserTurn(user_text, stated, self._state, justified, tuple(events), rational)
