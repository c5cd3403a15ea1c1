"""Shared pieces of the LLM components: prompt builders and output parsers.

* :mod:`dialogue_gym.llm.prompts` — the MASP prompts (success and rationality judges, the LLM
  user, the realizer, the Oracle Belief Updater), with the dialogue delimited and neutralized.
* :mod:`dialogue_gym.llm.parsing` — tolerant parsers for judge labels, RATIONAL/NOT_RATIONAL,
  deals and prices, and the six BDI fields.

The components themselves live with their kind: :mod:`dialogue_gym.judges.llm`,
:mod:`dialogue_gym.users.llm`, :mod:`dialogue_gym.mentalizers.annotator` and
:mod:`dialogue_gym.mentalizers.llm`.
"""

from __future__ import annotations

from dialogue_gym.llm import parsing, prompts
from dialogue_gym.llm.parsing import (
    BDIParse,
    DealVote,
    clean_utterance,
    parse_bdi,
    parse_deal,
    parse_label,
    parse_price,
    parse_rationality,
)
from dialogue_gym.llm.prompts import PROMPT_VERSION, Message, quote_turn, render_dialogue

__all__ = [
    "PROMPT_VERSION",
    "BDIParse",
    "DealVote",
    "Message",
    "clean_utterance",
    "parse_bdi",
    "parse_deal",
    "parse_label",
    "parse_price",
    "parse_rationality",
    "parsing",
    "prompts",
    "quote_turn",
    "render_dialogue",
]
