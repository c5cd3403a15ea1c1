"""How the embedded cognitive user words its replies: the card's reply templates, in style.

:class:`TemplateWording` is the wording component of
:class:`~dialogue_gym.users.cognitive.CognitiveUser` (a :class:`ReplyWriter`): it picks a reply
template for what the user perceived and decided (an acknowledgement of the concern a turn
addressed, a concern voiced when asked — or a reaction to the answer once it was partly
answered —, the stance on an ask, a goodbye to a goodbye), fills the persona's facts, adds the
persona's opener, closer and casing, and never says the same reply twice in an episode.
:meth:`TemplateWording.realize_act` words an act an external user policy chose
(:data:`USER_ACTS`). It reads the concern state through the user's
:class:`~dialogue_gym.users.concerns.ConcernTracker` and changes only what a reply says
(which concerns it voiced).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

import numpy as np

from dialogue_gym.cards.card import Style, TaskCard
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.concerns import RESOLVED, ConcernTracking
from dialogue_gym.users.decision import refusal_reason
from dialogue_gym.users.persona import Persona
from dialogue_gym.users.style import (
    ACCUSES,
    CONCEDING,
    FILLERS,
    OPENING_ONLY,
    RESERVATION,
    TURNS_AWAY,
    add_style,
    fits,
    fitting_reaction,
    link_refusal,
    opening,
    pick_unused,
    unsaid,
)

USER_ACTS = ("refuse", "hold", "voice", "warm", "agree")
"""Response acts an external user policy can have :meth:`CognitiveUser.realize_act` word."""
_SLOT = re.compile(r"{(\w+)}")  # a template's placeholder: {situation}, {amount}
_FIT = 0.05
"""Reactions whose closeness to the turn (a lift in cosine) is within this of the closest
fit it equally well."""


class ReplyWriter(Protocol):
    """Words the simulated user's replies (the wording component of a cognitive user)."""

    def begin(
        self, persona: Persona, style: Style, rng: np.random.Generator, tracker: ConcernTracking
    ) -> None:
        """Starts an episode: the persona and style to speak in, its generator and concerns."""
        ...

    def reply(
        self,
        p: Perception,
        events: list[str],
        stance: str,
        repetition: bool,
        exchange: int,
        asks: int,
    ) -> str:
        """The reply to a perceived turn, given the events it caused and the stance decided."""
        ...

    def realize_act(self, act: str, system_text: str = "", exchange: int = 0) -> str:
        """Words an act an external user policy chose (:data:`USER_ACTS`)."""
        ...


class TemplateWording:
    """The card's reply templates in the persona's style (see the module docstring).

    Args:
        card: The task card (reply templates, concern voice and acknowledgement lines).
        analyzer: How the user perceives a turn (:meth:`realize_act` reads the system turn).
    """

    def __init__(self, card: TaskCard, analyzer: UtteranceAnalyzer) -> None:
        self.card = card
        self.analyzer = analyzer
        self.used: set[str] = set()
        self.replied: list[str] = []  # this episode's replies so far (none is said twice)
        self._cores: list[str] = []  # the same replies without the persona's style
        self.told = False
        self._line_rows: dict[str, np.ndarray] = {}  # reaction line → its unit embedding
        self._turn_rows: np.ndarray | None = None  # the sentences of the turn being answered
        self._asked = False  # the turn being answered asked the user something
        self._says_no = False  # the reply being styled turns the system down
        self._asked_politely = False  # the turn being answered asked without pushing
        self._credited: set[str] = set()  # the concerns the turn being answered addressed
        self.held_close = False  # the reply held back a close to tell more of its story
        self._pushed = False  # the user was pushed or said no earlier this episode
        self._facts_said: set[str] = set()  # the persona's facts the replies told
        self._unfit: list[re.Pattern[str]] = []  # lines this persona's story rules out
        # The facts a reply tells once, as soon as it can: the rest of a story (paired slots),
        # and the story itself where the user's concerns are met by it (ED's situational ones).
        situational = any(c.situational is not None for c in card.concerns)
        self._told_once = (*card.personas.paired, *(("situation",) if situational else ()))
        # Tasks whose users have a story to tell when asked what is going on (ESConv, ED).
        self._tells_story = any("{situation}" in t for t in card.replies.get("inquiry_open", ()))

    def begin(
        self, persona: Persona, style: Style, rng: np.random.Generator, tracker: ConcernTracking
    ) -> None:
        """Starts an episode (see :class:`ReplyWriter`)."""
        self.persona = persona
        self.style = style
        self._rng = rng
        self.tracker = tracker
        self.used = set()
        self.replied = []
        self._cores = []
        self.told = False  # the user has told its story (the ``{situation}`` fact)
        self._pushed = False
        self._facts_said = set()
        rules = self.card.personas.unfit
        self._unfit = [line for r in rules if r.applies(persona.facts) for line in r.lines]

    def reply(
        self,
        p: Perception,
        events: list[str],
        stance: str,
        repetition: bool,
        exchange: int,
        asks: int,
    ) -> str:
        """The reply (see :class:`ReplyWriter`); may add ``probed:<id>`` to ``events``."""
        replies = self.card.replies
        parts: list[str] = []
        keys: list[str] = []
        rows = p.sentence_embeddings
        self._turn_rows = rows if rows is not None and len(rows) else p.embedding[None, :]
        self._asked = p.question  # "Thanks for asking." only thanks a question
        self._says_no = False  # the reply turns the system down (a sign-off may end it)
        self._asked_politely = p.ask and "pressure" not in events
        self._credited = {e.partition(":")[2] for e in events if e.startswith("addressed:")}
        facts_before, self.held_close = set(self._facts_said), False

        def say(key: str, concern: str | None = None, story: bool = False) -> None:
            if key not in replies:  # optional kinds (farewell) fall back to a neutral reply
                key = "neutral"
            keys.append(key)
            fits = (lambda t: not OPENING_ONLY.search(t)) if exchange > 1 else None
            if story:
                fits = lambda t: "{situation}" in t  # noqa: E731 - a filter for _pick
            if parts:
                # Never a line that opens as a part already said does (a thanks twice).
                said, first = " ".join(parts).lower(), fits
                fits = lambda t: (  # noqa: E731 - a filter for _pick
                    (first is None or first(t)) and opening(t).lower() not in said
                )
            concern = concern or self._top_concern()
            if key == "inquiry_concern" and concern and self._unasked(concern):
                parts.append(self._voice(concern))  # a reaction, not "Since you ask, okay, ..."
                return
            template = self._pick(key, replies[key], fits)
            voice = ""
            if "{concern_voice}" in template and concern:
                if key == "inquiry_concern" and not self.tracker.states[concern].voiced:
                    events.append(f"probed:{concern}")  # an open question drew it out
                # Inside a no, a worry answered in part is what the answer left open ("No. Maybe,
                # but I'd still be stuck with the admin."), never a warm reaction.
                voice = self._voice(concern, reservation=key in TURNS_AWAY)
                if re.search(r",\s*\{concern_voice\}", template) and not re.match(r"I\b", voice):
                    voice = voice[:1].lower() + voice[1:]  # "Since you ask, after your cut ..."
            parts.append(self._fill(template.replace("{concern_voice}", voice)))

        reacted = None  # the concern this reply reacts to an answer to
        # A no for the worry the reply reacts to says what the answer left open, never a warm
        # reaction, then the worry as if unanswered (blind play round 15, P4G seed 143).
        pushed = "pressure" in events
        refusing = p.ask and stance not in ("agree", "positive") and not (pushed and asks > 1)
        no_for = refusal_reason(self.tracker, self.card, pushed) if refusing else None
        if "empty" in events:
            say("empty")
        elif "off_topic" in events:
            say("offtopic")
        else:
            for event in events:
                if event.startswith("addressed:"):
                    cid = event.split(":", 1)[1]
                    if f"proactive:{cid}" in events and p.question and not p.ask:
                        # A fact on a worry the user never raised, in a turn that asks it
                        # something ("... poor rural parts of the US. Do you support any
                        # causes?"): the user answers the question, not the fact.
                        continue
                    concern = self.card.concern(cid)
                    done = self.tracker.states[cid].status == RESOLVED
                    key = "resolved" if done else "partial"
                    options = concern.ack_resolved if done else concern.ack_partial
                    # A question about the story is not agreed with (round 14, ED 132, 135, 138).
                    asked = concern.situational is not None and p.question and not p.ask
                    reserve = no_for == cid and not done
                    keep = fitting_reaction(asked, reserve, self._pushed)
                    parts.append(self._fill(self._react(cid, f"{key}:{cid}", options, keep)))
                    if reserve:
                        self.tracker.voice(cid)  # the no says this worry: what is left of it
                    keys.append(key)
                    reacted = cid
                    break
            if repetition and not parts:
                say("repetition")
            if (
                reacted is not None
                and keys == ["resolved"]
                and self.card.concern(reacted).situational is not None
                and p.question
                and not p.ask
                and stance != "agree"
                and "farewell" not in events
            ):
                # A question that settled a worry about the speaker's story is answered by what
                # comes next: a worry not said yet ("Right. It feels good that someone took
                # that in. I haven't even gotten to the part that really got me."), not by
                # agreement alone (blind play round 13, ED seed 127: the speaker never said it
                # had more to tell). Not for worries met by reasons (see said_just_now below).
                nxt = self._top_concern(unvoiced_only=True)
                if nxt is not None and self.card.concern(nxt).voice:
                    parts.append(self._voice(nxt))
                    keys.append("voice")
            if p.ask:
                if stance == "agree":
                    say("agree")
                elif stance == "positive":
                    say("positive")
                    # Leaning yes but held back: the answer says by what, so the ask gets
                    # an answer ("Sounds good. Does it come out of my payment, though?").
                    held = [c for c in self.tracker.blocking() if self.card.concern(c).voice]
                    top = self._top_concern()
                    if not held and top is not None and self.card.concern(top).voice:
                        # Nothing blocks, but a worry not settled yet is what keeps the user
                        # short of a yes: it says so rather than "Fair enough, that sounds
                        # decent." to a third direct ask (blind play round 9, Merchant seed 80).
                        held = [top]
                    if held and len(parts) < 2:
                        parts.append(self._voice(held[0]))
                        keys.append("voice")
                elif "pressure" in events and asks > 1:
                    # Pushed to say yes, the user says so in the card's words for a pushed ask
                    # when it has them (a seeker offered a step again: "I already said I can't
                    # do that right now."), not in its words for being brushed off ("I'm
                    # telling you how I feel and you're brushing it off."; round 14, ESConv
                    # seeds 133, 135).
                    say("pushback_ask" if "pushback_ask" in replies else "pushback")
                elif self._top_concern() is not None:
                    reason = no_for
                    state = self.tracker.states.get(reason) if reason else None
                    if reason and state and not parts and state.voiced and state.progress > 0:
                        # The worry was answered in part: the user says how far the answer got
                        # and then no ("That helps my margins a bit. But not yet."), never
                        # "That helps my margins a bit. That's why it's a no from me."
                        parts.append(self._voice(reason, reservation=True))
                        keys.append("partial")
                        say("refuse")
                    elif reason is not None and reason == reacted:
                        # The reaction said what the answer left open (or, with no such line
                        # left, took the answer in); the no does not say the same worry again
                        # in other words ("Sounds better, but I'm still wary after the last
                        # promotion burned us. But not yet. I tried one of your flash deals
                        # before. Never again."; blind play round 12, Merchant seed 117).
                        say("refuse")
                    else:
                        say("refuse_concern", reason)
                else:
                    say("refuse")
            elif stance == "agree":
                # Not in the breath that tells more of the story: it waits to be heard.
                self.held_close = bool((self._facts_said - facts_before) & set(self._told_once))
                say("positive" if self.held_close else "agree")
            elif "farewell" in events and not parts:
                say("farewell")  # the system is backing off: the user closes, not "go on"
            elif p.greeting and exchange <= 1 and not parts and not p.pitch:
                say("greeting")  # people answer "how are you?" before raising concerns
            elif p.question and not parts:
                top = self._top_concern()
                state = self.tracker.states[top] if top is not None else None
                unvoiced = self._top_concern(unvoiced_only=True) is not None
                # Asked what holds it back, with every worry raised already, the user says
                # which one still does, not "Kind of, yeah. I've given here and there." (blind
                # play round 10, P4G seed 90).
                probed = p.meaning is not None and "probe" in p.meaning.leading
                real_question = "?" in p.view and not self._tells_story  # a "?", not "When I ..."
                # A user with a story (ESConv, ED) asked about something else right after
                # saying a worry answers the question ("What's been going on?" got the cost of
                # therapy twice in a row; round 13, ESConv 121-123); asked about the worry, it
                # says it. Users met by reasons say it again as before (Merchant seed 111): with
                # this and the next-worry rule above for every task, a script searched offline
                # reached 0.54 of P4G-hard against `scripted`'s 0.96 (limit 0.48, 50 episodes;
                # 0.42 against 0.90 without).
                said_just_now = (
                    self._tells_story
                    and top in self.tracker.focus
                    and not (p.meaning is not None and top in p.meaning.leading)
                )
                if said_just_now and not self.told:
                    # Asked again what is going on, a user with a story still untold tells it
                    # rather than say the worry a second time in a row.
                    say("inquiry_open", story=True)
                elif (
                    top is not None
                    and state is not None
                    and state.voiced
                    and state.progress > 1e-9
                    and (unvoiced or probed)
                ):
                    # Asked what's on its mind while its worry is answered in part, the user
                    # says what is still missing ("I want to believe that. It's hard, but
                    # maybe."), not "There's something I should mention first."
                    parts.append(self._voice(top, reservation=True))
                    keys.append("partial")
                elif unvoiced and not said_just_now:
                    say("inquiry_concern")
                elif (
                    top is not None
                    and state is not None
                    and not said_just_now
                    and (probed or (state.voiced and (not state.progress or real_question)))
                    and self.card.concern(top).voice
                ):
                    # The worry again: probed, or asked anything while the worry it said is open
                    # (what is left of it, if answered in part and asked a real question; a
                    # story's teller tells its story) — "what went wrong with the flash deal?" got
                    # "Good question. I'd like steadier orders, I suppose." (round 12, Merchant).
                    parts.append(self._voice(top))
                    keys.append("voice")
                elif top is None and probed and "nothing_left" in replies:
                    # "Anything else you'd want to know?" with every worry settled: not
                    # "Mostly regulars, honestly." to a question nobody asked (blind play
                    # round 11, Merchant seeds 107, 109).
                    say("nothing_left")
                else:
                    say("greeting" if p.greeting and exchange <= 1 else "inquiry_open")
            elif p.greeting and not parts and exchange <= 1:
                # Later on, a warm line ("I'm really glad you reached out.") is not an opening
                # to answer with the opening story again (round 16, ESConv seed 158).
                say("greeting")
            elif stance == "refused" and any(e.startswith("anti:") for e in events):
                say("pushback")
            elif not parts and p.only_acknowledges and (held := self.tracker.under_discussion()):
                # An acknowledgement invites more of the worry, kept under discussion (dev2).
                parts.append(self._voice(held[0]))
                keys.append("voice")
            elif not parts:
                say("positive" if stance == "positive" else "neutral")
        link_refusal(parts, keys)
        self._says_no = any(key in TURNS_AWAY for key in keys[:2])
        self._pushed = self._pushed or pushed or self._says_no
        return self._unrepeated(" ".join(parts[:2]), keys[0] if keys else "neutral")

    def _pick(
        self, key: str, options: tuple[str, ...], prefer: Callable[[str], object] | None = None
    ) -> str:
        if self._unfit:  # most personas have none: no work on every pick
            options = tuple(o for o in options if fits(o, self._unfit)) or options
        for slot in self._told_once:
            # Before the telling, the wordings that tell it; after it, the ones that do not ("it's
            # nice to tell it properly" never before the telling, nor the opening again).
            telling = tuple(o for o in options if f"{{{slot}}}" in o)
            if telling:
                told = slot in self._facts_said
                options = tuple(o for o in options if (o in telling) != told) or options
        if self._tells_story and self._facts_said:
            # A story's fact is told once: wordings that would tell one said already come
            # last ("It's a breakup I really didn't see coming, mostly." after the opening
            # said so; blind play round 14, ESConv seeds 132, 133, 135, 137).
            first, said = prefer, self._facts_said
            fresh = [options[i] for i in unsaid(self.used, key, options)]
            new = [o for o in fresh if not said & set(_SLOT.findall(o))]
            if any(first is None or first(o) for o in new):
                prefer = lambda o: o in new and (first is None or first(o))  # noqa: E731
        return pick_unused(self._rng, self.used, key, options, prefer)

    def _voice(self, cid: str, reservation: bool = False) -> str:
        """Words concern ``cid``: its voice line, or a reaction once it was partly answered.

        Asking afresh after an answer would ignore what the system said.

        Args:
            cid: The concern.
            reservation: The line gives a no: of the reactions to a partial answer, one that
                says what is still missing ("It still feels small.", "Not fully sold
                though.") while the card has one not said yet, so that a no after half an
                answer tells the system there is more to say; once none is left, the worry
                itself (never a warm reaction inside a no).
        """
        concern = self.card.concern(cid)
        reactions = concern.ack_partial
        unasked = self._unasked(cid)  # before voice() marks it said
        answered = (self.tracker.voice(cid) or unasked) and reactions
        if answered and reservation:
            unsaid_lines = (reactions[i] for i in unsaid(self.used, f"partial:{cid}", reactions))
            if not any(RESERVATION.search(line) for line in unsaid_lines):
                return self._pick(f"voice:{cid}", concern.voice, self._fair_to_asker(cid))
        if answered:
            # Said again later, the worry is what the answer left of it (the line nearest the
            # worry's words), not a reaction to this turn: not "Kids in the rural US too?" (a
            # reaction to an earlier answer) to "Is any part still unclear?" (blind play round
            # 15, P4G seed 144, replayed).
            keep = RESERVATION.search if reservation else None
            worry = self._rows(concern.voice)
            return self._fill(self._react(cid, f"partial:{cid}", reactions, keep, anchor=worry))
        return self._pick(f"voice:{cid}", concern.voice, self._fair_to_asker(cid))

    def _unasked(self, cid: str) -> bool:
        """Answered in part unasked before: said, it is what is left (round 18, P4G seed 173)."""
        state, earlier = self.tracker.states[cid], cid not in self._credited
        return not state.voiced and state.progress > 1e-9 and earlier and not self._tells_story

    def _fair_to_asker(self, cid: str) -> Callable[[str], object] | None:
        """After a polite ask, prefer lines of the pressure worry that accuse nobody."""
        if cid == "pressure" and self._asked_politely:
            return lambda line: not ACCUSES.search(line)
        return None

    def _react(
        self,
        cid: str,
        key: str,
        options: tuple[str, ...],
        keep: Callable[[str], object] | None = None,
        anchor: np.ndarray | None = None,
    ) -> str:
        """The reaction to an answer to ``cid`` that fits what the turn said.

        A reaction names the reason it heard ("Oh, I didn't know they work in the US too."),
        so one drawn at random answers things the system never said: "I guess it's true it
        doesn't have to be one or the other" to a goodbye, "Oh, I didn't know they work in
        the US too" after being told twice. Of the lines not said yet this episode (and
        accepted by ``keep``, when any are) the one said is the line whose meaning is closest
        to one of the turn's sentences, measured as a lift over the line's closeness to the
        card's answers to the concern in general (a line near every answer, "I appreciate
        you not knocking my usual charities", is not thereby near this one). With ``anchor``
        (unit rows) the line is matched to those rows instead of the turn's sentences.
        """
        fresh = [options[i] for i in unsaid(self.used, key, options)]
        if self._unfit:
            fresh = [o for o in fresh if fits(o, self._unfit)] or fresh
        kept = [o for o in fresh if keep(o)] if keep is not None else []
        pool = kept or fresh
        anchor = self._turn_rows if anchor is None else anchor
        if len(pool) < 2 or anchor is None or not anchor.any():
            return self._pick(key, options, lambda o: o in pool)
        # How warm the reaction sounds is the mood of the moment, drawn as before; only its
        # content follows the turn. The success judge reads the stance a reply states: picking
        # among all lines by meaning made warm reactions a function of the words, and the
        # search-based open-loop attacker found turns that draw them (ESConv-hard, 0.36 with
        # random reactions, 0.50 by meaning alone; limit 0.48).
        tone = classify_stance(pool[int(self._rng.integers(len(pool)))], self.card)
        pool = [o for o in pool if classify_stance(o, self.card) == tone]
        answers = self.analyzer.prototypes("unlock", cid)
        rows = self._rows(tuple(pool))
        lift = (rows @ anchor.T).max(axis=1) - (rows @ answers.T).mean(axis=1)
        # Lines about as close as the best are equally fitting: one of them, at random (the
        # same turn to thirty personas is not met with one stock line).
        fitting = {o for o, value in zip(pool, lift, strict=True) if value >= lift.max() - _FIT}
        return self._pick(key, options, lambda o: o in fitting)

    def _rows(self, lines: tuple[str, ...]) -> np.ndarray:
        """The unit embeddings of ``lines`` (encoded once per user)."""
        missing = [line for line in dict.fromkeys(lines) if line not in self._line_rows]
        if missing:
            encoded = np.asarray(self.analyzer.encoder.encode(missing), dtype=np.float32)
            self._line_rows.update(zip(missing, encoded, strict=True))
        return np.asarray([self._line_rows[line] for line in lines], dtype=np.float32)

    def _top_concern(self, unvoiced_only: bool = False) -> str | None:
        return self.tracker.top(unvoiced_only)

    def _fill(self, template: str) -> str:
        """Fills ``{amount}``, ``{name}`` and the persona's fact placeholders."""
        values = {"amount": f"${min(self.persona.capacity, 2.0):.2f}", "name": self.persona.name}
        values.update(self.persona.facts)
        self._facts_said.update(k for k in _SLOT.findall(template) if k in values)
        if "{situation}" in template:
            self.tracker.disclosed = True  # the user has told its story
            self.told = True
        return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)

    def _unrepeated(self, core: str, key: str) -> str:
        """The styled reply, never word for word one this user already said this episode.

        A repeat is re-worded from the other templates of its kind (``key``) first, then
        from the neutral kinds; only when every option was said already does it stand. The
        same words with another opener or closer are a repeat too ("What stuck with me most
        was how I felt right afterwards. I keep going back to it. Seriously." five exchanges
        after the same line without "Seriously."; blind play round 13, ED seed 125).
        """
        text = self._keep_stance(core, key)
        said = {r.lower() for r in self.replied} | {c.lower() for c in self._cores}
        if text.lower() in said or core.lower() in said:
            kinds = [key] if key in self.card.replies else []
            kinds += [k for k in ("inquiry_open", "neutral") if k != key]
            for kind in kinds:
                options = self.card.replies[kind]
                for index in self._rng.permutation(len(options)):
                    if self.told and "{situation}" in options[int(index)]:
                        continue  # the story is told once (see _pick)
                    plain = self._fill(options[int(index)])
                    candidate = self._keep_stance(plain, kind)
                    if (
                        candidate.lower() not in said
                        and plain.lower() not in said
                        and "{" not in candidate
                    ):
                        text, core = candidate, plain
                        break
                else:
                    continue
                break
        self.replied.append(text)
        self._cores.append(core)
        return text

    def _keep_stance(self, core: str, key: str = "neutral") -> str:
        """``core`` in the persona's style, unless styling would change the stance it states.

        An opener such as "idk," before an agreement would make the judges' text view read
        something the user did not decide; such a reply goes out unstyled.
        """
        styled = self._styled(core, key)
        if classify_stance(styled, self.card) != classify_stance(core, self.card):
            return core.lower() if self.style.lowercase else core
        return styled

    def _styled(self, text: str, key: str = "neutral") -> str:
        """Adds the persona's opener and closer (sometimes) and its casing to a reply.

        Fillers (``neutral``, ``inquiry_open``, a greeting, a goodbye) stay unadorned: an
        opener and a closer around "Go on." make a reply of fragments that do not fit. A reply
        that gives ground takes no closer (:data:`CONCEDING`).
        """
        if key in FILLERS:
            return text.lower() if self.style.lowercase else text
        return add_style(
            text,
            self.style,
            self._pick,
            self._rng,
            asked=self._asked,
            closer=key not in CONCEDING,
            turning_away=self._says_no or key in TURNS_AWAY,
            gives_ground=key in CONCEDING,
        )

    def realize_act(self, act: str, system_text: str = "", exchange: int = 0) -> str:
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
            exchange: Exchanges played so far (a greeting is answered as such at the start).

        Raises:
            ValueError: Unknown act.
        """
        if act not in USER_ACTS:
            raise ValueError(f"unknown user act {act!r}; choose from {USER_ACTS}")
        p = self.analyzer.perceive(system_text)
        self._says_no = False  # a refusal's key says so itself (see _styled)
        self._asked_politely = False
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
        elif p.greeting and exchange == 0:
            key = "greeting"
        else:
            key = "inquiry_open" if p.question else "neutral"
        template = self._pick(key, self.card.replies[key])
        voice = (
            self._voice(top, reservation=key in TURNS_AWAY)
            if "{concern_voice}" in template and top is not None
            else ""
        )
        return self._keep_stance(self._fill(template.replace("{concern_voice}", voice)), key)
