"""Putting another encoder's cosines on MiniLM's scale, where the users' thresholds were set.

Every similarity threshold of the embedded world — a concern is addressed at 0.55 (hard users),
a turn is a repetition at 0.9, a story is the user's own by a 0.05 margin, the scripted
agents' voice-line matches — was set on MiniLM's cosines. A cheaper encoder spreads its
cosines differently: a bare static token mean puts paraphrase pairs at ~0.52 and unrelated
pairs at ~0.31, against MiniLM's ~0.59 and ~0.13, so MiniLM's thresholds read its cosines
wrongly (almost everything "addresses" a concern, or nothing does). The static encoder's head
(:mod:`dialogue_gym.mind.static_head`) brings its cosines close to MiniLM's, not onto them.

A :class:`CosineMap` is a monotone piecewise-linear map from an encoder's cosines to MiniLM's,
fitted by **quantile matching** on a fixed calibration set: the sentences of the shipped task
cards (every string of three or more words: concern prototypes, voice and acknowledgement
lines, descriptions, domain sentences, strategy templates, reply templates, BDI texts ...),
paired within each card. The k-th quantile of the encoder's pair cosines maps onto
the k-th quantile of MiniLM's cosines of the same pairs, so a threshold keeps the share of card
pairs above it. The fit uses only card text (no benchmark, agent or corpus outcome) and is
deterministic. Ranks are kept: the map cannot make a cheap encoder separate what it does not
separate, only put its numbers where the thresholds expect them.

The map is applied inside the encoder: :meth:`dialogue_gym.types.Encoder.to_reference_cosine`
is what the users, judges and agents call on every cosine they compare with a threshold (the
identity for MiniLM, which is the reference, and for the hashing test encoder; the static
encoder's map; wrappers forward). :func:`on_reference_scale`, the function they used to call,
is deprecated and forwards to that method.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dialogue_gym.types import ArrayOrFloat

__all__ = [
    "CosineMap",
    "calibration_texts",
    "fit_cosine_map",
    "load_or_fit_cosine_map",
    "on_reference_scale",
    "within_card_cosines",
]

KNOTS = 201
"""Quantile levels of the map (0, 0.5 %, ..., 100 %)."""


@dataclass(frozen=True)
class CosineMap:
    """A monotone piecewise-linear map of cosines (``np.interp`` through its knots).

    Attributes:
        source: Knot positions on the encoder's scale, increasing from -1 to 1.
        reference: Their images on the reference (MiniLM) scale, non-decreasing from -1 to 1.
    """

    source: tuple[float, ...]
    reference: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.source) != len(self.reference) or len(self.source) < 2:
            raise ValueError("a CosineMap needs as many (at least two) source and reference knots")
        if any(b <= a for a, b in zip(self.source, self.source[1:], strict=False)):
            raise ValueError("CosineMap source knots must increase")
        if any(b < a for a, b in zip(self.reference, self.reference[1:], strict=False)):
            raise ValueError("CosineMap reference knots must not decrease")
        # The knots as arrays once: converting the tuples on every call cost ~8 us, which the
        # static encoder's env step (under 1 ms) pays several times per exchange.
        object.__setattr__(self, "_xs", np.asarray(self.source, dtype=np.float64))
        object.__setattr__(self, "_ys", np.asarray(self.reference, dtype=np.float64))

    def __call__(self, cosines: ArrayOrFloat) -> ArrayOrFloat:
        """Maps cosines (a float or an array of any shape) onto the reference scale."""
        xs: np.ndarray = self._xs  # type: ignore[attr-defined]
        ys: np.ndarray = self._ys  # type: ignore[attr-defined]
        if isinstance(cosines, np.ndarray):
            return np.interp(cosines, xs, ys).astype(cosines.dtype)
        return float(np.interp(float(cosines), xs, ys))

    def to_dict(self) -> dict[str, list[float]]:
        """A JSON-ready form (:meth:`from_dict` reads it back exactly)."""
        return {"source": list(self.source), "reference": list(self.reference)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CosineMap:
        """Reads :meth:`to_dict`'s form."""
        return cls(tuple(map(float, data["source"])), tuple(map(float, data["reference"])))


def on_reference_scale(encoder: object, cosines: ArrayOrFloat) -> ArrayOrFloat:
    """Deprecated: call ``encoder.to_reference_cosine(cosines)``.

    ``cosines`` of ``encoder`` on MiniLM's scale: the encoder's own
    :meth:`~dialogue_gym.types.Encoder.to_reference_cosine`, or ``cosines`` unchanged for an
    object without the method (as before).
    """
    warnings.warn(
        "on_reference_scale(encoder, cosines) is deprecated; call "
        "encoder.to_reference_cosine(cosines)",
        DeprecationWarning,
        stacklevel=2,
    )
    to_reference = getattr(encoder, "to_reference_cosine", None)
    return cosines if to_reference is None else to_reference(cosines)


def calibration_texts() -> list[list[str]]:
    """The calibration set: per shipped card, its sentences (deduplicated, in card order).

    A sentence is any string of three or more words anywhere in the card (ids, labels, names
    and slot values are shorter), so every line the world compares with a threshold — concern
    prototypes, voice and acknowledgement lines, reply templates, BDI texts — is in it.
    """
    from dialogue_gym.cards.card import builtin_cards, load_card

    groups = []
    for name in builtin_cards():
        texts: list[str] = []
        _collect_sentences(load_card(name), texts)
        groups.append(list(dict.fromkeys(texts)))
    return groups


def _collect_sentences(value: object, out: list[str]) -> None:
    """Appends every string of three or more words in ``value``, in field order.

    ``value`` may nest dataclasses, mappings, lists and tuples.
    """
    if isinstance(value, str):
        if len(value.split()) >= 3:
            out.append(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _collect_sentences(getattr(value, field.name), out)
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect_sentences(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect_sentences(item, out)


def within_card_cosines(encoder: Any, groups: Sequence[Sequence[str]]) -> np.ndarray:
    """The cosines of every pair of distinct sentences of the same group, in a fixed order."""
    out = []
    for texts in groups:
        rows = np.asarray(encoder.encode(list(texts)), dtype=np.float64)
        upper = np.triu_indices(len(texts), k=1)
        out.append((rows @ rows.T)[upper])
    return np.concatenate(out) if out else np.zeros(0)


def fit_cosine_map(source: np.ndarray, reference: np.ndarray, knots: int = KNOTS) -> CosineMap:
    """Quantile-matches the cosines of the same pairs under two encoders.

    Args:
        source: The encoder's cosines of the calibration pairs.
        reference: MiniLM's cosines of the same pairs.
        knots: Number of quantile levels.

    Returns:
        The map, anchored at -1 → -1 and 1 → 1 beyond the observed range.

    Raises:
        ValueError: Fewer than two pairs, or the inputs differ in length.
    """
    source, reference = np.asarray(source, float), np.asarray(reference, float)
    if source.shape != reference.shape or source.size < 2:
        raise ValueError("fit_cosine_map needs the same (at least two) pairs under both encoders")
    levels = np.linspace(0.0, 1.0, knots)
    xs = np.quantile(source, levels)
    ys = np.maximum.accumulate(np.quantile(reference, levels))
    # Ties in the encoder's quantiles (repeated cosines) would give a non-increasing knot list:
    # keep the first knot of each run. Round to 6 decimals so the stored map reloads exactly.
    keep = np.concatenate([[True], np.diff(xs) > 1e-6])
    xs, ys = np.round(xs[keep], 6), np.round(ys[keep], 6)
    source_knots = [-1.0, *(x for x in xs if -1.0 < x < 1.0), 1.0]
    reference_knots = [-1.0, *(y for x, y in zip(xs, ys, strict=True) if -1.0 < x < 1.0), 1.0]
    reference_knots = list(np.clip(np.maximum.accumulate(reference_knots), -1.0, 1.0))
    return CosineMap(tuple(map(float, source_knots)), tuple(map(float, reference_knots)))


def _digest(groups: Sequence[Sequence[str]], reference_name: str) -> str:
    payload = json.dumps({"texts": groups, "reference": reference_name, "knots": KNOTS})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def load_or_fit_cosine_map(
    encoder: Any,
    folder: Path,
    reference: Any | None = None,
    groups: Sequence[Sequence[str]] | None = None,
) -> CosineMap:
    """The encoder's map to MiniLM's scale, cached as JSON in ``folder``.

    The cache file is named by a hash of the calibration texts and the reference encoder's
    name, so editing a shipped card refits it. It is written to a temporary file and renamed
    into place (a crash leaves no half file; concurrent writers write the same bytes).

    Args:
        encoder: The encoder to calibrate.
        folder: Where the map is cached (the static model's cache folder).
        reference: The reference encoder (default: MiniLM, built only when a fit is needed).
        groups: The calibration set (default :func:`calibration_texts`).
    """
    from dialogue_gym.mind.minilm import MiniLMEncoder

    groups = calibration_texts() if groups is None else [list(g) for g in groups]
    reference_name = "minilm" if reference is None else str(reference.name)
    path = folder / f"cosine-map-{_digest(groups, reference_name)}.json"
    if path.is_file():
        try:
            return CosineMap.from_dict(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError):
            pass  # a damaged file is refitted and replaced below
    reference = MiniLMEncoder() if reference is None else reference
    cosine_map = fit_cosine_map(
        within_card_cosines(encoder, groups), within_card_cosines(reference, groups)
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(cosine_map.to_dict()) + "\n")
    os.replace(tmp, path)
    return cosine_map
