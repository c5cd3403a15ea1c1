"""Finding corpora under a data root, and loading one by name.

A *data root* is a folder holding one sub-folder per corpus, named as in
:data:`FOLDER_NAMES` (the first name is the canonical one), e.g. with the shipped tasks::

    DATA/p4g/...                      # full_dialog.csv, 300_dialog.csv, *_turn_based.json
    DATA/esconv/...                   # train/valid/test.jsonl, esc-*.txt, ESConv.json
    DATA/empathetic_dialogues/...     # train/valid/test.csv or the per-emotion CSVs
    DATA/craigslist_bargain/...       # *.jsonl, cb-*.txt, *_scenarios.csv, CoCoA *.json

Files may sit at any depth inside a corpus folder; formats are recognised by file name (and,
for ambiguous names, by their first line). The root is the ``path`` argument, else the
environment variable ``DIALOGUE_GYM_DATA``.

A corpus's loader belongs to its task's plug-in (``dialogue_gym.plugins.p4g.loader`` …): the
plug-in lists it in its ``corpora`` (corpus name → loader module), and :data:`CORPORA` reads
the registered cards' plug-ins when it is looked up. A loader module has ``TITLE``,
``FOLDER_NAMES`` (the accepted folder names, canonical first), ``FORMATS``, ``LOADERS``,
``detect``, ``load`` and ``notes`` (and ``RELEASE`` for ``dialogue-gym data fetch``), as
:mod:`dialogue_gym.plugins.p4g.loader`. A task card names its corpus and the formats its
trainers read in ``[corpus]`` (checked against :data:`CORPORA` and each loader's ``FORMATS``
when the card loads).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from dialogue_gym.data._io import canonical_split, walk
from dialogue_gym.data.errors import DataNotFoundError
from dialogue_gym.data.records import Dialogue
from dialogue_gym.plugin_index import contributions
from dialogue_gym.types import LazyTable

__all__ = [
    "CORPORA",
    "ENV_VAR",
    "FOLDER_NAMES",
    "TITLES",
    "CorpusFiles",
    "CorpusLoaders",
    "LoaderFacts",
    "corpus_folder",
    "corpus_name",
    "data_root",
    "find_corpora",
    "formats_of",
    "guess_corpus",
    "load_corpus",
    "load_format",
]

ENV_VAR = "DIALOGUE_GYM_DATA"
"""Environment variable naming the data root."""


class CorpusLoaders(LazyTable):
    """Corpus name → loader module, from the registered plug-ins' ``corpora`` when read.

    Args:
        extra: A card's own plug-in, read too (for checking a card that is not registered).
    """

    def __init__(self, extra: str | None = None) -> None:
        self._extra = extra

    def _table(self) -> dict[str, str]:
        return contributions("corpora", self._extra)

    def __getitem__(self, name: str) -> ModuleType:
        return importlib.import_module(self._table()[name])

    def __contains__(self, name: object) -> bool:
        return name in self._table()


_Fact = TypeVar("_Fact")


class LoaderFacts(Mapping[str, _Fact]):
    """Corpus name → one attribute of its loader module (``TITLE``, ``FOLDER_NAMES``)."""

    def __init__(self, attribute: str) -> None:
        self._attribute = attribute

    def __getitem__(self, name: str) -> _Fact:
        fact: _Fact = getattr(CORPORA[name], self._attribute)
        return fact

    def __iter__(self) -> Iterator[str]:
        return iter(CORPORA)

    def __len__(self) -> int:
        return len(CORPORA)


CORPORA: Mapping[str, ModuleType] = CorpusLoaders()
"""Corpus name → loader module (each has ``FORMATS``, ``detect``, ``load``, ``LOADERS``)."""

TITLES: Mapping[str, str] = LoaderFacts[str]("TITLE")
"""Corpus name → its title (``"Persuasion for Good"``)."""

FOLDER_NAMES: Mapping[str, tuple[str, ...]] = LoaderFacts[tuple[str, ...]]("FOLDER_NAMES")
"""Accepted corpus folder names (compared case-insensitively); the first is canonical."""


def _name_aliases() -> dict[str, str]:
    return {
        alias.replace("-", "").replace("_", ""): name
        for name, aliases in FOLDER_NAMES.items()
        for alias in (name, *aliases)
    }


SPECIAL_SPLITS = ("unsplit", "unknown")


def corpus_name(name: str) -> str:
    """The canonical corpus name (``p4g``, ``esconv``, ``ed``, ``cb``) for a name or alias.

    Raises:
        ValueError: Unknown name.
    """
    key = name.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    aliases = _name_aliases()
    if key not in aliases:
        raise ValueError(f"unknown corpus {name!r}; expected one of {sorted(CORPORA)}")
    return aliases[key]


def _where_to_put() -> str:
    folders = ", ".join(f"DIR/{names[0]}" for names in FOLDER_NAMES.values())
    return (
        f"Put the corpora in their public formats under one folder DIR ({folders}) and pass it "
        f"as --data DIR (path=DIR) or set {ENV_VAR}=DIR; `dialogue-gym data fetch NAME --dest "
        f"DIR` downloads the official releases where a network is available"
    )


def data_root(path: str | Path | None = None) -> Path:
    """The data root: ``path``, else ``$DIALOGUE_GYM_DATA``.

    Raises:
        DataNotFoundError: Neither is given, or the folder does not exist (the message says
            where to put the files).
    """
    source = "the given path"
    if path is None or str(path) == "":
        path = os.environ.get(ENV_VAR) or None
        source = f"${ENV_VAR}"
    if path is None:
        raise DataNotFoundError(f"no data folder given. {_where_to_put()}.")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataNotFoundError(f"data folder {root} ({source}) does not exist. {_where_to_put()}.")
    return root


def corpus_folder(root: str | Path, name: str) -> Path | None:
    """The folder of corpus ``name`` under ``root`` (or ``root`` itself if named after it)."""
    name = corpus_name(name)
    root = Path(root)
    accepted = {n.lower() for n in (name, *FOLDER_NAMES[name])}
    if root.name.lower() in accepted and root.is_dir():
        return root
    if not root.is_dir():
        return None
    matches = sorted(p for p in root.iterdir() if p.is_dir() and p.name.lower() in accepted)
    order = [n.lower() for n in FOLDER_NAMES[name]]
    matches.sort(key=lambda p: order.index(p.name.lower()) if p.name.lower() in order else 99)
    return matches[0] if matches else None


@dataclasses.dataclass(frozen=True)
class CorpusFiles:
    """What :func:`find_corpora` found for one corpus.

    Attributes:
        corpus: The corpus name.
        path: Its folder, or ``None`` when there is none under the root.
        formats: Format → its main files (in the loader's preferred format order).
        notes: Remarks on files found but deliberately not read (pickles, .xlsx without
            openpyxl, …).
    """

    corpus: str
    path: Path | None
    formats: Mapping[str, tuple[Path, ...]]
    notes: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """Whether any loadable file was found."""
        return bool(self.formats)


def formats_of(name: str, folder: str | Path) -> dict[str, tuple[Path, ...]]:
    """The loadable formats of corpus ``name`` in ``folder``, in preference order."""
    module = CORPORA[corpus_name(name)]
    found = module.detect(Path(folder))
    return {f: tuple(found[f]) for f in module.FORMATS if f in found}


def find_corpora(root: str | Path | None = None) -> dict[str, CorpusFiles]:
    """Describes what is found where under a data root.

    Args:
        root: The data root (default: ``$DIALOGUE_GYM_DATA``).

    Returns:
        One entry per corpus (all four, found or not), keyed ``p4g``, ``esconv``, ``ed``,
        ``cb``.

    Raises:
        DataNotFoundError: No root given or it does not exist.
    """
    base = data_root(root)
    result = {}
    for name, module in CORPORA.items():
        folder = corpus_folder(base, name)
        if folder is None:
            result[name] = CorpusFiles(name, None, {}, ())
            continue
        result[name] = CorpusFiles(
            name, folder, formats_of(name, folder), tuple(module.notes(folder))
        )
    return result


def load_format(name: str, path: str | Path, format: str | None = None) -> list[Dialogue]:
    """Loads one format of corpus ``name`` from a file or folder (no split filtering)."""
    return list(CORPORA[corpus_name(name)].load(Path(path), format))


def _wanted_split(split: str | None) -> str | None:
    if split is None:
        return None
    if split in SPECIAL_SPLITS:
        return split
    canonical = canonical_split(split)
    if canonical is None:
        raise ValueError(
            f"unknown split {split!r}; expected train, valid (validation, dev) or test"
        )
    return canonical


def load_corpus(
    name: str,
    path: str | Path | None = None,
    split: str | None = None,
    format: str | None = None,
) -> list[Dialogue]:
    """Loads a corpus by name.

    Args:
        name: ``p4g``, ``esconv``, ``ed`` or ``cb`` (or an alias such as ``ESConv``,
            ``empathetic_dialogues``, ``craigslist_bargain``).
        path: A data root, the corpus folder, or one corpus file (default:
            ``$DIALOGUE_GYM_DATA``).
        split: ``train``, ``valid`` (or ``validation``/``dev``), ``test`` — or ``unsplit`` /
            ``unknown`` (see :class:`~dialogue_gym.data.Dialogue`); default: all.
        format: One of the corpus module's ``FORMATS``; default: the first format found that
            has dialogues of the requested split (e.g. CB ``train`` falls back to the scenario
            tables, the only train material in the public copies).

    Returns:
        The dialogues, in the loader's deterministic order.

    Raises:
        DataNotFoundError: No data root, or no files of the corpus (or of the split) in it.
        CorpusError: A file is malformed.
        ValueError: Unknown corpus, format or split.
    """
    name = corpus_name(name)
    module = CORPORA[name]
    wanted = _wanted_split(split)
    if format is not None and format not in module.FORMATS:
        raise ValueError(
            f"unknown {TITLES[name]} format {format!r}; expected one of {module.FORMATS}"
        )
    base = Path(path).expanduser() if path is not None and Path(path).is_file() else data_root(path)
    if base.is_file():
        candidates = [(format, base)]
    else:
        folder = corpus_folder(base, name) or base
        found = formats_of(name, folder)
        if not found:
            canonical = FOLDER_NAMES[name][0]
            raise DataNotFoundError(
                f"no {TITLES[name]} files found under {folder}. Put them in "
                f"{base / canonical} (any layout inside); see `dialogue-gym data info`. "
                f"{_where_to_put()}."
            )
        if format is not None and format not in found:
            raise DataNotFoundError(
                f"no {TITLES[name]} files of format {format!r} under {folder} "
                f"(found: {', '.join(found)})"
            )
        candidates = [(f, folder) for f in ([format] if format else list(found))]
    seen: dict[str, set[str]] = {}
    for fmt, where in candidates:
        dialogues = list(module.load(where, fmt))
        if wanted is None:
            return dialogues
        selected = [d for d in dialogues if d.split == wanted]
        if selected:
            return selected
        seen[fmt or "file"] = {d.split for d in dialogues}
    found_splits = "; ".join(f"{f}: {', '.join(sorted(s)) or 'none'}" for f, s in seen.items())
    raise DataNotFoundError(
        f"no {TITLES[name]} dialogues of split {wanted!r} under {base} (splits found by "
        f"format: {found_splits})"
    )


_SNIFF = (
    ("cb", ('"agent_info"', '"item_name"', "scenario_id,", '"kbs"', '"events"')),
    ("esconv", ('"emotion_type"', '"problem_type"')),
    ("ed", ("Dialog_ID,", "conv_id,utterance_idx")),
    ("p4g", ("er_label_1", ",Unit,Turn,B4,B2", "B2,B3,B4", '"er":', '"ee":')),
)


def _sniff(file: Path) -> str | None:
    if file.suffix.lower() in (".pkl", ".pickle") or "turn_based" in file.name:
        return "p4g"
    if file.suffix.lower() == ".xlsx" and file.name.startswith(("300_", "full_")):
        return "p4g"
    try:
        with file.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    for name, needles in _SNIFF:
        if any(n in head for n in needles):
            return name
    return None


def guess_corpus(path: str | Path) -> str:
    """Which corpus a file or folder holds: from a folder name on its path, else its contents.

    Raises:
        ValueError: It cannot be told (pass the corpus name explicitly).
    """
    path = Path(path).resolve()
    for part in (path, *path.parents):
        for name, names in FOLDER_NAMES.items():
            if part.name.lower() in {n.lower() for n in (name, *names)}:
                return name
    files = [path] if path.is_file() else (walk(path) if path.is_dir() else [])
    if not files:
        raise FileNotFoundError(f"{path}: no such file or folder")
    for file in files[:50]:
        sniffed = _sniff(file)
        if sniffed is not None:
            return sniffed
    raise ValueError(
        f"{path}: cannot tell which corpus this is; pass it with --corpus ({', '.join(CORPORA)})"
    )
