"""Tests for ``dialogue-gym data info | check | fetch`` (``main([...])`` with captured output).

No test touches the network: ``fetch`` is pointed at an unreachable local port, or at
``file://`` mirrors written in ``tmp_path``.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from test_data import DATA, ESCONV_RECORD, jsonl, needs_data, write

from dialogue_gym.cli.commands import main
from dialogue_gym.data.fetch import BASE_ENV_VAR, RELEASES

UNREACHABLE = "http://127.0.0.1:9/"


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIALOGUE_GYM_DATA", raising=False)
    monkeypatch.delenv(BASE_ENV_VAR, raising=False)


# -- info ------------------------------------------------------------------------------------------


@needs_data
def test_info_lists_formats_files_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "info", "--data", str(DATA)]) == 0
    out = capsys.readouterr().out
    for expected in (
        f"Data root: {DATA} (from --data)",
        "p4g: Persuasion for Good",
        "full                 1,017 dialogues, 20,932 turns [train 806, valid 99, test 112]",
        "raw_gitlab_mirror/FullData/full_dialog.csv",
        "gdpzero              300 dialogues",
        "300_dialog_turn_based.pkl: pickle not loaded",
        "hf                   1,300 dialogues, 38,365 turns [train 910, valid 195, test 195]",
        "ppdpp                1,300 dialogues, 38,365 turns [train 1,040, valid 130, test 130]",
        "original             196 dialogues",
        "intents              24,847 dialogues",
        "(32 files: afraid.csv … trusting.csv)",
        "hf                   1,435 dialogues, 13,223 turns [valid 597, test 838]",
        "scenarios            6,608 scenarios, 0 turns [train 5,202, valid 597, test 809]",
    ):
        assert expected in out, expected


def test_info_reads_the_env_var_and_reports_missing_corpora(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "esconv" / "valid.jsonl", jsonl(ESCONV_RECORD, ESCONV_RECORD))
    monkeypatch.setenv("DIALOGUE_GYM_DATA", str(tmp_path))
    assert main(["data", "info"]) == 0
    out = capsys.readouterr().out
    assert "(from $DIALOGUE_GYM_DATA)" in out
    assert "hf                   2 dialogues, 4 turns [valid 2]" in out
    assert f"not found: put its files in {tmp_path / 'p4g'}" in out
    assert "dialogue-gym data fetch cb --dest" in out
    assert main(["data", "info", "--no-counts"]) == 0
    assert "2 dialogues" not in capsys.readouterr().out


def test_info_without_a_data_root_says_where_to_put_files(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["data", "info"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dialogue-gym data info: error: no data folder given")
    assert "DIALOGUE_GYM_DATA" in err and "DIR/empathetic_dialogues" in err


def test_info_reports_a_broken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "esconv" / "test.jsonl", '{"dialog": [\n')
    assert main(["data", "info", "--data", str(tmp_path)]) == 1
    assert f"ERROR: {path}:1: invalid JSON" in capsys.readouterr().out


# -- check -----------------------------------------------------------------------------------------


@needs_data
def test_check_a_corpus_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "check", str(DATA / "craigslist_bargain")]) == 0
    out = capsys.readouterr().out
    assert "ok    cb/hf: 1,435 dialogues, 13,223 turns [valid 597, test 838]" in out
    assert "ok    cb/ppdpp: 376 dialogues, 2,744 turns [valid 188, test 188]" in out
    assert "ok    cb/scenarios: 6,608 scenarios" in out
    assert "all 3 check(s) passed" in out


@needs_data
def test_check_one_file_and_one_format(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "p4g" / "gdpzero" / "300_dialog_turn_based.json"
    assert main(["data", "check", str(path)]) == 0
    assert "ok    p4g/gdpzero: 300 dialogues, 6,138 turns" in capsys.readouterr().out
    assert main(["data", "check", str(DATA / "esconv"), "--format", "ppdpp"]) == 0
    out = capsys.readouterr().out
    assert "esconv/ppdpp" in out and "esconv/hf" not in out


@needs_data
def test_check_refuses_the_pickle(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "p4g" / "gdpzero" / "300_dialog_turn_based.pkl"
    assert main(["data", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  p4g:" in out and "300_dialog_turn_based.json" in out


def test_check_reports_the_first_error_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps(ESCONV_RECORD)
    path = write(tmp_path / "esconv" / "train.jsonl", f"{good}\n{good}\n{good[:30]}\n{good[:9]}\n")
    assert main(["data", "check", str(tmp_path / "esconv")]) == 1
    out = capsys.readouterr().out
    assert f"FAIL  esconv/hf: {path}:3: invalid JSON" in out
    assert f"{path}:4" not in out
    assert "1 of 1 check(s) failed" in out


def test_check_a_data_root_checks_every_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "esconv" / "valid.jsonl", jsonl(ESCONV_RECORD))
    write(tmp_path / "empathetic_dialogues" / "x" / "joyful.csv", "Dialog_ID,Type,Actor,Text\n")
    assert main(["data", "check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "ok    esconv/hf: 1 dialogues, 2 turns [valid 1]" in out
    assert "FAIL  ed/intents_unannotated: no dialogues" in out


def test_check_flags_duplicate_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = "Dialog_ID,Type,Actor,Text\nhit:1_conv:1,situation,none,p\n"
    write(tmp_path / "ed" / "a" / "sad.csv", rows)
    write(tmp_path / "ed" / "b" / "sad.csv", rows)
    assert main(["data", "check", str(tmp_path / "ed")]) == 1
    assert "duplicate dialogue id(s), e.g. 'hit:1_conv:1'" in capsys.readouterr().out


def test_check_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "check", str(tmp_path / "missing")]) == 1
    assert "no such file or folder" in capsys.readouterr().err
    mystery = write(tmp_path / "notes.txt", "hello\n")
    assert main(["data", "check", str(mystery)]) == 1
    assert "cannot tell which corpus" in capsys.readouterr().err
    assert main(["data", "check", str(mystery), "--corpus", "multiwoz"]) == 1
    assert "unknown corpus 'multiwoz'" in capsys.readouterr().err
    assert main(["data", "check", str(mystery), "--corpus", "esconv"]) == 1
    assert f"FAIL  esconv/hf: {mystery}:1: invalid JSON" in capsys.readouterr().out


# -- fetch -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_fetch_offline_fails_at_once_with_what_to_put_where(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(BASE_ENV_VAR, UNREACHABLE)
    dest = tmp_path / "data"
    assert main(["data", "fetch", name, "--dest", str(dest)]) == 1
    captured = capsys.readouterr()
    first = RELEASES[name].downloads[0]
    assert f"get      {UNREACHABLE}{first.dest}" in captured.out
    err = captured.err
    assert err.startswith("dialogue-gym data fetch: error: could not download")
    assert f"{UNREACHABLE}{first.dest}" in err
    assert "Download these files by hand and put them here" in err
    for download in RELEASES[name].downloads:
        assert download.url in err  # the official source of every file
        for target in download.targets():
            assert str(dest / target) in err
    assert not dest.exists() or not any(dest.rglob("*"))  # nothing half-written


def test_fetch_needs_a_destination_and_a_known_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "fetch", "esconv"]) == 1
    assert "pass --dest DIR" in capsys.readouterr().err
    assert main(["data", "fetch", "multiwoz", "--dest", "x"]) == 1
    assert "unknown corpus" in capsys.readouterr().err


def test_fetch_from_a_file_mirror_then_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror = tmp_path / "mirror"
    original = [
        {
            "experience_type": "Current Experience",
            "emotion_type": "sadness",
            "problem_type": "breakup",
            "situation": "My partner left.",
            "survey_score": {"seeker": {"initial_emotion_intensity": "4"}},
            "dialog": [
                {"speaker": "seeker", "annotation": {}, "content": "Hi\n"},
                {"speaker": "supporter", "annotation": {"strategy": "Question"}, "content": "Hi?"},
            ],
        }
    ]
    write(mirror / "esconv" / "ESConv.json", json.dumps(original))
    write(mirror / "esconv" / "FailedESConv.json", json.dumps(original))
    monkeypatch.setenv(BASE_ENV_VAR, mirror.as_uri())
    dest = tmp_path / "data"
    assert main(["data", "fetch", "esconv", "--dest", str(dest)]) == 0
    out = capsys.readouterr().out
    assert f"saved    {dest / 'esconv' / 'ESConv.json'}" in out
    assert "licence: CC BY-NC 4.0" in out
    assert main(["data", "fetch", "esconv", "--dest", str(dest)]) == 0
    assert "present  " in capsys.readouterr().out
    assert main(["data", "check", str(dest / "esconv")]) == 0
    assert "ok    esconv/original: 2 dialogues, 4 turns [unsplit 2]" in capsys.readouterr().out


def test_fetch_extracts_the_ed_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    header = "conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags\n"
    archive = write(
        tmp_path / "mirror" / "empathetic_dialogues" / "empatheticdialogues.tar.gz", b""
    )
    with tarfile.open(archive, "w:gz") as tar:
        for split in ("train", "valid", "test"):
            data = (
                header + f"hit:1_conv:{split},1,sad,p,1,I lost my keys_comma_ again,,\n"
            ).encode()
            member = tarfile.TarInfo(f"empatheticdialogues/{split}.csv")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    monkeypatch.setenv(BASE_ENV_VAR, (tmp_path / "mirror").as_uri() + "/")
    dest = tmp_path / "data"
    assert main(["data", "fetch", "ed", "--dest", str(dest)]) == 0
    capsys.readouterr()
    folder = dest / "empathetic_dialogues" / "empatheticdialogues"
    assert sorted(p.name for p in folder.iterdir()) == ["test.csv", "train.csv", "valid.csv"]
    assert not (dest / "empathetic_dialogues" / "empatheticdialogues.tar.gz").exists()
    assert main(["data", "check", str(dest)]) == 0
    assert "ok    ed/official: 3 dialogues, 3 turns [train 1, valid 1, test 1]" in (
        capsys.readouterr().out
    )


def test_data_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "--help"]) == 0
    out = capsys.readouterr().out
    assert "info" in out and "check" in out and "fetch" in out
