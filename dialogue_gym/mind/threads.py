"""Threads: torch's defaults for the small models, and worker pools that never delay an exit.

**Torch.** The MiniLM encoder (and the small trainers' models) run tiny batches — one utterance per
exchange. With torch's default of one intra-op thread per core, those batches spend more time
synchronizing threads than computing, and on a shared 2-vCPU machine under load a quickstart
evaluation ran 10× slower with the default than with one thread (same numbers). So
``dialogue_gym`` uses **one intra-op thread by default** when it builds a small torch model,
unless the user said otherwise. It is applied where an env is *assembled* — by
:func:`dialogue_gym.make` and ``DialogueEnv.from_options``, in
:func:`dialogue_gym.env.components.assemble_env` — and when the MiniLM encoder loads, never by
the ``DialogueEnv`` constructor, which only receives built parts:

* ``DIALOGUE_GYM_THREADS=N`` in the environment, or ``threads=N`` where an API takes it
  (``make(..., threads=N)``), sets N threads;
* ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` in the environment leaves torch as configured
  (the user chose already);
* otherwise torch gets one intra-op thread.

The setting is process-wide (torch has no per-model thread count); :func:`apply_threads`
returns what is in effect.

**Worker pools.** :class:`DaemonPool` runs calls that wait on the network (episodes, LLM
requests) on daemon threads. ``concurrent.futures.ThreadPoolExecutor`` joins its threads when
the interpreter exits, so after Ctrl-C a process would wait for every request in flight (20 s
each against a slow endpoint); the interpreter never waits for a daemon thread, so work that
was abandoned ends with the process.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

THREADS_ENV = "DIALOGUE_GYM_THREADS"
_USER_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
_log = logging.getLogger(__name__)
_T = TypeVar("_T")


def default_threads() -> int | None:
    """The thread count dialogue_gym applies when none is given; ``None`` = leave torch alone.

    Raises:
        ValueError: ``DIALOGUE_GYM_THREADS`` is not a positive integer.
    """
    value = os.environ.get(THREADS_ENV)
    if value is not None and value.strip():
        return _positive(value.strip(), THREADS_ENV)
    if any(os.environ.get(name, "").strip() for name in _USER_VARS):
        return None
    return 1


def apply_threads(threads: int | None = None) -> int | None:
    """Sets torch's intra-op thread count (see the module docstring); returns it.

    Args:
        threads: An explicit count (≥ 1); ``None`` applies :func:`default_threads`.

    Returns:
        The intra-op thread count now in effect, or ``None`` when torch is not installed.

    Raises:
        ValueError: ``threads`` (or ``DIALOGUE_GYM_THREADS``) is not a positive integer.
    """
    wanted = default_threads() if threads is None else _positive(threads, "threads")
    try:
        import torch
    except ImportError:  # the hashing encoder needs no torch
        return None
    if wanted is not None and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
        _log.debug("torch intra-op threads set to %d", wanted)
    return int(torch.get_num_threads())


def _positive(value: object, name: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    try:
        number = int(str(value)) if not isinstance(value, int) else value
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number


_Item = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class DaemonPool:
    """A thread pool of daemon threads: what it runs never keeps the process from exiting.

    Like ``ThreadPoolExecutor`` (``submit`` returns a :class:`~concurrent.futures.Future`),
    except that the interpreter does not wait for its threads at exit and
    ``shutdown(wait=False)`` abandons the calls still running: their results are dropped
    and they end with the process (or, in a process that goes on, when their call returns).

    Args:
        max_workers: Most threads (started as work arrives).
        name: Prefix of the threads' names.

    Raises:
        ValueError: ``max_workers`` is less than 1.
    """

    def __init__(self, max_workers: int, name: str = "dialogue_gym") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self._max_workers = max_workers
        self._name = name
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._closed = False

    def submit(self, fn: Callable[..., _T], /, *args: Any) -> Future[_T]:
        """Runs ``fn(*args)`` on a pool thread.

        Raises:
            RuntimeError: The pool was shut down.
        """
        future: Future[_T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a DaemonPool after shutdown")
            self._queue.put((future, fn, args))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        return future

    def map(self, fn: Callable[[Any], _T], items: Any) -> list[_T]:
        """``[fn(item) for item in items]`` on the pool's threads (the first error is raised)."""
        return [future.result() for future in [self.submit(fn, item) for item in items]]

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.put(None)  # wakes the next thread, which stops too
                return
            future, fn, args = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as exc:  # handed to the caller through the future
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del item, future  # drop the result before waiting for more work
            self._idle.release()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Takes no more work; the threads stop once the queue is empty.

        Args:
            wait: Wait for the calls running (and, unless cancelled, queued) to return.
                ``False`` abandons them: the interpreter will not wait for them either.
            cancel_futures: Cancel the calls queued but not started.
        """
        with self._lock:
            self._closed = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            self._queue.put(None)
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()
