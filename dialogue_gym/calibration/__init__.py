"""Calibration of the embedded world on the corpora's train splits (issue 15, item 2).

``dialogue-gym data fit [TASK ...] --data PATH [--out DIR]`` runs the registered fitters
(:data:`FITTERS`) on each corpus's TRAIN split and writes ``<task>.json`` tables of aggregate
numbers with their provenance; the shipped defaults (``tables/<task>.json``) are such tables,
recomputed by rerunning it on the project's data root. Held-out dialogues never enter a fit.

Fitters: ``cb`` (:mod:`dialogue_gym.calibration.cb`), the seller's floor ranges; ``p4g``
(:mod:`dialogue_gym.calibration.p4g`), the persuadee stance and persuader ask and appeal
readers (shipped); ``p4g-persona`` (:mod:`dialogue_gym.calibration.p4g_persona`), the
persuadee's donation propensity from the survey, which sets a pinned persona's starting
willingness (shipped); ``esconv`` (:mod:`dialogue_gym.calibration.esconv`), the seeker readers
(CC BY-NC 4.0 data: not shipped, fitted by the validator on the train split it loads). The
readers are word/bigram linear models (:mod:`dialogue_gym.calibration.text_reader`).

:data:`ASK_DETECTORS`: the learned detectors of a system turn that asks for the goal, by table
name; a card turns one on for its users with ``[corpus] ask_reader`` (the P4G card does).
:data:`APPEAL_READERS`: the learned readers of the appeals a system turn makes (corpus strategy
labels); a card turns one on with ``[corpus] appeal_reader`` (the P4G card does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dialogue_gym.calibration import cb, esconv, p4g, p4g_persona
from dialogue_gym.calibration.fit import (
    FITTERS,
    TRAIN,
    CalibrationError,
    Fitter,
    fit,
    ids_sha256,
    load_table,
    register,
    shipped_table,
    table_path,
    write_table,
)

ASK_DETECTORS: Mapping[str, Callable[[], Callable[[str], bool]]] = {
    "p4g": p4g.shipped_ask_detector,
}
"""Table name → a function returning its shipped ask detector (text → is it an ask)."""

APPEAL_READERS: Mapping[str, Callable[[], Callable[[str], frozenset[str]]]] = {
    "p4g": p4g.shipped_appeal_reader,
}
"""Table name → a function returning its shipped appeal reader (text → the corpus strategy
labels of the appeals it makes)."""

__all__ = [
    "APPEAL_READERS",
    "ASK_DETECTORS",
    "FITTERS",
    "TRAIN",
    "CalibrationError",
    "Fitter",
    "cb",
    "esconv",
    "fit",
    "ids_sha256",
    "load_table",
    "p4g",
    "p4g_persona",
    "register",
    "shipped_table",
    "table_path",
    "write_table",
]
