"""What the test server does to one request (:class:`Fault`) and what it records of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FAULT_KINDS", "Fault", "RequestRecord"]

FAULT_KINDS = ("ok", "status", "timeout", "malformed", "truncate", "disconnect")


@dataclass(frozen=True)
class Fault:
    """What the server does to one request.

    Attributes:
        kind: ``"ok"``, ``"status"``, ``"timeout"``, ``"malformed"``, ``"truncate"`` or
            ``"disconnect"``.
        status: HTTP status of a ``"status"`` fault.
        retry_after: ``Retry-After`` header value (seconds) of a ``"status"`` fault.
        delay: Seconds a ``"timeout"`` fault sleeps before answering.
    """

    kind: str = "ok"
    status: int = 500
    retry_after: float | None = None
    delay: float = 5.0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")

    @classmethod
    def parse(cls, spec: str | Fault | None) -> Fault:
        """Read ``"429:0.5"``, ``"500"``, ``"status:418"``, ``"timeout:2"``, ``"malformed"``, ..."""
        if spec is None:
            return cls()
        if isinstance(spec, Fault):
            return spec
        name, _, arg = str(spec).strip().lower().partition(":")
        if name.isdigit():
            status = int(name)
            retry_after = float(arg) if arg else (0.0 if status == 429 else None)
            return cls("status", status=status, retry_after=retry_after)
        if name == "status":
            return cls("status", status=int(arg))
        if name == "timeout":
            return cls("timeout", delay=float(arg) if arg else 5.0)
        if name in ("ok", "none", ""):
            return cls()
        return cls(name)


@dataclass
class RequestRecord:
    """One request the server received (the ``Authorization`` header is never kept).

    Attributes:
        index: 0-based number among all requests.
        method: ``GET`` or ``POST``.
        path: Request path.
        body: Parsed JSON body (``None`` for GET or unparsable bodies).
        fault: The fault applied (``"ok"`` when none).
        authorized: An ``Authorization`` header was present.
        started: ``time.monotonic()`` when handling began.
        finished: ``time.monotonic()`` when the response was sent (or the fault applied).
        status: HTTP status sent (``None`` for connection faults).
    """

    index: int
    method: str
    path: str
    body: Any = None
    fault: str = "ok"
    authorized: bool = False
    started: float = 0.0
    finished: float | None = None
    status: int | None = None
