"""Corpus file reading under hostile or unusual input (issue 16, item 6).

Line ends are ``\\n`` only (a raw U+2028/U+0085 in a record is data), the walk over a JSON
document counts each newline about once, deep nesting is a :class:`CorpusError`, and a huge
JSON Lines line is refused before it is held in memory.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from test_data import ESCONV_RECORD, jsonl, write

from dialogue_gym.cli.commands import main
from dialogue_gym.data import CorpusError
from dialogue_gym.data import _io as io_module
from dialogue_gym.data._io import iter_json_container, iter_jsonl
from dialogue_gym.plugins.cb import loader as cb
from dialogue_gym.plugins.ed import loader as ed
from dialogue_gym.plugins.esconv import loader as esconv

ODD_BREAKS = "one\u2028two\u2029three\x85four\x0bfive\x0csix\x1cseven"


def test_jsonl_keeps_raw_unicode_line_breaks_inside_a_record(tmp_path: Path) -> None:
    record = dict(ESCONV_RECORD, situation=f"Lost it. {ODD_BREAKS}")
    text = json.dumps(record, ensure_ascii=False) + "\r\n" + json.dumps(ESCONV_RECORD) + "\n"
    assert "\u2028" in text and "\x85" in text
    path = write(tmp_path / "train.jsonl", text)
    first, second = esconv.load(path)
    assert first.situation["situation"] == record["situation"]
    assert second.situation["situation"] == ESCONV_RECORD["situation"]
    assert [line for line, _ in iter_jsonl(path)] == [1, 2]
    assert [line for line, _ in iter_jsonl(path, text=text)] == [1, 2]


def test_jsonl_line_numbers_count_newlines_only(tmp_path: Path) -> None:
    good = json.dumps(dict(ESCONV_RECORD, situation="a\u2028b"), ensure_ascii=False)
    path = write(tmp_path / "valid.jsonl", f"{good}\n\n{good}\n{good[:25]}\n")
    with pytest.raises(CorpusError, match="invalid JSON") as info:
        esconv.load(path)
    assert info.value.line == 4


def test_jsonl_bad_utf8_names_the_line(tmp_path: Path) -> None:
    good = json.dumps(ESCONV_RECORD).encode()
    path = write(tmp_path / "test.jsonl", good + b"\n" + good.replace(b"Hi", b"H\xe9") + b"\n")
    with pytest.raises(CorpusError, match=r"byte 0xe9 .* not valid UTF-8") as info:
        esconv.load(path)
    assert info.value.line == 2


def test_ed_official_csv_keeps_unicode_line_breaks(tmp_path: Path) -> None:
    header = "conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags"
    rows = [
        f"hit:1_conv:1,1,sad,I lost my dog{ODD_BREAKS},1,He was old\u2028and ill_comma_ sadly,,",
        "hit:1_conv:1,2,sad,I lost my dog,2,I am so sorry.,,",
    ]
    path = write(tmp_path / "test.csv", "\n".join([header, *rows]) + "\n")
    (dialogue,) = ed.load(path, "official")
    assert [t.text for t in dialogue.turns] == ["He was old\u2028and ill, sadly", "I am so sorry."]


def test_lines_of_splits_at_newlines_only() -> None:
    from dialogue_gym.data._io import lines_of

    assert lines_of(f"a{ODD_BREAKS}\r\nb\n\nc") == [f"a{ODD_BREAKS}", "b", "", "c"]
    assert lines_of("a\n") == ["a"] and lines_of("") == []


class CountingStr(str):
    """A str that adds up how many characters ``count`` scans."""

    scanned = 0

    def count(self, sub: str, start: int | None = None, end: int | None = None) -> int:  # type: ignore[override]
        lo = 0 if start is None else start
        hi = len(self) if end is None else end
        CountingStr.scanned += max(0, hi - lo)
        return super().count(sub, start, end)


@pytest.mark.parametrize("opener", ["list", "object"])
def test_json_container_counts_each_newline_about_once(tmp_path: Path, opener: str) -> None:
    values = [{"id": i, "text": f"turn {i}\nstill turn {i}"} for i in range(2000)]
    document = (
        json.dumps(values, indent=1)
        if opener == "list"
        else json.dumps({f"k{i}": v for i, v in enumerate(values)}, indent=1)
    )
    CountingStr.scanned = 0
    seen = list(iter_json_container(tmp_path / "x.json", CountingStr(document), expect=opener))
    assert [value for _, _, value in seen] == values
    # Element i (list) or key i (object) starts on line 2 + i * (lines per element).
    per = len(json.dumps(values[0], indent=1).splitlines())
    assert [line for line, _, _ in seen] == [2 + i * per for i in range(len(values))]
    # The old walk counted from the file start for every element: ~n²/2 characters.
    assert CountingStr.scanned <= 2 * len(document)


def test_json_container_error_lines_after_many_elements(tmp_path: Path) -> None:
    values = [{"id": i} for i in range(300)]
    document = json.dumps(values, indent=1).replace('"id": 250', '"id": 250,,')
    path = write(tmp_path / "ESConv.json", document)
    with pytest.raises(CorpusError, match="invalid JSON") as info:
        list(iter_json_container(path, expect="list"))
    assert document.splitlines()[info.value.line - 1].strip() == '"id": 250,,'


DEEP = 200_000


def test_deep_nesting_in_a_json_document_is_a_corpus_error(tmp_path: Path) -> None:
    record = {
        "experience_type": "Current Experience",
        "emotion_type": "sadness",
        "problem_type": "breakup",
        "situation": "s",
        "survey_score": {},
        "dialog": [{"speaker": "seeker", "annotation": {}, "content": "hi"}],
    }
    assert len(esconv.load(write(tmp_path / "ok" / "ESConv.json", json.dumps([record])))) == 1
    body = json.dumps(record)[:-1] + ', "deep": ' + "[" * DEEP + "]" * DEEP + "}"
    path = write(tmp_path / "ESConv.json", f"[\n{json.dumps(record)},\n{body}\n]\n")
    with pytest.raises(CorpusError, match="nested too deeply") as info:
        esconv.load(path)
    assert info.value.path == path and info.value.line == 3


def test_deep_nesting_in_a_jsonl_line_is_a_corpus_error(tmp_path: Path) -> None:
    deep = '{"dialog": ' + "[" * DEEP + "]" * DEEP + "}"
    path = write(tmp_path / "train.jsonl", jsonl(ESCONV_RECORD) + deep + "\n")
    with pytest.raises(CorpusError, match="nested too deeply") as info:
        esconv.load(path)
    assert info.value.line == 2


def test_data_check_reports_deep_nesting_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "esconv" / "ESConv.json", "[" * DEEP + "]" * DEEP)
    assert main(["data", "check", str(path.parent)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:1: invalid JSON: values are nested too deeply" in out


def test_a_huge_jsonl_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    limit = 2**20
    huge = json.dumps({"dialog": "x" * (16 * limit)})
    path = write(tmp_path / "train.jsonl", jsonl(ESCONV_RECORD) + huge + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(CorpusError, match="longer than 1,048,576 bytes") as info:
            list(iter_jsonl(path, max_line_bytes=limit))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.line == 2
    assert peak < 4 * limit  # the 16 MiB line was never held


def test_the_line_limit_is_exact_and_applies_to_the_loaders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = json.dumps(ESCONV_RECORD)
    path = write(tmp_path / "train.jsonl", f"{line}\r\n{line}")
    for limit in (len(line) + 1, len(line)):  # "\r" counts, the "\n" does not
        assert len(list(iter_jsonl(path, max_line_bytes=limit))) == 2
    with pytest.raises(CorpusError, match="longer than") as info:
        list(iter_jsonl(path, max_line_bytes=len(line) - 1))
    assert info.value.line == 1
    monkeypatch.setattr(io_module, "MAX_LINE_BYTES", 1000)
    big = {"agent_info": {"Role": ["buyer", "seller"]}, "pad": "x" * 5000}
    cb_path = write(tmp_path / "cb" / "train.jsonl", jsonl(big))
    with pytest.raises(CorpusError, match="longer than 1,000 bytes"):
        cb.load(cb_path)
    with pytest.raises(CorpusError, match="longer than 1,000 bytes"):
        esconv.load(write(tmp_path / "es" / "train.jsonl", jsonl(big)))


def test_read_head_reads_only_the_start(tmp_path: Path) -> None:
    from dialogue_gym.data._io import read_head

    path = write(tmp_path / "x.jsonl", "\ufeff" + "é" * 3000)
    head = read_head(path, 101)
    assert head == "é" * 49  # 3 BOM bytes + 49 two-byte characters; the cut one is dropped
    write(path, "é".encode("utf-16"))
    with pytest.raises(CorpusError, match="UTF-16"):
        read_head(path)


def test_invalid_json_says_where_once(tmp_path: Path) -> None:
    # "Unterminated string starting at" read "... at at column" before issue 36.
    lines = write(tmp_path / "train.jsonl", '{"id": "a\n')
    with pytest.raises(CorpusError, match=r"\(Unterminated string starting at: column 8\)"):
        list(iter_jsonl(lines))
    document = write(tmp_path / "ESConv.json", '[{"id": "a')
    with pytest.raises(CorpusError, match=r"\(Unterminated string starting at: column 9\)") as info:
        list(iter_json_container(document, expect="list"))
    assert "at at" not in str(info.value)
