"""Building an environment's components: its user, its judges and its LLM backend.

:class:`~dialogue_gym.env.DialogueEnv` fills its user seat through :func:`make_user`: the
card's user model under a preset (``"soft"``/``"hard"``), an LLM user (``"llm-<preset>"``)
or an LLM-worded cognitive user (``realizer="llm"``), optionally drawing its personas (or a
seller's listings) from the task's real corpus, which the card names in ``[corpus] name``
(:func:`corpus_pools`). :func:`make_judges` builds the success and rationality judges
(embedded, LLM, or given), :func:`make_backend_for` the LLM backend.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialogue_gym.card_sections import TaskTable
from dialogue_gym.cards import TaskCard, builtin_cards, load_card
from dialogue_gym.judges import default_success_judge
from dialogue_gym.judges.base import RationalityJudge, SuccessJudge
from dialogue_gym.judges.embedded import StateRationalityJudge
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users import build_user
from dialogue_gym.users.base import UserSimulator
from dialogue_gym.users.cognitive import UserPreset

if TYPE_CHECKING:  # the LLM stack loads only when an env uses it
    from dialogue_gym.backends.base import Backend

__all__ = [
    "CORPORA",
    "PIN_POOLS",
    "CorpusPools",
    "corpus_pools",
    "make_backend_for",
    "make_judges",
    "make_user",
    "pinned",
]

PIN_POOLS = {"persona": "personas", "listing": "listings"}
"""``reset(options=...)`` keys that pin the episode's user → the user's pool attribute."""

Opening = tuple[tuple[str, str], ...]


CORPORA: Mapping[str, str] = TaskTable(
    lambda card: card.corpus.name if card.corpus else None,
    lambda: (load_card(name) for name in builtin_cards()),
)
"""Task id → corpus name of the shipped cards (``{"P4G": "p4g", ...}``), kept for code that
has only a task id; code holding a card reads ``card.corpus`` (third-party cards included),
and :data:`dialogue_gym.tasks.CORPUS_OF_TASK` covers every registered card."""


class CorpusPools(dict[str, tuple[Any, ...]]):
    """User pools drawn from a corpus (``personas`` or ``listings``), with their openings.

    Attributes:
        openings: Pool item id → the real turns that open its episodes (``h0_turns``).
    """

    def __init__(self, pools: Mapping[str, tuple[Any, ...]], openings: Mapping[str, Opening]):
        super().__init__(pools)
        self.openings = dict(openings)


def make_user(
    card: TaskCard,
    encoder: Encoder,
    user: str | UserPreset,
    realizer: str,
    backend: Backend | None,
    pools: Mapping[str, Any],
) -> UserSimulator:
    """The user named by a preset, ``"llm-<preset>"``, and the realizer choice.

    Raises:
        ValueError: ``realizer="llm"`` for a card whose user model is not cognitive.
    """
    if isinstance(user, str) and user.startswith("llm-"):
        from dialogue_gym.users.llm import LLMUser

        return LLMUser(card, encoder, preset=user[4:], backend=backend, **pools)
    if realizer == "llm":
        if card.user_model != "cognitive":
            raise ValueError(f"realizer='llm' needs a cognitive user; {card.id} has none")
        from dialogue_gym.users.llm import LLMRealizedUser

        return LLMRealizedUser(card, encoder, preset=user, backend=backend, **pools)
    return build_user(card, encoder, user, **pools)


def corpus_pools(card: TaskCard, data: str | Path | bool, split: str, h0_turns: int) -> CorpusPools:
    """User pools (personas, or a seller's listings) and openings from the card's corpus.

    Args:
        card: The task card; its ``[corpus] name`` says which corpus.
        data: A corpus folder or file, or ``True`` for ``$DIALOGUE_GYM_DATA``.
        split: The split to draw from.
        h0_turns: Real turns of the source dialogue that open each episode.

    Raises:
        ValueError: The card names no corpus.
    """
    from dialogue_gym.data import load_corpus, seeds_from  # the loaders are optional weight
    from dialogue_gym.users.corpus import listings_from_seeds, personas_from_seeds

    if card.corpus is None:
        raise ValueError(
            f"task {card.id!r} has no corpus: its card names none ([corpus] name); the shipped "
            f"tasks with one are {sorted(CORPORA)}"
        )
    path = Path(data) if isinstance(data, (str, Path)) else None  # True: $DIALOGUE_GYM_DATA
    seeds = seeds_from(load_corpus(card.corpus.name, path, split=split), card.goal, h0_turns)
    openings = {
        f"{seed.corpus}:{seed.dialogue_id}": tuple((t.role, t.text) for t in seed.h0 if t.text)
        for seed in seeds
    }
    if card.user_model == "seller":
        pool: dict[str, tuple[Any, ...]] = {"listings": listings_from_seeds(card, seeds)}
    else:
        pool = {"personas": personas_from_seeds(card, seeds)}
    ids = {item.id for items in pool.values() for item in items}
    return CorpusPools(pool, {key: turns for key, turns in openings.items() if key in ids})


@contextlib.contextmanager
def pinned(user: UserSimulator, options: Mapping[str, Any] | None) -> Iterator[None]:
    """Restricts the user's persona/listing pool to the pinned item during one reset.

    Raises:
        ValueError: A pin the user model has no pool for.
    """
    pins = {
        key: value
        for key, value in (options or {}).items()
        if key in PIN_POOLS and value is not None
    }
    # An LLM user delegates its persona draw to the state machine it wraps.
    owner = getattr(user, "inner", user)
    saved: dict[str, Any] = {}
    try:
        for key, value in pins.items():
            pool = PIN_POOLS[key]
            if not isinstance(getattr(owner, pool, None), tuple):
                raise ValueError(
                    f"reset(options={{{key!r}: ...}}): the {type(owner).__name__} user has "
                    f"no {pool} pool to pin a {key} in"
                )
            saved[pool] = getattr(owner, pool)
            setattr(owner, pool, (value,))
        yield
    finally:
        for pool, items in saved.items():
            setattr(owner, pool, items)


def make_backend_for(
    backend: Any, cache: str | Path | None, mode: str, options: Mapping[str, Any]
) -> Any:
    """The env's LLM backend from a spec string (with ``options``) or a backend object."""
    from dialogue_gym.backends import make_backend  # the LLM stack loads only when used

    if not isinstance(backend, str):
        return make_backend(backend, cache=cache, cache_mode=mode)
    return make_backend(backend, cache=cache, cache_mode=mode, **options)


def make_judges(
    card: TaskCard,
    judges: str,
    backend: Backend | None,
    success_judge: SuccessJudge | Callable[[TaskCard], SuccessJudge] | None,
    rationality_judge: RationalityJudge | Callable[[TaskCard], RationalityJudge] | None,
) -> tuple[Any, Any]:
    """The success and rationality judges.

    Given ones first (objects, or classes/factories called with the card), else the LLM judges
    for ``judges="llm"`` (with a backend), else the embedded ones.
    """
    if judges == "llm" and backend is not None:
        if success_judge is None:
            from dialogue_gym.judges.llm import LLMSuccessJudge

            success_judge = LLMSuccessJudge(card, backend)
        if rationality_judge is None:
            from dialogue_gym.judges.llm import LLMRationalityJudge

            rationality_judge = LLMRationalityJudge(card, backend)
    return (
        _build(success_judge, card, default_success_judge),
        _build(rationality_judge, card, StateRationalityJudge),
    )


def _build(component: Any, card: TaskCard, default: Callable[[TaskCard], Any]) -> Any:
    if component is None:
        return default(card)
    if isinstance(component, type) or (callable(component) and not hasattr(component, "judge")):
        return component(card)
    return component
