"""Task cards and what reads them: the catalog as data (``envs/*.toml``).

* :mod:`dialogue_gym.cards.card` — :class:`TaskCard` and its parts, :func:`load_card`,
  :func:`card_header`, :func:`builtin_cards` (the card as a whole);
* :mod:`dialogue_gym.cards.sections` — the sections that tie a card into the package
  (``[catalog]``, ``[agents]``, ``[corpus]``, ``[llm]``, ``[brief]``, ``[task] plugin``);
* :mod:`dialogue_gym.cards.schema` — the field-by-field checks (:class:`CardError`);
* :mod:`dialogue_gym.cards.stance` and :mod:`dialogue_gym.cards.realize` — a reply's stance by
  the card's cues, a strategy realized from the card's templates;
* :mod:`dialogue_gym.cards.task_plugin` — :class:`~dialogue_gym.cards.task_plugin.TaskPlugin`,
  the hooks of a task's own code, named by its card.

This package re-exports the names of the former module ``dialogue_gym.cards`` (now
:mod:`dialogue_gym.cards.card`), so ``from dialogue_gym.cards import load_card`` works as
before. Modules of the package import from the submodules, never from here.
"""

from __future__ import annotations

from dialogue_gym.cards.card import (
    BDI,
    FACETS,
    REQUIRED_MIND,
    REQUIRED_REPLIES,
    SCHEMA_VERSION,
    CardError,
    CardHeader,
    CatalogEntry,
    Concern,
    CorpusSpec,
    PersonaIngredients,
    PromptWording,
    Strategy,
    Style,
    TaskCard,
    builtin_cards,
    card_header,
    load_card,
    parse_card,
)
from dialogue_gym.cards.judge_spec import STANCES, SuccessJudgeSpec

__all__ = [
    "BDI",
    "FACETS",
    "REQUIRED_MIND",
    "REQUIRED_REPLIES",
    "SCHEMA_VERSION",
    "STANCES",
    "CardError",
    "CardHeader",
    "CatalogEntry",
    "Concern",
    "CorpusSpec",
    "PersonaIngredients",
    "PromptWording",
    "Strategy",
    "Style",
    "SuccessJudgeSpec",
    "TaskCard",
    "builtin_cards",
    "card_header",
    "load_card",
    "parse_card",
]
