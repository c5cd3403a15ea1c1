"""The text-generation interface shared by every backend.

A backend turns chat messages into completions (:func:`dialogue_gym.backends.make_backend`
builds one from a spec)::

    backend = make_backend("fake")
    [reply] = backend.generate([{"role": "user", "content": "Hi"}], GenerationParams())

Every backend has a ``name`` (the model id, stamped into results) and a ``usage`` dict that
accounts calls, tokens, cost, retries, errors and cache hits per *component* (the caller says
which component asks: ``"judge.success"``, ``"user"``, ...).

``n`` samples of one request are numbered ``0..n-1`` (the *sample index*); a backend's output
for a sample depends only on (model, messages, params, sample index), which is what the
record/replay cache (:mod:`dialogue_gym.backends.cache`) keys on. Backends built on
:class:`BaseBackend` also answer :meth:`BaseBackend.complete`, which generates an explicit list
of (messages, params, sample index) items and returns failures in place instead of raising, so
that a cache can keep every sample that succeeded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = [
    "ROLES",
    "Backend",
    "BackendError",
    "BaseBackend",
    "CacheMiss",
    "Completion",
    "GenerationParams",
    "Messages",
    "SampleRequest",
    "Usage",
    "canonical_json",
    "normalize_messages",
]

ROLES = ("system", "user", "assistant")

Messages = Sequence[Mapping[str, str]]
"""Chat messages: ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``."""

# One lock for every usage update: a cache wrapper and its inner backend share Usage objects.
_USAGE_LOCK = threading.Lock()


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters of one request.

    Attributes:
        temperature: 0 means greedy (deterministic for local backends).
        max_tokens: Most tokens to generate.
        top_p: Nucleus sampling mass, in (0, 1].
        stop: Stop sequences; the text is cut before the first one. A list is stored as a tuple.
        seed: Sampling seed; sample ``i`` of a request uses ``seed + i``. ``None`` lets the
            backend choose (local backends use their own fixed base seed, 0 by default).
    """

    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        elif not isinstance(self.stop, tuple):
            object.__setattr__(self, "stop", tuple(self.stop))
        if not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError(f"stop sequences must be non-empty strings, got {self.stop!r}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number, got {self.temperature!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise ValueError(f"max_tokens must be an int, got {self.max_tokens!r}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int)
        ):
            raise ValueError(f"seed must be an int or None, got {self.seed!r}")

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-ready dict (``stop`` as a list)."""
        return {
            "temperature": float(self.temperature),
            "max_tokens": self.max_tokens,
            "top_p": float(self.top_p),
            "stop": list(self.stop),
            "seed": self.seed,
        }

    def sample_seed(self, sample_index: int, default: int = 0) -> int:
        """The seed of sample ``sample_index``: ``(seed or default) + sample_index``."""
        return (default if self.seed is None else self.seed) + sample_index


@dataclass(frozen=True)
class Completion:
    """One generated text.

    Attributes:
        text: The generated text (cut before any stop sequence).
        model: The model that produced it.
        prompt_tokens: Tokens in the prompt (as counted by the backend).
        completion_tokens: Tokens generated.
        cost_usd: What the call cost (0 for local backends).
        cached: Served from the record/replay cache rather than generated now.
        finish_reason: ``"stop"`` (natural end or stop sequence) or ``"length"`` (hit
            ``max_tokens``).
    """

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    finish_reason: str = "stop"

    def to_dict(self) -> dict[str, Any]:
        """The completion as a JSON-ready dict."""
        return dataclasses.asdict(self)


@dataclass
class Usage:
    """What one component of a run consumed.

    Attributes:
        calls: Completions returned (one per sample, cached ones included).
        prompt_tokens: Prompt tokens of live (not cached) completions.
        completion_tokens: Generated tokens of live completions.
        cost_usd: Cost of live completions.
        retries: Failed attempts that were retried (429, 5xx, timeouts, connection errors,
            malformed responses).
        errors: Samples that finally failed (raised :class:`BackendError`).
        cache_hits: Completions served from the cache (counted in ``calls`` too).
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    errors: int = 0
    cache_hits: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            **{
                f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """The counters as a JSON-ready dict."""
        return dataclasses.asdict(self)


class BackendError(RuntimeError):
    """A call still failing after all retries (or a replay-only cache miss: :class:`CacheMiss`).

    Attributes:
        retryable: The failure was transient (the retry budget ran out) rather than permanent
            (a 4xx other than 429, a missing API key).
        status: The HTTP status of the last attempt, when there was one.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class CacheMiss(BackendError):
    """A request not in the cache while the cache is in ``"replay"`` mode."""


class SampleRequest(NamedTuple):
    """One sample to generate: messages, parameters and the sample index."""

    messages: Messages
    params: GenerationParams
    sample_index: int = 0


@runtime_checkable
class Backend(Protocol):
    """A text-generation client (OpenAI-compatible, local transformers, fake, cached).

    Attributes:
        name: Model id, stamped into results and part of every cache key.
        usage: Per-component accounting (``"judge.success"``, ``"user"``, ...).
    """

    name: str
    usage: dict[str, Usage]

    def generate(
        self,
        messages: Messages,
        params: GenerationParams = GenerationParams(),
        n: int = 1,
        component: str = "default",
    ) -> list[Completion]:
        """Generate ``n`` samples (indices ``0..n-1``) of one request."""
        ...

    async def agenerate(
        self,
        messages: Messages,
        params: GenerationParams = GenerationParams(),
        n: int = 1,
        component: str = "default",
    ) -> list[Completion]:
        """Async :meth:`generate`."""
        ...

    def generate_batch(
        self,
        requests: Sequence[tuple[Messages, GenerationParams]],
        n: int = 1,
        component: str = "default",
    ) -> list[list[Completion]]:
        """Generate ``n`` samples of each request; one list per request, in order."""
        ...


# -- helpers ------------------------------------------------------------------------------------


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept, NaN rejected."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def normalize_messages(messages: Messages) -> list[dict[str, str]]:
    """Validate chat messages and copy them into plain ``{"role", "content"}`` dicts.

    Args:
        messages: A non-empty sequence of mappings with a ``role`` in ``system``, ``user``,
            ``assistant`` and a string ``content``.

    Returns:
        A list of new dicts holding only ``role`` and ``content``.

    Raises:
        ValueError: Not a sequence of valid messages.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValueError("messages must be a sequence of {'role', 'content'} mappings")
    if not messages:
        raise ValueError("messages must not be empty")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"message {i} is not a mapping: {message!r}")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise ValueError(f"message {i} has role {role!r}; expected one of {ROLES}")
        if not isinstance(content, str):
            raise ValueError(f"message {i} content must be a str, got {type(content).__name__}")
        out.append({"role": role, "content": content})
    return out


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop sequence.

    Returns:
        The text and whether a stop sequence was found.
    """
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")


class BaseBackend:
    """Common machinery: usage accounting and the public methods built on :meth:`complete`.

    Subclasses implement :meth:`complete` (and, for real async I/O, :meth:`acomplete`).

    Attributes:
        name: Model id.
        usage: Per-component accounting.
    """

    name: str = "base"

    def __init__(self) -> None:
        self.usage: dict[str, Usage] = {}

    # -- to implement ---------------------------------------------------------------------------

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Generate every (messages, params, sample index) item.

        Failures come back in place as :class:`BackendError` (and are counted in
        ``usage[component].errors``) so that a caller can keep the samples that succeeded.

        Args:
            requests: The samples to generate; messages are already validated.
            component: Accounting key.

        Returns:
            One completion or error per request, in order.
        """
        raise NotImplementedError

    async def acomplete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Async :meth:`complete` (default: :meth:`complete` in a worker thread)."""
        return await asyncio.to_thread(self.complete, requests, component)

    # -- public API -----------------------------------------------------------------------------

    def generate(
        self,
        messages: Messages,
        params: GenerationParams = GenerationParams(),
        n: int = 1,
        component: str = "default",
    ) -> list[Completion]:
        """Generate ``n`` samples (indices ``0..n-1``) of one request.

        Args:
            messages: Chat messages.
            params: Sampling parameters.
            n: Number of samples.
            component: Accounting key in :attr:`usage`.

        Returns:
            ``n`` completions, sample 0 first.

        Raises:
            BackendError: A sample still failed after the retries.
            ValueError: Invalid messages or ``n``.
        """
        _check_n(n)
        items = self._items([(messages, params)], n)
        return _raise_first(self.complete(items, component))

    async def agenerate(
        self,
        messages: Messages,
        params: GenerationParams = GenerationParams(),
        n: int = 1,
        component: str = "default",
    ) -> list[Completion]:
        """Async :meth:`generate`."""
        _check_n(n)
        items = self._items([(messages, params)], n)
        return _raise_first(await self.acomplete(items, component))

    def generate_batch(
        self,
        requests: Sequence[tuple[Messages, GenerationParams]],
        n: int = 1,
        component: str = "default",
    ) -> list[list[Completion]]:
        """Generate ``n`` samples of each request (concurrently or as one padded batch).

        Args:
            requests: ``(messages, params)`` pairs.
            n: Samples per request.
            component: Accounting key.

        Returns:
            One list of ``n`` completions per request, in order.

        Raises:
            BackendError: Some sample still failed after the retries (the others were still
                generated, and cached when a cache is in use).
        """
        _check_n(n)
        items = self._items(requests, n)
        flat = _raise_first(self.complete(items, component))
        return [flat[i * n : (i + 1) * n] for i in range(len(requests))]

    async def agenerate_batch(
        self,
        requests: Sequence[tuple[Messages, GenerationParams]],
        n: int = 1,
        component: str = "default",
    ) -> list[list[Completion]]:
        """Async :meth:`generate_batch`."""
        _check_n(n)
        items = self._items(requests, n)
        flat = _raise_first(await self.acomplete(items, component))
        return [flat[i * n : (i + 1) * n] for i in range(len(requests))]

    def total_usage(self) -> Usage:
        """Usage summed over all components."""
        with _USAGE_LOCK:
            return sum(self.usage.values(), Usage())

    def reset_usage(self) -> None:
        """Zero every counter (the dict object is kept: wrappers share it)."""
        with _USAGE_LOCK:
            self.usage.clear()

    def close(self) -> None:
        """Release clients, threads and files (the backend may still be used afterwards)."""

    def __enter__(self) -> BaseBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    # -- for subclasses -------------------------------------------------------------------------

    @staticmethod
    def _items(
        requests: Sequence[tuple[Messages, GenerationParams]], n: int
    ) -> list[SampleRequest]:
        items: list[SampleRequest] = []
        for messages, params in requests:
            if not isinstance(params, GenerationParams):
                raise ValueError(f"params must be GenerationParams, got {type(params).__name__}")
            msgs = normalize_messages(messages)
            items.extend(SampleRequest(msgs, params, i) for i in range(n))
        return items

    def _record(
        self,
        component: str,
        completions: Sequence[Completion] = (),
        *,
        retries: int = 0,
        errors: int = 0,
        cache_hits: int = 0,
    ) -> None:
        record_usage(
            self.usage,
            component,
            completions,
            retries=retries,
            errors=errors,
            cache_hits=cache_hits,
        )


def record_usage(
    usage: dict[str, Usage],
    component: str,
    completions: Sequence[Completion] = (),
    *,
    retries: int = 0,
    errors: int = 0,
    cache_hits: int = 0,
) -> None:
    """Add completions and counters to ``usage[component]`` (thread-safe).

    Cached completions count as calls (and cache hits) but add no tokens or cost.
    """
    with _USAGE_LOCK:
        u = usage.setdefault(component, Usage())
        for c in completions:
            u.calls += 1
            if c.cached:
                continue
            u.prompt_tokens += c.prompt_tokens
            u.completion_tokens += c.completion_tokens
            u.cost_usd += c.cost_usd
        u.retries += retries
        u.errors += errors
        u.cache_hits += cache_hits


def _raise_first(results: Sequence[Completion | BaseException]) -> list[Completion]:
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return list(results)  # type: ignore[arg-type]
