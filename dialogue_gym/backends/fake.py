"""A deterministic, offline backend for tests and examples.

``FakeBackend()`` answers every request with a short text derived from a hash of (messages,
sample index); ``FakeBackend.echo()`` repeats the last user message; ``FakeBackend(responder=f)``
calls ``f(messages, params, sample_index) -> str``; :func:`scripted` replays a list of replies in
order or a dict keyed by the last user message. Every call is appended to
:attr:`FakeBackend.calls_log` and counted in ``usage``.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dialogue_gym.backends.base import (
    BackendError,
    BaseBackend,
    Completion,
    GenerationParams,
    Messages,
    SampleRequest,
    apply_stop,
    canonical_json,
)

__all__ = ["FakeBackend", "FakeCall", "Responder", "scripted"]

Responder = Callable[[Messages, GenerationParams, int], str]
"""``responder(messages, params, sample_index) -> text``."""

_WORDS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
)  # fmt: skip


@dataclass(frozen=True)
class FakeCall:
    """One sample the fake backend generated.

    Attributes:
        component: Accounting key of the call.
        messages: The (normalized) messages.
        params: The parameters.
        sample_index: The sample index.
        text: What it answered.
    """

    component: str
    messages: list[dict[str, str]]
    params: GenerationParams
    sample_index: int
    text: str


def last_user_message(messages: Messages) -> str:
    """The content of the last ``user`` message ('' when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return message.get("content", "")
    return ""


def hash_responder(messages: Messages, params: GenerationParams, sample_index: int) -> str:
    """A short deterministic text from a hash of (messages, sample index)."""
    digest = hashlib.sha256(
        canonical_json([[dict(m) for m in messages], sample_index]).encode()
    ).digest()
    words = " ".join(_WORDS[b % len(_WORDS)] for b in digest[:5])
    return f"Fake reply {digest[:4].hex()}: {words}."


def echo_responder(messages: Messages, params: GenerationParams, sample_index: int) -> str:
    """The last user message, unchanged."""
    return last_user_message(messages)


def count_tokens(text: str) -> int:
    """Whitespace token count (the fake and the test server count tokens this way)."""
    return len(text.split())


class FakeBackend(BaseBackend):
    """A deterministic backend: no network, no model.

    The reply is cut before any of ``params.stop`` and to ``params.max_tokens`` whitespace
    tokens (then ``finish_reason="length"``). Tokens are counted by whitespace.

    Args:
        responder: ``responder(messages, params, sample_index) -> str``; default: a short text
            from a hash of (messages, sample index).
        name: Model id (part of cache keys).
        delay: Seconds each sample takes (``time.sleep`` / ``asyncio.sleep``), for
            concurrency tests.
        price_per_1k: ``(input, output)`` USD per 1000 tokens, to exercise cost accounting.

    Attributes:
        calls_log: Every sample generated, in call order.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        name: str = "fake",
        delay: float = 0.0,
        price_per_1k: tuple[float, float] = (0.0, 0.0),
    ) -> None:
        super().__init__()
        self.name = name
        self.responder: Responder = responder or hash_responder
        self.delay = float(delay)
        self.price_per_1k = (float(price_per_1k[0]), float(price_per_1k[1]))
        self.calls_log: list[FakeCall] = []
        self._lock = threading.Lock()

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def echo(cls, **kwargs: Any) -> FakeBackend:
        """A fake that answers with the last user message."""
        kwargs.setdefault("name", "fake:echo")
        return cls(echo_responder, **kwargs)

    @classmethod
    def scripted(
        cls,
        replies: Sequence[str] | Mapping[str, str],
        *,
        default: str | None = None,
        cycle: bool = False,
        **kwargs: Any,
    ) -> FakeBackend:
        """A fake that answers from a script (see :func:`scripted`)."""
        return scripted(replies, default=default, cycle=cycle, **kwargs)

    @classmethod
    def from_spec(cls, rest: str = "", **kwargs: Any) -> FakeBackend:
        """Build from the part of a ``"fake[:KIND]"`` spec after the colon.

        Args:
            rest: ``""`` or ``"hash"`` (the default responder) or ``"echo"``.
            **kwargs: Constructor options.

        Raises:
            ValueError: Unknown kind.
        """
        kind = rest.strip().lower()
        if kind in ("", "hash"):
            return cls(**kwargs)
        if kind == "echo":
            return cls.echo(**kwargs)
        raise ValueError(f"unknown fake backend {rest!r}; expected 'fake' or 'fake:echo'")

    # -- generation -----------------------------------------------------------------------------

    def _one(self, item: SampleRequest, component: str) -> Completion | BackendError:
        messages, params, index = item
        try:
            raw = self.responder(messages, params, index)
        except BackendError as exc:
            return exc
        if not isinstance(raw, str):
            raise TypeError(f"responder must return str, got {type(raw).__name__}")
        text, _ = apply_stop(raw, params.stop)
        words = text.split()
        finish = "stop"
        if len(words) > params.max_tokens:
            text, finish = " ".join(words[: params.max_tokens]), "length"
        prompt_tokens = sum(count_tokens(m["content"]) for m in messages)
        completion_tokens = count_tokens(text)
        cost = (
            prompt_tokens * self.price_per_1k[0] + completion_tokens * self.price_per_1k[1]
        ) / 1000
        with self._lock:
            self.calls_log.append(
                FakeCall(component, [dict(m) for m in messages], params, index, text)
            )
        return Completion(
            text=text,
            model=self.name,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            finish_reason=finish,
        )

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Generate every item (see :meth:`BaseBackend.complete`)."""
        results = []
        for item in requests:
            if self.delay:
                time.sleep(self.delay)
            results.append(self._one(item, component))
        self._account(results, component)
        return results

    async def acomplete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Async :meth:`complete` (samples sleep concurrently)."""

        async def one(item: SampleRequest) -> Completion | BackendError:
            if self.delay:
                await asyncio.sleep(self.delay)
            return self._one(item, component)

        results = list(await asyncio.gather(*(one(item) for item in requests)))
        self._account(results, component)
        return results

    def _account(self, results: Sequence[Completion | BackendError], component: str) -> None:
        done = [r for r in results if isinstance(r, Completion)]
        self._record(component, done, errors=len(results) - len(done))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FakeBackend(name={self.name!r})"


def scripted(
    replies: Sequence[str] | Mapping[str, str] | Iterable[str],
    *,
    default: str | None = None,
    cycle: bool = False,
    name: str = "fake:scripted",
    **kwargs: Any,
) -> FakeBackend:
    """A fake backend that answers from a script.

    Args:
        replies: A list (or any iterable) of replies handed out one per sample in call order,
            or a dict from the last user message to the reply (an exact match first, then the
            first key contained in the message).
        default: Reply when the list is exhausted or no dict key matches; ``None`` makes that
            sample fail with :class:`BackendError` (counted in ``usage.errors``).
        cycle: Restart a list from the beginning when it is exhausted.
        name: Model id.
        **kwargs: Other :class:`FakeBackend` options.

    Returns:
        The backend.
    """
    lock = threading.Lock()
    if isinstance(replies, Mapping):
        table = {str(k): str(v) for k, v in replies.items()}

        def by_message(messages: Messages, params: GenerationParams, index: int) -> str:
            said = last_user_message(messages)
            if said in table:
                return table[said]
            for key, value in table.items():
                if key in said:
                    return value
            if default is None:
                raise BackendError(f"no scripted reply matches {said[:80]!r}")
            return default

        return FakeBackend(by_message, name=name, **kwargs)

    script = [str(r) for r in replies]
    source = itertools.cycle(script) if cycle and script else iter(script)

    def in_order(messages: Messages, params: GenerationParams, index: int) -> str:
        with lock:
            reply = next(source, None)
        if reply is None:
            if default is None:
                raise BackendError(f"scripted replies exhausted (after {len(script)})")
            return default
        return reply

    return FakeBackend(in_order, name=name, **kwargs)
