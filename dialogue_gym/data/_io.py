"""File reading shared by the loaders: encodings, CSV, JSON Lines and JSON documents.

Every problem is raised as a :class:`~dialogue_gym.data.errors.CorpusError` naming the file
and the line.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.data.errors import CorpusError

__all__ = [
    "MAX_LINE_BYTES",
    "as_float",
    "as_int",
    "as_str",
    "canonical_split",
    "ensure_not_empty",
    "iter_csv",
    "iter_json_container",
    "iter_jsonl",
    "lines_of",
    "read_head",
    "read_text",
    "require",
    "walk",
]

_SPLIT_ALIASES = {
    "train": "train",
    "training": "train",
    "valid": "valid",
    "validation": "valid",
    "val": "valid",
    "dev": "valid",
    "test": "test",
}


def walk(folder: Path) -> list[Path]:
    """All files under ``folder``, recursively, sorted, skipping hidden files and folders."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def canonical_split(name: str | None) -> str | None:
    """Maps ``validation``/``dev``/``val`` to ``valid`` (and ``train``/``test`` to themselves).

    Returns ``None`` for names that are not a split.
    """
    if name is None:
        return None
    return _SPLIT_ALIASES.get(name.strip().lower())


def _check_head(path: Path, head: bytes, what: str) -> int:
    """Refuses UTF-16/UTF-32 and NUL-filled starts; returns the length of a UTF-8 BOM (0 or 3).

    Raises:
        CorpusError: The bytes start with a UTF-16/UTF-32 byte-order mark or are mostly NULs.
    """
    for mark, name in (
        (codecs.BOM_UTF32_LE, "UTF-32"),
        (codecs.BOM_UTF32_BE, "UTF-32"),
        (codecs.BOM_UTF16_LE, "UTF-16"),
        (codecs.BOM_UTF16_BE, "UTF-16"),
    ):
        if head.startswith(mark):
            raise CorpusError(
                path,
                1,
                f"the file is {name}-encoded; expected UTF-8 {what}. Re-save it as UTF-8 "
                f"(e.g. `iconv -f {name} -t UTF-8`).",
            )
    bom = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    sample = head[bom : bom + 4096]
    if sample.count(b"\x00") > len(sample) // 4:
        raise CorpusError(
            path,
            1,
            f"the file holds NUL bytes (it looks UTF-16-encoded without a byte-order mark); "
            f"expected UTF-8 {what}",
        )
    return bom


def _not_utf8(
    path: Path, line: int, data: bytes, exc: UnicodeDecodeError, what: str, offset: int = 0
) -> CorpusError:
    return CorpusError(
        path,
        line,
        f"byte 0x{data[exc.start]:02x} at offset {offset + exc.start} is not valid UTF-8; "
        f"expected UTF-8 {what} (is the file latin-1/cp1252? re-save it as UTF-8, e.g. "
        f"`iconv -f latin1 -t UTF-8`)",
    )


def read_text(path: Path, what: str = "text") -> str:
    """Reads a whole file as UTF-8 text (a UTF-8 byte-order mark is allowed).

    Line ends are kept as they are (no newline translation).

    Args:
        path: The file.
        what: What the file should hold, for messages (e.g. ``"CSV"``, ``"JSON Lines"``).

    Raises:
        CorpusError: The file is empty, UTF-16/UTF-32, or not valid UTF-8.
    """
    data = path.read_bytes()
    bom = _check_head(path, data[:4100], what)
    if bom:
        data = data[bom:]
    if not data.strip():
        raise CorpusError(path, None, f"the file is empty; expected UTF-8 {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _not_utf8(path, line, data, exc, what) from None


def read_head(path: Path, size: int = 4096, what: str = "text") -> str:
    """The first ``size`` bytes of a UTF-8 file as text (for format detection).

    A character cut at the end is dropped; a UTF-8 byte-order mark is skipped.

    Raises:
        CorpusError: The file is UTF-16/UTF-32 or its start is not valid UTF-8.
    """
    with path.open("rb") as handle:
        head = handle.read(size)
    head = head[_check_head(path, head, what) :]
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3 and exc.reason == "unexpected end of data":
            return head[: exc.start].decode("utf-8")
        raise _not_utf8(path, head.count(b"\n", 0, exc.start) + 1, head, exc, what) from None


def lines_of(text: str) -> list[str]:
    r"""Splits text into lines at ``\n`` only (``\r\n`` ends are trimmed to the line).

    Unlike :meth:`str.splitlines`, a raw U+2028, U+2029, U+0085, form feed or vertical tab
    inside a line does not split it: the corpus formats end records at ``\n``.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def ensure_not_empty(path: Path, what: str = "text") -> None:
    """Raises the :func:`read_text` error for an empty (or whitespace-only) file."""
    if path.stat().st_size < 65536 and not path.read_bytes().strip():
        raise CorpusError(path, None, f"the file is empty; expected UTF-8 {what}")


def iter_csv(
    path: Path, required: Sequence[str], text: str | None = None
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yields ``(line, row)`` for every data row of a CSV file with a header.

    Blank lines are skipped. ``line`` is the physical line where the row starts (the header is
    line 1).

    Args:
        path: The file.
        required: Columns that must be in the header.
        text: The file's text when already read.

    Raises:
        CorpusError: Missing columns, a row with the wrong number of fields, broken quoting.
    """
    if text is None:
        text = read_text(path, "CSV")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except csv.Error as exc:
        raise CorpusError(path, 1, f"bad CSV header: {exc}") from None
    except StopIteration:  # pragma: no cover - read_text refuses empty files
        raise CorpusError(path, None, "the file is empty; expected CSV") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise CorpusError(
            path,
            1,
            f"missing column(s) {', '.join(repr(c) for c in missing)} in the header; expected "
            f"columns {list(required)}, found {header}",
        )
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CorpusError(path, start, f"bad CSV row: {exc}") from None
        if row and any(field.strip() for field in row):
            if len(row) != len(header):
                raise CorpusError(
                    path,
                    start,
                    f"expected {len(header)} fields (columns {header}), found {len(row)}; is "
                    f"the file truncated or badly quoted?",
                )
            yield start, dict(zip(header, row, strict=True))
        start = reader.line_num + 1


MAX_LINE_BYTES = 256 * 2**20
"""The longest JSON Lines line :func:`iter_jsonl` reads (256 MiB): a longer one is a
:class:`CorpusError`, so a corrupt or hostile file cannot make a loader hold several copies of
one huge line in memory."""

_CHUNK = 2**16


def _decode_line(
    path: Path, number: int, raw: bytes | str, offset: int = 0
) -> dict[str, Any] | None:
    """The JSON object on one line, ``None`` for a blank line.

    Raises:
        CorpusError: Invalid UTF-8, invalid or too deeply nested JSON, or not an object.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(path, number, raw, exc, "JSON Lines", offset) from None
    else:
        text = raw
    if not text.strip():
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorpusError(
            path,
            number,
            f"invalid JSON ({exc.msg}: column {exc.colno}); expected one JSON object per "
            f"line (is the line truncated?)",
        ) from None
    except RecursionError:
        raise CorpusError(path, number, _TOO_DEEP) from None
    if not isinstance(record, dict):
        raise CorpusError(path, number, f"expected a JSON object, found {type(record).__name__}")
    return record


def iter_jsonl(
    path: Path, text: str | None = None, max_line_bytes: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    r"""Yields ``(line, object)`` for every non-blank line of a JSON Lines file.

    Lines end at ``\n`` only (``\r\n`` works too): a raw U+2028 or U+0085 inside a JSON
    string is valid and stays in the line. The file is read one line at a time, and a line
    longer than ``max_line_bytes`` is refused before it is read whole.

    Args:
        path: The file.
        text: The file's text when already read (then it is split in memory).
        max_line_bytes: The longest line accepted; default :data:`MAX_LINE_BYTES`.

    Raises:
        CorpusError: The file is empty, not UTF-8, or a line is too long, not valid JSON, or
            not a JSON object.
    """
    limit = MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
    if text is not None:
        if text.startswith("\ufeff"):
            text = text[1:]
        found = False
        for number, line in enumerate(lines_of(text), start=1):
            if len(line) > limit:  # characters: at most the byte length
                raise CorpusError(path, number, _too_long(limit))
            record = _decode_line(path, number, line)
            if record is not None:
                found = True
                yield number, record
        if not found:
            raise CorpusError(path, None, "the file is empty; expected UTF-8 JSON Lines")
        return
    found = False
    with path.open("rb") as handle:
        offset = _check_head(path, handle.read(4100), "JSON Lines")
        handle.seek(offset)
        number = 0
        while True:
            raw = handle.readline(limit + 2)  # the line, its "\r\n" and no more
            if not raw:
                break
            number += 1
            data = raw[:-1] if raw.endswith(b"\n") else raw
            data = data[:-1] if data.endswith(b"\r") else data
            if len(data) > limit:
                raise CorpusError(path, number, _too_long(limit))
            record = _decode_line(path, number, data, offset)
            offset += len(raw)
            if record is not None:
                found = True
                yield number, record
    if not found:
        raise CorpusError(path, None, "the file is empty; expected UTF-8 JSON Lines")


def _too_long(limit: int) -> str:
    return (
        f"the line is longer than {limit:,} bytes, the most a JSON Lines line may hold "
        f"(dialogue_gym.data._io.MAX_LINE_BYTES); a record is one dialogue, so the file is "
        f"corrupt or not JSON Lines"
    )


_TOO_DEEP = (
    "invalid JSON: values are nested too deeply (more levels than Python's recursion limit); "
    "a dialogue record is a few levels deep, so the file is corrupt"
)


_WS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def iter_json_container(
    path: Path, text: str | None = None, expect: str = "any"
) -> Iterator[tuple[int, str | int, Any]]:
    """Yields ``(line, key, value)`` for every element of a top-level JSON list or object.

    Elements are decoded one at a time, so each one's starting line is known (``key`` is the
    list index or the object key).

    Args:
        path: The file.
        text: The file's text when already read.
        expect: ``"list"``, ``"object"`` or ``"any"``.

    Raises:
        CorpusError: Invalid or truncated JSON, or the wrong top-level type.
    """
    if text is None:
        text = read_text(path, "JSON")
    decoder = json.JSONDecoder()
    # The line of a position is counted from the last position asked about, not from the
    # file's start: the walk moves forward, so it counts every newline about once.
    counted = [0, 1]  # a position and its line

    def line_at(pos: int) -> int:
        last, line = counted
        if pos >= last:
            line += text.count("\n", last, pos)
        else:
            line -= text.count("\n", pos, last)
        counted[:] = [pos, line]
        return line

    def fail(pos: int, reason: str) -> CorpusError:
        return CorpusError(path, line_at(pos), reason)

    def decode(pos: int) -> tuple[Any, int]:
        try:
            return decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise CorpusError(
                path,
                exc.lineno,
                f"invalid JSON ({exc.msg}: column {exc.colno}); is the file truncated?",
            ) from None
        except RecursionError:
            raise CorpusError(path, line_at(pos), _TOO_DEEP) from None

    pos = _skip_ws(text, 0)
    opener = text[pos] if pos < len(text) else ""
    kinds = {"[": "list", "{": "object"}
    if opener not in kinds or (expect != "any" and kinds[opener] != expect):
        wanted = {"list": "a JSON list", "object": "a JSON object"}.get(
            expect, "a JSON list or object"
        )
        raise fail(pos, f"expected {wanted} at the top level, found {text[pos : pos + 20]!r}")
    closer = "]" if opener == "[" else "}"
    pos = _skip_ws(text, pos + 1)
    index = 0
    if pos < len(text) and text[pos] == closer:
        return
    while True:
        if pos >= len(text):
            raise fail(pos, f"unexpected end of file: the JSON {kinds[opener]} is truncated")
        start = pos
        key: str | int
        if opener == "{":
            if text[pos] != '"':
                raise fail(pos, "invalid JSON: expected a string key")
            key, pos = decode(pos)
            pos = _skip_ws(text, pos)
            if pos >= len(text) or text[pos] != ":":
                raise fail(pos, "invalid JSON: expected ':' (is the file truncated?)")
            pos = _skip_ws(text, pos + 1)
            if pos >= len(text):
                raise fail(pos, "unexpected end of file: the JSON object is truncated")
        else:
            key = index
        value, pos = decode(pos)
        yield line_at(start), key, value
        index += 1
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            raise fail(pos, f"unexpected end of file: the JSON {kinds[opener]} is truncated")
        if text[pos] == closer:
            pos = _skip_ws(text, pos + 1)
            if pos < len(text):
                raise fail(pos, "extra data after the end of the JSON document")
            return
        if text[pos] != ",":
            raise fail(pos, f"invalid JSON: expected ',' or {closer!r}")
        pos = _skip_ws(text, pos + 1)


# -- field access --------------------------------------------------------------------------------


def require(record: Mapping[str, Any], key: str, path: Path, line: int | None, what: str) -> Any:
    """``record[key]``, or a :class:`CorpusError` naming the missing key."""
    if not isinstance(record, Mapping):
        raise CorpusError(
            path, line, f"{what}: expected a JSON object, found {type(record).__name__}"
        )
    if key not in record:
        raise CorpusError(
            path, line, f"{what}: missing key {key!r} (found keys {sorted(map(str, record))})"
        )
    return record[key]


def as_str(value: Any, path: Path, line: int | None, what: str) -> str:
    """The value as a string (``None`` gives ``""``); a :class:`CorpusError` otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CorpusError(path, line, f"{what}: expected a string, found {value!r}")
    return value


def as_float(value: Any, path: Path, line: int | None, what: str) -> float | None:
    """A number from a CSV cell or JSON value; empty, ``NA`` and ``None`` give ``None``."""
    if value is None or isinstance(value, bool):
        if value is None:
            return None
        raise CorpusError(path, line, f"{what}: expected a number, found {value!r}")
    if isinstance(value, int | float):
        result = float(value)
    else:
        text = str(value).strip()
        if text in ("", "NA", "N/A", "nan", "NaN", "None", "null"):
            return None
        try:
            result = float(text)
        except ValueError:
            raise CorpusError(path, line, f"{what}: expected a number, found {value!r}") from None
    return None if math.isnan(result) else result


def as_int(value: Any, path: Path, line: int | None, what: str) -> int:
    """A whole number from a CSV cell or JSON value (``"3"``, ``3``, ``3.0``)."""
    try:
        number = as_float(value, path, line, what)
    except CorpusError:
        number = None
    if number is None or not number.is_integer():
        raise CorpusError(path, line, f"{what}: expected a whole number, found {value!r}")
    return int(number)


def pick_format(
    path: Path,
    format: str | None,
    *,
    corpus: str,
    formats: Sequence[str],
    format_of: Callable[[Path], str],
    detect: Callable[[Path], Mapping[str, Any]],
    expected: str,
) -> str:
    """The format to load ``path`` with: the given one, a file's own, or a folder's first found.

    Args:
        path: A corpus file or folder.
        format: The requested format, or ``None``.
        corpus: The corpus's display name, for messages.
        formats: The corpus's formats in preference order.
        format_of: Detects a single file's format.
        detect: Lists the formats found in a folder.
        expected: The file names to mention when a folder holds none.

    Raises:
        ValueError: An unknown format.
        FileNotFoundError: No such path, or a folder without any of the corpus's files.
    """
    if format is not None and format not in formats:
        raise ValueError(f"unknown {corpus} format {format!r}; expected one of {tuple(formats)}")
    if path.is_file():
        return format or format_of(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if format is None:
        found = detect(path)
        format = next((f for f in formats if f in found), None)
        if format is None:
            raise FileNotFoundError(f"{path}: no {corpus} files found ({expected})")
    return format
