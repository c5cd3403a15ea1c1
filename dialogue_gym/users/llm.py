"""LLM-backed users: the MASP LLM user and the LLM realizer for the cognitive user.

* :class:`LLMUser` — MASP's prompted user: an LLM writes each reply conditioned on the user's
  current BDI state, profile and goal, with a *hard* or *soft* prompt preset. A state machine
  of the card's user model (a :class:`~dialogue_gym.users.cognitive.CognitiveUser`, or the
  seller for negotiation cards) runs inside and observes every exchange with the
  LLM-written reply, so the hidden state, privileged record and rational stance stay defined.
* :class:`LLMRealizer` — words a stance that a state machine already decided, in the persona's
  style, from the template reply as the content to convey.
* :class:`LLMRealizedUser` — a :class:`~dialogue_gym.users.cognitive.CognitiveUser` whose
  realization step asks the LLM to word the decided stance.

Failures: a backend failure (after the backend's retries) propagates as
:class:`~dialogue_gym.backends.BackendError` so that an evaluation marks the episode as errored.
Only an empty or unusable LLM output falls back to the template reply, flagged in the turn's
events (``"fallback:realizer"``, ``"fallback:llm_user"``) — never silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dialogue_gym.backends import GenerationParams
from dialogue_gym.cards.card import Style, TaskCard
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.llm import parsing, prompts
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users import build_user
from dialogue_gym.users.analysis import Perception
from dialogue_gym.users.base import UserSimulator, UserTurn
from dialogue_gym.users.cognitive import CognitiveUser, UserPreset
from dialogue_gym.users.concerns import ConcernTracking
from dialogue_gym.users.persona import Persona
from dialogue_gym.users.wording import TemplateWording

if TYPE_CHECKING:
    from dialogue_gym.backends import Backend

__all__ = ["LLMRealizedUser", "LLMRealizer", "LLMUser", "style_text"]

USER_COMPONENT = "user.llm"
REALIZER_COMPONENT = "user.realizer"
FALLBACK_REALIZER = "fallback:realizer"
FALLBACK_LLM_USER = "fallback:llm_user"
SYSTEM, USER = "system", "user"


def style_text(style: Style) -> str:
    """The persona's external layer as an instruction line for a prompt."""
    text = f"{style.id}: {style.tone}".strip()
    if style.lowercase:
        text += " Writes in all lowercase."
    if style.verbosity < 0.8:
        text += " Keeps replies short."
    elif style.verbosity > 1.2:
        text += " Tends to say a bit more than needed."
    return text


class LLMRealizer:
    """Words a decided stance in a persona's style with an LLM.

    Args:
        card: The task card (roles, setting).
        backend: The text-generation backend.
        temperature: Sampling temperature.
        max_tokens: Token budget of a reply.
    """

    def __init__(
        self, card: TaskCard, backend: Backend, temperature: float = 0.7, max_tokens: int = 120
    ) -> None:
        self.card = card
        self.backend = backend
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self._labels = (prompts.judge_speakers(card)[USER], card.user_role, card.system_role)

    def config(self) -> dict[str, Any]:
        """The realizer's configuration (for stamping into results)."""
        return {
            "component": REALIZER_COMPONENT,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_version": prompts.PROMPT_VERSION,
        }

    def realize(
        self,
        history: Sequence[tuple[str, str]],
        stance: str,
        content: str,
        style: str,
        profile: str = "",
    ) -> str | None:
        """The LLM's wording of ``content`` with ``stance``; ``None`` when it is unusable.

        Unusable: empty after cleaning, or it contradicts the decided stance (an agreement
        when the user did not agree, a refusal when it did), read with the card's reply cues.

        Raises:
            BackendError: The backend failed (after its retries).
        """
        messages = prompts.realizer_messages(self.card, history, stance, content, style, profile)
        params = GenerationParams(temperature=self.temperature, max_tokens=self.max_tokens)
        completions = self.backend.generate(messages, params, n=1, component=REALIZER_COMPONENT)
        text = parsing.clean_utterance(completions[0].text if completions else "", self._labels)
        if text is None:
            return None
        said = classify_stance(text, self.card)
        if (said == "agree") != (stance == "agree") and (said == "agree" or said == "refused"):
            return None  # the wording changed the decision
        return text


class LLMWording:
    """A :class:`~dialogue_gym.users.wording.ReplyWriter`: the template reply, reworded by an LLM.

    The inner template wording drafts the reply (same template draws as the embedded user);
    the realizer rewords the draft with the decided stance in the persona's style. An unusable
    output keeps the draft and adds ``"fallback:realizer"`` to the turn's events.

    Args:
        inner: The template wording that drafts.
        realizer: The LLM realizer.
        transcript: The episode's transcript so far (the user's list, read at each reply).
    """

    def __init__(
        self,
        inner: TemplateWording,
        realizer: LLMRealizer,
        transcript: list[tuple[str, str]],
    ) -> None:
        self.inner = inner
        self.realizer = realizer
        self.transcript = transcript

    @property
    def drafts(self) -> TemplateWording:
        """The template wording that drafts each reply (what a reply says, before the LLM)."""
        return self.inner

    def begin(
        self, persona: Persona, style: Style, rng: np.random.Generator, tracker: ConcernTracking
    ) -> None:
        """Starts an episode (the inner wording's)."""
        self.inner.begin(persona, style, rng, tracker)

    def reply(
        self,
        p: Perception,
        events: list[str],
        stance: str,
        repetition: bool,
        exchange: int,
        asks: int,
    ) -> str:
        """The drafted reply reworded by the LLM (the draft when its output is unusable)."""
        draft = self.inner.reply(p, events, stance, repetition, exchange, asks)
        style, profile = style_text(self.inner.style), self.inner.persona.profile()
        text = self.realizer.realize(self.transcript, stance, draft, style, profile)
        if text is None:
            events.append(FALLBACK_REALIZER)
            return draft
        return text

    def realize_act(self, act: str, system_text: str = "", exchange: int = 0) -> str:
        """Words an external policy's act with the templates (no LLM: the act is the text)."""
        return self.inner.realize_act(act, system_text, exchange)


class LLMRealizedUser(CognitiveUser):
    """A :class:`CognitiveUser` whose replies are worded by an LLM (see the module docstring).

    The state machine perceives, decides and drafts the template reply exactly as the embedded
    user does (same persona draws, same dynamics); the LLM then rewords the draft with the
    decided stance in the persona's style. An unusable LLM output keeps the draft and adds
    ``"fallback:realizer"`` to the turn's events.

    Args:
        card: The task card.
        encoder: Sentence encoder used to perceive system utterances.
        preset: ``"soft"``, ``"hard"`` or a :class:`UserPreset`.
        personas: Persona pool (default: the card's bank).
        backend: The backend of the default :class:`LLMRealizer`.
        realizer: A ready realizer (instead of ``backend``).

    Raises:
        ValueError: Neither ``backend`` nor ``realizer`` given.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        preset: str | UserPreset = "hard",
        personas: tuple[Persona, ...] | None = None,
        backend: Backend | None = None,
        realizer: LLMRealizer | None = None,
    ) -> None:
        if realizer is None:
            if backend is None:
                raise ValueError("LLMRealizedUser needs backend= or realizer=")
            realizer = LLMRealizer(card, backend)
        self.realizer = realizer
        self._transcript: list[tuple[str, str]] = []
        super().__init__(card, encoder, preset=preset, personas=personas)
        self.wording = LLMWording(TemplateWording(card, self.analyzer), realizer, self._transcript)
        self.wording.begin(self.persona, self.style, self._rng, self.tracker)

    def reset(self, rng: np.random.Generator) -> BDI:
        """See :meth:`CognitiveUser.reset`; also forgets the transcript."""
        self._transcript.clear()  # the wording holds the same list
        return super().reset(rng)

    def respond(self, system_text: str) -> UserTurn:
        """See :meth:`CognitiveUser.respond`; the reply is worded by the LLM."""
        self._transcript.append((SYSTEM, system_text))
        turn = super().respond(system_text)
        self._transcript.append((USER, turn.text))
        return turn

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """See :meth:`CognitiveUser.observe` (no realization: the reply is given)."""
        self._transcript.append((SYSTEM, system_text))
        turn = super().observe(system_text, user_text)
        self._transcript.append((USER, user_text))
        return turn

    def privileged(self) -> dict[str, Any]:
        """See :meth:`CognitiveUser.privileged`; adds the persona's situation facts."""
        info = super().privileged()
        info["realizer"] = "llm"
        for fact in ("emotion", "problem"):
            if self.persona.facts.get(fact):
                info[fact] = self.persona.facts[fact]
        return info


class LLMUser:
    """MASP's prompted LLM user with a state machine tracking its mind (module docstring).

    Each reply is written by the LLM from the user prompt (:func:`prompts.user_messages`) with
    the current BDI state z_t, the profile and the user goal; the inner state machine then
    observes the exchange with that reply, which yields the next state, the rational
    stance and the privileged record. An empty or unusable LLM output falls back to the state
    machine's own reply (``"fallback:llm_user"`` in the turn's events).

    Args:
        card: The task card.
        encoder: Sentence encoder of the inner state machine.
        preset: ``"hard"`` or ``"soft"``: the prompt preset and the inner model's preset.
        backend: The text-generation backend (required).
        personas: Persona pool of the inner model (default: the card's bank).
        temperature: Sampling temperature (the paper's user simulator uses 0.9).
        max_tokens: Token budget of a reply.
        state_user: A ready inner state machine (default: the card's user model).

    Raises:
        ValueError: No backend, or an unknown preset.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        preset: str | UserPreset = "hard",
        backend: Backend | None = None,
        personas: tuple[Persona, ...] | None = None,
        temperature: float = 0.9,
        max_tokens: int = 160,
        state_user: UserSimulator | None = None,
    ) -> None:
        if backend is None:
            raise ValueError("LLMUser needs a backend (e.g. make_backend('openai:MODEL'))")
        name = preset if isinstance(preset, str) else getattr(preset, "name", "")
        if name not in prompts.PRESETS:
            raise ValueError(f"unknown user preset {name!r}; choose from {sorted(prompts.PRESETS)}")
        self.card = card
        self.backend = backend
        self.prompt_preset = name
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.inner: UserSimulator = state_user or build_user(
            card, encoder, preset, personas=personas
        )
        self._transcript: list[tuple[str, str]] = []
        self._labels = (
            prompts.judge_speakers(card)[USER],
            card.user_role,
            card.system_role,
            f"You ({card.user_role})",
        )

    def __getattr__(self, name: str) -> Any:
        # Anything else (persona, concern_solving_rate, listing ...) is the inner model's.
        if name in ("inner", "__setstate__", "__getstate__") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def config(self) -> dict[str, Any]:
        """The user's configuration (for stamping into results)."""
        return {
            "component": USER_COMPONENT,
            "preset": self.prompt_preset,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_version": prompts.PROMPT_VERSION,
            "state_model": type(self.inner).__name__,
        }

    # -- the protocol --------------------------------------------------------------------------

    def reset(self, rng: np.random.Generator) -> BDI:
        """Starts an episode of the inner model; returns the initial state z_0."""
        self._transcript = []
        return self.inner.reset(rng)

    @property
    def state(self) -> BDI:
        """The current hidden state (the inner model's)."""
        return self.inner.state

    def profile(self) -> str:
        """The user's profile (the inner model's)."""
        return self.inner.profile()

    def privileged(self) -> dict[str, Any]:
        """The inner model's privileged record, marked as an LLM user."""
        info = dict(self.inner.privileged())
        info["user_model"] = "llm"
        persona = getattr(self.inner, "persona", None)
        for fact in ("emotion", "problem"):
            value = getattr(persona, "facts", {}).get(fact) if persona is not None else None
            if value and fact not in info:
                info[fact] = value
        return info

    def messages(self, system_text: str) -> list[prompts.Message]:
        """The user prompt for answering ``system_text`` now."""
        history = [*self._transcript, (SYSTEM, system_text)]
        return prompts.user_messages(
            self.card, history, self.inner.state, self.inner.profile(), self.prompt_preset
        )

    def respond(self, system_text: str) -> UserTurn:
        """The LLM writes the reply from z_t; the inner model observes the exchange.

        Raises:
            BackendError: The backend failed (after its retries).
        """
        params = GenerationParams(temperature=self.temperature, max_tokens=self.max_tokens)
        completions = self.backend.generate(
            self.messages(system_text), params, n=1, component=USER_COMPONENT
        )
        text = parsing.clean_utterance(completions[0].text if completions else "", self._labels)
        if text is None:
            turn = self.inner.respond(system_text)
            turn = dataclasses.replace(turn, events=(*turn.events, FALLBACK_LLM_USER))
        else:
            turn = self.inner.observe(system_text, text)
            turn = dataclasses.replace(turn, events=(*turn.events, "llm_user"))
        self._transcript += [(SYSTEM, system_text), (USER, turn.text)]
        return turn

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """An external policy wrote the reply: the inner model observes it."""
        turn = self.inner.observe(system_text, user_text)
        self._transcript += [(SYSTEM, system_text), (USER, user_text)]
        return turn
