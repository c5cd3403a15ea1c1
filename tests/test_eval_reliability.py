"""Evaluation runs that stop, fail or resume without losing or mixing anything (issue 16).

Each test reproduces one defect of issue 16 from outside (the public API or the command
line): Ctrl-C and a full disk with ``--concurrency``, resuming with other agent options,
read-only and unusable ``--out`` folders, corrupt cache files, ``--retry-errored``, the exit
status of a run whose every episode errored, tracebacks of agent errors, hostile CSV cells
and memory-light records.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from test_evaluation import PERSUASIVE, agent, install_tiny, read_jsonl
from test_report import episode

from dialogue_gym.backends.cache import CacheFileError
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cli.commands import main
from dialogue_gym.evaluation import journal
from dialogue_gym.evaluation.journal import JournalWriteError, OutDirError
from dialogue_gym.evaluation.run import EPISODES_FILE, METRIC_FIELDS, SUMMARY_FILE, evaluate
from dialogue_gym.evaluation.run_config import ConfigMismatchError
from dialogue_gym.report import csv_table, load_run
from dialogue_gym.testing.server import TestServer


@pytest.fixture
def tiny_id(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_tiny(monkeypatch, tmp_path_factory.getbasetemp())


def here(name: str) -> str:
    """An agent of this module, as ``--agent`` names it."""
    return f"{__name__}:{name}"


class Counting:
    """Persuades like the plumbing tests' agent; counts the episodes it starts."""

    started = 0

    def __init__(self, card: TaskCard, **options: Any) -> None:
        self.turn = 0
        self.options = options

    def reset(self, seed: int | None = None) -> None:
        type(self).started += 1
        self.turn = 0

    def act(self, observation: dict[str, Any]) -> str:
        time.sleep(0.005)
        self.turn += 1
        return PERSUASIVE[min(self.turn - 1, len(PERSUASIVE) - 1)]


class Broken:
    """Raises on every turn."""

    def __init__(self, card: TaskCard) -> None:
        self.card = card

    def act(self, observation: dict[str, Any]) -> str:
        raise RuntimeError("model endpoint refused the request")


class FailsWhenFlagged(Counting):
    """Raises while ``$DG_TEST_FAIL`` is ``1`` (a transient outage), else persuades."""

    def act(self, observation: dict[str, Any]) -> str:
        if os.environ.get("DG_TEST_FAIL") == "1":
            raise ConnectionError("endpoint unreachable")
        return super().act(observation)


def _fail_appends_after(monkeypatch: pytest.MonkeyPatch, records: int) -> None:
    """Every episode append after the first ``records`` fails with ENOSPC (a full disk)."""
    real = journal._write_all
    appended = 0

    def write_all(fd: int, data: bytes) -> None:
        nonlocal appended
        if b'"episode":' in data:
            if appended >= records:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            appended += 1
        real(fd, data)

    monkeypatch.setattr(journal, "_write_all", write_all)


# -- 1. stopping promptly ----------------------------------------------------------------------


def _record_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _interruptible() -> None:
    """Give the child SIGINT's default disposition, whoever launched the tests.

    A shell without job control starts background commands with SIGINT ignored, and
    Python then installs no ``KeyboardInterrupt`` handler: the test's Ctrl-C would be
    dropped and the run would finish with exit 0 (seen when the suite ran under
    ``bash -c '... &'``). The CLI rightly keeps an inherited "ignore", so the test,
    not the CLI, restores the default.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


SIGNAL_GRACE = 1.0
"""Seconds the CLI may take to act on a signal. Python runs signal handlers on the main thread
between bytecodes, so a signal that lands while that thread is inside a journal ``fsync`` (a
record is durable before the next episode starts) waits for the disk: seen in CI at about 0.2 s
and, on a loaded 2-core runner, 0.8 s. The episodes are made long enough (20 exchanges at
0.3 s per request) that in-flight episodes which kept running after the signal still start
many requests after this grace (checked by disabling the stop event: the test fails)."""
LATENCY = 0.3
EXCHANGES = 20


def test_sigint_with_concurrency_starts_no_new_episode(tmp_path: Path) -> None:
    threads, total = 4, 12
    with TestServer(latency=LATENCY) as server:  # echo replies
        out = tmp_path / "run"
        argv = [sys.executable, "-m", "dialogue_gym.cli.commands", "eval", "P4G-hard"]
        argv += ["--agent", "openai:test-model", "--base-url", server.url, "--encoder", "hashing"]
        argv += ["--episodes", str(total), "--concurrency", str(threads), "--out", str(out)]
        argv += ["--env-option", f"max_exchanges={EXCHANGES}", "--no-progress"]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-sigint", "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_interruptible,
        )
        path = out / EPISODES_FILE
        deadline = time.monotonic() + 120
        while _record_count(path) < threads and proc.poll() is None:
            assert time.monotonic() < deadline, "no episodes recorded in time"
            time.sleep(0.01)
        assert proc.poll() is None, proc.communicate()
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        stopped = time.monotonic() - signalled

        assert proc.returncode == 130, err.decode()
        # Each in-flight episode stops at its next step: at most one more request each.
        late = [r for r in server.chat_requests if r.started > signalled + SIGNAL_GRACE]
        offsets = sorted(round(r.started - signalled, 2) for r in late)
        assert len(late) <= threads, f"{len(late)} requests started after the signal: {offsets}"
        assert stopped < 20
        records = read_jsonl(path)
        assert threads <= len(records) < total
        assert len({r["episode"] for r in records}) == len(records)

        # Resuming the same command completes the run without losing or repeating episodes.
        done = subprocess.run(argv, env=env, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr.decode()
    records = read_jsonl(path)
    assert sorted(r["episode"] for r in records) == list(range(total))


def test_sigterm_stops_the_run_like_ctrl_c(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [
        sys.executable,
        "-m",
        "dialogue_gym.cli.commands",
        "eval",
        "P4G-hard",
        "--agent",
        "scripted",
    ]
    argv += ["--agent-option", "encoder=hashing", "--encoder", "hashing", "--no-progress"]
    argv += ["--episodes", "5000", "--concurrency", "2", "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    path = out / EPISODES_FILE
    deadline = time.monotonic() + 120
    while _record_count(path) < 5 and proc.poll() is None:
        assert time.monotonic() < deadline, "no episodes recorded in time"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err.decode()
    assert "terminated" in err.decode() and "Traceback" not in err.decode()
    records = read_jsonl(path)  # whole records only
    assert 5 <= len(records) < 5000
    assert not (out / journal.LOCK_FILE).exists()


def test_full_disk_with_concurrency_starts_no_new_episode(
    tiny_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Counting.started = 0
    _fail_appends_after(monkeypatch, 2)
    kwargs: dict[str, Any] = {"episodes": 40, "out": tmp_path, "progress": False}
    with pytest.raises(JournalWriteError, match="No space left on device"):
        evaluate(here("Counting"), tiny_id, concurrency=4, **kwargs)
    assert Counting.started <= 12, f"{Counting.started} of 40 episodes started"
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 2  # whole records only

    monkeypatch.undo()
    install_tiny(monkeypatch, tmp_path.parent)
    reference = evaluate(here("Counting"), tiny_id, episodes=40, progress=False)
    resumed = evaluate(here("Counting"), tiny_id, concurrency=4, **kwargs)
    assert resumed.records == reference.records


def test_full_disk_is_a_one_line_error_with_its_own_exit_status(
    tiny_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    _fail_appends_after(monkeypatch, 1)
    argv = ["eval", tiny_id, "--agent", here("Counting"), "--episodes", "5", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("dialogue-gym eval: error: cannot write ")
    assert str(tmp_path / EPISODES_FILE) in err and "No space left on device (ENOSPC)" in err
    assert "resume" in err and "Traceback" not in err
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 1


# -- 2. resuming with other settings -----------------------------------------------------------


def test_resume_with_other_agent_options_is_refused_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base = ["eval", "P4G-hard", "--agent", "scripted", "--encoder", "hashing", "--no-progress"]
    base += ["--out", str(tmp_path)]
    assert main([*base, "--episodes", "3", "--agent-option", "encoder=hashing"]) == 0
    capsys.readouterr()
    lines = (tmp_path / EPISODES_FILE).read_bytes()

    assert main([*base, "--episodes", "6"]) == 2
    err = capsys.readouterr().err
    assert "different configuration" in err
    assert "agent option 'encoder': \"hashing\" in the run, not set now" in err
    assert main([*base, "--episodes", "6", "--agent-option", "encoder=minilm"]) == 2
    assert 'agent option \'encoder\': "hashing" in the run, "minilm" now' in capsys.readouterr().err
    assert (tmp_path / EPISODES_FILE).read_bytes() == lines  # nothing played

    # The same options resume, and the summary stamps the options every record was played with.
    assert main([*base, "--episodes", "6", "--agent-option", "encoder=hashing"]) == 0
    records = read_jsonl(tmp_path / EPISODES_FILE)
    (row,) = json.loads((tmp_path / SUMMARY_FILE).read_text(encoding="utf-8"))["summaries"]
    assert row["config"]["agent_kwargs"] == {"encoder": "hashing"}
    assert {r["agent_hash"] for r in records} == {row["config"]["agent_hash"]}
    assert len(records) == 6


def test_a_path_option_spelled_otherwise_is_refused_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dialogue_gym.evaluation.run_config import ConfigMismatchError, check_settings

    (tmp_path / "ckpt").mkdir()
    monkeypatch.chdir(tmp_path)
    pair = {"agent": "a", "env_id": "e", "agent_options": {"checkpoint": "ckpt"}}
    manifest = {"pairs": [{**pair, "env_options": {}}]}
    same = {("a", "e"): {"checkpoint": str(tmp_path / "ckpt")}}
    with pytest.raises(ConfigMismatchError, match="the same file spelled differently"):
        check_settings(tmp_path, manifest, same, {})
    other = {("a", "e"): {"checkpoint": str(tmp_path)}}
    with pytest.raises(ConfigMismatchError) as refused:
        check_settings(tmp_path, manifest, other, {})
    assert "spelled differently" not in str(refused.value)
    assert check_settings(tmp_path, manifest, {("a", "e"): {"checkpoint": "ckpt"}}, {})


def test_records_refuse_other_agent_options_without_the_settings_file(
    tiny_id: str, tmp_path: Path
) -> None:
    name = here("Counting")
    evaluate(name, tiny_id, episodes=2, out=tmp_path, progress=False)
    (tmp_path / journal.MANIFEST_FILE).unlink()
    with pytest.raises(ConfigMismatchError, match="different agent configuration"):
        evaluate(name, tiny_id, episodes=2, out=tmp_path, progress=False, agent_kwargs={"x": 1})


# -- 8. clear errors before anything is played -------------------------------------------------


def _read_only_dir(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (skips where none can be made)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    candidates = [folder, Path("/sys/kernel")]  # root ignores modes; sysfs refuses new files
    for candidate in candidates:
        try:
            fd, probe = tempfile.mkstemp(dir=candidate)
        except OSError:
            return candidate
        os.close(fd)
        os.unlink(probe)
    pytest.skip("no read-only folder available")


def test_read_only_out_is_refused_before_any_episode(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    read_only = _read_only_dir(tmp_path)
    Counting.started = 0
    with pytest.raises(OutDirError, match="is not writable"):
        evaluate(here("Counting"), tiny_id, episodes=3, out=read_only, progress=False)
    argv = ["eval", tiny_id, "--agent", here("Counting"), "--no-progress"]
    assert main([*argv, "--out", str(read_only)]) == 2
    err = capsys.readouterr().err
    assert f"--out {read_only} is not writable" in err and "Traceback" not in err
    assert Counting.started == 0


def test_failed_eval_leaves_no_out_folder(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "new-run"
    argv = ["eval", tiny_id, "--agent", agent("Pushy"), "--no-progress", "--out", str(out)]
    assert main([*argv, "--agent-option", "no_such_option=1"]) == 2
    assert "no_such_option" in capsys.readouterr().err
    assert main([*argv, "--encoder", "no-such-encoder"]) == 2
    assert not out.exists()


def test_corrupt_cache_file_is_named(
    tiny_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    cache = tmp_path / "calls.sqlite"
    cache.write_bytes(b"this is not an SQLite database, just some bytes" * 100)
    out = tmp_path / "run"
    env_kwargs = {"judges": "llm", "backend": "fake", "backend_cache": str(cache)}
    with pytest.raises(CacheFileError, match=str(cache)):
        evaluate(agent("Pushy"), tiny_id, episodes=1, out=out, env_kwargs=env_kwargs)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cache")
    argv = ["eval", tiny_id, "--agent", "openai:test-model", "--no-progress", "--out", str(out)]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--agent-option", f"cache={cache}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"backend cache '{cache}' is not a usable cache file" in err
    assert "Traceback" not in err and not out.exists()
    assert cache.read_bytes().startswith(b"this is not an SQLite")  # left as it was


# -- 9. errored episodes -----------------------------------------------------------------------


def test_every_episode_errored_exits_non_zero(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["eval", tiny_id, "--agent", here("Broken"), "--episodes", "3", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "every episode errored (3)" in err
    assert "RuntimeError: model endpoint refused the request" in err
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 3


def test_retry_errored_replays_errored_episodes_on_resume(
    tiny_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    argv = ["eval", tiny_id, "--agent", here("FailsWhenFlagged"), "--episodes", "3"]
    argv += ["--no-progress", "--out", str(tmp_path)]
    monkeypatch.setenv("DG_TEST_FAIL", "1")
    assert main(argv) == 1
    monkeypatch.setenv("DG_TEST_FAIL", "0")
    assert main(argv) == 1  # a plain resume keeps the errored records
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 3
    capsys.readouterr()

    assert main([*argv, "--retry-errored"]) == 0
    lines = read_jsonl(tmp_path / EPISODES_FILE)
    assert [r["errored"] for r in lines] == [True] * 3 + [False] * 3
    run = load_run(tmp_path)  # the report reads the reruns, as a resume does
    assert [r["errored"] for r in run.records] == [False] * 3 and run.duplicates == 3
    again = evaluate(here("FailsWhenFlagged"), tiny_id, episodes=3, out=tmp_path, progress=False)
    assert not any(r["errored"] for r in again.records)
    assert len(read_jsonl(tmp_path / EPISODES_FILE)) == 6  # nothing replayed twice


def test_agent_errors_keep_the_traceback_and_show_the_first_line(
    tiny_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="dialogue_gym.evaluation.run"):
        result = evaluate(agent("Flaky"), tiny_id, episodes=2, progress=False)
    _, errored = result.records
    assert errored["error"] == "RuntimeError: backend timed out"
    trace = errored["traceback"]
    assert trace.startswith("Traceback (most recent call last):")
    assert "test_evaluation.py" in trace and "in act" in trace
    assert trace.rstrip().endswith("RuntimeError: backend timed out\nsecond line")
    assert "episode_loop.py" not in trace  # the agent's frames only
    assert result.records[0]["traceback"] is None
    (message,) = [r.getMessage() for r in caplog.records]
    assert "episode 1 (seed 1) errored: RuntimeError: backend timed out" in message
    assert "second line" not in message


def test_csv_leaderboard_neutralises_formula_cells(tmp_path: Path) -> None:
    hostile = ['=HYPERLINK("http://evil.example","x")', "+1+2", "-3+4", "@SUM(A1)"]
    lines = [json.dumps(episode(name, "Toy-soft-v0", 0, success_turn=2)) for name in hostile]
    (tmp_path / EPISODES_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(csv_table(tmp_path))))
    assert sorted(row["agent"] for row in rows) == sorted(f"'{name}" for name in hostile)
    for row in rows:
        assert not row["env_id"].startswith("'")
        assert float(row["sr"]) == 1.0  # numbers stay numbers


def test_metric_only_records_give_the_same_files_and_summaries(
    tiny_id: str, tmp_path: Path
) -> None:
    full = evaluate(agent("Flaky"), tiny_id, episodes=4, out=tmp_path / "a", progress=False)
    light = evaluate(
        agent("Flaky"), tiny_id, episodes=4, out=tmp_path / "b", progress=False, keep_records=False
    )
    assert all(set(r) <= set(METRIC_FIELDS) for r in light.records)
    assert "transcript" in full.records[0] and "transcript" not in light.records[0]
    strip = lambda rows: [{k: v for k, v in r.items() if k != "config"} for r in rows]  # noqa: E731
    assert strip(light.summaries) == strip(full.summaries)
    assert light.table() == full.table()
    a, b = (read_jsonl(tmp_path / d / EPISODES_FILE) for d in ("a", "b"))
    assert a == b
