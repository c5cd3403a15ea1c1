"""Loaders for the public dialogue corpora: P4G, ESConv, EmpatheticDialogues, CraigslistBargain.

Corpora are never shipped with the package: the loaders read the standard public formats from
a path (``--data DIR`` on the command line, ``path=`` here, or ``$DIALOGUE_GYM_DATA``).

Quick start::

    from dialogue_gym.data import load_corpus, seeds_from

    test = load_corpus("esconv", "/data", split="test")      # list[Dialogue]
    seeds = seeds_from(test, goal="Help the seeker feel better.", h0_turns=2)

Every corpus maps onto one record type (:class:`Dialogue` of :class:`Turn`) with one role
convention (the *system* steers: persuader, supporter, listener, buyer); see
:mod:`dialogue_gym.data.records`. Each corpus module (:mod:`~dialogue_gym.data.p4g`,
:mod:`~dialogue_gym.data.esconv`, :mod:`~dialogue_gym.data.ed`, :mod:`~dialogue_gym.data.cb`)
documents its formats, splits and field mapping. Malformed files raise :class:`CorpusError`
naming the file and line.
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
from dialogue_gym.data.p4g import split_of as p4g_split_of
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
    "p4g_split_of",
    "seeds_from",
]
