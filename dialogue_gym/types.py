"""The Protocols and type variables that more than one part of the package names.

A type that two modules both need lives here, not in either of them, so neither has to import
the other to annotate against it (not even under ``TYPE_CHECKING``: ``tests/test_import_graph.py``
counts those imports as edges too). This module imports nothing from the package; every part
may import it. The types keep their public homes as re-exports: ``Encoder`` is still
``dialogue_gym.mind.encoders.Encoder``.

* :class:`Encoder` — what a sentence encoder offers (the encoders in :mod:`dialogue_gym.mind`,
  the text view in :mod:`dialogue_gym.text.view`, the users, the agents).
* :class:`TaskLike` — a card as far as a per-task table needs it (``id``); the cards build
  :class:`~dialogue_gym.cards.sections.TaskTable` over :class:`~dialogue_gym.cards.card.TaskCard`.
* :class:`Outcome` — what a real dialogue's participants reached (a task plug-in's
  :meth:`~dialogue_gym.cards.task_plugin.TaskPlugin.real_outcome`, the validity benchmark).
* :class:`StanceReader` — a learned reader of a real user's reply (a task plug-in's
  :meth:`~dialogue_gym.cards.task_plugin.TaskPlugin.stance_reader`, the embedded success judge).
* :class:`TurnRecord`, :class:`DialogueRecord` — a corpus dialogue as the calibration fitters
  read it (:mod:`dialogue_gym.calibration`); :mod:`dialogue_gym.data.records` has the records.
* :class:`LazyTable` — the read-only tables computed each time they are read (the cards' task
  tables, what the task plug-ins add to the core's tables, the corpus loaders).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = [
    "ArrayOrFloat",
    "DialogueRecord",
    "Encoder",
    "LazyTable",
    "Outcome",
    "StanceReader",
    "TaskLike",
    "TurnRecord",
]

ArrayOrFloat = TypeVar("ArrayOrFloat", float, np.ndarray)
"""A cosine or an array of them: what goes in comes out (float in, float out)."""


@runtime_checkable
class Encoder(Protocol):
    """Maps texts to unit-normalized embedding rows of a fixed dimension.

    **Cosines on the reference scale.** Every similarity threshold of the embedded world (a
    concern is addressed at 0.55, a turn is a repetition at 0.9, ...) was set on MiniLM's
    cosines. :meth:`to_reference_cosine` puts this encoder's cosines on that scale, and every
    reader that compares a cosine with a threshold calls it. The default here is the identity,
    for encoders already on the reference scale (MiniLM, which is the reference; the hashing
    test encoder, which has no map); the static encoder maps its cosines
    (:mod:`dialogue_gym.mind.cosine_scale`), and wrappers (the cache, the vector env's
    batching) forward to the encoder they wrap. A class that subclasses this protocol inherits
    the default; an encoder written without the method still works wrapped by
    :func:`dialogue_gym.mind.encoders.make_encoder` (as every env wraps its encoder), whose
    cache treats it as already on the reference scale.

    An encoder may also have the **optional** method ``visible_prefix(text: str) -> str``: the
    longest prefix of ``text`` that it actually reads (a transformer truncates to its maximum
    sequence length). :func:`dialogue_gym.text.view.text_view` cuts every turn to that prefix, so
    cue regexes and the price parser never read words the encoder cannot see; an encoder
    without the method gets the first :data:`dialogue_gym.text.view.MAX_VIEW_CHARS` characters.
    It is not a member of this protocol.
    """

    @property
    def name(self) -> str:
        """A stable identifier stamped into result files."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension d."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Encodes ``texts`` into a ``(len(texts), dim)`` float32 array of unit rows.

        A text's row must not depend on the other texts of the call.
        """
        ...

    def to_reference_cosine(self, cosines: ArrayOrFloat) -> ArrayOrFloat:
        """``cosines`` of this encoder on MiniLM's scale, where the users' thresholds were set.

        Args:
            cosines: A cosine, or an array of them of any shape.

        Returns:
            The same kind of value; this default returns ``cosines`` itself.
        """
        return cosines


class TaskLike(Protocol):
    """A task card as far as a table keyed by task id reads it."""

    @property
    def id(self) -> str:
        """The task id (``"P4G"``, ``"CB"``, ...)."""
        ...


class TurnRecord(Protocol):
    """One utterance of a corpus dialogue (:class:`dialogue_gym.data.records.Turn`)."""

    @property
    def role(self) -> str:
        """``"system"`` or ``"user"``."""
        ...

    @property
    def text(self) -> str:
        """What was said."""
        ...

    @property
    def act(self) -> str | None:
        """The corpus's strategy or dialogue-act label(s), joined with ``"+"``."""
        ...

    @property
    def acts(self) -> tuple[str, ...]:
        """The turn's labels as a tuple (empty when it has none)."""
        ...


class DialogueRecord(Protocol):
    """One corpus dialogue (:class:`dialogue_gym.data.records.Dialogue`)."""

    @property
    def corpus(self) -> str:
        """The corpus name."""
        ...

    @property
    def id(self) -> str:
        """Identifier, unique within the corpus and format."""
        ...

    @property
    def split(self) -> str:
        """``"train"``, ``"valid"``, ``"test"``, ``"unsplit"`` or ``"unknown"``."""
        ...

    @property
    def turns(self) -> Sequence[TurnRecord]:
        """The utterances in order."""
        ...

    @property
    def profile(self) -> Mapping[str, Any]:
        """Attributes of the user-side participant."""
        ...

    @property
    def situation(self) -> Mapping[str, Any]:
        """The task context."""
        ...

    @property
    def system_turns(self) -> Sequence[TurnRecord]:
        """The system's turns."""
        ...

    @property
    def user_turns(self) -> Sequence[TurnRecord]:
        """The user's turns."""
        ...


class StanceReader(Protocol):
    """Reads the stance distribution of the last user reply of a transcript."""

    def distribution(self, history: Sequence[tuple[str, str]]) -> dict[str, float]:
        """Stance (``refused``/``neutral``/``positive``/``agree``) → probability."""
        ...


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the real participants reached.

    Attributes:
        success: Whether the task goal was reached (donated, improved, deal).
        amount: The graded outcome (donation, intensity fall, utility); ``None`` if unknown.
    """

    success: bool
    amount: float | None


class LazyTable(Mapping[str, Any]):
    """A read-only mapping computed by :meth:`_table` each time it is read.

    The tables of task and corpus facts (:class:`~dialogue_gym.cards.sections.TaskTable`, what
    the task plug-ins add, :data:`~dialogue_gym.data.corpora.CORPORA`) follow what is
    registered when they are read, never at import.
    """

    def _table(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._table()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())
