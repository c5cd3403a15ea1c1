"""Loaders for the public dialogue corpora: P4G, ESConv, EmpatheticDialogues, CraigslistBargain.

Corpora are never shipped with the package: the loaders read the standard public formats from
a path (``--data DIR`` on the command line, ``path=`` here, or ``$DIALOGUE_GYM_DATA``).

Quick start::

    from dialogue_gym.data import load_corpus, seeds_from

    test = load_corpus("esconv", "/data", split="test")      # list[Dialogue]
    seeds = seeds_from(test, goal="Help the seeker feel better.", h0_turns=2)

Every corpus maps onto one record type (:class:`Dialogue` of :class:`Turn`) with one role
convention (the *system* steers: persuader, supporter, listener, buyer); see
:mod:`dialogue_gym.data.records`. Each corpus's loader sits in its task's plug-in
(:mod:`~dialogue_gym.plugins.p4g.loader`, :mod:`~dialogue_gym.plugins.esconv.loader`,
:mod:`~dialogue_gym.plugins.ed.loader`, :mod:`~dialogue_gym.plugins.cb.loader`; found through
:data:`CORPORA`) and documents its formats, splits and field mapping. Malformed files raise
:class:`CorpusError` naming the file and line.
"""

from __future__ import annotations

from dialogue_gym.data.corpora import (
    CORPORA,
    ENV_VAR,
    FOLDER_NAMES,
    CorpusFiles,
    corpus_folder,
    corpus_name,
    data_root,
    find_corpora,
    guess_corpus,
    load_corpus,
    load_format,
)
from dialogue_gym.data.errors import CorpusError, DataNotFoundError
from dialogue_gym.data.records import ROLES, Dialogue, EpisodeSeed, Turn, seeds_from

__all__ = [
    "CORPORA",
    "ENV_VAR",
    "FOLDER_NAMES",
    "ROLES",
    "CorpusError",
    "CorpusFiles",
    "DataNotFoundError",
    "Dialogue",
    "EpisodeSeed",
    "Turn",
    "corpus_folder",
    "corpus_name",
    "data_root",
    "find_corpora",
    "guess_corpus",
    "load_corpus",
    "load_format",
    "seeds_from",
]
