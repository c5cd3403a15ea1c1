"""Content-addressed record/replay cache of completions, in SQLite.

The key of a sample is the SHA-256 of the canonical JSON of (model, messages, params, sample
index), so an LLM-judged run can be replayed exactly: run once in ``"rw"`` mode (hits are
read, misses are generated and recorded), then in ``"replay"`` mode every call is served from
the file and a miss raises :class:`~dialogue_gym.backends.base.CacheMiss` without calling the
model. The file is safe for concurrent writers (threads and processes): WAL journal, a busy
timeout, and ``INSERT OR IGNORE`` (the first recording of a key wins).

Only the request (model, messages, params) and the completion (text, token counts, cost,
finish reason) are stored: no credentials, no headers.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.backends.base import (
    Backend,
    BackendError,
    BaseBackend,
    CacheMiss,
    Completion,
    GenerationParams,
    Messages,
    SampleRequest,
    canonical_json,
    normalize_messages,
    record_usage,
)

__all__ = ["CACHE_MODES", "CacheFileError", "CachedBackend", "ReplayCache", "cache_key"]

CACHE_MODES = ("off", "rw", "replay")
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    response_model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    finish_reason TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', '1');
"""


class CacheFileError(BackendError):
    """The cache file is not a usable SQLite database (corrupt, or some other file).

    The message names the file; nothing in it is overwritten.
    """


def request_payload(
    model: str, messages: Messages, params: GenerationParams, sample_index: int
) -> dict[str, Any]:
    """The JSON object a cache key hashes."""
    return {
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": params.to_dict(),
        "sample_index": int(sample_index),
    }


def cache_key(model: str, messages: Messages, params: GenerationParams, sample_index: int) -> str:
    """SHA-256 hex of the canonical JSON of (model, messages, params, sample index)."""
    payload = canonical_json(request_payload(model, messages, params, sample_index))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ReplayCache:
    """A SQLite file of recorded completions.

    One connection per thread (and per process after a fork); every connection sets WAL mode
    and a busy timeout so that concurrent writers wait instead of failing.

    Args:
        path: The database file (parent folders are created). ``":memory:"`` is not supported
            (connections would not share it).
        timeout: Seconds a writer waits for the lock.
    """

    def __init__(self, path: str | Path, *, timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        if str(path) == ":memory:":
            raise ValueError("ReplayCache needs a file path, not ':memory:'")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.timeout = float(timeout)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._connect()  # create the schema now, so errors surface early

    # -- connections ----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        try:
            conn = sqlite3.connect(
                str(self.path), timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._file_error(exc) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
            conn.execute("PRAGMA synchronous = NORMAL")
            self._retry_locked(lambda: conn.executescript(_SCHEMA))
        except BaseException:
            conn.close()
            raise
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._lock:
            self._connections.append(conn)
        return conn

    def _retry_locked(self, action: Any) -> Any:
        # The busy handler covers most waits; schema/journal changes can still report
        # "database is locked" immediately under contention, so retry those briefly.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise self._file_error(exc) from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
            except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed"
                raise self._file_error(exc) from None

    def _file_error(self, exc: sqlite3.Error) -> CacheFileError:
        if isinstance(exc, sqlite3.OperationalError):  # e.g. disk full, no permission
            return CacheFileError(f"backend cache {str(self.path)!r} cannot be used ({exc})")
        return CacheFileError(
            f"backend cache {str(self.path)!r} is not a usable cache file ({exc}); move or "
            "delete it, or pass another cache path"
        )

    def close(self) -> None:
        """Close every connection this object opened (it reconnects on the next use)."""
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()

    def __enter__(self) -> ReplayCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(state["path"], timeout=state["timeout"])  # type: ignore[misc]

    # -- access ---------------------------------------------------------------------------------

    def get(self, key: str) -> Completion | None:
        """The recorded completion of ``key`` (with ``cached=True``), or ``None``."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        """The recorded completions of those ``keys`` that are present."""
        found: dict[str, Completion] = {}
        conn = self._connect()
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            rows = self._retry_locked(
                lambda chunk=chunk: conn.execute(
                    "SELECT key, text, response_model, prompt_tokens, completion_tokens, "
                    f"cost_usd, finish_reason FROM completions WHERE key IN "
                    f"({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            )
            for key, text, model, pt, ct, cost, finish in rows:
                found[key] = Completion(
                    text=text,
                    model=model,
                    prompt_tokens=pt,
                    completion_tokens=ct,
                    cost_usd=cost,
                    cached=True,
                    finish_reason=finish,
                )
        return found

    def put(self, key: str, completion: Completion, request: Mapping[str, Any]) -> bool:
        """Record a completion (a key already present is left as it is).

        Args:
            key: The cache key.
            completion: What to store.
            request: The request object the key hashes (stored for inspection).

        Returns:
            Whether the row was new.
        """
        return self.put_many([(key, completion, request)]) == 1

    def put_many(self, rows: Iterable[tuple[str, Completion, Mapping[str, Any]]]) -> int:
        """Record several completions in one transaction; returns how many were new."""
        values = [
            (
                key,
                str(request["model"]),
                int(request["sample_index"]),
                canonical_json(dict(request)),
                c.text,
                c.model,
                int(c.prompt_tokens),
                int(c.completion_tokens),
                float(c.cost_usd),
                c.finish_reason,
                time.time(),
            )
            for key, c, request in rows
        ]
        if not values:
            return 0
        conn = self._connect()

        def write() -> int:
            before = conn.total_changes
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO completions (key, model, sample_index, request, text, "
                    "response_model, prompt_tokens, completion_tokens, cost_usd, finish_reason, "
                    "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return conn.total_changes - before

        return int(self._retry_locked(write))

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return self.get(key) is not None

    def __len__(self) -> int:
        conn = self._connect()
        return int(conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def keys(self) -> list[str]:
        """Every recorded key, oldest first."""
        conn = self._connect()
        return [k for (k,) in conn.execute("SELECT key FROM completions ORDER BY rowid")]

    def __repr__(self) -> str:
        return f"ReplayCache({str(self.path)!r})"


class CachedBackend(BaseBackend):
    """A backend behind a :class:`ReplayCache`.

    Modes: ``"off"`` (pass-through), ``"rw"`` (serve hits, generate and record misses),
    ``"replay"`` (serve hits; any miss raises :class:`CacheMiss` before the inner backend is
    called). Hits come back with ``cached=True`` and count as ``calls`` and ``cache_hits`` in
    ``usage`` (no tokens, no cost). The wrapper shares the inner backend's ``usage`` dict, so
    retries and errors of live calls show up in the same counters.

    When some samples of a call fail, the ones that succeeded are still recorded before the
    :class:`BackendError` is raised, so rerunning only regenerates what is missing.

    Args:
        inner: The backend that generates misses.
        cache: The cache (or a path to one).
        mode: ``"off"``, ``"rw"`` or ``"replay"``.
    """

    def __init__(self, inner: Backend, cache: ReplayCache | str | Path, mode: str = "rw") -> None:
        super().__init__()
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {CACHE_MODES}, got {mode!r}")
        self.inner = inner
        self.cache = cache if isinstance(cache, ReplayCache) else ReplayCache(cache)
        self.mode = mode
        self.name = inner.name
        self.usage = inner.usage

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Serve hits from the cache and generate the misses (see :class:`CachedBackend`)."""
        if self.mode == "off":
            return self._inner_complete(requests, component)
        results, missing, keys = self._lookup(requests, component)
        if missing:
            live = self._inner_complete([requests[i] for i in missing], component)
            self._store(requests, missing, keys, live, results)
        return results  # type: ignore[return-value]

    async def acomplete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Async :meth:`complete`."""
        if self.mode == "off":
            return await self._inner_acomplete(requests, component)
        results, missing, keys = self._lookup(requests, component)
        if missing:
            live = await self._inner_acomplete([requests[i] for i in missing], component)
            self._store(requests, missing, keys, live, results)
        return results  # type: ignore[return-value]

    # -- internals ------------------------------------------------------------------------------

    def _lookup(
        self, requests: Sequence[SampleRequest], component: str
    ) -> tuple[list[Completion | BackendError | None], list[int], list[str]]:
        keys = [cache_key(self.name, m, p, i) for m, p, i in requests]
        hits = self.cache.get_many(keys)
        results: list[Completion | BackendError | None] = [hits.get(k) for k in keys]
        missing = [i for i, r in enumerate(results) if r is None]
        if missing and self.mode == "replay":
            record_usage(self.usage, component, errors=len(missing))
            m, _, i = requests[missing[0]]
            said = m[-1]["content"] if m else ""
            raise CacheMiss(
                f"replay-only cache {str(self.cache.path)!r} has no entry for model "
                f"{self.name!r}, sample {i}, last message {said[:60]!r} "
                f"({len(missing)} of {len(requests)} samples missing)"
            )
        served = [r for r in results if isinstance(r, Completion)]
        if served:
            record_usage(self.usage, component, served, cache_hits=len(served))
        return results, missing, keys

    def _store(
        self,
        requests: Sequence[SampleRequest],
        missing: Sequence[int],
        keys: Sequence[str],
        live: Sequence[Completion | BackendError],
        results: list[Completion | BackendError | None],
    ) -> None:
        rows = []
        for i, out in zip(missing, live, strict=True):
            results[i] = out
            if isinstance(out, Completion):
                m, p, idx = requests[i]
                rows.append((keys[i], out, request_payload(self.name, m, p, idx)))
        self.cache.put_many(rows)

    def _inner_complete(
        self, requests: Sequence[SampleRequest], component: str
    ) -> list[Completion | BackendError]:
        if isinstance(self.inner, BaseBackend):
            return self.inner.complete(requests, component)
        return _complete_via_generate(self.inner, requests, component)

    async def _inner_acomplete(
        self, requests: Sequence[SampleRequest], component: str
    ) -> list[Completion | BackendError]:
        if isinstance(self.inner, BaseBackend):
            return await self.inner.acomplete(requests, component)
        import asyncio

        return await asyncio.to_thread(_complete_via_generate, self.inner, requests, component)

    def close(self) -> None:
        """Close the inner backend and the cache connections."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
        self.cache.close()

    def __repr__(self) -> str:
        return f"CachedBackend({self.inner!r}, {self.cache!r}, mode={self.mode!r})"


def _complete_via_generate(
    backend: Backend, requests: Sequence[SampleRequest], component: str
) -> list[Completion | BackendError]:
    """Generate explicit sample indices through the plain protocol (for foreign backends).

    A sample ``i`` is obtained by asking for ``i + 1`` samples and keeping the last one.
    """
    out: list[Completion | BackendError] = []
    for messages, params, index in requests:
        try:
            samples = backend.generate(
                normalize_messages(messages), params, n=index + 1, component=component
            )
            out.append(samples[index])
        except BackendError as exc:
            out.append(exc)
    return out
