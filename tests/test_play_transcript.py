"""``dialogue-gym play ID --seed S --transcript FILE [--append TEXT]``: turn by turn from a file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from test_evaluation import PERSUASIVE, TINY_ID, install_tiny

from dialogue_gym.cli.commands import main
from dialogue_gym.cli.play_replay import read_transcript, replay
from dialogue_gym.env.registry import make

HIDDEN = "===== the hidden state ====="
TURN = "===== your turn: exchange"
FAST = ("--encoder", "hashing")


@pytest.fixture
def tiny_id(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    return install_tiny(monkeypatch, tmp_path_factory.getbasetemp())


def play(
    capsys: pytest.CaptureFixture[str], path: Path, *args: str, env: str = TINY_ID, code: int = 0
) -> str:
    """Runs ``play --transcript path`` in-process; returns stdout (stderr when it fails)."""
    argv = ["play", env, "--seed", "0", "--transcript", str(path), *FAST, *args]
    assert main(argv) == code
    captured = capsys.readouterr()
    if code:
        assert captured.out == ""  # a refusal prints nothing but its one error line
        assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
        return captured.err
    return captured.out


def test_a_missing_file_is_the_start_with_the_brief(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "game.txt"
    out = play(capsys, path, env="P4G-hard")
    assert out.startswith("P4G-hard-v0  (seed 0)  transcript ")
    assert ": 0 system turns, no such file yet\n" in out
    assert "You are the persuader" in out
    assert "Goal: Convince the persuadee" in out and "What you know:" in out
    assert "Up to 8 exchanges." in out
    assert f"{TURN} 1/8 =====" in out and "The user has not spoken yet" in out
    assert "--append 'YOUR TURN'" in out and "--encoder hashing" in out
    assert "user>" not in out and HIDDEN not in out
    assert not path.exists()  # reading never creates the file
    path.write_text("# my game: comments and blank lines are skipped\n\n", encoding="utf-8")
    assert play(capsys, path, env="P4G-hard").replace(": 0 system turns\n", "") == out.replace(
        ": 0 system turns, no such file yet\n", ""
    )


def test_turns_replay_deterministically_and_hide_the_hidden_state(
    tiny_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "game.txt"
    path.write_text(f"{PERSUASIVE[0]}\n  {PERSUASIVE[1]}  \n", encoding="utf-8")
    out = play(capsys, path)
    assert ": 2 system turns\n" in out
    assert "Goal:" not in out  # the brief is shown at the start only
    assert f"[1/4] you> {PERSUASIVE[0]}\n[1/4] user> " in out
    assert f"[2/4] you> {PERSUASIVE[1]}\n[2/4] user> " in out
    last = out.split("[2/4] user> ", 1)[1].split("\n", 1)[0]
    assert f"{TURN} 3/4 =====\nThe user's latest reply, to answer: {last}\n" in out
    for hidden in (HIDDEN, "Persona", "Willingness", "BDI", "concerns", "q per exchange"):
        assert hidden not in out
    assert play(capsys, path) == out  # same seed, same file: same replies

    # The interactive mode, typed the same turns with the same seed, hears the same replies.
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{PERSUASIVE[0]}\n{PERSUASIVE[1]}\n"))
    assert main(["play", TINY_ID, "--seed", "0", *FAST]) == 0
    typed = capsys.readouterr().out
    assert f"[2/4] user> {last}\n" in typed


def test_append_twice_equals_the_file_with_both_lines(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    appended = tmp_path / "appended.txt"
    play(capsys, appended, "--append", PERSUASIVE[0])
    assert appended.read_text(encoding="utf-8") == f"{PERSUASIVE[0]}\n"
    out = play(capsys, appended, "--append", PERSUASIVE[1])
    written = tmp_path / "written.txt"
    written.write_text(f"{PERSUASIVE[0]}\n{PERSUASIVE[1]}\n", encoding="utf-8")
    assert out.replace(str(appended), "FILE") == play(capsys, written).replace(str(written), "FILE")
    assert appended.read_text(encoding="utf-8") == written.read_text(encoding="utf-8")

    # A last line without a line break gets one before the next turn.
    written.write_text(PERSUASIVE[0], encoding="utf-8")
    play(capsys, written, "--append", PERSUASIVE[1])
    assert written.read_text(encoding="utf-8") == f"{PERSUASIVE[0]}\n{PERSUASIVE[1]}\n"


def test_append_keeps_the_plain_format_valid(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "game.txt"
    assert (
        main(
            [
                "play",
                TINY_ID,
                "--transcript",
                str(path),
                *FAST,
                "--append",
                "Hi!\nHow\r\n  are you?",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "note: the line breaks of --append were replaced by spaces" in captured.err
    assert path.read_text(encoding="utf-8") == "Hi! How are you?\n"
    assert "[1/4] you> Hi! How are you?\n" in captured.out

    err = play(capsys, path, "--append", "#hashtag charity", code=2)
    assert "starts with '#'" in err and ".jsonl" in err
    err = play(capsys, path, "--append", "   ", code=2)
    assert "non-empty" in err
    assert path.read_text(encoding="utf-8") == "Hi! How are you?\n"  # untouched

    assert main(["play", TINY_ID, "--append", "hello"]) == 2
    assert "--append needs --transcript FILE" in capsys.readouterr().err


def test_the_end_reveals_the_outcome_and_later_turns_are_refused(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "game.txt"
    path.write_text("\n".join(PERSUASIVE) + "\n", encoding="utf-8")
    out = play(capsys, path)
    assert "[4/4] you> Would you donate to the charity?\n[4/4] user> " in out
    assert "Episode over after 4 exchanges: success." in out
    hidden = out.split(HIDDEN, 1)[1]
    assert "Persona tiny-" in hidden and "Latent concerns:" in hidden
    assert "decision: agree" in hidden and "t=4 " in hidden
    assert "success: True  success turn: 4" in hidden and "counts for RCSR@4: True" in hidden
    assert TURN not in out and "--append" not in out

    before = path.read_text(encoding="utf-8")
    err = play(capsys, path, "--append", "One more thing!", code=2)
    assert "is over (success at exchange 4): nothing appended" in err
    assert path.read_text(encoding="utf-8") == before

    path.write_text(before + "# a comment\nOne more thing!\nAnd another.\n", encoding="utf-8")
    err = play(capsys, path, code=2)
    assert "has 2 system turn(s) after the end of the episode (success at exchange 4)" in err
    assert "from line 6" in err

    # The exchange budget: --env-option max_exchanges=2 ends the episode after two turns.
    path.write_text("\n".join(PERSUASIVE[:3]) + "\n", encoding="utf-8")
    err = play(capsys, path, "--env-option", "max_exchanges=2", code=2)
    assert "the budget of 2 exchanges is spent" in err and "from line 3" in err
    path.write_text("\n".join(PERSUASIVE[:2]) + "\n", encoding="utf-8")
    out = play(capsys, path, "--env-option", "max_exchanges=2")
    assert "Episode over after 2 exchanges: no success (the budget of 2 exchanges" in out
    assert "success: False  success turn: None" in out


def test_no_reveal_keeps_the_hidden_state_from_a_blind_player(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "game.txt"
    path.write_text("\n".join(PERSUASIVE[:2]) + "\n", encoding="utf-8")
    out = play(capsys, path, "--no-reveal")
    assert "--no-reveal" in out.split(TURN, 1)[1]  # the command to play on keeps it
    path.write_text("\n".join(PERSUASIVE) + "\n", encoding="utf-8")
    out = play(capsys, path, "--no-reveal")
    assert "Episode over after 4 exchanges: success." in out
    assert HIDDEN not in out and "Persona tiny-" not in out and "Latent concerns" not in out
    assert "hidden state is not shown" in out


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("game.jsonl", '"Hello!"\n{"system": "Hi"\n', "game.jsonl line 2 is not JSON"),
        ("game.jsonl", '"Hello!"\n42\n', "game.jsonl line 2 is a JSON number"),
        ("game.jsonl", '"Hello!"\n"  "\n', "game.jsonl line 2 is an empty system turn"),
        ("game.json", '["Hello!", "Why?"', "game.json is not valid JSON"),
        ("game.json", '{"turns": ["Hello!"]}', "game.json holds a JSON object"),
        ("game.json", '["Hello!", null]', "game.json item 2 is a JSON null"),
    ],
)
def test_malformed_json_is_one_clear_line(
    tiny_id: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: str,
    message: str,
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    err = play(capsys, path, "--append", "Next turn", code=2)
    assert err.startswith("dialogue-gym play: error: ") and message in err
    assert path.read_text(encoding="utf-8") == content  # nothing appended


def test_json_lines_and_json_lists_keep_line_breaks(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "game.txt"
    plain.write_text(f"{PERSUASIVE[0]}\n{PERSUASIVE[1]}\n", encoding="utf-8")
    expected = play(capsys, plain).replace(str(plain), "FILE")
    for name in ("game.jsonl", "game.json"):
        path = tmp_path / name
        play(capsys, path, "--append", PERSUASIVE[0])
        out = play(capsys, path, "--append", PERSUASIVE[1])
        assert out.replace(str(path), "FILE").split("Play it:")[0] == expected.split("Play it:")[0]
        assert read_transcript(path).turns == PERSUASIVE[:2]
    lines = (tmp_path / "game.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == list(PERSUASIVE[:2])
    assert json.loads((tmp_path / "game.json").read_text(encoding="utf-8")) == list(PERSUASIVE[:2])

    path = tmp_path / "multi.jsonl"
    out = play(capsys, path, "--append", "Hello!\nHow are you?")
    assert "[1/4] you> Hello!\n           How are you?\n" in out  # continuation indented
    assert read_transcript(path).turns == ("Hello!\nHow are you?",)


def test_unreadable_and_unwritable_files_are_usage_errors(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = play(capsys, tmp_path, code=2)
    assert "cannot read the transcript" in err
    binary = tmp_path / "game.txt"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    assert "is not UTF-8 text" in play(capsys, binary, code=2)
    err = play(capsys, tmp_path / "no-such-folder" / "game.txt", "--append", "Hi", code=2)
    assert "cannot write the transcript" in err


def test_an_opening_is_shown_as_what_to_answer(
    tiny_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class EveryPersona(dict):  # the opening of whichever persona the seed draws
        def get(self, key: object, default: object = None) -> object:
            return (("system", "Hi, do you have a minute?"), ("user", "Sure, what is it about?"))

    env = make(TINY_ID, privileged=True, encoder="hashing")
    env.unwrapped._openings = EveryPersona()
    out = io.StringIO()
    assert replay(env, TINY_ID, 0, read_transcript(tmp_path / "game.txt"), out) == 0
    text = out.getvalue()
    assert "(opening) system> Hi, do you have a minute?\n" in text
    assert "(opening) user> Sure, what is it about?\n" in text
    assert "The user opened with, to answer: Sure, what is it about?" in text


@pytest.mark.parametrize(
    ("brief", "shown"),
    [
        ("Fact one.\nFact two.", "Brief: Fact one.\n       Fact two.\n"),
        (["Fact one.", "Fact two."], "Brief: - Fact one.\n       - Fact two.\n"),
        ({"budget": "$2"}, "Brief: budget: $2\n"),
    ],
)
def test_a_brief_in_the_observation_is_shown_at_the_start(
    tiny_id: str, tmp_path: Path, brief: object, shown: str
) -> None:
    env = make(TINY_ID, privileged=True, encoder="hashing")
    base = env.unwrapped
    observe = base._observe

    def with_brief(seat: str) -> dict[str, object]:
        return {**observe(seat), "brief": brief} if seat == "system" else observe(seat)

    base._observe = with_brief
    out = io.StringIO()
    assert replay(env, TINY_ID, 0, read_transcript(tmp_path / "game.txt"), out) == 0
    assert "Goal: Get the user to donate" in out.getvalue() and shown in out.getvalue()
