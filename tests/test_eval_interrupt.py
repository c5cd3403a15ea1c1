"""Ctrl-C during ``eval --concurrency`` or ``--num-envs`` on a slow endpoint (issue 36, item 5).

The command line runs as a subprocess against a real OpenAI-compatible server on 127.0.0.1
(:class:`~dialogue_gym.testing.server.TestServer`) whose requests take a minute. Ctrl-C must
not wait for them: the process exits long before any in-flight request could be answered,
keeps the episodes that had ended, and a resume (against another, fast server) completes the
run with every episode recorded once. Both ways of playing episodes at once stop alike: worker
threads (``--concurrency``) and a vector env's sub-envs (``--num-envs``). The timings are
behaviour, not wall-clock bounds: the two-second figure is measured by
``benchmarks/eval_interrupt.py``.
"""

from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest
from test_eval_reliability import _interruptible, _record_count
from test_evaluation import read_jsonl

from dialogue_gym.backends import BackendError, make_backend
from dialogue_gym.env.vector.batching import SlotRunner, StepRounds
from dialogue_gym.evaluation.run import EPISODES_FILE
from dialogue_gym.mind.threads import DaemonPool
from dialogue_gym.testing.server import TestServer

SLOW = 60.0
"""Seconds each slow request takes: far longer than stopping may take on a loaded machine."""
EPISODES, CONCURRENCY = 64, 16
FAST = {"--concurrency": 40, "--num-envs": 2 * CONCURRENCY}
"""Requests answered at once before the server turns slow. An episode takes one or two
requests (two exchanges). Worker threads: some worker has had three fast ones (an episode of
its ended) and at most 40 episodes end: the other 24 keep all 16 workers waiting on slow
requests. A vector env steps its 16 sub-envs together, one request each per step (a finished
one starts the next episode at once): the first two steps are fast, so the 16 first episodes
have ended, and the third step has all 16 sub-envs waiting on slow requests."""
NOISE = ("Traceback", "Bad file descriptor", "retrying", "Exception ignored")
WAYS = ["--concurrency", "--num-envs"]
"""The two ways of playing episodes at once: worker threads and a vector env."""


def _argv(url: str, out: Path, way: str = "--concurrency") -> list[str]:
    argv = [sys.executable, "-m", "dialogue_gym.cli.commands", "eval", "P4G-hard"]
    argv += ["--agent", "openai:test-model", "--base-url", url, "--encoder", "hashing"]
    argv += ["--episodes", str(EPISODES), way, str(CONCURRENCY), "--out", str(out)]
    return [*argv, "--env-option", "max_exchanges=2", "--no-progress"]


ENV = {**os.environ, "OPENAI_API_KEY": "sk-test-interrupt", "OMP_NUM_THREADS": "1"}


def _start_stuck(server: TestServer, out: Path, way: str) -> subprocess.Popen[bytes]:
    """Starts the run and waits until some episodes ended and every worker waits on a request."""
    proc = subprocess.Popen(
        _argv(server.url, out, way),
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    deadline = time.monotonic() + 120
    while _record_count(out / EPISODES_FILE) < 1 or server.in_flight < CONCURRENCY:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"stuck: {server.in_flight} requests in flight"
        time.sleep(0.02)
    return proc


def _slow_server(way: str) -> TestServer:
    fast = FAST[way]
    return TestServer(latency=lambda i: 0.0 if i < fast else SLOW)


def _resume_completes(out: Path, before: bytes, way: str) -> None:
    """A resume against a fast server plays the rest; every episode is recorded once."""
    with TestServer() as fast:  # another endpoint: transport is not part of the run
        argv = _argv(fast.url, out, way)
        done = subprocess.run(argv, env=ENV, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    data = (out / EPISODES_FILE).read_bytes()
    assert data.startswith(before)  # nothing rewritten
    episodes = sorted(record["episode"] for record in read_jsonl(out / EPISODES_FILE))
    assert episodes == list(range(EPISODES))


@pytest.mark.parametrize("way", WAYS)
def test_ctrl_c_does_not_wait_for_requests_in_flight(tmp_path: Path, way: str) -> None:
    out = tmp_path / "run"
    with _slow_server(way) as server:
        proc = _start_stuck(server, out, way)
        requests = server.chat_requests
        waiting = [r for r in requests if r.finished is None]  # the slow ones in flight
        answerable = min(r.started for r in waiting) + SLOW  # the first slow answer
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=answerable - time.monotonic())
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("the run waited for the requests in flight") from None
        assert len(waiting) >= CONCURRENCY
        assert all(r.finished is None for r in waiting)  # none answered: the run did not wait
        assert len(server.chat_requests) == len(requests)  # and sent no request after Ctrl-C

    text = err.decode()
    assert proc.returncode == 130, text
    assert "interrupted: the finished episodes are in" in text and "to resume" in text
    assert not [noise for noise in NOISE if noise in text], text
    records = read_jsonl(out / EPISODES_FILE)
    assert 1 <= len(records) < EPISODES
    assert len({r["episode"] for r in records}) == len(records)
    assert not any(r["errored"] for r in records)  # no episode cut short was recorded
    _resume_completes(out, (out / EPISODES_FILE).read_bytes(), way)


@pytest.mark.parametrize("way", WAYS)
def test_a_second_ctrl_c_exits_at_once_and_cleanly(tmp_path: Path, way: str) -> None:
    out = tmp_path / "run"
    with _slow_server(way) as server:
        proc = _start_stuck(server, out, way)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)  # two signals at once would reach Python as one
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=SLOW / 2)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("a second Ctrl-C did not end the run") from None

    text = err.decode()
    # 130 from the CLI, or killed by SIGINT when the second signal came after Python had put
    # the default handlers back (its last moments): a shell shows both as 130.
    assert proc.returncode in (130, -signal.SIGINT), text
    assert not [noise for noise in NOISE if noise in text], text
    # Whatever the second signal cut short, the journal resumes: whole records only.
    _resume_completes(out, b"", way)


# -- the pieces: worker pools and backends that let go -------------------------------------------


def test_daemon_pool_runs_like_an_executor() -> None:
    pool = DaemonPool(2, name="test")
    assert pool.map(lambda x: x * x, range(5)) == [0, 1, 4, 9, 16]
    failed = pool.submit(int, "not a number")
    with pytest.raises(ValueError):
        failed.result(timeout=30)
    gate = threading.Event()
    busy = [pool.submit(gate.wait, 30) for _ in range(2)]
    while not all(future.running() for future in busy):
        time.sleep(0.01)
    queued = pool.submit(int, "7")  # both threads are busy: it waits in the queue
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(CancelledError):
        queued.result(timeout=30)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(int, "1")
    gate.set()
    assert [future.result(timeout=30) for future in busy] == [True, True]


def test_daemon_pool_threads_never_hold_up_the_exit() -> None:
    # A ThreadPoolExecutor's thread would keep this interpreter alive for ten minutes.
    code = "import time\nfrom dialogue_gym.mind.threads import DaemonPool\n"
    code += "DaemonPool(2).submit(time.sleep, 600)\ntime.sleep(0.1)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert done.returncode == 0 and not done.stderr, done.stderr.decode()


def test_closing_a_backend_waits_for_no_request_and_retries_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DG_TEST_KEY", "sk-test-close")
    # The first request answers 500 after a while (retryable); any later one answers at once.
    with TestServer(latency=lambda i: 2.0 if i == 0 else 0.0, faults=["500"]) as server:
        backend = make_backend(
            "openai:test-model", base_url=server.url, api_key_env="DG_TEST_KEY", base_delay=0.01
        )
        outcome: list[object] = []

        def ask() -> None:
            try:
                outcome.extend(backend.generate([{"role": "user", "content": "Hello"}]))
            except BackendError as exc:
                outcome.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        while server.in_flight < 1:
            time.sleep(0.01)
        backend.close()  # a stopped run closes its backends with requests in flight
        assert server.in_flight == 1  # close did not wait for the answer
        asking.join(timeout=60)
        assert len(server.chat_requests) == 1  # the failed request was not retried
        assert isinstance(outcome[0], BackendError) and outcome[0].status == 500
        # Closing is not the end of the backend: used again, it opens a new client.
        assert backend.generate([{"role": "user", "content": "Hi"}])[0].text == "echo: Hi"
        backend.close()


def test_an_interrupted_vector_step_abandons_its_members() -> None:
    # Ctrl-C while every sub-env waits on a request: the step leaves at once, and closing the
    # runner waits for none of them (its threads are daemon threads, left to end on their own).
    runner = SlotRunner(2, StepRounds())
    gate = threading.Event()
    # Python's own handler, whoever launched the tests (interrupt_main does nothing while
    # SIGINT is ignored, as in a shell's background job).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.5, _thread.interrupt_main).start()
        with pytest.raises(KeyboardInterrupt):
            runner.run({0: lambda: gate.wait(60), 1: lambda: gate.wait(60)}, threaded=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    runner.close()
    members = [t for t in threading.enumerate() if t.name.startswith("dialogue_gym-vec")]
    assert len(members) == 2 and all(t.is_alive() and t.daemon for t in members)
    gate.set()
    for thread in members:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in members)
