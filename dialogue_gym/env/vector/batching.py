"""Coalescing the sub-envs' encoder misses and LLM requests into rounds.

Sub-envs stepped on worker threads are the members of a round (:class:`StepRounds`); their
batchable calls (:class:`BatchingEncoder` for the shared encoder, :class:`BatchingBackend` for
the shared LLM backend) wait until every member waits, then run as one batched call per
component. :class:`SlotRunner` runs the per-sub-env tasks of a vector ``step`` or ``reset``,
in this thread or as round members on a pool. See :mod:`dialogue_gym.env.vector` for why the
rounds never change a transcript.

Stopping: the members and the batched calls run on daemon threads
(:class:`~dialogue_gym.mind.threads.DaemonPool`), and the calling thread waits for them in
short slices, so Ctrl-C reaches it at once, even while every member waits on a slow LLM
request. Once interrupted, the runner abandons its members rather than waiting for their
requests (closing it waits for none): they end with the process, as the workers of the
threaded evaluation loop do.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from dialogue_gym.backends.base import BaseBackend, Completion, SampleRequest
from dialogue_gym.mind.threads import DaemonPool
from dialogue_gym.types import ArrayOrFloat, Encoder

__all__ = ["BatchingBackend", "BatchingEncoder", "SlotRunner", "StepRounds"]

_POLL_SECONDS = 0.2
"""How often the calling thread wakes while the members run. A signal lands on whichever
thread the kernel picks and Python runs its handler on the main thread only when that thread
next runs bytecode; waking it now and then bounds how late Ctrl-C takes effect."""


@dataclasses.dataclass(eq=False)
class _Call:
    key: Any
    handler: Callable[[list[Any]], list[Any]]
    payload: Any
    result: Any = None
    error: BaseException | None = None
    done: bool = False


class StepRounds:
    """Coalesces the batchable calls of sub-envs stepped on worker threads into rounds.

    :meth:`run` runs tasks (sub-env steps) on a thread pool; they are the round's *members*. A
    member's :meth:`call` (an encoder miss, an LLM request) waits until every member still
    running waits too; then the last one to arrive runs all waiting calls, grouped by key, one
    handler call per group (groups concurrently), and everybody continues. Because each member
    stops at each of its own batchable calls, the rounds — and so what is batched with what —
    depend only on what the sub-envs do, never on thread timing. Calls from other threads, and
    calls made while a round runs, go straight to their handler.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._local = threading.local()
        self._members = 0
        self._pending: list[_Call] = []

    def run(
        self, tasks: Sequence[Callable[[], Any]], pool: DaemonPool | ThreadPoolExecutor
    ) -> list[tuple[Any, BaseException | None]]:
        """Runs ``tasks`` as members on ``pool``; returns ``(result, exception)`` per task.

        The calling thread waits in slices of :data:`_POLL_SECONDS`, so an exception raised in
        it (Ctrl-C) leaves at once; the members go on, abandoned, on ``pool``'s threads.
        """
        with self._cond:
            self._members += len(tasks)
        futures = [pool.submit(self._member, task) for task in tasks]
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=_POLL_SECONDS)
        return [future.result() for future in futures]

    def call(self, key: Any, handler: Callable[[list[Any]], list[Any]], payload: Any) -> Any:
        """``handler([payload])[0]``, batched with the round's other calls of the same ``key``.

        Args:
            key: Calls with equal keys share one handler call.
            handler: Maps the list of payloads of a round to the list of their results.
            payload: This call's input.

        Raises:
            BaseException: Whatever the handler raised (for every call of its group).
        """
        if getattr(self._local, "role", None) != "member":
            return handler([payload])[0]
        call = _Call(key, handler, payload)
        with self._cond:
            self._pending.append(call)
            ready = self._take_ready()
        if ready:
            self._run_round(ready)
        with self._cond:
            while not call.done:
                self._cond.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def _member(self, task: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        self._local.role = "member"
        try:
            return task(), None
        except BaseException as exc:  # reported per sub-env by the caller
            return None, exc
        finally:
            self._local.role = None
            with self._cond:
                self._members -= 1
                ready = self._take_ready()
            if ready:
                self._run_round(ready)

    def _take_ready(self) -> list[_Call]:
        """The pending calls once every running member waits on one (caller holds the lock)."""
        if self._pending and len(self._pending) >= self._members:
            ready, self._pending = self._pending, []
            return ready
        return []

    def _run_round(self, calls: list[_Call]) -> None:
        role = getattr(self._local, "role", None)
        self._local.role = "round"  # calls made by the handlers go straight through
        try:
            groups: dict[Any, list[_Call]] = {}
            for call in calls:
                groups.setdefault(call.key, []).append(call)
            if len(groups) == 1:
                _run_group(next(iter(groups.values())))
            else:  # e.g. an encoder batch and a judge batch: neither waits for the other
                # Daemon threads: a group inside a slow request never holds up the exit.
                pool = DaemonPool(len(groups), name="dialogue_gym-round")
                try:
                    pool.map(_run_group, list(groups.values()))
                finally:
                    pool.shutdown(wait=False)  # every group has returned: the threads end
        finally:
            self._local.role = role
            with self._cond:
                for call in calls:
                    call.done = True
                self._cond.notify_all()


def _run_group(calls: list[_Call]) -> None:
    try:
        results = calls[0].handler([call.payload for call in calls])
        for call, result in zip(calls, results, strict=True):
            call.result = result
    except BaseException as exc:  # every caller of the group sees the failure
        for call in calls:
            call.error = exc


class BatchingEncoder(Encoder):
    """An encoder whose calls from :class:`StepRounds` members are batched per round.

    Args:
        inner: The encoder that does the work (one call per round, texts deduplicated).
        rounds: The rounds of the vector env whose sub-envs use this encoder.
    """

    def __init__(self, inner: Encoder, rounds: StepRounds) -> None:
        self.inner = inner
        self._rounds = rounds

    @property
    def name(self) -> str:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        return self.inner.dim

    def to_reference_cosine(self, cosines: ArrayOrFloat) -> ArrayOrFloat:
        """The inner encoder's ``to_reference_cosine`` (see :class:`Encoder`)."""
        return self.inner.to_reference_cosine(cosines)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        return self._rounds.call(("encode", id(self)), self._encode_lists, list(texts))

    def _encode_lists(self, lists: list[list[str]]) -> list[np.ndarray]:
        unique = list(dict.fromkeys(text for texts in lists for text in texts))
        rows = np.asarray(self.inner.encode(unique), dtype=np.float32)
        row_of = {text: i for i, text in enumerate(unique)}
        return [rows[[row_of[text] for text in texts]].reshape(len(texts), -1) for texts in lists]


class BatchingBackend(BaseBackend):
    """An LLM backend whose requests from :class:`StepRounds` members are batched per round.

    All requests of a round for one component go to the inner backend as one ``complete``
    call: concurrent HTTP requests for the OpenAI-compatible backend, one padded batch for the
    transformers backend. Usage is the inner backend's (the same ``usage`` dict).

    Args:
        inner: The backend that does the work (a :class:`~dialogue_gym.backends.BaseBackend`).
        rounds: The rounds of the vector env whose sub-envs use this backend.
    """

    def __init__(self, inner: BaseBackend, rounds: StepRounds) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name
        self.usage = inner.usage
        self._rounds = rounds

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | Any]:
        """See :meth:`~dialogue_gym.backends.BaseBackend.complete`."""
        return self._rounds.call(
            ("complete", id(self), component),
            functools.partial(self._complete_lists, component),
            list(requests),
        )

    async def acomplete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | Any]:
        """The inner backend's ``acomplete`` (async callers are not coalesced)."""
        return await self.inner.acomplete(requests, component)

    def _complete_lists(
        self, component: str, lists: list[list[SampleRequest]]
    ) -> list[list[Completion | Any]]:
        flat = self.inner.complete(
            [request for requests in lists for request in requests], component
        )
        out, start = [], 0
        for requests in lists:
            out.append(list(flat[start : start + len(requests)]))
            start += len(requests)
        return out

    def close(self) -> None:
        """Closes the inner backend."""
        self.inner.close()

    def __repr__(self) -> str:
        return f"BatchingBackend({self.inner!r})"


class SlotRunner:
    """Runs per-sub-env tasks in this thread or as :class:`StepRounds` members on a pool.

    The pool's threads are daemon threads (:class:`~dialogue_gym.mind.threads.DaemonPool`):
    when a run is interrupted (Ctrl-C in the calling thread) while members wait on LLM
    requests, :meth:`close` abandons them instead of waiting, and the interpreter does not
    wait for them at exit either.
    """

    def __init__(self, num_envs: int, rounds: StepRounds) -> None:
        self.rounds = rounds
        self._num_envs = num_envs
        self._pool: DaemonPool | None = None
        self._abandoned = False

    def run(
        self, tasks: Mapping[int, Callable[[], Any]], threaded: bool
    ) -> dict[int, tuple[Any, BaseException | None]]:
        """Runs every task; a task's ``Exception`` is its outcome, not raised.

        Args:
            tasks: Sub-env index -> its task.
            threaded: Run them as :class:`StepRounds` members on the pool (more than one).

        Returns:
            Sub-env index -> (result, exception or ``None``), in ``tasks``' order.
        """
        if not threaded or len(tasks) <= 1:
            outcomes: dict[int, tuple[Any, BaseException | None]] = {}
            for i, task in tasks.items():
                try:
                    outcomes[i] = (task(), None)
                except Exception as exc:
                    outcomes[i] = (None, exc)
            return outcomes
        if self._pool is None:
            self._pool = DaemonPool(self._num_envs, name="dialogue_gym-vec")
        try:
            results = self.rounds.run(list(tasks.values()), self._pool)
        except BaseException:
            self._abandoned = True  # members may still run (Ctrl-C): close must not wait
            raise
        for _, error in results:
            if error is not None and not isinstance(error, Exception):
                raise error  # KeyboardInterrupt, SystemExit: not a sub-env failure
        return dict(zip(tasks, results, strict=True))

    def close(self) -> None:
        """Shuts the worker pool down.

        Waits for its threads, unless a run was interrupted: then its members may sit in
        requests for as long as the endpoint takes, and are left to end with the process.
        """
        if self._pool is not None:
            self._pool.shutdown(wait=not self._abandoned, cancel_futures=self._abandoned)
            self._pool = None
