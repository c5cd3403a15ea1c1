"""Tests for the ``dialogue-gym`` command line (``main([...])`` with captured output)."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest
from test_evaluation import PERSUASIVE, SOFT_ID, TINY_ID, agent, install_tiny

from dialogue_gym.cli.commands import main
from dialogue_gym.evaluation.journal import MANIFEST_FILE
from dialogue_gym.evaluation.run import EPISODES_FILE, SUMMARY_FILE


@pytest.fixture
def tiny_id(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_tiny(monkeypatch, tmp_path_factory.getbasetemp())


def test_list(tiny_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "===== EvalTiny =====" in out
    assert TINY_ID in out and SOFT_ID in out and "tiny test card, hard users" in out
    assert "Agents:" in out and "file.py:Class" in out


def test_info(tiny_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "EvalTiny-hard"]) == 0
    out = capsys.readouterr().out
    for expected in (
        f"id:                   {TINY_ID}",
        "tiny test card, hard users",
        "user='hard'",
        "Tiny donation task (tiny)",
        "Get the user to donate to the charity.",
        "system=persuader, user=persuadee",
        "greet, ask",
        "trust (psychological), money (financial)",
        "The charity is trustworthy and helps children.",
        "I will donate.",
        "receptivity=0.90 confidence=0.80 valence=+0.50",
        "max exchanges:        4",
        "Utterance(max_length=2000)",
        "observation (system)",
    ):
        assert expected in out, expected


def test_eval(tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "run"
    argv = [
        "eval",
        tiny_id,
        "EvalTiny-soft",
        "--agent",
        agent("Persuader"),
        "--agent",
        agent("Pushy"),
        "--episodes",
        "2",
        "--seed",
        "3",
        "--out",
        str(out_dir),
        "--encoder",
        "hashing",
        "--no-progress",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "SR@4" in captured.out and "RCSR@4" in captured.out and "AT" in captured.out
    assert "95%" in captured.out
    assert str(out_dir / EPISODES_FILE) in captured.out
    assert str(out_dir / SUMMARY_FILE) in captured.out
    lines = (out_dir / EPISODES_FILE).read_text().splitlines()
    assert len(lines) == 8
    summary = json.loads((out_dir / SUMMARY_FILE).read_text())
    assert len(summary["summaries"]) == 4
    assert {s["config"]["seed"] for s in summary["summaries"]} == {3}

    # The same command resumes: nothing is run twice.
    assert main(argv) == 0
    assert (out_dir / EPISODES_FILE).read_text().splitlines() == lines


def test_eval_num_envs(tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", tiny_id, "--agent", agent("Persuader"), "--episodes", "3", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "lone")]) == 0
    assert main([*argv, "--out", str(tmp_path / "vec"), "--num-envs", "2"]) == 0
    lone, vec = (
        sorted(
            (json.loads(line) for line in (tmp_path / d / EPISODES_FILE).open()),
            key=lambda record: record["seed"],
        )
        for d in ("lone", "vec")
    )
    assert [record["seed"] for record in vec] == [0, 1, 2] and vec == lone
    capsys.readouterr()
    assert main([*argv, "--num-envs", "2", "--concurrency", "2"]) == 2
    assert "num_envs" in capsys.readouterr().err


def test_eval_default_out_dir(
    tiny_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["eval", tiny_id, "--agent", agent("Pushy"), "--episodes", "1"]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in run.iterdir()) == [EPISODES_FILE, MANIFEST_FILE, SUMMARY_FILE]
    assert str(Path("runs") / run.name / EPISODES_FILE) in capsys.readouterr().out


@pytest.mark.parametrize("episodes", ["0", "-3", "abc", "1.5", "1000001", "1e6"])
def test_eval_rejects_bad_episodes(
    tiny_id: str, tmp_path: Path, episodes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", tiny_id, "--agent", agent("Pushy"), "--out", str(tmp_path)]
    assert main([*argv, f"--episodes={episodes}"]) == 2
    err = capsys.readouterr().err
    assert "--episodes" in err and "usage:" in err
    assert not list(tmp_path.iterdir())


def test_eval_rejects_negative_seed(tiny_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", tiny_id, "--agent", agent("Pushy"), "--seed=-1"]) == 2
    assert "--seed" in capsys.readouterr().err


def test_unknown_env_id_is_one_line(tiny_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "EvalTiny-hrad-v0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "no environment 'EvalTiny-hrad-v0'" in err and "Did you mean" in err
    assert TINY_ID in err

    assert main(["eval", "EvalTiny-hrad", "--agent", agent("Pushy"), "--episodes", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and TINY_ID in err

    assert main(["play", "Nope-v0"]) == 2
    assert capsys.readouterr().err.startswith("dialogue-gym play: error: no environment")


def test_unknown_agent_is_one_line(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", tiny_id, "--agent", "nobody", "--episodes", "1", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown agent 'nobody'" in err
    assert main(["eval", tiny_id, "--agent", str(tmp_path / "missing.py:A")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage:" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "eval" in capsys.readouterr().out


def play(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str, *args: str
) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["play", TINY_ID, "--seed", "0", *args]) == 0
    return capsys.readouterr().out


def test_play_until_eof_reveals_hidden_state(
    tiny_id: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(monkeypatch, capsys, f"{PERSUASIVE[0]}\n{PERSUASIVE[1]}\n")
    assert "You are the persuader" in out and "Goal: Get the user to donate" in out
    assert f"[1/4] you> {PERSUASIVE[0]}\n[1/4] user> " in out
    assert f"[2/4] you> {PERSUASIVE[1]}\n[2/4] user> " in out
    assert "(stopped early)" in out
    hidden = out.split("===== the hidden state =====", 1)[1]
    assert "Persona tiny-" in hidden and "background:" in hidden
    assert "Latent concerns:" in hidden and "trust" in hidden
    assert "resolved" in hidden  # the audit argument resolved the trust concern
    assert "Willingness:" in hidden
    assert "BDI trajectory:" in hidden and "t=0 " in hidden and "t=2 " in hidden
    assert "t=3 " not in hidden
    assert "q per exchange: [1, 1]" in hidden
    assert "success: False  success turn: None" in hidden


def test_play_quit_and_immediate_eof(
    tiny_id: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(monkeypatch, capsys, f"{PERSUASIVE[0]}\n/quit\n{PERSUASIVE[1]}\n")
    assert "[1/4] user> " in out and "[2/4] user> " not in out
    assert "t=1 " in out and "q per exchange: [1]" in out

    out = play(monkeypatch, capsys, "")
    assert "user> " not in out
    assert "BDI trajectory:" in out and "t=0 " in out and "q per exchange: []" in out


def test_play_full_episode(
    tiny_id: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = play(monkeypatch, capsys, "\n".join(PERSUASIVE) + "\nnever read\n", "--encoder=hashing")
    assert "Episode over after 4 exchanges: success." in out
    assert "never read" not in out and "(stopped early)" not in out
    assert "success: True  success turn: 4" in out
    assert "counts for RCSR@4: True" in out
    assert "decision: agree" in out


def test_mistyped_option_gets_the_subcommands_usage_and_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval", "P4G-hard", "--agent", "random", "--epsiodes", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dialogue-gym eval ")  # the subcommand's usage, not the top's
    assert "did you mean --episodes?" in err
    assert main(["play", "P4G-hard", "--sede", "3"]) == 2
    assert "did you mean --seed?" in capsys.readouterr().err
    assert main(["eval", "P4G-hard", "--agent", "random", "--zzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess


def test_positionals_and_list_have_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["eval"], ["play"], ["info"]):
        assert main([*command, "--help"]) == 0
        assert "a registered env id" in capsys.readouterr().out
    assert main(["list", "--help"]) == 0
    assert "List the registered environments" in capsys.readouterr().out


def test_eval_threads_option_reaches_the_env(
    tiny_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        argv = ["eval", tiny_id, "--agent", agent("Persuader"), "--episodes", "1"]
        argv += ["--encoder", "hashing", "--no-progress", "--threads", "2"]
        assert main([*argv, "--out", str(tmp_path / "run")]) == 0
        assert torch.get_num_threads() == 2
        assert main(["eval", tiny_id, "--agent", "random", "--threads", "0"]) == 2
    finally:
        torch.set_num_threads(before)


def test_resume_with_other_threads_is_allowed(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        base = ["eval", tiny_id, "--agent", agent("Persuader"), "--encoder", "hashing"]
        base += ["--no-progress", "--out", str(tmp_path / "run")]
        assert main([*base, "--episodes", "2", "--threads", "2"]) == 0
        assert main([*base, "--episodes", "4", "--threads", "1"]) == 0  # speed, not results
        lines = (tmp_path / "run" / EPISODES_FILE).read_text(encoding="utf-8").splitlines()
        assert len(lines) == 4
    finally:
        torch.set_num_threads(before)


def test_env_options_reach_make_and_bad_ones_write_nothing(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["eval", tiny_id, "--agent", agent("Persuader"), "--encoder", "hashing"]
    base += ["--no-progress", "--episodes", "1"]
    run = tmp_path / "run"
    assert main([*base, "--env-option", "max_exchanges=3", "--out", str(run)]) == 0
    summary = json.loads((run / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert "max_exchanges" in json.dumps(summary) and '"max_exchanges": 3' in json.dumps(summary)
    capsys.readouterr()
    for bad in ("bogus=1", "max_exchanges=0", "no-equals-sign"):
        out = tmp_path / f"bad-{bad[:5]}"
        assert main([*base, "--env-option", bad, "--out", str(out)]) == 2
        assert "error" in capsys.readouterr().err
        assert not out.exists()  # refused before anything was written


def test_a_closed_pipe_ends_quietly() -> None:
    """`dialogue-gym list | true` (the reader is gone before anything is written): exit 141,
    no BrokenPipeError traceback."""
    import subprocess

    code = "import sys; from dialogue_gym.cli.commands import main; sys.exit(main(['list']))"
    script = (
        f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} | true; echo rc=${{PIPESTATUS[0]}}"
    )
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert "rc=141" in done.stdout


def test_minilm_loads_without_a_progress_bar() -> None:
    import subprocess

    code = "from dialogue_gym.mind.encoders import make_encoder; make_encoder('minilm')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert "Loading weights" not in done.stderr
