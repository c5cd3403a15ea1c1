"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server, ...).

Built on the official ``openai`` client with its own retries turned off (``max_retries=0``):
this backend retries 429 (honouring ``Retry-After``), 408/409, 5xx, timeouts, connection
errors, malformed responses and truncated streams with exponential backoff and jitter drawn
from a per-backend seeded RNG. Async calls are limited by a ``max_concurrency`` semaphore
(per event loop; threaded sync calls by a semaphore of the same size). Tokens and cost are
accounted per component.

Closing the backend while sync requests are in flight (a run stopped by Ctrl-C leaves them
behind) waits for none of them: their connections are closed when they return, they are not
retried, and the threads of ``complete`` are daemon threads, which never delay the exit.

The API key is read from an environment variable (``api_key_env``) and handed to the client
only: it is not an attribute of the backend, and error messages and logs are scrubbed of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
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
from dialogue_gym.backends.openai_failures import (
    RETRYABLE_STATUS,
    Failure,
    MalformedResponse,
    error_detail,
    make_redactor,
    parse_retry_after,
    transport_errors,
)
from dialogue_gym.mind.threads import DaemonPool

__all__ = ["OpenAIBackend"]

logger = logging.getLogger(__name__)

NO_KEY_PLACEHOLDER = "no-key"  # sent to local servers (base_url given) when no key is set


class OpenAIBackend(BaseBackend):
    """Chat completions from an OpenAI-compatible endpoint.

    Args:
        model: Model id sent to the endpoint.
        base_url: Endpoint (``http://127.0.0.1:8000/v1``); ``None`` for OpenAI.
        api_key_env: Environment variable holding the API key. When it is unset and a
            ``base_url`` is given, a placeholder is sent (local servers ignore it); with
            neither, every call fails with a non-retryable :class:`BackendError`.
        max_concurrency: Most requests in flight (per event loop for async calls, and across
            threads for sync calls).
        timeout: Seconds per attempt.
        max_retries: Retries after the first attempt (so at most ``max_retries + 1``
            attempts per sample).
        price_per_1k: ``(input, output)`` USD per 1000 tokens; ``None`` accounts cost 0.
        base_delay: First backoff delay; attempt ``k`` waits ``base_delay·2^k`` scaled by a
            jitter factor in [0.5, 1], capped at ``max_delay``.
        max_delay: Cap of the backoff delay.
        max_retry_after: Cap of a server's ``Retry-After`` (which otherwise replaces the
            backoff delay).
        seed: Seed of the jitter RNG (the global ``random`` state is never touched).
        n_strategy: ``"separate"`` (one request per sample, sample ``i`` with seed
            ``params.seed + i``; works with every server) or ``"param"`` (one request with the
            ``n`` parameter for the samples of a request).
        stream: Request server-sent events and assemble the text (a stream that ends
            without a finish reason counts as truncated and is retried).
        extra_body: Extra JSON fields for every request (server-specific options).
        name: Model id stamped into results and cache keys (default: ``model``).
        default_headers: Extra HTTP headers.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        timeout: float = 30.0,
        max_retries: int = 5,
        price_per_1k: tuple[float, float] | None = None,
        base_delay: float = 0.5,
        max_delay: float = 20.0,
        max_retry_after: float = 60.0,
        seed: int = 0,
        n_strategy: str = "separate",
        stream: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self._config = {
            k: v for k, v in locals().items() if k not in ("self", "__class__")
        }  # constructor arguments, for pickling
        if not model:
            raise ValueError("model must be a non-empty string")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if n_strategy not in ("separate", "param"):
            raise ValueError(f"n_strategy must be 'separate' or 'param', got {n_strategy!r}")
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the OpenAI backend needs the openai package: pip install 'dialogue-gym[llm]'"
            ) from exc
        self._openai = openai
        self.model = model
        self.name = name or model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.max_concurrency = int(max_concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.price_per_1k = (
            (float(price_per_1k[0]), float(price_per_1k[1])) if price_per_1k else (0.0, 0.0)
        )
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        self.max_retry_after = float(max_retry_after)
        self.n_strategy = n_strategy
        self.stream = bool(stream)
        self.extra_body = dict(extra_body or {})
        self._default_headers = dict(default_headers or {})
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._sync_sem = threading.BoundedSemaphore(self.max_concurrency)
        self._client_lock = threading.Lock()
        self._sync_client: Any = None
        self._async_clients: weakref.WeakKeyDictionary[Any, tuple[Any, asyncio.Semaphore, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._pool: DaemonPool | None = None
        self._in_flight = 0  # sync attempts using a client
        self._retired: list[Any] = []  # clients closed while in use: the last attempt closes them
        self._generation = 0  # bumped by close(): attempts of an older one are not retried
        self._transport_errors = transport_errors()
        key = os.environ.get(api_key_env) or None
        self._key_missing = key is None and base_url is None
        # The key lives only in these closures and inside the openai client objects.
        secret = key or NO_KEY_PLACEHOLDER
        self._secret: Callable[[], str] = lambda: secret
        self._redact: Callable[[str], str] = make_redactor(key)

    # -- clients --------------------------------------------------------------------------------

    def _client(self) -> Any:
        with self._client_lock:
            if self._sync_client is None:
                self._sync_client = self._openai.OpenAI(
                    api_key=self._secret(),
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=0,
                    default_headers=self._default_headers or None,
                )
            return self._sync_client

    async def _async_client(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        with self._client_lock:
            entry = self._async_clients.get(loop)
            if entry is None:
                client = self._openai.AsyncOpenAI(
                    api_key=self._secret(),
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=0,
                    default_headers=self._default_headers or None,
                )
                closer = _close_at_loop_shutdown(client)
                entry = (client, asyncio.Semaphore(self.max_concurrency), closer)
                self._async_clients[loop] = entry
                started = False
            else:
                started = True
        if not started:
            # Parked at its ``yield``: asyncio.run() finalizes async generators before it closes
            # the loop, which closes this loop's client and its pooled connections.
            await entry[2].__anext__()
        return entry[0], entry[1]

    @contextlib.contextmanager
    def _using_client(self) -> Iterator[Any]:
        """The sync client, kept open until the attempt using it ends (see :meth:`close`)."""
        client = self._client()
        with self._client_lock:
            self._in_flight += 1
        try:
            yield client
        finally:
            with self._client_lock:
                self._in_flight -= 1
                retired: list[Any] = []
                if not self._in_flight:
                    retired, self._retired = self._retired, []
            for old in retired:
                with contextlib.suppress(Exception):
                    old.close()

    def close(self) -> None:
        """Close the HTTP clients and the worker threads, without waiting for any request.

        Requests in flight (abandoned by a run that stopped) are not retried once they end,
        and the client they use is closed when the last of them returns. The backend may be
        used again: it opens a new client.
        """
        with self._client_lock:
            client, self._sync_client = self._sync_client, None
            pool, self._pool = self._pool, None
            self._async_clients = weakref.WeakKeyDictionary()
            self._generation += 1
            if client is not None and self._in_flight:
                self._retired.append(client)
                client = None
        if client is not None:
            client.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Close the async client of the running event loop (and the sync resources)."""
        loop = asyncio.get_running_loop()
        with self._client_lock:
            entry = self._async_clients.pop(loop, None)
        if entry is not None:
            await entry[2].aclose()  # runs the closer's ``finally``: closes the client
        self.close()

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r}, max_concurrency={self.max_concurrency})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles (for worker processes) carry the configuration, never the key: the copy
        # reads it again from ``api_key_env`` in its own environment.
        return (_rebuild, (dict(self._config), self.usage))

    # -- requests -------------------------------------------------------------------------------

    def _groups(self, requests: Sequence[SampleRequest]) -> list[list[int]]:
        """Positions of ``requests`` sent together (one HTTP request per group)."""
        if self.n_strategy == "separate":
            return [[i] for i in range(len(requests))]
        groups: dict[str, list[int]] = {}
        for i, (messages, params, _) in enumerate(requests):
            groups.setdefault(canonical_json([list(messages), params.to_dict()]), []).append(i)
        return list(groups.values())

    def _kwargs(self, messages: Messages, params: GenerationParams, first: int, n: int) -> dict:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
        }
        if params.stop:
            kwargs["stop"] = list(params.stop)
        if params.seed is not None:
            kwargs["seed"] = params.seed + first
        if n > 1:
            kwargs["n"] = n
        if self.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        return kwargs

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        pin, pout = self.price_per_1k
        return (prompt_tokens * pin + completion_tokens * pout) / 1000.0

    def _completions(
        self,
        texts: list[tuple[str, str | None]],
        params: GenerationParams,
        prompt_tokens: int,
        completion_tokens: int,
        n: int,
    ) -> list[Completion]:
        if len(texts) < n:
            raise MalformedResponse(f"expected {n} choices, got {len(texts)}")
        out = []
        for k, (raw, finish) in enumerate(texts[:n]):
            text, _ = apply_stop(raw, params.stop)
            # One request's prompt is billed once: sample 0 carries it; generated tokens are
            # split evenly (the remainder to sample 0).
            pt = prompt_tokens if k == 0 else 0
            ct = completion_tokens // n + (completion_tokens % n if k == 0 else 0)
            out.append(
                Completion(
                    text=text,
                    model=self.name,
                    prompt_tokens=pt,
                    completion_tokens=ct,
                    cost_usd=self._cost(pt, ct),
                    finish_reason=finish or "stop",
                )
            )
        return out

    def _parse(self, response: Any, params: GenerationParams, n: int) -> list[Completion]:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse("response has no choices")
        texts = []
        for choice in sorted(choices, key=lambda c: getattr(c, "index", 0) or 0):
            message = getattr(choice, "message", None)
            content = getattr(message, "content", None) if message is not None else None
            if content is not None and not isinstance(content, str):
                raise MalformedResponse("choice content is not a string")
            texts.append((content or "", getattr(choice, "finish_reason", None)))
        usage = getattr(response, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        return self._completions(texts, params, pt, ct, n)

    def _new_stream_state(self) -> dict[str, Any]:
        return {"parts": {}, "finish": {}, "usage": None, "model": None}

    def _stream_chunk(self, state: dict[str, Any], chunk: Any) -> None:
        if getattr(chunk, "usage", None) is not None:
            state["usage"] = chunk.usage
        state["model"] = getattr(chunk, "model", None) or state["model"]
        for choice in getattr(chunk, "choices", None) or []:
            index = getattr(choice, "index", 0) or 0
            delta = getattr(choice, "delta", None)
            piece = getattr(delta, "content", None) if delta is not None else None
            if piece:
                state["parts"].setdefault(index, []).append(piece)
            if getattr(choice, "finish_reason", None):
                state["finish"][index] = choice.finish_reason

    def _stream_result(
        self, state: dict[str, Any], params: GenerationParams, n: int
    ) -> list[Completion]:
        missing = [i for i in range(n) if i not in state["finish"]]
        if missing:
            raise MalformedResponse(f"stream ended without a finish reason for choice(s) {missing}")
        texts = [("".join(state["parts"].get(i, [])), state["finish"][i]) for i in range(n)]
        usage = state["usage"]
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        return self._completions(texts, params, pt, ct, n)

    # -- failures and backoff -------------------------------------------------------------------

    def _classify(self, exc: BaseException) -> Failure | None:
        """Describe a failed attempt, or ``None`` for an exception that is a bug here."""
        oa = self._openai
        if isinstance(exc, MalformedResponse):
            return Failure(True, "malformed response", str(exc))
        if isinstance(exc, oa.APITimeoutError):
            return Failure(True, "timeout", f"no answer within {self.timeout:g}s")
        if isinstance(exc, oa.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
            return Failure(True, "connection error", detail)
        if isinstance(exc, oa.APIStatusError):
            status = int(exc.status_code)
            retryable = status in RETRYABLE_STATUS or status >= 500
            retry_after = parse_retry_after(getattr(exc.response, "headers", None))
            kind = "rate limited (429)" if status == 429 else f"HTTP {status}"
            return Failure(retryable, kind, error_detail(exc), status, retry_after)
        if isinstance(exc, oa.APIResponseValidationError | json.JSONDecodeError):
            return Failure(True, "malformed response", str(exc))
        if self._transport_errors and isinstance(exc, self._transport_errors):
            return Failure(True, "connection error", f"{type(exc).__name__}: {exc}")
        if isinstance(exc, oa.OpenAIError):
            return Failure(False, "client error", f"{type(exc).__name__}: {exc}")
        return None

    def _delay(self, attempt: int, failure: Failure) -> float:
        if failure.retry_after is not None:
            return min(failure.retry_after, self.max_retry_after)
        with self._rng_lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        return min(self.max_delay, self.base_delay * (2**attempt)) * jitter

    def _give_up(self, failure: Failure, attempts: int) -> BackendError:
        detail = self._redact(failure.detail)[:500]
        where = f" at {self.base_url}" if self.base_url else ""
        return BackendError(
            f"{self.name}{where}: {failure.kind} after {attempts} attempt(s): {detail}",
            retryable=failure.retryable,
            status=failure.status,
        )

    def _log_retry(self, failure: Failure, attempt: int, delay: float) -> None:
        logger.warning(
            "%s: %s (attempt %d of %d); retrying in %.2fs: %s",
            self.name,
            failure.kind,
            attempt + 1,
            self.max_retries + 1,
            delay,
            self._redact(failure.detail)[:200],
        )

    def _missing_key(self) -> BackendError:
        return BackendError(
            f"{self.name}: environment variable {self.api_key_env} is not set "
            "(set it, or pass base_url for a local server)",
            retryable=False,
        )

    # -- sync -----------------------------------------------------------------------------------

    def _attempt(self, messages: Messages, params: GenerationParams, first: int, n: int):
        kwargs = self._kwargs(messages, params, first, n)
        with self._using_client() as client, self._sync_sem:
            if not self.stream:
                return self._parse(client.chat.completions.create(**kwargs), params, n)
            state = self._new_stream_state()
            stream = client.chat.completions.create(**kwargs)
            try:
                for chunk in stream:
                    self._stream_chunk(state, chunk)
            finally:
                stream.close()
            return self._stream_result(state, params, n)

    def _call(
        self, messages: Messages, params: GenerationParams, first: int, n: int, component: str
    ) -> list[Completion] | BackendError:
        if self._key_missing:
            return self._missing_key()
        generation = self._generation
        attempt = 0
        while True:
            try:
                return self._attempt(messages, params, first, n)
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
            closed = self._generation != generation  # closed meanwhile: the run stopped
            if closed or not failure.retryable or attempt >= self.max_retries:
                return self._give_up(failure, attempt + 1)
            delay = self._delay(attempt, failure)
            self._log_retry(failure, attempt, delay)
            self._record(component, retries=1)
            time.sleep(delay)
            if self._generation != generation:
                return self._give_up(failure, attempt + 1)
            attempt += 1

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Generate every item, up to ``max_concurrency`` requests at a time in threads."""
        groups = self._groups(requests)

        def run(group: list[int]) -> list[Completion] | BackendError:
            messages, params, first = requests[group[0]]
            return self._call(messages, params, first, len(group), component)

        if len(groups) == 1:
            outcomes = [run(groups[0])]
        else:
            with self._client_lock:
                if self._pool is None:
                    self._pool = DaemonPool(self.max_concurrency, name="dialogue_gym-openai")
                pool = self._pool
            outcomes = pool.map(run, groups)
        return self._assemble(requests, groups, outcomes, component)

    # -- async ----------------------------------------------------------------------------------

    async def _aattempt(self, messages: Messages, params: GenerationParams, first: int, n: int):
        kwargs = self._kwargs(messages, params, first, n)
        client, semaphore = await self._async_client()
        async with semaphore:
            if not self.stream:
                return self._parse(await client.chat.completions.create(**kwargs), params, n)
            state = self._new_stream_state()
            stream = await client.chat.completions.create(**kwargs)
            try:
                async for chunk in stream:
                    self._stream_chunk(state, chunk)
            finally:
                await stream.close()
            return self._stream_result(state, params, n)

    async def _acall(
        self, messages: Messages, params: GenerationParams, first: int, n: int, component: str
    ) -> list[Completion] | BackendError:
        if self._key_missing:
            return self._missing_key()
        attempt = 0
        while True:
            try:
                return await self._aattempt(messages, params, first, n)
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
            if not failure.retryable or attempt >= self.max_retries:
                return self._give_up(failure, attempt + 1)
            delay = self._delay(attempt, failure)
            self._log_retry(failure, attempt, delay)
            self._record(component, retries=1)
            await asyncio.sleep(delay)
            attempt += 1

    async def acomplete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Generate every item concurrently, at most ``max_concurrency`` in flight."""
        groups = self._groups(requests)

        async def run(group: list[int]) -> list[Completion] | BackendError:
            messages, params, first = requests[group[0]]
            return await self._acall(messages, params, first, len(group), component)

        outcomes = list(await asyncio.gather(*(run(g) for g in groups)))
        return self._assemble(requests, groups, outcomes, component)

    def _assemble(
        self,
        requests: Sequence[SampleRequest],
        groups: Sequence[list[int]],
        outcomes: Sequence[list[Completion] | BackendError],
        component: str,
    ) -> list[Completion | BackendError]:
        results: list[Completion | BackendError | None] = [None] * len(requests)
        errors = 0
        for group, outcome in zip(groups, outcomes, strict=True):
            for k, position in enumerate(group):
                if isinstance(outcome, BackendError):
                    results[position] = outcome
                    errors += 1
                else:
                    results[position] = outcome[k]
        done = [r for r in results if isinstance(r, Completion)]
        self._record(component, done, errors=errors)
        return results  # type: ignore[return-value]

    # -- extras ---------------------------------------------------------------------------------

    def list_models(self) -> list[str]:
        """Model ids the endpoint serves (``GET /models``; one attempt, no retries).

        Raises:
            BackendError: The endpoint failed.
        """
        if self._key_missing:
            raise self._missing_key()
        try:
            return [m.id for m in self._client().models.list()]
        except Exception as exc:
            failure = self._classify(exc)
            if failure is None:
                raise
            raise self._give_up(failure, 1) from None


def _rebuild(config: dict[str, Any], usage: dict[str, Any]) -> OpenAIBackend:
    backend = OpenAIBackend(**config)
    backend.usage = usage
    return backend


async def _close_at_loop_shutdown(client: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await client.close()
