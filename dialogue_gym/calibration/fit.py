"""The fit registry: per-task fitters that turn TRAIN dialogues into small numeric tables.

A *fitter* reads the loaded train dialogues of one corpus and returns a small JSON-able table
of aggregate statistics (floats, ints, lists; never dialogue text). :func:`fit` adds a
``provenance`` block — corpus, split, number of dialogues, the sha256 of their sorted ids and
the code version — so a table says what it was computed from and how to recompute it
(``dialogue-gym data fit TASK --data PATH``).

Held-out dialogues never enter a fit: :func:`fit` refuses any dialogue whose split is not
``train`` (the loaders' splits), naming the offending ids.

Shipped tables live in the task's plug-in, in ``tables/<task>.json`` beside the fitter's module
(``dialogue_gym/plugins/p4g/tables/p4g.json``); :func:`shipped_table` reads one,
:func:`write_table` and :func:`load_table` round-trip any table exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from dialogue_gym.plugin_index import plugins
from dialogue_gym.types import DialogueRecord
from dialogue_gym.version import __version__

__all__ = [
    "FITTERS",
    "TRAIN",
    "CalibrationError",
    "Fitter",
    "fit",
    "ids_sha256",
    "load_table",
    "register",
    "shipped_table",
    "table_path",
    "write_table",
]

TRAIN = "train"
"""The only split a fit reads."""

FitFunction = Callable[[Sequence[DialogueRecord]], dict[str, Any]]


class CalibrationError(ValueError):
    """A fit was asked to read held-out dialogues, or a table is malformed or missing."""


@dataclasses.dataclass(frozen=True)
class Fitter:
    """One task's fitter.

    Attributes:
        task: The table's name (``cb`` → ``cb.json``).
        corpus: The corpus whose train split it reads (a :func:`~dialogue_gym.data.load_corpus`
            name).
        version: The fitter's own version: bumped whenever its rule changes, so a table
            computed by an older rule is told apart.
        function: Train dialogues → the ``parameters`` table.
        description: One line on what it fits.
        format: The corpus format it reads (a loader ``FORMATS`` entry: P4G's ``annotated``
            carries the persuadee acts); ``None``: the loader's default for the train split.
        package: The package whose ``tables/`` folder holds its shipped table (the task's
            plug-in).
    """

    task: str
    corpus: str
    version: int
    function: FitFunction
    description: str
    format: str | None = None
    package: str = "dialogue_gym.calibration"


_FITTERS: dict[str, Fitter] = {}
"""The fitters registered so far (a plug-in's register when it is imported)."""


class _Fitters(Mapping[str, Fitter]):
    """The registered fitters by task: the registered cards' plug-ins are imported when read."""

    def _table(self) -> dict[str, Fitter]:
        for _ in plugins():  # importing a plug-in registers its fitters
            pass
        return _FITTERS

    def __getitem__(self, task: str) -> Fitter:
        return _FITTERS[task] if task in _FITTERS else self._table()[task]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


FITTERS: Mapping[str, Fitter] = _Fitters()
"""The registered fitters by task (each task's plug-in registers its own)."""


def register(
    task: str, corpus: str, version: int, description: str, format: str | None = None
) -> Callable[[FitFunction], FitFunction]:
    """Registers the decorated function as the fitter of ``task`` (see :class:`Fitter`).

    Raises:
        ValueError: ``task`` already has a fitter.
    """

    def decorate(function: FitFunction) -> FitFunction:
        if task in _FITTERS:
            raise ValueError(f"a fitter for {task!r} is already registered")
        package = function.__module__.rpartition(".")[0]  # the tables sit beside the module
        _FITTERS[task] = Fitter(task, corpus, version, function, description, format, package)
        return function

    return decorate


def ids_sha256(dialogues: Sequence[DialogueRecord]) -> str:
    """The sha256 of the dialogues' ids, sorted and joined by newlines."""
    return hashlib.sha256("\n".join(sorted(d.id for d in dialogues)).encode()).hexdigest()


def fit(task: str, dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """Fits ``task`` on its corpus's train dialogues.

    Args:
        task: A key of :data:`FITTERS`.
        dialogues: The train split, as the corpus loader returns it.

    Returns:
        ``{"task", "parameters", "provenance"}``: JSON-able, deterministic for the same input.

    Raises:
        CalibrationError: Unknown task, no dialogues, another corpus, or any dialogue not of
            the train split (held-out dialogues never enter a fit).
    """
    fitter = FITTERS.get(task)
    if fitter is None:
        raise CalibrationError(f"no fitter for {task!r}; known: {sorted(FITTERS)}")
    if not dialogues:
        raise CalibrationError(f"{task}: no train dialogues to fit on")
    held_out = [d.id for d in dialogues if d.split != TRAIN]
    if held_out:
        raise CalibrationError(
            f"{task}: a fit reads the train split only; {len(held_out)} dialogue(s) of another "
            f"split, e.g. {held_out[:3]}"
        )
    corpora = sorted({d.corpus for d in dialogues})
    if corpora != [fitter.corpus]:
        raise CalibrationError(f"{task}: fits {fitter.corpus} dialogues, got {corpora}")
    return {
        "task": task,
        "parameters": fitter.function(dialogues),
        "provenance": {
            "corpus": fitter.corpus,
            "split": TRAIN,
            "n_dialogues": len(dialogues),
            "ids_sha256": ids_sha256(dialogues),
            "code_version": {"dialogue_gym": __version__, "fitter": fitter.version},
        },
    }


def _check(table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, dict) or not {"task", "parameters", "provenance"} <= set(table):
        raise CalibrationError(f"{where}: not a calibration table (task, parameters, provenance)")
    return table


def write_table(table: Mapping[str, Any], out: str | Path) -> Path:
    """Writes ``table`` to ``out/<task>.json`` (sorted keys: rerunning gives the same bytes).

    Objects are indented one key per line; a list of plain values (a reader's weights or
    vocabulary) goes on one line, which keeps the readers' tables about half as large.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_check(dict(table), 'write_table')['task']}.json"
    path.write_text(_dumps(table, 0) + "\n", encoding="utf-8")
    return path


def _dumps(value: Any, depth: int) -> str:
    """``value`` as JSON: objects one key per line (sorted), lists of plain values on one line."""
    inner = " " * (depth + 1)
    if isinstance(value, Mapping) and value:
        items = (
            f"{inner}{json.dumps(str(key))}: {_dumps(value[key], depth + 1)}"
            for key in sorted(value)
        )
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(value, list | tuple) and any(
        isinstance(v, Mapping | list | tuple) for v in value
    ):
        items = (f"{inner}{_dumps(v, depth + 1)}" for v in value)
        return "[\n" + ",\n".join(items) + "\n" + " " * depth + "]"
    return json.dumps(value)


def load_table(path: str | Path) -> dict[str, Any]:
    """Reads a table written by :func:`write_table`.

    Raises:
        CalibrationError: Not a calibration table.
    """
    return _check(json.loads(Path(path).read_text(encoding="utf-8")), str(path))


def table_path(task: str) -> Path:
    """Where the shipped table of ``task`` lives: ``tables/`` beside its fitter's module."""
    fitter = _FITTERS.get(task) or FITTERS.get(task)  # a plug-in's own table: no import
    package = fitter.package if fitter is not None else "dialogue_gym.calibration"
    return Path(str(resources.files(package) / "tables" / f"{task}.json"))


@functools.cache
def _shipped(task: str) -> str:
    path = table_path(task)
    if not path.is_file():
        raise CalibrationError(f"no shipped calibration table for {task!r} ({path})")
    return path.read_text(encoding="utf-8")


def shipped_table(task: str) -> dict[str, Any]:
    """The shipped table of ``task`` (a fresh copy; the file is read once).

    Raises:
        CalibrationError: None is shipped.
    """
    return _check(json.loads(_shipped(task)), str(table_path(task)))
