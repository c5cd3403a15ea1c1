"""ESConv, Emotional Support Conversation (Liu et al., ACL 2021): loaders for three formats.

Formats:

- ``hf``: the Hugging Face ``thu-coai/esconv`` JSON Lines files ``train.jsonl``,
  ``valid.jsonl`` (or ``validation.jsonl``) and ``test.jsonl``, one conversation per line
  (910/195/195). Turns are ``{"text", "speaker": "usr" | "sys", "strategy"}``.
- ``ppdpp``: PPDPP's ``esc-train.txt``, ``esc-valid.txt``, ``esc-test.txt``: JSON Lines with
  ``emotion_type``, ``problem_type``, ``situation`` and ``dialog`` in the HF turn format
  (1,040/130/130).
- ``original``: the original repository's schema (``ESConv.json``, ``FailedESConv.json``): one
  JSON list; turns are ``{"speaker", "content", "annotation": {"strategy" | "feedback"}}`` with
  speakers ``seeker``/``supporter`` (``speaker``/``listener`` in ``FailedESConv.json``). It has
  no split: dialogues get split ``"unsplit"``; those from ``FailedESConv.json`` (196
  conversations dropped during collection) are marked ``situation["failed"] = True``.

Every utterance is one :class:`~dialogue_gym.data.Turn` (consecutive utterances of one speaker
are *not* merged; the corpus keeps them apart). Roles: ``sys``/``supporter``/``listener`` →
system, ``usr``/``seeker``/``speaker`` → user. The act of a system turn is its support strategy
as written in the file (HF/PPDPP: ``Question``, ``Restatement or Paraphrasing``, ``Reflection of
feelings``, ``Self-disclosure``, ``Affirmation and Reassurance``, ``Providing Suggestions``,
``Information``, ``Others``; the original schema has a few variants such as ``Questions``). The
seeker's per-turn ``feedback`` scores of the original schema are not kept.

Situation: ``emotion_type``, ``problem_type``, ``situation`` (the seeker's own description)
and, where the file has them, ``experience_type``, ``survey_score`` and the free-text survey
answers ``seeker_question1/2``, ``supporter_question1/2``. Profile (the seeker):
``initial_emotion_intensity`` (1–5, where the survey has it; else the profile is empty).

Ids: the files carry none, so a dialogue's id is ``<format>-<split>-<index>`` (index in file
order, 4 digits; the file stem instead of the split where the name names none), e.g.
``hf-train-0000``; ``original`` uses the file stem, e.g.
``FailedESConv-0007``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dialogue_gym.data._io import (
    as_str,
    canonical_split,
    iter_json_container,
    iter_jsonl,
    pick_format,
    require,
    walk,
)
from dialogue_gym.data.errors import CorpusError
from dialogue_gym.data.fetch import Download, Release
from dialogue_gym.data.records import Dialogue, Turn

__all__ = ["FORMATS", "detect", "load", "load_hf", "load_original", "load_ppdpp"]


TITLE = "ESConv"
"""The corpus's title."""

FOLDER_NAMES = ("esconv", "emotional-support-conversation", "emotional_support_conversation")
"""The accepted names of its folder under a data root (compared case-insensitively); the first
is canonical."""

_ESCONV = "https://raw.githubusercontent.com/thu-coai/Emotional-Support-Conversation/main"

RELEASE = Release(
    downloads=(
        Download(f"{_ESCONV}/ESConv.json", "esconv/ESConv.json"),
        Download(f"{_ESCONV}/FailedESConv.json", "esconv/FailedESConv.json"),
    ),
    licence="CC BY-NC 4.0 (non-commercial, academic research use).",
    homepage="https://github.com/thu-coai/Emotional-Support-Conversation",
)
"""The official release (``dialogue-gym data fetch esconv``)."""

CORPUS = "esconv"
FORMATS = ("hf", "ppdpp", "original")
"""The formats, in the order :func:`load` prefers them."""

SPLIT_ORDER = ("train", "valid", "test")

_ROLES = {
    "sys": "system",
    "supporter": "system",
    "listener": "system",
    "usr": "user",
    "seeker": "user",
    "speaker": "user",
}
_SITUATION_KEYS = ("emotion_type", "problem_type", "situation")
_OPTIONAL_KEYS = (
    "experience_type",
    "survey_score",
    "seeker_question1",
    "seeker_question2",
    "supporter_question1",
    "supporter_question2",
)


def _role(value: Any, path: Path, line: int, what: str) -> str:
    role = _ROLES.get(str(value).strip().lower()) if isinstance(value, str) else None
    if role is None:
        raise CorpusError(
            path, line, f"{what}: unknown speaker {value!r}; expected one of {sorted(_ROLES)}"
        )
    return role


def _situation(record: dict[str, Any], path: Path, line: int, what: str) -> dict[str, Any]:
    situation = {
        key: as_str(require(record, key, path, line, what), path, line, f"{what}, {key!r}")
        for key in _SITUATION_KEYS
    }
    for key in _OPTIONAL_KEYS:
        if key in record:
            situation[key] = record[key]
    return situation


def _profile(record: dict[str, Any]) -> dict[str, Any]:
    score = record.get("survey_score")
    seeker = score.get("seeker") if isinstance(score, dict) else None
    value = seeker.get("initial_emotion_intensity") if isinstance(seeker, dict) else None
    try:
        return {} if value in (None, "") else {"initial_emotion_intensity": int(value)}
    except (TypeError, ValueError):
        return {"initial_emotion_intensity": value}


def _hf_turns(record: dict[str, Any], path: Path, line: int, what: str) -> tuple[Turn, ...]:
    dialog = require(record, "dialog", path, line, what)
    if not isinstance(dialog, list):
        raise CorpusError(path, line, f"{what}: 'dialog' must be a list of turns")
    turns = []
    for i, item in enumerate(dialog):
        where = f"{what}, turn {i}"
        role = _role(require(item, "speaker", path, line, where), path, line, where)
        text = as_str(require(item, "text", path, line, where), path, line, f"{where}, 'text'")
        strategy = item.get("strategy")
        act = strategy.strip() or None if isinstance(strategy, str) else None
        turns.append(Turn(role, text.strip(), act))
    return tuple(turns)


def _split_of_file(file: Path) -> str:
    """The split named by the file (``esc-valid.txt`` → ``valid``), else ``"unknown"``."""
    stem = file.stem.lower()
    for prefix in ("esc-", "esconv-", "esconv_"):
        stem = stem.removeprefix(prefix)
    return canonical_split(stem) or "unknown"


def _split_rank(split: str) -> int:
    return SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER)


def _jsonl_files(path: Path, pattern: Callable[[Path], bool], what: str) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder ({what})")
    files = [p for p in walk(path) if pattern(p)]
    if not files:
        raise FileNotFoundError(f"{path}: no {what} files found inside")
    return sorted(files, key=lambda p: (_split_rank(_split_of_file(p)), str(p)))


def _load_jsonl(files: list[Path], fmt: str) -> list[Dialogue]:
    dialogues = []
    for file in files:
        split = _split_of_file(file)
        for index, (line, record) in enumerate(iter_jsonl(file)):
            what = f"conversation {index}"
            dialogues.append(
                Dialogue(
                    corpus=CORPUS,
                    id=f"{fmt}-{split if split != 'unknown' else file.stem}-{index:04d}",
                    split=split,
                    turns=_hf_turns(record, file, line, what),
                    profile=_profile(record),
                    situation=_situation(record, file, line, what),
                )
            )
    return dialogues


def _is_hf(p: Path) -> bool:
    return p.suffix == ".jsonl" and canonical_split(p.stem) is not None


def _is_ppdpp(p: Path) -> bool:
    return (
        p.suffix == ".txt" and p.name.startswith("esc-") and canonical_split(p.stem[4:]) is not None
    )


def _is_original(p: Path) -> bool:
    return p.name.lower() in ("esconv.json", "failedesconv.json")


def load_hf(path: str | Path) -> list[Dialogue]:
    """Loads the Hugging Face JSON Lines format.

    Args:
        path: One split file (``train.jsonl`` …) or a folder holding them (searched
            recursively); splits come from the file names.

    Returns:
        The dialogues: train, then valid, then test, each in file order.
    """
    return _load_jsonl(_jsonl_files(Path(path), _is_hf, "ESConv HF JSON Lines"), "hf")


def load_ppdpp(path: str | Path) -> list[Dialogue]:
    """Loads PPDPP's ``esc-{train,valid,test}.txt`` (JSON Lines).

    Args:
        path: One split file or a folder holding them (searched recursively).

    Returns:
        The dialogues: train, then valid, then test, each in file order.
    """
    return _load_jsonl(_jsonl_files(Path(path), _is_ppdpp, "PPDPP esc-*.txt"), "ppdpp")


def load_original(path: str | Path) -> list[Dialogue]:
    """Loads the original ESConv schema (``ESConv.json`` and/or ``FailedESConv.json``).

    Args:
        path: One such file or a folder holding them (searched recursively).

    Returns:
        The dialogues, file by file (``ESConv.json`` first), in file order.
    """
    path = Path(path)
    if path.is_file():
        files = [path]
    else:
        files = [p for p in walk(path) if _is_original(p)] if path.is_dir() else []
        files.sort(key=lambda p: (p.name.lower().startswith("failed"), str(p)))
        if not files:
            raise FileNotFoundError(f"{path}: no ESConv.json or FailedESConv.json found")
    dialogues = []
    for file in files:
        failed = file.name.lower().startswith("failed")
        for line, index, record in iter_json_container(file, expect="list"):
            what = f"conversation {index}"
            dialog = require(record, "dialog", file, line, what)
            if not isinstance(dialog, list):
                raise CorpusError(file, line, f"{what}: 'dialog' must be a list of turns")
            turns = []
            for i, item in enumerate(dialog):
                where = f"{what}, turn {i}"
                role = _role(require(item, "speaker", file, line, where), file, line, where)
                text = as_str(require(item, "content", file, line, where), file, line, where)
                annotation = item.get("annotation") or {}
                strategy = annotation.get("strategy") if isinstance(annotation, dict) else None
                act = strategy.strip() or None if isinstance(strategy, str) else None
                turns.append(Turn(role, text.strip(), act if role == "system" else None))
            situation = _situation(record, file, line, what)
            if failed:
                situation["failed"] = True
            dialogues.append(
                Dialogue(
                    corpus=CORPUS,
                    id=f"{file.stem}-{index:04d}",
                    split="unsplit",
                    turns=tuple(turns),
                    profile=_profile(record),
                    situation=situation,
                )
            )
    return dialogues


# -- detection and dispatch ------------------------------------------------------------------------


def detect(folder: str | Path) -> dict[str, list[Path]]:
    """The ESConv files under ``folder``, by format."""
    found: dict[str, list[Path]] = {}
    for p in walk(Path(folder)):
        for fmt, test in (("hf", _is_hf), ("ppdpp", _is_ppdpp), ("original", _is_original)):
            if test(p):
                found.setdefault(fmt, []).append(p)
    return found


def notes(folder: str | Path) -> list[str]:
    """Remarks on files under ``folder`` (none for ESConv)."""
    return []


LOADERS: dict[str, Callable[..., list[Dialogue]]] = {
    "hf": load_hf,
    "ppdpp": load_ppdpp,
    "original": load_original,
}


def format_of(file: Path) -> str:
    """The format of one ESConv file, from its name or, failing that, its first record."""
    if _is_ppdpp(file):
        return "ppdpp"
    if _is_original(file) or file.suffix == ".json":
        return "original"
    if _is_hf(file) or file.suffix in (".jsonl", ".txt"):
        return "hf"
    raise CorpusError(
        file,
        None,
        "not a recognised ESConv file; expected train/valid/test.jsonl, esc-*.txt or "
        "ESConv.json/FailedESConv.json",
    )


def load(path: str | Path, format: str | None = None) -> list[Dialogue]:
    """Loads ESConv from a file or a folder.

    Args:
        path: One ESConv file, or a folder (searched recursively).
        format: ``"hf"``, ``"ppdpp"`` or ``"original"``; default: the file's own format, or for
            a folder the first of :data:`FORMATS` found in it.

    Returns:
        The dialogues (see each format's loader for the order).
    """
    path = Path(path)
    format = pick_format(
        path,
        format,
        corpus="ESConv",
        formats=FORMATS,
        format_of=format_of,
        detect=detect,
        expected="train/valid/test.jsonl, esc-*.txt, ESConv.json",
    )
    if path.is_file():
        return LOADERS[format](path)
    return LOADERS[format](path)
