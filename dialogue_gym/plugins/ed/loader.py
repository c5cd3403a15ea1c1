"""EmpatheticDialogues (Rashkin et al., ACL 2019): loaders for its official and per-emotion formats.

Formats:

- ``official``: the release's ``empatheticdialogues/{train,valid,test}.csv`` with header
  ``conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags``. These files are
  *not* quoted CSV: commas inside text are written ``_comma_`` (restored to ``,`` here) and a
  row is split on bare commas, as ParlAI does; rows may carry extra trailing fields (test
  candidates), which are ignored. Utterances with odd ``utterance_idx`` are the speaker's (the
  user: the one who shares the emotion), even ones the listener's (the system). The split comes
  from the file name.
- ``intents``: the EmpatheticIntents copy, one CSV per emotion
  (``empatheticdialogues_annotated/<emotion>.csv``) with columns
  ``Dialog_ID,Type,Actor,Text,Label``: a ``situation`` row (the prompt) then ``utterance`` rows
  whose ``Actor`` is ``speaker`` or ``listener``. ``Label`` is the act of each utterance,
  **predicted by the EmpatheticIntents authors' BERT classifier** (not human): 8 listener
  intents (``questioning``, ``acknowledging``, ``agreeing``, ``consoling``, ``encouraging``,
  ``sympathizing``, ``suggesting``, ``wishing``), ``neutral``, or one of the 32 emotions.
- ``intents_unannotated``: the same without ``Label``
  (``empatheticdialogues_unannotated/<emotion>.csv``); turns have no act.

The per-emotion formats take their split from ``ed_official_splits.csv`` (columns
``conv_id,split,emotion,n_utterances,duplicate_of``), looked for in the given folder and up to
three folders above it (or passed as ``splits``). Without it every dialogue gets split
``"unknown"``. The 9 duplicate conversations (``"<conv_id> (1)"``, flagged in ``duplicate_of``)
are skipped, so 24,847 dialogues remain: train 19,532, valid 2,769, test 2,546.

Ids are ED's ``conv_id`` (``hit:4821_conv:9643``). Situation: ``emotion`` (ED ``context``, the
file name in the per-emotion formats) and ``prompt`` (the speaker's situation text); the
annotated format adds ``prompt_label``. Profile: ``speaker_id`` (the speaker's worker id,
official format only; the per-emotion files dropped it).

Order: official: train, valid, test, each in file order; per-emotion: emotion files by name,
each in file order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dialogue_gym.data._io import (
    as_int,
    canonical_split,
    ensure_not_empty,
    iter_csv,
    lines_of,
    pick_format,
    read_text,
    walk,
)
from dialogue_gym.data.errors import CorpusError
from dialogue_gym.data.fetch import Download, Release
from dialogue_gym.data.records import Dialogue, Turn

__all__ = [
    "FORMATS",
    "SPLITS_FILE",
    "detect",
    "load",
    "load_intents",
    "load_official",
    "read_splits",
]


TITLE = "EmpatheticDialogues"
"""The corpus's title."""

FOLDER_NAMES = ("empathetic_dialogues", "empatheticdialogues", "ed")
"""The accepted names of its folder under a data root (compared case-insensitively); the first
is canonical."""

_ED_DIR = FOLDER_NAMES[0]

RELEASE = Release(
    downloads=(
        Download(
            "https://dl.fbaipublicfiles.com/parlai/empatheticdialogues/empatheticdialogues.tar.gz",
            f"{_ED_DIR}/empatheticdialogues.tar.gz",
            members=tuple(
                (
                    f"empatheticdialogues/{split}.csv",
                    f"{_ED_DIR}/empatheticdialogues/{split}.csv",
                )
                for split in ("train", "valid", "test")
            ),
        ),
    ),
    licence="CC BY-NC 4.0 (non-commercial).",
    homepage="https://github.com/facebookresearch/EmpatheticDialogues",
)
"""The official release (``dialogue-gym data fetch ed``)."""

CORPUS = "ed"
FORMATS = ("official", "intents", "intents_unannotated")
"""The formats, in the order :func:`load` prefers them."""

SPLITS_FILE = "ed_official_splits.csv"
SPLIT_ORDER = ("train", "valid", "test")

OFFICIAL_COLUMNS = (
    "conv_id",
    "utterance_idx",
    "context",
    "prompt",
    "speaker_idx",
    "utterance",
    "selfeval",
    "tags",
)
_OFFICIAL_REQUIRED = OFFICIAL_COLUMNS[:6]
_INTENTS_COLUMNS = ("Dialog_ID", "Type", "Actor", "Text")
_SPLITS_COLUMNS = ("conv_id", "split")
_ACTORS = {"speaker": "user", "listener": "system"}
_DUPLICATE = re.compile(r"^(?P<base>.+) \(\d+\)$")


def _unescape(text: str) -> str:
    return text.replace("_comma_", ",").strip()


# -- format: official ------------------------------------------------------------------------------


def _official_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    text = read_text(path, "CSV (the official EmpatheticDialogues format)")
    lines = lines_of(text)
    header = [h.strip() for h in lines[0].split(",")]
    missing = [c for c in _OFFICIAL_REQUIRED if c not in header[: len(_OFFICIAL_REQUIRED)]]
    if missing or header[: len(_OFFICIAL_REQUIRED)] != list(_OFFICIAL_REQUIRED):
        raise CorpusError(
            path,
            1,
            f"expected the official header {','.join(OFFICIAL_COLUMNS)}, found {lines[0]!r}",
        )
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) < len(_OFFICIAL_REQUIRED):
            raise CorpusError(
                path,
                number,
                f"expected at least {len(_OFFICIAL_REQUIRED)} comma-separated fields "
                f"({','.join(_OFFICIAL_REQUIRED)}), found {len(fields)}; is the line truncated?",
            )
        yield number, fields


def _official_split(file: Path) -> str:
    """The split named by the file (``valid.csv`` → ``valid``), else ``"unknown"``."""
    return canonical_split(file.stem) or "unknown"


def _split_rank(split: str) -> int:
    return SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER)


def load_official(path: str | Path) -> list[Dialogue]:
    """Loads the official ``{train,valid,test}.csv`` format.

    Args:
        path: One split file or a folder holding them (searched recursively).

    Returns:
        The dialogues: train, then valid, then test, each in file order.
    """
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = [p for p in walk(path) if _is_official(p)]
        if not files:
            raise FileNotFoundError(f"{path}: no official ED train/valid/test.csv found inside")
        files.sort(key=lambda p: (_split_rank(_official_split(p)), str(p)))
    else:
        raise FileNotFoundError(f"{path}: no such file or folder")
    dialogues = []
    for file in files:
        split = _official_split(file)
        convs: dict[str, dict[str, Any]] = {}
        for line, fields in _official_rows(file):
            conv_id = fields[0].strip()
            if not conv_id:
                raise CorpusError(file, line, "conv_id is empty")
            index = as_int(fields[1], file, line, "utterance_idx")
            conv = convs.setdefault(
                conv_id,
                {
                    "turns": [],
                    "emotion": fields[2].strip(),
                    "prompt": _unescape(fields[3]),
                    "speaker_id": fields[4].strip(),
                    "selfeval": fields[6].strip() if len(fields) > 6 else "",
                },
            )
            role = "user" if index % 2 == 1 else "system"
            if index == 1:
                conv["speaker_id"] = fields[4].strip()
            conv["turns"].append(Turn(role, _unescape(fields[5])))
        for conv_id, conv in convs.items():
            situation = {"emotion": conv["emotion"], "prompt": conv["prompt"]}
            if conv["selfeval"]:
                situation["selfeval"] = conv["selfeval"]
            dialogues.append(
                Dialogue(
                    corpus=CORPUS,
                    id=conv_id,
                    split=split,
                    turns=tuple(conv["turns"]),
                    profile={"speaker_id": conv["speaker_id"]},
                    situation=situation,
                )
            )
    return dialogues


# -- format: intents -------------------------------------------------------------------------------


def read_splits(path: str | Path) -> tuple[dict[str, str], set[str]]:
    """Reads ``ed_official_splits.csv``.

    Returns:
        ``(conv_id → split, ids of duplicates to skip)``.
    """
    path = Path(path)
    splits: dict[str, str] = {}
    duplicates: set[str] = set()
    for line, row in iter_csv(path, _SPLITS_COLUMNS):
        split = canonical_split(row["split"])
        if split is None:
            raise CorpusError(
                path, line, f"unknown split {row['split']!r}; expected train, valid or test"
            )
        splits[row["conv_id"].strip()] = split
        if row.get("duplicate_of", "").strip():
            duplicates.add(row["conv_id"].strip())
    return splits, duplicates


def _find_splits(path: Path) -> Path | None:
    folder = path if path.is_dir() else path.parent
    for candidate in (folder, *list(folder.parents)[:3]):
        if (candidate / SPLITS_FILE).is_file():
            return candidate / SPLITS_FILE
    return None


def _header(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as handle:
            return [h.strip() for h in handle.readline(65536).split(",")]
    except OSError:
        return []


def _intents_kind(path: Path) -> str | None:
    """``"intents"``/``"intents_unannotated"`` for a per-emotion CSV, else ``None``."""
    if path.suffix.lower() != ".csv":
        return None
    header = _header(path)
    if header[: len(_INTENTS_COLUMNS)] != list(_INTENTS_COLUMNS):
        return None
    return "intents" if "Label" in header else "intents_unannotated"


def _is_official(path: Path) -> bool:
    return (
        path.suffix.lower() == ".csv"
        and canonical_split(path.stem) is not None
        and _header(path)[:1] == ["conv_id"]
    )


def load_intents(
    path: str | Path, splits: str | Path | None = None, annotated: bool | None = None
) -> list[Dialogue]:
    """Loads the EmpatheticIntents per-emotion CSVs.

    Args:
        path: One ``<emotion>.csv`` or a folder holding them (searched recursively).
        splits: ``ed_official_splits.csv``; default: found in ``path``'s folder or up to three
            folders above. Without one, dialogues get split ``"unknown"``.
        annotated: ``True`` for the files with ``Label``, ``False`` for those without,
            ``None`` (default) for the annotated ones if there are any.

    Returns:
        The dialogues, emotion files by name, each in file order; duplicates skipped.
    """
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        kinds = {p: _intents_kind(p) for p in walk(path)}
        if annotated is None:
            annotated = "intents" in kinds.values()
        wanted = "intents" if annotated else "intents_unannotated"
        files = sorted((p for p, k in kinds.items() if k == wanted), key=lambda p: (p.name, p))
        if not files:
            raise FileNotFoundError(
                f"{path}: no EmpatheticIntents per-emotion CSVs "
                f"({'with' if annotated else 'without'} a Label column) found inside"
            )
    else:
        raise FileNotFoundError(f"{path}: no such file or folder")
    split_file = Path(splits) if splits is not None else _find_splits(path)
    split_of: dict[str, str] = {}
    duplicates: set[str] = set()
    if split_file is not None:
        split_of, duplicates = read_splits(split_file)
    dialogues: list[Dialogue] = []
    for file in files:
        dialogues.extend(_intents_file(file, split_of, duplicates, split_file is not None))
    return dialogues


def _intents_file(
    file: Path, split_of: dict[str, str], duplicates: set[str], have_splits: bool
) -> list[Dialogue]:
    convs: dict[str, dict[str, Any]] = {}
    has_label = False
    for line, row in iter_csv(file, _INTENTS_COLUMNS):
        has_label = "Label" in row
        conv_id = row["Dialog_ID"].strip()
        if not conv_id:
            raise CorpusError(file, line, "Dialog_ID is empty")
        conv = convs.setdefault(conv_id, {"line": line, "turns": [], "prompt": "", "label": None})
        kind = row["Type"].strip()
        label = row.get("Label", "").strip() or None
        if kind == "situation":
            conv["prompt"] = row["Text"].strip()
            conv["label"] = label
        elif kind == "utterance":
            role = _ACTORS.get(row["Actor"].strip())
            if role is None:
                raise CorpusError(
                    file, line, f"Actor must be speaker or listener, found {row['Actor']!r}"
                )
            conv["turns"].append(Turn(role, row["Text"].strip(), label))
        else:
            raise CorpusError(
                file, line, f"Type must be situation or utterance, found {row['Type']!r}"
            )
    dialogues = []
    for conv_id, conv in convs.items():
        match = _DUPLICATE.match(conv_id)
        if conv_id in duplicates or (match and match["base"] in convs):
            continue
        if have_splits and conv_id not in split_of:
            raise CorpusError(
                file, conv["line"], f"conversation {conv_id!r} is not in {SPLITS_FILE}"
            )
        situation: dict[str, Any] = {"emotion": file.stem, "prompt": conv["prompt"]}
        if has_label:
            situation["prompt_label"] = conv["label"]
        dialogues.append(
            Dialogue(
                corpus=CORPUS,
                id=conv_id,
                split=split_of.get(conv_id, "unknown"),
                turns=tuple(conv["turns"]),
                profile={},
                situation=situation,
            )
        )
    return dialogues


# -- detection and dispatch ------------------------------------------------------------------------


def detect(folder: str | Path) -> dict[str, list[Path]]:
    """The ED files under ``folder``, by format."""
    found: dict[str, list[Path]] = {}
    for p in walk(Path(folder)):
        if p.suffix.lower() != ".csv" or p.name == SPLITS_FILE:
            continue
        kind = _intents_kind(p) or ("official" if _is_official(p) else None)
        if kind is not None:
            found.setdefault(kind, []).append(p)
    return found


def notes(folder: str | Path) -> list[str]:
    """Remarks on the ED files under ``folder``."""
    found = detect(folder)
    if ("intents" in found or "intents_unannotated" in found) and _find_any_splits(
        Path(folder)
    ) is None:
        return [f"no {SPLITS_FILE} found: per-emotion dialogues get split 'unknown'"]
    return []


def _find_any_splits(folder: Path) -> Path | None:
    return next((p for p in walk(folder) if p.name == SPLITS_FILE), None)


LOADERS: dict[str, Callable[..., list[Dialogue]]] = {
    "official": load_official,
    "intents": lambda path, splits=None: load_intents(path, splits, annotated=True),
    "intents_unannotated": lambda path, splits=None: load_intents(path, splits, annotated=False),
}


def format_of(file: Path) -> str:
    """The format of one ED CSV file, from its header."""
    ensure_not_empty(file, "CSV")
    kind = _intents_kind(file)
    if kind is not None:
        return kind
    if file.suffix.lower() == ".csv" and _header(file)[:1] == ["conv_id"]:
        if file.name == SPLITS_FILE:
            raise CorpusError(file, None, "this is the split file; load the dialogue CSVs")
        return "official"
    raise CorpusError(
        file,
        1,
        f"not a recognised ED file; expected the official header {','.join(OFFICIAL_COLUMNS)} "
        f"or the per-emotion header {','.join(_INTENTS_COLUMNS)}[,Label]",
    )


def load(path: str | Path, format: str | None = None) -> list[Dialogue]:
    """Loads EmpatheticDialogues from a file or a folder.

    Args:
        path: One ED file, or a folder (searched recursively).
        format: ``"official"``, ``"intents"`` or ``"intents_unannotated"``; default: the file's
            own format, or for a folder the first of :data:`FORMATS` found in it.

    Returns:
        The dialogues (see each format's loader for the order).
    """
    path = Path(path)
    format = pick_format(
        path,
        format,
        corpus="ED",
        formats=FORMATS,
        format_of=format_of,
        detect=detect,
        expected="official train/valid/test.csv or per-emotion CSVs",
    )
    if path.is_file():
        return LOADERS[format](path)
    if format.startswith("intents"):
        return LOADERS[format](path, _find_any_splits(path))
    return LOADERS[format](path)
