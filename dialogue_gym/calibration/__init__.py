"""Calibration of the embedded world on the corpora's train splits (issue 15, item 2).

``dialogue-gym data fit [TASK ...] --data PATH [--out DIR]`` runs the registered fitters
(:data:`FITTERS`) on each corpus's TRAIN split and writes ``<task>.json`` tables of aggregate
numbers with their provenance; the shipped defaults (``tables/<task>.json`` in the task's
plug-in) are such tables, recomputed by rerunning it on the project's data root. Held-out
dialogues never enter a fit.

This package is the generic machinery: the fit registry (:mod:`dialogue_gym.calibration.fit`)
and the word/bigram linear readers (:mod:`dialogue_gym.calibration.text_reader`). The fitters
themselves belong to the tasks' plug-ins, which register them when imported: with the shipped
cards, ``cb`` (:mod:`dialogue_gym.plugins.cb.calibration`, the seller's floor ranges), ``p4g``
(:mod:`dialogue_gym.plugins.p4g.calibration`, the persuadee stance and persuader ask and
appeal readers; shipped), ``p4g-persona`` (:mod:`dialogue_gym.plugins.p4g.persona`, the
persuadee's donation propensity; shipped) and ``esconv``
(:mod:`dialogue_gym.plugins.esconv.calibration`, the seeker readers; CC BY-NC 4.0 data: not
shipped, fitted by the validator on the train split it loads).

:data:`ASK_DETECTORS`: the learned detectors of a system turn that asks for the goal, by table
name; a card turns one on for its users with ``[corpus] ask_reader`` (the P4G card does).
:data:`APPEAL_READERS`: the learned readers of the appeals a system turn makes (corpus strategy
labels); a card turns one on with ``[corpus] appeal_reader`` (the P4G card does). Both are
read from the registered cards' plug-ins (their ``ask_detectors`` and ``appeal_readers``).
"""

from __future__ import annotations

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
from dialogue_gym.plugin_index import Contributions

ASK_DETECTORS = Contributions("ask_detectors")
"""Table name → a function returning its shipped ask detector (text → is it an ask)."""

APPEAL_READERS = Contributions("appeal_readers")
"""Table name → a function returning its shipped appeal reader (text → the corpus strategy
labels of the appeals it makes)."""

__all__ = [
    "APPEAL_READERS",
    "ASK_DETECTORS",
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
