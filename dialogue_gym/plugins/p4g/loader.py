"""Persuasion for Good (Wang et al., ACL 2019): loaders for its three public formats.

Formats:

- ``full``: ``FullData/full_dialog.csv`` (columns ``,Unit,Turn,B4,B2``; one row per utterance)
  joined with ``FullData/full_info.csv`` (one row per participant; the persuadee's row,
  ``B4 = 1``, becomes the dialogue's ``profile``). 1,017 dialogues.
- ``annotated``: ``AnnotatedData/300_dialog.csv`` (one row per *sentence*, with ``er_label_1``
  for persuader sentences and ``ee_label_1`` for persuadee sentences) and ``300_info.csv``.
  The ``.xlsx`` originals are read when no ``.csv`` is beside them and ``openpyxl`` is
  installed. 300 dialogues. When ``FullData/full_info.csv`` sits beside ``AnnotatedData/``
  (or is passed as ``info``), the persuadee's traits are joined in too.
- ``gdpzero``: the GDP-Zero turn-based JSON ``300_dialog_turn_based.json``
  (``{id: {"dialog": [{"er": [...], "ee": [...]}], "label": [{"er": [...], "ee": [...]}]}}``),
  300 dialogues and 3,110 exchanges. The ``.pkl`` original is **refused** (unpickling can run
  code); use the JSON made from it.

Turns: consecutive sentences of one speaker form one :class:`~dialogue_gym.data.Turn` (texts
joined with a space). The act of a turn is its sentences' distinct labels joined with ``"+"``
(``er_label_1`` for the persuader = system, ``ee_label_1`` for the persuadee = user); the
secondary labels ``er_label_2``/``ee_label_2`` and the sentiment columns are not kept.

Profile (persuadee, from ``full_info.csv``): ``user_id`` (``B3``), ``donation`` (``B6``, actual
donation after the task), and every ``*.x`` column under its own name: Big-Five
(``extrovert.x``, ``agreeable.x``, ``conscientious.x``, ``neurotic.x``, ``open.x``), moral
foundations (``care.x``, ``fairness.x``, ``loyalty.x``, ``authority.x``, ``purity.x``), Schwartz
values (``freedom.x`` … ``security.x``), ``rational.x``/``intuitive.x`` and demographics
(``age.x``, ``sex.x``, ``race.x``, ``edu.x``, ``marital.x``, ``employment.x``, ``income.x``,
``religion.x``, ``ideology.x``). Numbers are floats, empty cells ``None``. The annotated format
adds ``intended_donation`` (``B5``). Situation: ``charity``, ``n_turns`` (``B7``) and
``persuader`` (the persuader's own info row, same keys as the profile).

**Held-out split.** P4G has no official split. This module assigns every dialogue by its id
alone, so one dialogue gets the same split in every format::

    bucket = int(sha256(dialogue_id.encode("utf-8")).hexdigest(), 16) % 10
    split  = "train" if bucket < 8 else "valid" if bucket == 8 else "test"   # 80/10/10

(:func:`split_of`). The split is deterministic, disjoint, independent of file order, and stable
when more dialogues are added. The annotated-300 vs the other 717 convention is available from
the ``annotated`` and ``full`` formats themselves.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.data._io import (
    as_float,
    as_int,
    iter_csv,
    iter_json_container,
    pick_format,
    read_text,
    require,
    walk,
)
from dialogue_gym.data.errors import CorpusError
from dialogue_gym.data.fetch import Download, Release
from dialogue_gym.data.records import ACT_SEPARATOR, Dialogue, Turn

__all__ = [
    "CHARITY",
    "FORMATS",
    "detect",
    "load",
    "load_annotated",
    "load_full",
    "load_gdpzero",
    "read_info",
    "split_of",
]


TITLE = "Persuasion for Good"
"""The corpus's title."""

FOLDER_NAMES = ("p4g", "persuasionforgood", "persuasion_for_good")
"""The accepted names of its folder under a data root (compared case-insensitively); the first
is canonical."""

_P4G = "https://gitlab.com/ucdavisnlp/persuasionforgood/-/raw/master/data"

RELEASE = Release(
    downloads=(
        Download(f"{_P4G}/FullData/full_dialog.csv", "p4g/FullData/full_dialog.csv"),
        Download(f"{_P4G}/FullData/full_info.csv", "p4g/FullData/full_info.csv"),
        Download(f"{_P4G}/AnnotatedData/300_dialog.xlsx", "p4g/AnnotatedData/300_dialog.xlsx"),
        Download(f"{_P4G}/AnnotatedData/300_info.xlsx", "p4g/AnnotatedData/300_info.xlsx"),
    ),
    licence="Apache-2.0. The annotated .xlsx files need openpyxl (`pip install openpyxl`).",
    homepage="https://gitlab.com/ucdavisnlp/persuasionforgood",
)
"""The official release (``dialogue-gym data fetch p4g``)."""

CORPUS = "p4g"
CHARITY = "Save the Children"
FORMATS = ("full", "annotated", "gdpzero")
"""The formats, in the order :func:`load` prefers them."""

_ROLES = {0: "system", 1: "user"}  # B4: 0 = persuader, 1 = persuadee
_SPLIT_BUCKETS = ("train",) * 8 + ("valid", "test")
_DIALOG_COLUMNS = ("Unit", "Turn", "B4", "B2")
_ANNOTATED_COLUMNS = ("B2", "B4", "Turn", "Unit", "er_label_1", "ee_label_1")
_INFO_COLUMNS = ("B2", "B3", "B4")


def split_of(dialogue_id: str) -> str:
    """The held-out split of a P4G dialogue id (80/10/10 by SHA-256; see the module docstring)."""
    bucket = int(hashlib.sha256(dialogue_id.encode("utf-8")).hexdigest(), 16) % 10
    return _SPLIT_BUCKETS[bucket]


def _join_acts(labels: Iterable[str]) -> str | None:
    seen: list[str] = []
    for label in labels:
        label = label.strip()
        if label and label not in seen:
            seen.append(label)
    return ACT_SEPARATOR.join(seen) or None


def _role(value: Any, path: Path, line: int) -> str:
    code = as_int(value, path, line, "column B4 (role: 0 = persuader, 1 = persuadee)")
    if code not in _ROLES:
        raise CorpusError(path, line, f"column B4 (role) must be 0 or 1, found {value!r}")
    return _ROLES[code]


# -- participant info ------------------------------------------------------------------------------


def _cell(value: str) -> float | str | None:
    text = value.strip()
    if text in ("", "NA", "N/A", "nan", "NaN"):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _info_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    if path.suffix.lower() == ".xlsx":
        yield from _xlsx_rows(path, _INFO_COLUMNS)
    else:
        yield from iter_csv(path, _INFO_COLUMNS)


def read_info(path: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Reads ``full_info.csv`` or ``300_info.csv``/``.xlsx``.

    Returns:
        ``(dialogue id, "system" | "user") → participant attributes``: ``user_id`` (``B3``),
        ``donation`` (``B6``), ``intended_donation`` (``B5``, where present), ``n_turns``
        (``B7``) and every ``*.x`` column under its own name.
    """
    path = Path(path)
    info: dict[tuple[str, str], dict[str, Any]] = {}
    for line, row in _info_rows(path):
        dialogue_id = row["B2"].strip()
        if not dialogue_id:
            raise CorpusError(path, line, "column B2 (dialogue id) is empty")
        role = _role(row["B4"], path, line)
        attrs: dict[str, Any] = {"user_id": row["B3"].strip()}
        if "B6" in row:
            attrs["donation"] = as_float(row["B6"], path, line, "column B6 (donation)")
        if "B5" in row:
            attrs["intended_donation"] = as_float(
                row["B5"], path, line, "column B5 (intended donation)"
            )
        if "B7" in row:
            turns = as_float(row["B7"], path, line, "column B7 (number of turns)")
            attrs["n_turns"] = None if turns is None else int(turns)
        for column, value in row.items():
            if column.endswith(".x"):
                attrs[column] = _cell(value)
        info[(dialogue_id, role)] = attrs
    return info


def _profile_and_situation(
    dialogue_id: str, infos: Sequence[dict[tuple[str, str], dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    user: dict[str, Any] = {}
    system: dict[str, Any] = {}
    for info in infos:
        user.update(info.get((dialogue_id, "user"), {}))
        system.update(info.get((dialogue_id, "system"), {}))
    n_turns = user.pop("n_turns", None)
    system_turns = system.pop("n_turns", None)
    system.pop("intended_donation", None)
    situation: dict[str, Any] = {"charity": CHARITY, "n_turns": n_turns or system_turns}
    if system:
        situation["persuader"] = system
    return user, situation


# -- shared grouping -----------------------------------------------------------------------------


def _group_turns(units: Iterable[tuple[str, str, str | None]]) -> tuple[Turn, ...]:
    """Merges consecutive ``(role, sentence, label)`` units of one speaker into turns."""
    turns: list[Turn] = []
    role: str | None = None
    texts: list[str] = []
    labels: list[str] = []

    def flush() -> None:
        if role is not None:
            text = " ".join(t for t in texts if t)
            turns.append(Turn(role, text, _join_acts(labels)))

    for unit_role, text, label in units:
        if unit_role != role:
            flush()
            role, texts, labels = unit_role, [], []
        texts.append(text.strip())
        if label:
            labels.append(label)
    flush()
    return tuple(turns)


def _dialogues_from_rows(
    path: Path,
    rows: Iterable[tuple[int, dict[str, str]]],
    label_columns: tuple[str, str] | None,
    infos: Sequence[dict[tuple[str, str], dict[str, Any]]],
) -> list[Dialogue]:
    units: dict[str, list[tuple[str, str, str | None]]] = {}
    for line, row in rows:
        dialogue_id = row["B2"].strip()
        if not dialogue_id:
            raise CorpusError(path, line, "column B2 (dialogue id) is empty")
        role = _role(row["B4"], path, line)
        as_int(row["Turn"], path, line, "column Turn (turn index)")
        label = None
        if label_columns is not None:
            label = row[label_columns[0] if role == "system" else label_columns[1]].strip()
        units.setdefault(dialogue_id, []).append((role, row["Unit"], label or None))
    dialogues = []
    for dialogue_id, items in units.items():
        profile, situation = _profile_and_situation(dialogue_id, infos)
        dialogues.append(
            Dialogue(
                corpus=CORPUS,
                id=dialogue_id,
                split=split_of(dialogue_id),
                turns=_group_turns(items),
                profile=profile,
                situation=situation,
            )
        )
    return dialogues


# -- format: full ----------------------------------------------------------------------------------


def load_full(path: str | Path, info: str | Path | None = None) -> list[Dialogue]:
    """Loads the FullData format (1,017 dialogues, no labels).

    Args:
        path: ``full_dialog.csv`` or a folder holding it (searched recursively).
        info: ``full_info.csv``; default: the one beside ``full_dialog.csv``, if any.

    Returns:
        The dialogues in file order.
    """
    dialog_file = _find_one(Path(path), ("full_dialog.csv",), "the P4G FullData format")
    info_file = Path(info) if info is not None else dialog_file.with_name("full_info.csv")
    infos = [read_info(info_file)] if info_file.is_file() else []
    rows = iter_csv(dialog_file, _DIALOG_COLUMNS)
    return _dialogues_from_rows(dialog_file, rows, None, infos)


# -- format: annotated -----------------------------------------------------------------------------


def _xlsx_rows(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Rows of the first sheet of an .xlsx file, as strings (``row`` = the sheet's row number)."""
    try:
        openpyxl = importlib.import_module("openpyxl")
    except ImportError:
        raise CorpusError(
            path,
            None,
            "reading .xlsx needs openpyxl, which is not installed: `pip install openpyxl`, or "
            "convert the sheet to CSV beside it (same name, .csv) — the datasets README's "
            "300_dialog.csv/300_info.csv are such conversions",
        ) from None
    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for broken files
        raise CorpusError(path, None, f"cannot read the .xlsx workbook: {exc}") from None
    try:
        sheet = workbook["Sheet1"] if "Sheet1" in workbook.sheetnames else workbook.worksheets[0]
        rows = sheet.iter_rows(values_only=True)
        header_row = next(rows, None)
        if header_row is None:
            raise CorpusError(path, None, "the workbook's first sheet is empty")
        header = ["" if v is None else str(v).strip() for v in header_row]
        missing = [c for c in required if c not in header]
        if missing:
            raise CorpusError(
                path,
                1,
                f"missing column(s) {', '.join(repr(c) for c in missing)} in the header row; "
                f"expected columns {list(required)}, found {header}",
            )
        for number, values in enumerate(rows, start=2):
            cells = ["" if v is None else str(v) for v in values]
            if not any(c.strip() for c in cells):
                continue
            cells += [""] * (len(header) - len(cells))
            yield number, dict(zip(header, cells[: len(header)], strict=True))
    finally:
        workbook.close()


def _sibling(path: Path, names: Sequence[str]) -> Path | None:
    for name in names:
        candidate = path.with_name(name)
        if candidate.is_file():
            return candidate
    return None


def load_annotated(path: str | Path, info: str | Path | None = None) -> list[Dialogue]:
    """Loads the 300 annotated dialogues (persuader strategies and persuadee acts).

    Args:
        path: ``300_dialog.csv`` (or ``.xlsx``) or a folder holding it (searched recursively;
            the ``.csv`` is preferred over the ``.xlsx``).
        info: ``full_info.csv`` to join the persuadee's traits from; default: the one in a
            ``FullData`` folder beside the annotated folder, if any. ``300_info.csv`` (or
            ``.xlsx``) beside the dialogue file is always joined when present.

    Returns:
        The dialogues in file order.
    """
    dialog_file = _find_one(
        Path(path), ("300_dialog.csv", "300_dialog.xlsx"), "the P4G annotated format"
    )
    infos = []
    full_info = (
        Path(info) if info is not None else dialog_file.parent.parent / "FullData" / "full_info.csv"
    )
    if full_info.is_file():
        infos.append(read_info(full_info))
    info_300 = _sibling(dialog_file, ("300_info.csv", "300_info.xlsx"))
    if info_300 is not None:
        infos.append(read_info(info_300))
    if dialog_file.suffix.lower() == ".xlsx":
        rows = _xlsx_rows(dialog_file, _ANNOTATED_COLUMNS)
    else:
        rows = iter_csv(dialog_file, _ANNOTATED_COLUMNS)
    return _dialogues_from_rows(dialog_file, rows, ("er_label_1", "ee_label_1"), infos)


# -- format: gdpzero -------------------------------------------------------------------------------


def _sentences(value: Any, path: Path, line: int, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise CorpusError(path, line, f"{what}: expected a list of strings, found {value!r:.80}")
    return value


def load_gdpzero(path: str | Path, info: str | Path | None = None) -> list[Dialogue]:
    """Loads the GDP-Zero turn-based JSON (300 dialogues, 3,110 exchanges).

    Each exchange ``{"er": [...], "ee": [...]}`` becomes a system turn and, when the persuadee
    said something, a user turn; acts come from ``label``.

    Args:
        path: ``300_dialog_turn_based.json`` or a folder holding it (searched recursively).
        info: ``full_info.csv`` to join the persuadee's traits from (default: none).

    Raises:
        CorpusError: The file is a pickle (refused: use the JSON), or is malformed.
    """
    file = Path(path)
    if file.is_dir():
        file = _find_one(file, ("300_dialog_turn_based.json",), "the GDP-Zero P4G format")
    _refuse_pickle(file)
    infos = [read_info(info)] if info is not None else []
    dialogues = []
    for line, dialogue_id, record in iter_json_container(file, expect="object"):
        what = f"dialogue {dialogue_id!r}"
        exchanges = require(record, "dialog", file, line, what)
        labels = record.get("label") if isinstance(record, dict) else None
        if not isinstance(exchanges, list):
            raise CorpusError(file, line, f"{what}: 'dialog' must be a list of exchanges")
        if labels is not None and (not isinstance(labels, list) or len(labels) != len(exchanges)):
            raise CorpusError(
                file, line, f"{what}: 'label' must be a list as long as 'dialog' ({len(exchanges)})"
            )
        turns: list[Turn] = []
        for t, exchange in enumerate(exchanges):
            for side, role in (("er", "system"), ("ee", "user")):
                sentences = _sentences(
                    require(exchange, side, file, line, f"{what}, exchange {t}"),
                    file,
                    line,
                    f"{what}, exchange {t}, {side!r}",
                )
                if not sentences:
                    continue
                acts = None
                if labels is not None:
                    acts = _join_acts(
                        _sentences(
                            require(labels[t], side, file, line, f"{what}, label {t}"),
                            file,
                            line,
                            f"{what}, label {t}, {side!r}",
                        )
                    )
                turns.append(Turn(role, " ".join(s.strip() for s in sentences if s), acts))
        dialogue_id = str(dialogue_id)
        profile, situation = _profile_and_situation(dialogue_id, infos)
        situation["n_exchanges"] = len(exchanges)
        dialogues.append(
            Dialogue(CORPUS, dialogue_id, split_of(dialogue_id), tuple(turns), profile, situation)
        )
    return dialogues


def _refuse_pickle(file: Path) -> None:
    if file.suffix.lower() in (".pkl", ".pickle"):
        raise CorpusError(
            file,
            None,
            "refusing to load a Python pickle (unpickling can run code); load "
            "300_dialog_turn_based.json instead — the same data as JSON (the datasets README "
            "explains how it was made from the .pkl)",
        )


# -- detection and dispatch ------------------------------------------------------------------------


def _find_one(path: Path, names: Sequence[str], what: str) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder ({what})")
    for name in names:  # in order of preference
        found = [p for p in walk(path) if p.name == name]
        if found:
            return found[0]
    raise FileNotFoundError(f"{path}: no {' or '.join(names)} found inside ({what})")


def detect(folder: str | Path) -> dict[str, list[Path]]:
    """The P4G files under ``folder``, by format (the main file of each format).

    ``.pkl`` files are never listed (they are refused); ``.xlsx`` files only where no ``.csv``
    of the same name sits beside them.
    """
    found: dict[str, list[Path]] = {}
    for p in walk(Path(folder)):
        if p.name == "full_dialog.csv":
            found.setdefault("full", []).append(p)
        elif p.name == "300_dialog.csv" or (
            p.name == "300_dialog.xlsx" and not p.with_suffix(".csv").is_file()
        ):
            found.setdefault("annotated", []).append(p)
        elif p.suffix == ".json" and "turn_based" in p.name:
            found.setdefault("gdpzero", []).append(p)
    return found


def _have_openpyxl() -> bool:
    return importlib.util.find_spec("openpyxl") is not None


def notes(folder: str | Path) -> list[str]:
    """Remarks on files under ``folder`` that are deliberately not loaded."""
    remarks = []
    for p in walk(Path(folder)):
        if p.suffix.lower() in (".pkl", ".pickle"):
            json_twin = p.with_suffix(".json")
            remarks.append(
                f"{p.name}: pickle not loaded (unpickling can run code); "
                + (f"using {json_twin.name}" if json_twin.is_file() else "convert it to JSON")
            )
        elif p.suffix.lower() == ".xlsx":
            csv_twin = p.with_suffix(".csv")
            if csv_twin.is_file():
                remarks.append(f"{p.name}: not read; using {csv_twin.name} beside it")
            elif not _have_openpyxl():
                remarks.append(
                    f"{p.name}: cannot be read: openpyxl is not installed "
                    f"(`pip install openpyxl`, or put a {csv_twin.name} beside it)"
                )
    return remarks


LOADERS: dict[str, Callable[..., list[Dialogue]]] = {
    "full": load_full,
    "annotated": load_annotated,
    "gdpzero": load_gdpzero,
}


def format_of(file: Path) -> str:
    """The format of one P4G file, from its name or, failing that, its CSV header."""
    name = file.name.lower()
    _refuse_pickle(file)
    if name.startswith(("full_info", "300_info")):
        raise CorpusError(
            file,
            None,
            "this is a participant-info file; load the dialogue file beside it "
            "(full_dialog.csv or 300_dialog.csv) or the folder",
        )
    if name.startswith("full_dialog"):
        return "full"
    if name.startswith("300_dialog") and file.suffix.lower() in (".csv", ".xlsx"):
        return "annotated"
    if file.suffix.lower() == ".json":
        return "gdpzero"
    if file.suffix.lower() == ".csv":
        header = read_text(file, "CSV").split("\n", 1)[0]
        if "er_label_1" in header:
            return "annotated"
        if all(c in header for c in _DIALOG_COLUMNS):
            return "full"
    raise CorpusError(
        file,
        None,
        "not a recognised P4G file; expected full_dialog.csv, 300_dialog.csv/.xlsx or "
        "300_dialog_turn_based.json",
    )


def load(path: str | Path, format: str | None = None) -> list[Dialogue]:
    """Loads P4G from a file or a folder.

    Args:
        path: One P4G file, or a folder (searched recursively).
        format: ``"full"``, ``"annotated"`` or ``"gdpzero"``; default: the file's own format,
            or for a folder the first of :data:`FORMATS` found in it.

    Returns:
        The dialogues, in file order.
    """
    path = Path(path)
    format = pick_format(
        path,
        format,
        corpus="P4G",
        formats=FORMATS,
        format_of=format_of,
        detect=detect,
        expected="full_dialog.csv, 300_dialog.csv or 300_dialog_turn_based.json",
    )
    if path.is_file():
        return LOADERS[format](path)
    if format == "full":
        return load_full(path)
    # Join the persuadee's traits into the annotated and GDP-Zero formats when the folder
    # also holds FullData's participant info.
    info = next((p for p in walk(path) if p.name == "full_info.csv"), None)
    return LOADERS[format](path, info)
