"""Assembling an environment: its components built from a spec's keyword options.

:func:`assemble_env` turns the keyword options of :func:`dialogue_gym.make` (a card name, a
user preset, ``encoder="minilm"``, ``judges="llm"``, ``backend="openai:..."``, ``threads=1``,
...) into the built :class:`~dialogue_gym.env.parts.EnvParts` a
:class:`~dialogue_gym.env.dialogue_env.DialogueEnv` receives; it is the one place that applies the
process-wide torch thread setting (:func:`dialogue_gym.mind.threads.apply_threads`), so that
building a ``DialogueEnv`` from ready parts changes nothing outside it.

The user seat is filled through :func:`make_user`: the card's user model under a preset
(``"soft"``/``"hard"``), an LLM user (``"llm-<preset>"``) or an LLM-worded cognitive user
(``realizer="llm"``), optionally drawing its personas (or a seller's listings) from the task's
real corpus, which the card names in ``[corpus] name`` (:func:`corpus_pools`).
:func:`make_judges` builds the success and rationality judges (embedded, LLM, or given),
:func:`make_backend_for` the LLM backend.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialogue_gym.cards.card import TaskCard, builtin_cards, load_card
from dialogue_gym.cards.sections import TaskTable
from dialogue_gym.cards.task_plugin import plugin_of
from dialogue_gym.env.parts import (
    SYSTEM,
    EnvOptions,
    EnvParts,
    Judges,
    LLMLink,
    Mind,
    Opening,
    Policy,
    Seats,
)
from dialogue_gym.judges import default_success_judge
from dialogue_gym.judges.base import RationalityJudge, SuccessJudge
from dialogue_gym.judges.embedded import StateRationalityJudge
from dialogue_gym.mentalizers import OracleTeacher, Student, Teacher
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym.mind.latent import LatentSpace, RewardWeights
from dialogue_gym.mind.threads import apply_threads
from dialogue_gym.users import build_user
from dialogue_gym.users.base import UserSimulator
from dialogue_gym.users.cognitive import UserPreset

if TYPE_CHECKING:  # the LLM stack loads only when an env uses it
    from dialogue_gym.backends.base import Backend

__all__ = [
    "CORPORA",
    "PIN_POOLS",
    "CorpusPools",
    "assemble_env",
    "corpus_pools",
    "make_backend_for",
    "make_judges",
    "make_user",
    "pinned",
]

PIN_POOLS = {"persona": "personas", "listing": "listings"}
"""``reset(options=...)`` keys that pin the episode's user → the user's pool attribute."""


CORPORA: Mapping[str, str] = TaskTable(
    lambda card: card.corpus.name if card.corpus else None,
    lambda: (load_card(name) for name in builtin_cards()),
)
"""Task id → corpus name of the shipped cards (``{"P4G": "p4g", ...}``), kept for code that
has only a task id; code holding a card reads ``card.corpus`` (third-party cards included),
and :data:`dialogue_gym.env.tasks.CORPUS_OF_TASK` covers every registered card."""


class CorpusPools(dict[str, tuple[Any, ...]]):
    """User pools drawn from a corpus (``personas`` or ``listings``), with their openings.

    Attributes:
        openings: Pool item id → the real turns that open its episodes (``h0_turns``).
    """

    def __init__(self, pools: Mapping[str, tuple[Any, ...]], openings: Mapping[str, Opening]):
        super().__init__(pools)
        self.openings = dict(openings)


def assemble_env(
    card: str | TaskCard,
    user: str | UserPreset | UserSimulator = "hard",
    encoder: str | Encoder = "minilm",
    external: Sequence[str] = (SYSTEM,),
    system_policy: Policy | None = None,
    max_exchanges: int | None = None,
    weights: RewardWeights | Mapping[str, float] | None = None,
    alphas: Sequence[float] = (1.0, 1.0, 1.0),
    privileged: bool = False,
    student: Student | None = None,
    teacher: Teacher | None = None,
    success_judge: SuccessJudge | Callable[[TaskCard], SuccessJudge] | None = None,
    rationality_judge: RationalityJudge | Callable[[TaskCard], RationalityJudge] | None = None,
    max_utterance_chars: int = 2000,
    render_mode: str | None = None,
    env_id: str | None = None,
    data: str | Path | bool | None = None,
    split: str = "test",
    h0_turns: int = 0,
    judges: str = "embedded",
    realizer: str = "template",
    backend: Any = None,
    backend_cache: str | Path | None = None,
    cache_mode: str = "rw",
    backend_options: Mapping[str, Any] | None = None,
    threads: int | None = None,
) -> EnvParts:
    """Builds an env's parts from the keyword options of :func:`dialogue_gym.make`.

    Applies the torch thread setting first (process-wide; before any torch model is built):
    this is the step of :func:`dialogue_gym.make` and :meth:`DialogueEnv.from_options
    <dialogue_gym.env.dialogue_env.DialogueEnv.from_options>` that does, never the env's
    constructor.

    Args:
        card: Task card name (``"p4g"``), path, or a loaded :class:`TaskCard` (no default:
            the core prefers no task).
        user: User preset name (``"soft"``/``"hard"``), a :class:`UserPreset`, or a ready
            :class:`UserSimulator`. ``"llm-soft"`` / ``"llm-hard"``: an LLM conditioned on its
            current BDI state, profile and goal writes the replies, while the card's simulator
            tracks the state.
        encoder: Encoder name (``"minilm"``, ``"static"``, ``"hashing"``) or object, shared by
            the latent space and the embedded user.
        external: The seats driven by the caller of ``step``: ``("system",)`` (default),
            ``("system", "user")`` (self-play) or ``("user",)``.
        system_policy: Policy filling the system seat when it is not external.
        max_exchanges: Exchange budget T (default: the card's, 8).
        weights: Reward weights (w_prog, w_inf, w_rat, γ).
        alphas: Scalar weights (α_ρ, α_c, α_v) of the latent space.
        privileged: Put the teacher state and simulator internals in ``infos[...]["privileged"]``.
        student: Student mentalizer whose estimate ẑ the system observes (rendered as text)
            and which enters r_S's inference term.
        teacher: Reward-side mentalizer (default: the oracle reading the simulator).
        success_judge: Success judge, or a class/factory called with the card (default: the
            embedded state judge).
        rationality_judge: Rationality judge, likewise (default: the embedded state judge).
        max_utterance_chars: Longer actions are truncated (flagged).
        render_mode: ``"ansi"`` (``render()`` returns the transcript) or ``"human"`` (prints).
        env_id: Registry id, stamped into infos.
        data: Draw episodes from the task's real corpus instead of the persona bank: a corpus
            folder or file, or ``True`` for the folder in ``$DIALOGUE_GYM_DATA``. Each
            episode's user is built from a real participant profile or situation of the
            ``split`` (see :mod:`dialogue_gym.users.corpus`).
        split: The corpus split to draw from (the held-out ``"test"`` split by default).
        h0_turns: With ``data``, open every episode with this many real turns of the source
            dialogue (context only: the user's state starts from its profile, not from them).
        judges: ``"embedded"`` (default: read the simulator's state) or ``"llm"`` (the paper's
            LLM success judge with n sampled votes and the rationality judge, on ``backend``).
            Explicit ``success_judge``/``rationality_judge`` objects take precedence.
        realizer: ``"template"`` (default) or ``"llm"``: the user's state machine decides and
            the LLM words the reply in the persona's style (cognitive users only).
        backend: The LLM backend for ``judges="llm"``, ``realizer="llm"`` and the
            ``"llm-soft"``/``"llm-hard"`` users: a spec such as ``"openai:gpt-4o-mini"``,
            ``"hf:smollm2"`` or ``"fake"``, or a backend object (which stays the caller's:
            the env closes only a backend it built from a spec).
        backend_cache: SQLite record/replay cache for the backend's calls.
        cache_mode: ``"rw"`` (record and replay), ``"replay"`` (replay only: a miss is an error,
            never a call) or ``"off"``.
        backend_options: Keyword arguments for the backend (e.g. ``base_url``,
            ``max_concurrency``, ``api_key_env``, ``timeout``, ``max_retries``).
        threads: Torch intra-op threads for the small encoder (process-wide); ``None``: one
            thread unless ``DIALOGUE_GYM_THREADS`` / ``OMP_NUM_THREADS`` say otherwise (see
            :mod:`dialogue_gym.mind.threads`).

    Returns:
        The parts: ``DialogueEnv(**parts.as_kwargs())`` is the env.

    Raises:
        ValueError: A bad option (seats, render mode, budget, judges/realizer names, a missing
            backend for LLM components, ``data`` with a ready user, a bad thread count).
    """
    apply_threads(threads)  # before any torch model is built (small batches: 1 thread)
    card = card if isinstance(card, TaskCard) else load_card(card)
    seats = Seats(tuple(external), system_policy)
    options = EnvOptions(max_exchanges, privileged, max_utterance_chars, render_mode, env_id)
    if weights is None:
        weights = RewardWeights()
    elif isinstance(weights, Mapping):
        weights = RewardWeights(**weights)
    built_encoder = make_encoder(encoder)
    if threads is not None:  # loading MiniLM applies the default: an explicit count wins
        apply_threads(threads)
    latent = LatentSpace(built_encoder, *alphas)
    if judges not in ("embedded", "llm") or realizer not in ("template", "llm"):
        raise ValueError(
            f"judges must be 'embedded' or 'llm' and realizer 'template' or 'llm', got "
            f"judges={judges!r}, realizer={realizer!r}"
        )
    needs_llm = judges == "llm" or realizer == "llm" or str(user).startswith("llm-")
    if needs_llm and backend is None:
        raise ValueError("LLM components need backend=<spec or object>, e.g. 'openai:MODEL'")
    llm = (
        LLMLink(
            make_backend_for(backend, backend_cache, cache_mode, backend_options or {}),
            owned=isinstance(backend, str),  # built here: closed by the env
        )
        if needs_llm
        else None
    )
    llm_backend = llm.backend if llm is not None else None
    if isinstance(user, (str, UserPreset)):
        pools: Mapping[str, Any] = {}
        if data not in (None, False):
            pools = corpus_pools(card, data, split, h0_turns)
            options = dataclasses.replace(options, openings=pools.openings)
        user = make_user(card, built_encoder, user, realizer, llm_backend, pools)
    elif data not in (None, False):
        raise ValueError("data= draws personas for the built-in users; pass a preset as user")
    mind = Mind(latent, teacher or OracleTeacher(), student)
    built_judges = make_judges(card, judges, llm_backend, success_judge, rationality_judge)
    return EnvParts(card, user, built_judges, mind, weights, seats, options, llm)


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
    from dialogue_gym.users.corpus import personas_from_seeds

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
    name, items = plugin_of(card).seed_users(card, seeds) or (
        "persona",
        personas_from_seeds(card, seeds),
    )
    pool = {f"{name}s": items}  # the user's pool keyword: listing -> listings
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
) -> Judges:
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
    return Judges(
        _build(success_judge, card, default_success_judge),
        _build(rationality_judge, card, StateRationalityJudge),
    )


def _build(component: Any, card: TaskCard, default: Callable[[TaskCard], Any]) -> Any:
    if component is None:
        return default(card)
    if isinstance(component, type) or (callable(component) and not hasattr(component, "judge")):
        return component(card)
    return component
