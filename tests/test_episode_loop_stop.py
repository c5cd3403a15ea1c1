"""Stopping the threaded episode loop (:func:`dialogue_gym.evaluation.episode_loop.run_threaded`).

The CLI's Ctrl-C test (``test_eval_reliability``) checks the same promise end to end over a
real HTTP server; these check the loop itself, with the two situations that once let episodes
run on for seconds after the signal: a record whose write takes long (a journal ``fsync`` on a
busy disk) and a signal the kernel handed to a worker thread (Python then runs the handler only
when the main thread next wakes).
"""

from __future__ import annotations

import _thread
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dialogue_gym.evaluation.episode_loop import EpisodeStopped, Job, run_threaded

STEP_SECONDS = 0.02
STEPS = 100  # an episode takes about 2 s
THREADS = 3
GRACE = 0.5  # the loop wakes every 0.2 s; generous for a loaded runner


class Recorder:
    """Plays fake episodes step by step and remembers when each step started."""

    def __init__(self, slow_write_seconds: float) -> None:
        self.steps: list[float] = []
        self.lock = threading.Lock()
        self.written: list[int] = []
        self.write_started = threading.Event()
        self.slow_write_seconds = slow_write_seconds

    def play(self, job: Job, stop: threading.Event) -> dict[str, Any]:
        for _ in range(STEPS if job.episode else 1):  # episode 0 ends at once
            if stop.is_set():
                raise EpisodeStopped(f"stopped (seed {job.seed})")
            with self.lock:
                self.steps.append(time.monotonic())
            time.sleep(STEP_SECONDS)
        return {"episode": job.episode}

    def finish(self, job: Job, record: dict[str, Any]) -> None:
        if not self.written:  # the first record's write is slow
            self.write_started.set()
            time.sleep(self.slow_write_seconds)
        self.written.append(record["episode"])


def _interrupt_when(event: threading.Event, at: list[float]) -> threading.Thread:
    """Trips SIGINT's flag without waking the main thread (as a signal taken by a worker)."""

    def interrupt() -> None:
        event.wait(30)
        time.sleep(0.1)
        at.append(time.monotonic())
        _thread.interrupt_main()

    thread = threading.Thread(target=interrupt, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Python's own SIGINT handler, whoever launched the tests.

    A shell without job control starts background commands with SIGINT ignored, and
    ``_thread.interrupt_main`` then does nothing (seen when CI ran the suite that way).
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_raises")
@pytest.mark.parametrize("slow_write_seconds", [0.0, 3.0], ids=["idle-writer", "slow-write"])
def test_ctrl_c_stops_the_workers_at_once(slow_write_seconds: float) -> None:
    recorder = Recorder(slow_write_seconds)
    todo = [Job(i, 100 + i) for i in range(12)]
    at: list[float] = []
    if slow_write_seconds:
        _interrupt_when(recorder.write_started, at)
    else:
        started = threading.Event()
        threading.Timer(0.5, started.set).start()
        _interrupt_when(started, at)

    with pytest.raises(KeyboardInterrupt):
        run_threaded(todo, recorder.play, recorder.finish, THREADS)

    late = [t for t in recorder.steps if t > at[0] + GRACE]
    assert len(late) <= THREADS, f"{len(late)} steps started more than {GRACE} s after Ctrl-C"
    # The write in progress when Ctrl-C came completed (whole records), and no episode past
    # the sliding window started.
    assert recorder.written[:1] == [0]
    assert len(recorder.written) < len(todo)


def test_a_failed_write_stops_the_run_before_the_next_write() -> None:
    written: list[int] = []

    def play(job: Job, stop: threading.Event) -> dict[str, Any]:
        return {"episode": job.episode}

    def finish(job: Job, record: dict[str, Any]) -> None:
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        written.append(job.episode)

    with pytest.raises(OSError, match="No space left"):
        run_threaded([Job(i, i) for i in range(20)], play, finish, 4)
    assert written == [0, 1]


def test_every_record_is_finished_once_in_completion_order() -> None:
    finished: list[int] = []
    threads_seen: set[str] = set()

    def play(job: Job, stop: threading.Event) -> dict[str, Any]:
        time.sleep(0.001 * (job.episode % 3))
        return {"episode": job.episode}

    def finish(job: Job, record: dict[str, Any]) -> None:
        threads_seen.add(threading.current_thread().name)
        assert record["episode"] == job.episode
        finished.append(job.episode)

    run_threaded([Job(i, i) for i in range(30)], play, finish, 4)
    assert sorted(finished) == list(range(30))
    assert len(threads_seen) == 1  # one writer: calls never overlap
