"""LLM mentalizers and the silver BDI cache.

* :class:`LLMMentalizer` — the OBU annotator used online: as a *student* (``estimate(history)``,
  the observable history only) and as a *teacher* (``infer(history, user)``, with the user's
  profile). Results are memoized per history (and profile).
* :class:`SilverCache` — the offline silver annotations written by ``dialogue-gym annotate``
  (:func:`dialogue_gym.mentalizers.annotate.annotate_corpus`): look-ups per dialogue prefix and the
  BDI prior
  (the initial states of the dialogues).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mentalizers.annotator import BDIAnnotator
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.users.base import UserSimulator

if TYPE_CHECKING:
    from dialogue_gym.backends import Backend

__all__ = ["PRIOR_FILE", "SILVER_FILE", "LLMMentalizer", "SilverCache", "read_jsonl"]

SILVER_FILE = "silver.jsonl"
PRIOR_FILE = "prior.jsonl"
_FIELDS = ("belief", "desire", "intention", "receptivity", "confidence", "valence")

History = tuple[tuple[str, str], ...]


class LLMMentalizer:
    """The OBU as an online mentalizer (student and teacher protocols), memoized.

    Args:
        card: The task card.
        backend: The text-generation backend (used when ``annotator`` is not given).
        annotator: A ready annotator.
        max_cache: Memoized histories kept (oldest dropped first).

    Raises:
        ValueError: Neither ``backend`` nor ``annotator`` given.
    """

    def __init__(
        self,
        card: TaskCard,
        backend: Backend | None = None,
        annotator: BDIAnnotator | None = None,
        max_cache: int = 10_000,
    ) -> None:
        if annotator is None:
            if backend is None:
                raise ValueError("LLMMentalizer needs backend= or annotator=")
            annotator = BDIAnnotator(card, backend)
        self.card = card
        self.annotator = annotator
        self.max_cache = int(max_cache)
        self._memo: dict[tuple[History, str | None], BDI] = {}

    def _lookup(self, history: Sequence[tuple[str, str]], profile: str | None) -> BDI:
        key = (tuple((str(r), str(t)) for r, t in history), profile)
        if key not in self._memo:
            if len(self._memo) >= self.max_cache:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = self.annotator.annotate(key[0], profile)
        return self._memo[key]

    def estimate(self, history: Sequence[tuple[str, str]]) -> BDI:
        """Student view: the state estimated from the observable history alone."""
        return self._lookup(history, None)

    def infer(self, history: Sequence[tuple[str, str]], user: UserSimulator) -> BDI:
        """Teacher view: the state from the history and the user's profile."""
        return self._lookup(history, user.profile())


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file; an unreadable line (a crash mid-write) is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


def _bdi(record: Mapping[str, Any]) -> BDI:
    return BDI.from_dict({name: record[name] for name in _FIELDS})


class SilverCache:
    """Silver BDI annotations of corpus dialogue prefixes, loaded from an annotate run.

    Args:
        silver: Records of ``silver.jsonl`` (``corpus``, ``split``, ``dialogue_id``,
            ``prefix`` and the six fields).
        prior: Records of ``prior.jsonl`` (the initial state of each dialogue, with its
            ``profile`` text).
    """

    def __init__(
        self, silver: Sequence[Mapping[str, Any]], prior: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        self._by_key: dict[tuple[str, str, int], BDI] = {}
        self._by_id: dict[tuple[str, int], list[BDI]] = {}
        for record in silver:
            key = (str(record.get("corpus", "")), str(record["dialogue_id"]), int(record["prefix"]))
            bdi = _bdi(record)
            self._by_key[key] = bdi
            self._by_id.setdefault(key[1:], []).append(bdi)
        self._prior = [dict(record) for record in prior]

    @classmethod
    def load(cls, out_dir: str | Path) -> SilverCache:
        """Loads ``silver.jsonl`` and ``prior.jsonl`` from an annotate output folder.

        Raises:
            FileNotFoundError: The folder has no ``silver.jsonl``.
        """
        folder = Path(out_dir)
        silver_path = folder / SILVER_FILE
        if not silver_path.exists():
            raise FileNotFoundError(
                f"no {SILVER_FILE} in {folder}: run `dialogue-gym annotate CORPUS --out {folder}`"
            )
        return cls(list(read_jsonl(silver_path)), list(read_jsonl(folder / PRIOR_FILE)))

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, dialogue_id: str, prefix: int, corpus: str | None = None) -> BDI | None:
        """The silver state after the first ``prefix`` turns of a dialogue, or ``None``.

        Args:
            dialogue_id: The corpus dialogue id.
            prefix: The number of turns of the prefix.
            corpus: The corpus name, when the cache holds several with clashing ids.

        Raises:
            KeyError: The id is ambiguous across corpora and ``corpus`` was not given.
        """
        if corpus is not None:
            return self._by_key.get((corpus, str(dialogue_id), int(prefix)))
        found = self._by_id.get((str(dialogue_id), int(prefix)), [])
        if len(found) > 1:
            raise KeyError(f"dialogue {dialogue_id!r} is in several corpora: pass corpus=")
        return found[0] if found else None

    def prior(self, split: str | None = None, corpus: str | None = None) -> list[BDI]:
        """The BDI prior: the initial states (optionally of one split and corpus), in file order."""
        return [
            _bdi(record)
            for record in self._prior
            if (split is None or record.get("split") == split)
            and (corpus is None or record.get("corpus") == corpus)
        ]

    def prior_records(self) -> list[dict[str, Any]]:
        """The raw prior records (with ``dialogue_id``, ``prefix`` and ``profile``)."""
        return [dict(record) for record in self._prior]
