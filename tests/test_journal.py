"""One episodes.jsonl reader for eval and report, atomic JSON writes, the --out lock (issue 16)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from test_evaluation import agent, install_tiny

from dialogue_gym.cli.commands import main
from dialogue_gym.evaluation.journal import (
    JournalError,
    JournalReader,
    RunLock,
    RunLockedError,
    read_episodes,
    supersedes,
    write_json,
)
from dialogue_gym.evaluation.run import EPISODES_FILE, evaluate
from dialogue_gym.report import ReportError, load_run


@pytest.fixture
def tiny_id(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_tiny(monkeypatch, tmp_path_factory.getbasetemp())


def _run(tiny_id: str, out: Path, episodes: int = 3, **kwargs: Any) -> Any:
    return evaluate(
        agent("Persuader"), tiny_id, episodes=episodes, out=out, progress=False, **kwargs
    )


def test_eval_and_report_refuse_the_same_corrupt_middle_line(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(tiny_id, tmp_path)
    path = tmp_path / EPISODES_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = lines[1][: len(lines[1]) // 2] + "\n"  # line 2 of 3 cut in half
    path.write_text("".join(lines), encoding="utf-8")
    before = path.read_bytes()
    where = f"{path}:2: corrupt record"

    with pytest.raises(JournalError, match=where):
        _run(tiny_id, tmp_path)
    with pytest.raises(ReportError, match=where):
        load_run(tmp_path)
    argv = ["--agent", agent("Persuader"), "--episodes", "3", "--out", str(tmp_path)]
    assert main(["eval", tiny_id, *argv, "--no-progress"]) == 2
    eval_err = capsys.readouterr().err
    assert main(["report", str(tmp_path), "--format", "md"]) == 2
    report_err = capsys.readouterr().err
    assert where in eval_err and where in report_err
    assert "Traceback" not in eval_err + report_err
    assert path.read_bytes() == before  # nothing replayed or appended


def test_eval_and_report_agree_on_an_incomplete_last_line(tiny_id: str, tmp_path: Path) -> None:
    reference = _run(tiny_id, tmp_path / "ref").records
    _run(tiny_id, tmp_path, episodes=2)
    path = tmp_path / EPISODES_FILE
    third = json.dumps(reference[2])
    with path.open("a", encoding="utf-8") as handle:
        handle.write(third[: len(third) // 3])  # a crash in the middle of the third write

    with pytest.warns(RuntimeWarning, match=f"{EPISODES_FILE}:3: ignoring an incomplete last"):
        run = load_run(tmp_path)
    assert [r["episode"] for r in run.records] == [0, 1]  # the report leaves it out
    with pytest.warns(RuntimeWarning, match=f"{EPISODES_FILE}:3: ignoring an incomplete last"):
        resumed = _run(tiny_id, tmp_path)  # the evaluator cuts it off and plays it again
    assert resumed.records == reference
    assert [r["episode"] for r in load_run(tmp_path).records] == [0, 1, 2]


def test_reader_rules(tmp_path: Path) -> None:
    def record(episode: int, errored: bool = False) -> str:
        body = {"agent": "a", "env_id": "E", "episode": episode, "seed": episode}
        return json.dumps({**body, "success": False, "errored": errored})

    path = tmp_path / EPISODES_FILE
    path.write_text(f"{record(0)}\n\n{record(1)}\n{{not json}}\n\n", encoding="utf-8")
    reader = JournalReader(path)
    with pytest.warns(RuntimeWarning, match=":4: ignoring"):
        assert [n for n, _ in reader] == [1, 3]  # blank lines skipped; the bad last one left out
    assert reader.tail is not None and reader.tail.line == 4
    assert reader.repair() > 0
    assert path.read_text(encoding="utf-8") == f"{record(0)}\n\n{record(1)}\n"

    path.write_text(f"{record(0)}\n{record(1)}", encoding="utf-8")  # no final newline
    reader = JournalReader(path)
    assert [n for n, _ in reader] == [1, 2] and reader.tail is None
    assert reader.repair() == 0
    assert path.read_text(encoding="utf-8") == f"{record(0)}\n{record(1)}\n"

    path.write_text(f"{record(0)}\n[1]\n{record(1)}\n", encoding="utf-8")
    with pytest.raises(JournalError, match=":2: expected a JSON object"):
        list(JournalReader(path))
    # A valid JSON line that is not a record is an error even when it is the last one.
    path.write_text(f'{record(0)}\n{{"agent": "a"}}\n', encoding="utf-8")
    with pytest.raises(JournalError, match=":2: record lacks"):
        list(JournalReader(path))

    assert supersedes({"errored": True}, {"errored": False})
    assert supersedes({"errored": True}, {"errored": True})
    assert not supersedes({"errored": False}, {"errored": True})


def test_read_episodes_keeps_one_record_per_episode(tmp_path: Path) -> None:
    def record(episode: int, errored: bool = False, agent: str = "a") -> str:
        body = {"agent": agent, "env_id": "E", "episode": episode, "seed": episode}
        return json.dumps({**body, "success": not errored, "errored": errored})

    path = tmp_path / EPISODES_FILE
    lines = [record(0, errored=True), record(1), record(0), record(1, errored=True), record(2)]
    path.write_text("\n".join([*lines, record(5, agent="b")]) + "\n", encoding="utf-8")
    stored: list[tuple[int, bool]] = []

    episodes = read_episodes(
        path,
        take=lambda r: None if r["agent"] == "b" else {**r, "taken": True},
        on_store=lambda records, key, new: stored.append((key[2], new)),
    )
    # The errored first record of episode 0 is replaced in place; episode 1's repeat is not.
    assert [(k[2], r["errored"]) for k, r in episodes.records.items()] == [
        (0, False),
        (1, False),
        (2, False),
    ]
    assert all(r["taken"] for r in episodes.records.values())
    assert episodes.duplicates == 2
    assert stored == [(0, True), (1, True), (0, False), (2, True)]

    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"agent": "a", "env')  # an interrupted last write
    with pytest.warns(RuntimeWarning, match=":7: ignoring"):
        assert len(read_episodes(path).records) == 4
    assert path.read_text(encoding="utf-8").endswith('"env')  # left as it is without repair
    with pytest.warns(RuntimeWarning, match=":7: ignoring"):
        read_episodes(path, repair=True)
    assert path.read_text(encoding="utf-8").endswith("\n")


def test_concurrent_json_writers_and_readers_never_see_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_json(path, {"writer": -1, "i": -1})
    errors: list[BaseException] = []
    bad_reads = 0
    done = threading.Event()

    def writer(k: int) -> None:
        try:
            for i in range(300):
                write_json(path, {"writer": k, "i": i, "pad": "x" * (i % 50) * 100})
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        nonlocal bad_reads
        while not done.is_set():
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                bad_reads += 1

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()
    assert errors == [] and bad_reads == 0
    assert json.loads(path.read_text(encoding="utf-8"))["i"] == 299
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temp files left


def test_second_evaluation_on_one_out_is_refused_with_the_holder_pid(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path.mkdir(exist_ok=True)
    holder = RunLock(tmp_path)
    holder.acquire()
    try:
        with pytest.raises(
            RunLockedError, match=f"in use by another evaluation \\(pid {os.getpid()}\\)"
        ):
            _run(tiny_id, tmp_path)
        argv = ["eval", tiny_id, "--agent", agent("Persuader"), "--out", str(tmp_path)]
        assert main([*argv, "--episodes", "2", "--no-progress"]) == 2
        assert f"(pid {os.getpid()})" in capsys.readouterr().err
        assert not (tmp_path / EPISODES_FILE).exists()
    finally:
        holder.release()
    _run(tiny_id, tmp_path, episodes=2)  # released: the folder is usable again
    assert len((tmp_path / EPISODES_FILE).read_text(encoding="utf-8").splitlines()) == 2
    assert not (tmp_path / ".lock").exists()


def test_a_corrupt_line_says_where_once(tmp_path: Path) -> None:
    # json's messages that end in "at" ("... starting at", "... character at") read "at at"
    # before the position in older versions (issue 36).
    path = tmp_path / EPISODES_FILE
    path.write_text('{"agent": "a\n{}\n', encoding="utf-8")
    with pytest.raises(JournalError, match=r"\(Invalid control character at: column 13\)") as info:
        read_episodes(path)
    assert "at at" not in str(info.value)
