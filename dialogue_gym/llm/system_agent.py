"""The LLM system agent: the ``openai:MODEL`` agent, on any OpenAI-compatible endpoint.

:class:`LLMSystemAgent` plays the system seat with a chat model. Each turn it prompts the model
with :func:`~dialogue_gym.llm.prompts.system_agent_messages` — the card's setting, system role,
goal and strategies (with their descriptions), the dialogue so far inside a ``<dialogue>``
block, and, with ``show_estimate=True``, the student mentalizer's estimate of the user's state
(``observation["estimate"]``, when the env has a student) — and says the cleaned reply.

It is resolved by name like every agent::

    from dialogue_gym.evaluation.agents import make_agent

    agent = make_agent("openai:gpt-4o-mini", card=env.card)  # key from $OPENAI_API_KEY
    agent = make_agent("openai:llama3", card=env.card, base_url="http://127.0.0.1:8000/v1")

or on the command line: ``dialogue-gym eval P4G-hard --agent openai:MODEL --base-url URL``.

**Backend.** Built with :func:`dialogue_gym.backends.make_backend`, so it gets the backend's
retries with backoff, token and cost accounting (:attr:`LLMSystemAgent.usage`, component
``"agent.system"``) and the record/replay cache (``cache=PATH``, ``cache_mode="rw"`` or
``"replay"``). The API key is read by the backend from an environment variable
(``api_key_env``, default ``OPENAI_API_KEY``); the agent never holds or logs it.

**Seeds.** :meth:`LLMSystemAgent.reset` takes the episode seed; every request of the episode
carries it in :class:`~dialogue_gym.backends.GenerationParams` (``seed``), so sampling is
seeded where the server supports it and the cache keys differ per episode — a replayed
evaluation gives back exactly the recorded utterances without a single request.

**Output cleanup.** A leading speaker label (``Persuader: ...``, ``You: ...``), a bracketed
strategy tag (``[greeting] ...``), surrounding quotes, code fences and anything from a line where
the model starts writing the other side's turn are removed; whitespace is collapsed; the text is
capped at ``max_chars`` (a reply cut by ``max_tokens`` is trimmed to its last full sentence).

**Fallback.** When nothing usable is left (an empty reply, only punctuation), the agent says a
neutral utterance instead: ``fallback`` when given, otherwise the templates of the card's first
open-question strategy (a non-asking strategy named ``*inquir*``, ``*question*`` or
``*probe*``; else the first non-asking strategy), in turn within an episode. This is never
silent: it is logged as a warning (logger ``dialogue_gym.llm.system_agent``) and counted in
:meth:`LLMSystemAgent.episode_info` (``fallbacks``, ``fallback_reasons``) and
:attr:`LLMSystemAgent.total_fallbacks`.

**Failures.** A backend failure after the retries (and a replay-mode cache miss) raises
:class:`~dialogue_gym.backends.BackendError` out of :meth:`~LLMSystemAgent.act`; the evaluator
records the episode as errored (``error_source="agent"``) and goes on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialogue_gym.argtypes import check_seed
from dialogue_gym.backends import Backend, Completion, GenerationParams, make_backend
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.llm import parsing, prompts

if TYPE_CHECKING:
    from dialogue_gym.backends.cache import ReplayCache

__all__ = [
    "AGENT_COMPONENT",
    "GENERIC_FALLBACK",
    "LLMSystemAgent",
    "clean_system_utterance",
    "neutral_utterances",
]

logger = logging.getLogger(__name__)

AGENT_COMPONENT = "agent.system"
"""The usage-accounting key of the agent's requests."""

GENERIC_FALLBACK = "Could you tell me a little more about how you see this?"
"""The fallback of a card without a suitable non-asking strategy."""

SYSTEM_SPEAKER = 0
SYSTEM, USER = "system", "user"

_OPEN_QUESTION = re.compile(r"inquir|question|probe", re.IGNORECASE)
_WORD = re.compile(r"\w")
_BOLD_LABEL = re.compile(r"(?m)^(\s*)\*\*([^*\n:]{1,40}):\s*\*\*")
_SENTENCE_END = re.compile(r"[.!?…](?=[\"'”’)\]]*(\s|$))")


def neutral_utterances(card: TaskCard) -> tuple[str, ...]:
    """The card's neutral fallback utterances (see the module docstring).

    Templates with ``{placeholders}`` are left out; a card with no usable template gives
    :data:`GENERIC_FALLBACK`.
    """
    open_strategies = [s for s in card.strategies if not s.asks]
    questions = [s for s in open_strategies if _OPEN_QUESTION.search(s.name)]
    for strategy in [*questions, *open_strategies]:
        templates = tuple(t for t in strategy.templates if "{" not in t and t.strip())
        if templates:
            return templates
    return (GENERIC_FALLBACK,)


def clean_system_utterance(
    text: str | None,
    card: TaskCard,
    max_chars: int = 600,
    truncated: bool = False,
) -> str | None:
    """Cleans a model reply into a system utterance; ``None`` when nothing usable is left.

    Args:
        text: The model output.
        card: The task card (speaker labels and strategy names to strip).
        max_chars: Longest utterance kept (cut at a sentence end where possible).
        truncated: The reply hit ``max_tokens``: drop its unfinished last sentence.
    """
    if not text:
        return None
    names = "|".join(re.escape(s.name) for s in card.strategies)
    tag = re.compile(rf"^\s*[\[(]\s*(?:strategy\s*:\s*)?(?:{names})\s*[\])]\s*[:\-–—]?\s*", re.I)
    speakers = prompts.judge_speakers(card)
    labels = (speakers[SYSTEM], card.system_role, card.system_role.title())
    # Markdown-bold labels ("**Persuader:** ...") as plain ones, which the cleaner strips.
    text = _BOLD_LABEL.sub(r"\1\2:", text)
    cleaned = parsing.clean_utterance(text, labels, max_chars=max_chars)
    if cleaned is not None:
        # A strategy tag may come before or after the speaker label.
        cleaned = parsing.clean_utterance(tag.sub("", cleaned, count=1), labels, max_chars)
    if cleaned is None or not _WORD.search(cleaned):
        return None
    if truncated:
        ends = [m.end() for m in _SENTENCE_END.finditer(cleaned)]
        if ends and ends[-1] < len(cleaned):
            cleaned = cleaned[: ends[-1]].strip()
    return cleaned


class LLMSystemAgent:
    """An LLM plays the system seat (see the module docstring).

    Args:
        card: The task card (``make_agent`` passes the env's card).
        backend: A backend spec (``"openai:MODEL"``; ``"fake"``, ``"hf:..."`` work too) or a
            ready :class:`~dialogue_gym.backends.Backend`.
        base_url: Endpoint of an ``openai:`` backend (``http://127.0.0.1:8000/v1``); ``None``
            for OpenAI itself.
        api_key_env: Environment variable holding the API key (the backend's default,
            ``OPENAI_API_KEY``, when ``None``).
        backend_options: More keyword arguments for the backend (``max_retries``,
            ``timeout``, ``max_concurrency``, ``price_per_1k``, ...).
        cache: SQLite file of the record/replay cache (or a ``ReplayCache``); ``None`` for none.
        cache_mode: ``"off"``, ``"rw"`` or ``"replay"``.
        temperature: Sampling temperature.
        max_tokens: Token budget of one utterance.
        top_p: Nucleus sampling mass.
        show_estimate: Show the model ``observation["estimate"]`` (the student mentalizer's
            estimate of the user's state) when it is not empty.
        max_chars: Longest utterance said (longer replies are cut at a sentence end).
        fallback: The utterance said when the reply is unusable (default: the card's neutral
            utterances, :func:`neutral_utterances`).

    Raises:
        ValueError: Bad options, or an unknown backend spec.
        TypeError: Backend options given with a ready backend.
    """

    def __init__(
        self,
        card: TaskCard,
        backend: str | Backend,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        backend_options: Mapping[str, Any] | None = None,
        cache: str | Path | ReplayCache | None = None,
        cache_mode: str = "rw",
        temperature: float = 0.7,
        max_tokens: int = 160,
        top_p: float = 1.0,
        show_estimate: bool = False,
        max_chars: int = 600,
        fallback: str | None = None,
    ) -> None:
        if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 20:
            raise ValueError(f"max_chars must be an int >= 20, got {max_chars!r}")
        if fallback is not None and (not isinstance(fallback, str) or not fallback.strip()):
            raise ValueError(f"fallback must be a non-empty string, got {fallback!r}")
        options = dict(backend_options or {})
        if base_url is not None:
            options["base_url"] = base_url
        if api_key_env is not None:
            options["api_key_env"] = api_key_env
        self.card = card
        # Validated now, so a bad option fails when the agent is built, not mid-episode.
        self._params = GenerationParams(temperature=temperature, max_tokens=max_tokens, top_p=top_p)
        self.backend: Backend = make_backend(backend, cache=cache, cache_mode=cache_mode, **options)
        # A backend handed in belongs to the caller; only what was built here is closed here.
        self._built_backend = isinstance(backend, str)
        self._built_cache = cache is not None and not isinstance(backend, str)
        self.show_estimate = bool(show_estimate)
        self.max_chars = max_chars
        self.fallback_texts = (fallback,) if fallback is not None else neutral_utterances(card)
        self.total_fallbacks = 0
        self.episode_seed: int | None = None
        self._episode_fallbacks: list[str] = []
        self._turns = 0

    # -- the agent protocol ---------------------------------------------------------------------

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: its seed seeds every request until the next reset.

        Raises:
            TypeError: ``seed`` is not an int or ``None`` (a bool, a float, a string).
            ValueError: ``seed`` is negative.
        """
        self.episode_seed = check_seed(seed)
        self._episode_fallbacks = []
        self._turns = 0

    def act(self, observation: Mapping[str, Any]) -> str:
        """The next utterance for a system observation.

        Raises:
            BackendError: The backend failed after its retries (or a replay cache miss).
        """
        completions = self.backend.generate(
            self.messages(observation), self.params(), n=1, component=AGENT_COMPONENT
        )
        return self._utterance(completions, observation)

    async def aact(self, observation: Mapping[str, Any]) -> str:
        """Async :meth:`act` (the backend's ``agenerate``)."""
        completions = await self.backend.agenerate(
            self.messages(observation), self.params(), n=1, component=AGENT_COMPONENT
        )
        return self._utterance(completions, observation)

    def act_batch(
        self,
        observations: Sequence[Mapping[str, Any]],
        seeds: Sequence[int | None] | None = None,
    ) -> list[str]:
        """Utterances for several observations (one per env), with one batched backend call.

        Args:
            observations: System observations, e.g. of N vectorized envs.
            seeds: Per-observation request seeds (the envs' episode seeds); default: the
                seed of the current episode (:meth:`reset`) for all.

        Returns:
            One utterance per observation, in order.

        Raises:
            ValueError: ``seeds`` of another length than ``observations``.
            BackendError: Some request failed after the retries.
        """
        if seeds is None:
            seeds = [self.episode_seed] * len(observations)
        if len(seeds) != len(observations):
            raise ValueError(f"got {len(seeds)} seeds for {len(observations)} observations")
        if not observations:
            return []
        pairs = zip(observations, seeds, strict=True)
        requests = [(self.messages(obs), self.params(seed)) for obs, seed in pairs]
        batches = self.backend.generate_batch(requests, n=1, component=AGENT_COMPONENT)
        return [self._utterance(c, obs) for c, obs in zip(batches, observations, strict=True)]

    # -- parts ----------------------------------------------------------------------------------

    def messages(self, observation: Mapping[str, Any]) -> list[prompts.Message]:
        """The chat messages sent for ``observation`` (see :func:`prompts.system_agent_messages`).

        Raises:
            KeyError: The observation has no ``history``.
        """
        history = [
            (SYSTEM if int(turn["speaker"]) == SYSTEM_SPEAKER else USER, str(turn["text"]))
            for turn in observation["history"]
        ]
        estimate = observation.get("estimate", "") if self.show_estimate else ""
        estimate = estimate.strip() if isinstance(estimate, str) else ""
        return prompts.system_agent_messages(self.card, history, estimate)

    def params(self, seed: int | None = None) -> GenerationParams:
        """Sampling parameters of a request, seeded with ``seed`` or the episode seed."""
        chosen = self.episode_seed if seed is None else seed
        return GenerationParams(
            temperature=self._params.temperature,
            max_tokens=self._params.max_tokens,
            top_p=self._params.top_p,
            seed=chosen,
        )

    def _utterance(self, completions: Sequence[Completion], observation: Mapping[str, Any]) -> str:
        self._turns += 1
        completion = completions[0] if completions else None
        text = clean_system_utterance(
            completion.text if completion is not None else None,
            self.card,
            self.max_chars,
            truncated=completion is not None and completion.finish_reason == "length",
        )
        if text is not None:
            return text
        reason = "empty_output" if completion is None or not completion.text.strip() else "unusable"
        self.total_fallbacks += 1
        self._episode_fallbacks.append(reason)
        # Counted within the episode, so an episode's text never depends on the ones before.
        index = (len(self._episode_fallbacks) - 1) % len(self.fallback_texts)
        fallback = self.fallback_texts[index]
        logger.warning(
            "%s gave %s reply at exchange %s (episode seed %s); the agent said its fallback "
            "utterance instead (%d fallbacks so far)",
            self.backend.name,
            "an empty" if reason == "empty_output" else "an unusable",
            observation.get("exchange", "?"),
            self.episode_seed,
            self.total_fallbacks,
        )
        return fallback

    # -- accounting -----------------------------------------------------------------------------

    @property
    def usage(self) -> dict[str, Any]:
        """The backend's per-component usage (calls, tokens, cost, retries, errors, hits)."""
        return self.backend.usage

    def episode_info(self) -> dict[str, Any]:
        """What happened this episode: utterances produced and fallbacks (with reasons)."""
        return {
            "turns": self._turns,
            "fallbacks": len(self._episode_fallbacks),
            "fallback_reasons": list(self._episode_fallbacks),
        }

    def config(self) -> dict[str, Any]:
        """The agent's configuration (for stamping into results; no credentials)."""
        return {
            "agent": type(self).__name__,
            "backend": getattr(self.backend, "name", type(self.backend).__name__),
            "temperature": self._params.temperature,
            "max_tokens": self._params.max_tokens,
            "top_p": self._params.top_p,
            "show_estimate": self.show_estimate,
            "max_chars": self.max_chars,
            "prompt_version": prompts.SYSTEM_AGENT_PROMPT_VERSION,
        }

    def close(self) -> None:
        """Closes the backend when the agent built it (HTTP clients, cache file)."""
        if self._built_backend:
            close = getattr(self.backend, "close", None)
            if callable(close):
                close()
        elif self._built_cache:
            self.backend.cache.close()  # type: ignore[attr-defined]  # our CachedBackend

    def __enter__(self) -> LLMSystemAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LLMSystemAgent(card={self.card.id!r}, backend={self.backend!r})"
