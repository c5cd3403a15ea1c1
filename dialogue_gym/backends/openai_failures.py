"""What a failed OpenAI-compatible request was, and what of it may be shown.

The pieces of :class:`~dialogue_gym.backends.openai_backend.OpenAIBackend`'s retry policy that
do not need the client: the statuses worth retrying, a failed attempt's description
(:class:`Failure`), the server's ``Retry-After`` hint, the error message inside a response
body, the transport errors of the installed HTTP library, and the redactor that keeps the API
key out of messages and logs.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "RETRYABLE_STATUS",
    "Failure",
    "MalformedResponse",
    "error_detail",
    "make_redactor",
    "parse_retry_after",
    "transport_errors",
]

RETRYABLE_STATUS = frozenset({408, 409, 429})


class MalformedResponse(Exception):
    """A response that parsed but is not a usable chat completion (or a truncated stream)."""


@dataclass
class Failure:
    """One failed attempt: whether to retry it, what kind it was, and the server's hints."""

    retryable: bool
    kind: str
    detail: str
    status: int | None = None
    retry_after: float | None = None


def transport_errors() -> tuple[type[BaseException], ...]:
    """The installed HTTP library's transport errors (``httpx``), retried as connection errors."""
    errors: list[type[BaseException]] = []
    for module in ("httpx2", "httpx"):
        try:
            mod = __import__(module)
        except ImportError:
            continue
        for name in ("TransportError", "StreamError", "DecodingError"):
            cls = getattr(mod, name, None)
            if isinstance(cls, type):
                errors.append(cls)
    return tuple(errors)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    try:
        value = headers.get("retry-after-ms")
        if value is not None:
            seconds = float(value) / 1000.0
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def error_detail(exc: Any) -> str:
    """The error message of an ``openai`` status error (from the response body when it has one)."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", "") or exc)


def make_redactor(key: str | None) -> Callable[[str], str]:
    """A function that replaces ``key`` with ``***`` in a text (the identity without a key)."""
    if not key:
        return lambda text: text

    def redact(text: str) -> str:
        return text.replace(key, "***")

    return redact
