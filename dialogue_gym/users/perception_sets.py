"""A task's perception set: the turns a simulated user's meaning reader is fitted on.

``envs/perception/<TASK>.toml`` (shipped with the cards as ``dialogue_gym.catalog``) holds,
per concern, many differently worded turns that answer it (``addressing``) and hard negatives
on its topic that do not (``near_miss``), and per kind of turn that answers nothing
(:data:`ACTS`) many examples of it; see :class:`~dialogue_gym.users.meaning.MeaningReader`
for how they are read, and docs/task-cards.md for the format. Two optional tables:

* ``[carried]``: *clauses* per class and request ``frames`` with a ``{reason}`` slot. Each
  clause joins its class on its own and said inside ``per_clause`` frames (:func:`carry`): on
  a task where every turn carries a request (a buyer's offer), a reason said in the offer's
  own sentence ("Since the hinge is loose, would you take $240?") is read as that reason, a
  filler in its place ("If that works for you, would you take $240?") as the ask it is.
* ``[fit]``: ``l2``, the reader's L2 penalty on this set (default :data:`DEFAULT_L2`).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from dialogue_gym.cards.card import TaskCard

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "ACTS",
    "DEFAULT_L2",
    "NEAR_MISS",
    "REASON_SLOT",
    "PerceptionSet",
    "PerceptionSetError",
    "carry",
    "load_perception_set",
    "parse_perception_set",
]

ACTS = ("ask_polite", "ask_pushy", "rapport", "probe", "acknowledge", "off_topic", "farewell")
"""Kinds of turn that answer no concern, each a class of the reader."""
NEAR_MISS = "near_miss"
"""The class of turns on a concern's topic that do not answer it (the hard negatives)."""
DEFAULT_L2 = 1e-3
"""The reader's L2 penalty unless a set's ``[fit]`` table says otherwise."""


class PerceptionSetError(ValueError):
    """A perception set that cannot be used (names the file and the field)."""


@dataclasses.dataclass(frozen=True)
class PerceptionSet:
    """A task's perception set (see the module docstring).

    Attributes:
        task: The card id it was written for.
        addressing: Concern id → turns that answer that concern.
        near_miss: Concern id → turns on its topic that do not answer it.
        turns: Act (one of :data:`ACTS`) → examples of that kind of turn.
        l2: The reader's L2 penalty on this set (``[fit] l2``).
    """

    task: str
    addressing: Mapping[str, tuple[str, ...]]
    near_miss: Mapping[str, tuple[str, ...]]
    turns: Mapping[str, tuple[str, ...]]
    l2: float = DEFAULT_L2

    def __len__(self) -> int:
        tables = (self.addressing, self.near_miss, self.turns)
        return sum(len(lines) for table in tables for lines in table.values())


def _lines(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PerceptionSetError(f"{where}: expected a list of non-empty strings")
    return tuple(dict.fromkeys(v.strip() for v in value))


def _tables(
    data: Mapping[str, Any], card: TaskCard, source: str
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The ``concerns`` and ``turns`` tables of a perception set (or of its ``carried`` part)."""
    known = {c.id for c in card.concerns}
    concerns = data.get("concerns", {})
    if not isinstance(concerns, Mapping):
        raise PerceptionSetError(f"{source}: concerns: expected a table per concern")
    addressing: dict[str, tuple[str, ...]] = {}
    near_miss: dict[str, tuple[str, ...]] = {}
    for cid, table in concerns.items():
        where = f"{source}: concerns.{cid}"
        if cid not in known:
            raise PerceptionSetError(f"{where}: card {card.id!r} has no such concern")
        if not isinstance(table, Mapping) or set(table) - {"addressing", "near_miss"}:
            raise PerceptionSetError(f"{where}: expected the keys addressing and near_miss")
        addressing[cid] = _lines(table.get("addressing", []), f"{where}.addressing")
        near_miss[cid] = _lines(table.get("near_miss", []), f"{where}.near_miss")
    turns_table = data.get("turns", {})
    if not isinstance(turns_table, Mapping) or set(turns_table) - set(ACTS):
        unknown = sorted(set(turns_table) - set(ACTS)) if isinstance(turns_table, Mapping) else []
        raise PerceptionSetError(f"{source}: turns: unknown acts {unknown}; choose from {ACTS}")
    turns = {act: _lines(turns_table[act], f"{source}: turns.{act}") for act in turns_table}
    return addressing, near_miss, turns


REASON_SLOT = "{reason}"
"""Where a ``carried`` frame takes its clause."""


def carry(clauses: Sequence[str], frames: Sequence[str], per_clause: int) -> tuple[str, ...]:
    """Every clause on its own, then said inside ``per_clause`` of the ``frames`` in turn.

    On its own, a clause is the part of a sentence a reader that splits an offer from its
    reason reads ("since the hinge is loose"); inside a frame, the whole sentence. Clause
    ``i`` goes into frames ``i * per_clause``, ``i * per_clause + 1``, ... (modulo
    their number), so consecutive clauses meet different frames; a frame that opens with the
    clause gets it capitalized ("Since the hinge is loose, would you take $240?").
    """
    out = [clause[:1].upper() + clause[1:] for clause in clauses]
    for i, clause in enumerate(clauses):
        for j in range(per_clause):
            line = frames[(i * per_clause + j) % len(frames)].replace(REASON_SLOT, clause)
            out.append(line[:1].upper() + line[1:])
    return tuple(out)


def _carried(
    data: Any, card: TaskCard, source: str
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The ``[carried]`` table: clauses said inside the frames of a request (see the format)."""
    where = f"{source}: carried"
    if not isinstance(data, Mapping) or set(data) - {"frames", "per_clause", "concerns", "turns"}:
        raise PerceptionSetError(f"{where}: expected the keys frames, per_clause, concerns, turns")
    frames = _lines(data.get("frames", []), f"{where}.frames")
    if not frames or any(f.count(REASON_SLOT) != 1 for f in frames):
        raise PerceptionSetError(f"{where}.frames: each frame needs one {REASON_SLOT} slot")
    per = data.get("per_clause", 1)
    if not isinstance(per, int) or isinstance(per, bool) or not 1 <= per <= len(frames):
        raise PerceptionSetError(f"{where}.per_clause: expected 1 to {len(frames)}")
    tables = _tables(data, card, where)
    return tuple(  # type: ignore[return-value]
        {key: carry(clauses, frames, per) for key, clauses in table.items()} for table in tables
    )


def parse_perception_set(data: Mapping[str, Any], card: TaskCard, source: str) -> PerceptionSet:
    """Validates a parsed perception-set TOML against ``card``.

    The optional ``[carried]`` and ``[fit]`` tables are described in the module docstring.

    Raises:
        PerceptionSetError: Naming ``source`` and the field: an unknown concern or act, a list
            that is not a list of strings, a concern of the card with no addressing turns, a
            frame without its slot, an ``l2`` out of range.
    """
    addressing, near_miss, turns = _tables(data, card, source)
    answered = {cid for cid, lines in addressing.items() if lines}
    missing = sorted({c.id for c in card.concerns} - answered)
    if missing:
        raise PerceptionSetError(f"{source}: concerns {missing} have no addressing turns")
    if "carried" in data:
        for table, extra in zip(
            (addressing, near_miss, turns), _carried(data["carried"], card, source), strict=True
        ):
            for key, lines in extra.items():
                table[key] = tuple(dict.fromkeys((*table.get(key, ()), *lines)))
    fit = data.get("fit", {})
    l2 = fit.get("l2", DEFAULT_L2) if isinstance(fit, Mapping) else None
    if set(fit if isinstance(fit, Mapping) else ()) - {"l2"} or not (
        isinstance(l2, (int, float)) and not isinstance(l2, bool) and 0 < l2 < 1
    ):
        raise PerceptionSetError(f"{source}: fit: expected only l2, a number in (0, 1)")
    return PerceptionSet(card.id, addressing, near_miss, turns, float(l2))


def load_perception_set(card: TaskCard) -> PerceptionSet | None:
    """The shipped perception set of ``card`` (``perception/<id>.toml``), or ``None``.

    Raises:
        PerceptionSetError: The shipped file is malformed.
    """
    path = resources.files("dialogue_gym.catalog").joinpath("perception", f"{card.id}.toml")
    if not path.is_file():
        return None
    source = f"perception/{card.id}.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PerceptionSetError(f"{source}: not valid TOML ({exc})") from None
    return parse_perception_set(data, card, source)
