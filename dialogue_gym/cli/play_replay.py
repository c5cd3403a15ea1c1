"""``dialogue-gym play ID --seed S --transcript FILE``: an episode replayed from a file.

The system seat's turns live in ``FILE``; every call resets the env with the seed, replays them
in order (the env is deterministic per seed, so the same file gives the same user replies) and
prints the conversation so far, then the user's latest reply marked as what to answer next,
or, once the episode is over, its outcome and the hidden state (as interactive play reveals
it). A person or an LLM driving a shell can so play an episode one turn per call, stop and
resume. Nothing hidden is printed before the episode ends.

``FILE`` formats, chosen by its name:

* any name but the two below (e.g. ``game.txt``), the primary format: plain UTF-8 text, one
  system turn per line; blank lines and lines whose first non-blank character is ``#`` are
  skipped, and the whitespace around a turn is dropped;
* ``*.jsonl``: one JSON string per line (blank lines skipped), so a turn may hold line breaks;
* ``*.json``: one JSON list of strings.

A ``FILE`` that does not exist is an empty transcript: the episode has not started.
``--append TEXT`` adds ``TEXT`` as the next system turn (creating ``FILE``) once the replay
with it succeeds, so an episode can be played with one command per turn; in the plain format
the line breaks of ``TEXT`` become spaces (with a note on stderr) and a ``TEXT`` starting with
``#`` is refused. Problems with ``FILE`` (malformed JSON, a turn after the end of the episode,
an unreadable or unwritable file) raise :class:`ValueError`, a usage error of the command line.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from dialogue_gym.cli.play import HIDDEN_KEPT, initial_state, reveal

__all__ = ["Transcript", "prepare_append", "read_transcript", "replay"]

PLAIN, JSONL, JSON = "text", "jsonl", "json"
"""The transcript formats: plain text (one turn a line), JSON lines, a JSON list."""

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


@dataclass(frozen=True)
class Transcript:
    """The system turns of an episode, read from (and written back to) a file.

    Attributes:
        path: The file.
        format: ``"text"``, ``"jsonl"`` or ``"json"`` (from the file's name).
        turns: The system turns in order.
        where: Where each turn sits in the file, for messages (``"line 3"``, ``"item 3"``).
        exists: Whether the file exists (a missing file is an empty transcript).
        appended: Whether the last turn is new (``--append``): written once it replays.
        note: What was changed in the new turn to fit the format, to tell the player.
    """

    path: Path
    format: str
    turns: tuple[str, ...] = ()
    where: tuple[str, ...] = ()
    exists: bool = False
    appended: bool = False
    note: str | None = None


def transcript_format(path: Path) -> str:
    """The format of a transcript file, from its name: ``.jsonl``, ``.json``, else plain text."""
    suffix = path.suffix.lower()
    return JSONL if suffix == ".jsonl" else JSON if suffix == ".json" else PLAIN


def parse_transcript(text: str, fmt: str, name: str) -> tuple[list[str], list[str]]:
    """The system turns of a transcript's text and where each one is.

    Args:
        text: The file's content.
        fmt: Its format (see :func:`transcript_format`).
        name: The file's name, for messages.

    Returns:
        The turns and, for each, ``"line N"`` (plain text, JSON lines) or ``"item N"`` (JSON).

    Raises:
        ValueError: Malformed JSON, a JSON value that is not a string, or an empty JSON turn.
    """
    turns: list[str] = []
    where: list[str] = []
    if fmt == PLAIN:
        for number, line in enumerate(text.splitlines(), start=1):
            turn = line.strip()
            if turn and not turn.startswith("#"):
                turns.append(turn)
                where.append(f"line {number}")
        return turns, where
    if fmt == JSONL:
        values = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                values.append((json.loads(line), f"line {number}"))
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{name} line {number} is not JSON ({exc.msg}); a .jsonl transcript holds "
                    'one JSON string per line, e.g. "Hello!"'
                ) from None
    else:
        if not text.strip():
            return turns, where
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{name} is not valid JSON ({exc.msg}: line {exc.lineno} column {exc.colno}); "
                'a .json transcript holds one list of strings, e.g. ["Hello!", "Why?"]'
            ) from None
        if not isinstance(data, list):
            raise ValueError(
                f"{name} holds a JSON {_json_type(data)}; a .json transcript holds one list of "
                'strings, e.g. ["Hello!", "Why?"]'
            )
        values = [(value, f"item {number}") for number, value in enumerate(data, start=1)]
    for value, place in values:
        if not isinstance(value, str):
            raise ValueError(
                f"{name} {place} is a JSON {_json_type(value)}; each system turn must be a "
                "JSON string"
            )
        if not value.strip():
            raise ValueError(f"{name} {place} is an empty system turn")
        turns.append(value)
        where.append(place)
    return turns, where


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, (int, float)) else "value")


def read_transcript(path: str | Path, append: str | None = None) -> Transcript:
    """Reads a transcript file; a file that does not exist is an empty transcript.

    Args:
        path: The file.
        append: A new system turn to add after the file's (see :func:`prepare_append`); it
            is written to the file by :func:`replay`, once the replay with it succeeds.

    Raises:
        ValueError: The file is malformed (see :func:`parse_transcript`), not UTF-8, or
            cannot be read (a folder, no permission), or ``append`` is refused.
    """
    path = Path(path)
    fmt = transcript_format(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        text = None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"cannot read the transcript {path}: {exc.strerror or exc}") from None
    if text is None:
        transcript = Transcript(path, fmt)
    else:
        turns, where = parse_transcript(text, fmt, str(path))
        transcript = Transcript(path, fmt, tuple(turns), tuple(where), exists=True)
    return transcript if append is None else prepare_append(transcript, append)


def prepare_append(transcript: Transcript, text: str) -> Transcript:
    """The transcript with ``text`` as its next system turn (not yet written).

    In the plain format a turn is one line: line breaks become spaces (the transcript's
    ``note`` says so), and a turn starting with ``#`` (a comment there) is refused.

    Returns:
        The longer transcript, ``appended`` set.

    Raises:
        ValueError: An empty turn, or a ``#`` turn in the plain format.
    """
    turn = text.strip()
    note = None
    if not turn:
        raise ValueError("--append needs a non-empty system turn")
    if transcript.format == PLAIN:
        one_line = _LINE_BREAKS.sub(" ", turn)
        if one_line != turn:
            note = (
                f"the line breaks of --append were replaced by spaces: a turn is one line of "
                f"{transcript.path.name} (a .jsonl transcript keeps them)"
            )
            turn = one_line
        if turn.startswith("#"):
            raise ValueError(
                f"--append text starts with '#', which {transcript.path.name} would read as a "
                "comment line; reword the turn or use a .jsonl transcript"
            )
    place = (
        f"item {len(transcript.turns) + 1}"
        if transcript.format == JSON
        else f"line {_line_count(transcript) + 1}"
    )
    return replace(
        transcript,
        turns=(*transcript.turns, turn),
        where=(*transcript.where, place),
        appended=True,
        note=note,
    )


def _line_count(transcript: Transcript) -> int:
    if not transcript.exists:
        return 0
    try:
        return len(transcript.path.read_text(encoding="utf-8-sig").splitlines())
    except OSError:
        return len(transcript.turns)


def write_last_turn(transcript: Transcript) -> None:
    """Writes the last turn of ``transcript`` to its file (appended; a JSON list rewritten).

    Raises:
        ValueError: The file cannot be written.
    """
    path, turn = transcript.path, transcript.turns[-1]
    try:
        if transcript.format == JSON:
            content = json.dumps(list(transcript.turns), ensure_ascii=False, indent=2) + "\n"
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as file:
                    file.write(content)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return
        line = json.dumps(turn, ensure_ascii=False) if transcript.format == JSONL else turn
        with path.open("a+b") as file:
            file.seek(0, os.SEEK_END)
            if file.tell():
                file.seek(-1, os.SEEK_END)
                if file.read(1) not in (b"\n", b"\r"):
                    line = "\n" + line  # the file's last line had no line break
            file.write((line + "\n").encode("utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot write the transcript {path}: {exc.strerror or exc}") from None


def _say(prefix: str, text: str, out: TextIO) -> None:
    """Prints ``prefix`` and ``text``, continuation lines indented under the text."""
    lines = text.splitlines() or [""]
    print(prefix + lines[0], file=out)
    for line in lines[1:]:
        print((" " * len(prefix) + line).rstrip(), file=out)


def _brief(observation: Mapping[str, Any], out: TextIO) -> None:
    """Prints what the system seat is told: the goal, and a ``brief`` when there is one."""
    _say("Goal: ", str(observation.get("goal", "")), out)
    brief = observation.get("brief")
    if not brief:
        return
    if isinstance(brief, Mapping):
        brief = "\n".join(f"{key}: {value}" for key, value in brief.items())
    elif isinstance(brief, (list, tuple)):
        brief = "\n".join(f"- {fact}" for fact in brief)
    _say("Brief: ", str(brief), out)


@dataclass
class _Replayed:
    """What replaying a transcript gave: the system seat's view, then the hidden side."""

    observation: Mapping[str, Any]
    opening: list[tuple[str, str]]
    exchanges: list[tuple[str, str, bool]]  # (system, user, cut by the env)
    steps: list[dict[str, Any]]
    initial: Mapping[str, Any] | None
    episode: Mapping[str, Any] | None


def _play_back(env: Any, seed: int, transcript: Transcript, T: int) -> _Replayed:
    """Resets ``env`` with ``seed`` and steps it with every turn of ``transcript``.

    Raises:
        ValueError: A turn after the end of the episode.
    """
    base = env.unwrapped
    observations, _ = env.reset(seed=seed)
    played = _Replayed(
        observation=observations["system"],
        opening=[(str(role), str(text)) for role, text in base.history],
        exchanges=[],
        steps=[],
        initial=initial_state(base),
        episode=None,
    )
    for number, turn in enumerate(transcript.turns):
        if played.episode is not None:
            raise ValueError(_too_long(transcript, number, played.episode, T))
        _, _, terminated, truncated, infos = env.step({"system": turn})
        info = infos["system"]
        played.steps.append(info)
        cut = "action_truncated" in info.get("fallbacks", ())
        played.exchanges.append((base.history[-2][1], base.history[-1][1], cut))
        if terminated["system"] or truncated["system"]:
            played.episode = info["episode"]
    return played


def replay(
    env: Any,
    env_id: str,
    seed: int,
    transcript: Transcript,
    out: TextIO,
    *,
    again: Sequence[str] = (),
    show_hidden: bool = True,
) -> int:
    """Replays the system turns of ``transcript`` in ``env`` and prints where the episode is.

    Before the end: the conversation (the goal and brief too while it is empty), then the
    user's latest reply as what to answer next. At the end: the conversation, the outcome and
    the hidden state (:func:`dialogue_gym.cli.play.reveal`).

    Args:
        env: The env, made with ``privileged=True`` (for the reveal at the end); closed here.
        env_id: The id it was made from (shown when the env has no spec).
        seed: The episode seed.
        transcript: The system turns so far (from :func:`read_transcript`); a new last turn
            (``appended``) is written to the file once the replay with it succeeds.
        out: Where to print.
        again: The command that replays this transcript (without ``--append``), shown as the
            way to play the next turn.
        show_hidden: Reveal the hidden state at the end (off for blind players).

    Returns:
        The exit status (0), whether the episode is over or waits for the next turn.

    Raises:
        ValueError: A turn after the end of the episode (nothing is printed or written), or
            a file that cannot be written.
    """
    if transcript.note:
        print(f"dialogue-gym play: note: {transcript.note}", file=sys.stderr)
    try:
        base = env.unwrapped
        card = base.card
        T = int(getattr(base, "max_exchanges", card.max_exchanges))
        played = _play_back(env, seed, transcript, T)
        if transcript.appended:
            write_last_turn(transcript)
        env_id = env.spec.id if getattr(env, "spec", None) else env_id
        count = len(transcript.turns)
        turns = f"{count} system turn{'' if count == 1 else 's'}"
        new = "" if transcript.exists or transcript.appended else ", no such file yet"
        print(f"{env_id}  (seed {seed})  transcript {transcript.path}: {turns}{new}", file=out)
        print(f"You are the {card.system_role}; the user is a {card.user_role}.", file=out)
        if played.exchanges:  # the brief was shown at the start: keep later calls short
            brief = "the brief: rerun with --transcript /dev/null"
            print(f"Up to {T} exchanges ({brief}).\n", file=out)
        else:
            _brief(played.observation, out)
            print(f"Up to {T} exchanges.\n", file=out)
        for role, text in played.opening:
            _say(f"(opening) {role}> ", text, out)
        for exchange, (system, user, cut) in enumerate(played.exchanges, start=1):
            _say(f"[{exchange}/{T}] you> ", system, out)
            if cut:
                print(f"      (cut by the env to {len(system)} characters)", file=out)
            _say(f"[{exchange}/{T}] user> ", user, out)
        if played.episode is None:
            _next_turn(played, transcript, T, again, out)
            return 0
        episode = played.episode
        outcome = "success" if episode["success"] else "no success"
        why = "" if episode["success"] else f" (the budget of {T} exchanges is spent)"
        print(f"\nEpisode over after {episode['turns']} exchanges: {outcome}{why}.", file=out)
        if show_hidden:
            reveal(base, played.initial, played.steps, episode, out)
        else:
            print(HIDDEN_KEPT, file=out)
        return 0
    finally:
        env.close()


def _next_turn(
    played: _Replayed, transcript: Transcript, T: int, again: Sequence[str], out: TextIO
) -> None:
    """Prints what the system seat answers next and how to play it."""
    exchange = len(played.exchanges) + 1
    last = " (the last)" if exchange == T else ""
    print(f"\n===== your turn: exchange {exchange}/{T}{last} =====", file=out)
    if played.exchanges:
        _say("The user's latest reply, to answer: ", played.exchanges[-1][1], out)
    elif played.opening and played.opening[-1][0] != "system":
        _say("The user opened with, to answer: ", played.opening[-1][1], out)
    else:
        print("The user has not spoken yet: open the conversation.", file=out)
    where = {PLAIN: "one line", JSONL: "one JSON string line", JSON: "one more list item"}
    print(
        f"Play it: add your turn as {where[transcript.format]} to {transcript.path} and run "
        "this again, or run:",
        file=out,
    )
    print(f"  {' '.join(again) or 'dialogue-gym play ...'} --append 'YOUR TURN'", file=out)


def _too_long(transcript: Transcript, number: int, episode: Mapping[str, Any], T: int) -> str:
    """The error for system turn ``number`` (0-based) after the end of the episode."""
    ended = (
        f"success at exchange {episode['success_turn']}"
        if episode["success"]
        else f"the budget of {T} exchanges is spent"
    )
    appending = transcript.appended
    if appending and number == len(transcript.turns) - 1:
        return (
            f"the episode of {transcript.path} is over ({ended}): nothing appended; run without "
            "--append to see its outcome"
        )
    extra = len(transcript.turns) - number - int(appending)
    nothing = ": nothing appended" if appending else ""
    return (
        f"{transcript.path} has {extra} system turn(s) after the end of the episode ({ended}), "
        f"from {transcript.where[number]}; delete them to see the outcome{nothing}"
    )
