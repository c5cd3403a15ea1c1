"""``sft-retrieval``: behaviour cloning by nearest-neighbour response retrieval.

The index holds, for every turn of one seat in a corpus's training split, a *context key* —
an embedding of the dialogue history before that turn — and the turn's text (the response).
At play time the agent embeds its own history the same way and answers with the response of a
nearest key. No generation, no gradient: fast on a CPU, and the warm start / KL reference that
MASP's user and system policies need.

**Context key.** With ``e(·)`` the unit-normalized sentence embedding of the env's encoder
and ``u_1..u_n`` the turns so far (most recent last), the key is::

    normalize( Σ_{j=0}^{m-1} decay^j · e(u_{n-j}) )        m = min(n, context_turns)

and ``e("<conversation start>")`` for an empty history. **Score** of index entry ``i`` for a
query at position ``p`` (the number of turns the seat has already taken)::

    score_i = key_i · query − position_weight · |p_i − p| / T

so that openings answer openings and late turns answer late turns. The agent draws uniformly
among the ``top_k`` best-scoring responses it has not said yet this episode (its own generator,
seeded by :meth:`RetrievalAgent.reset`; ``top_k = 1`` is greedy).

**Checkpoint** (kind ``sft-retrieval``): ``keys.npy`` (float32, ``[n, d]``), ``positions.npy``
(int32, ``[n]``), ``responses.json`` (``[{"text", "dialogue_id", "turn", "act"}]``) and the
manifest, whose config records the seat, encoder and scoring parameters. Build one with
``dialogue-gym train sft --task P4G --seat system --method retrieval --out DIR``; load it with
``--agent sft-retrieval:DIR`` or ``sft_retrieval(card=card, checkpoint=DIR)``.

Seats: a ``system`` index plays the env's system seat (``dialogue_gym.make(id)``); a ``user``
index plays the user seat (``make(id, external=("user",), system_policy=...)``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.data import Dialogue
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    CheckpointWriter,
    CorruptCheckpointError,
    load_checkpoint,
)
from dialogue_gym_agents.common.config import config_to_dict, option
from dialogue_gym_agents.common.seeding import generators
from dialogue_gym_agents.common.tracking import RunLogger, progress_bar
from dialogue_gym_agents.sft.config import SFTConfig
from dialogue_gym_agents.training.corpora import (
    SFT_FORMATS,
    TRAIN_SPLITS,
    corpus_of,
    load_training_dialogues,
)

__all__ = [
    "KIND",
    "SEATS",
    "START",
    "RetrievalAgent",
    "RetrievalConfig",
    "RetrievalIndex",
    "RetrievalParams",
    "build_index",
    "context_keys",
    "load_index",
    "save_index",
    "sft_retrieval",
    "train_retrieval",
]

KIND = "sft-retrieval"
"""The checkpoint kind and agent name."""

SEATS = ("system", "user")
"""Seat names; a seat's speaker id in observations is its index here."""

START = "<conversation start>"
"""The text embedded as the context of a conversation's first turn."""

KEYS_FILE, POSITIONS_FILE, RESPONSES_FILE = "keys.npy", "positions.npy", "responses.json"


@dataclasses.dataclass(frozen=True)
class RetrievalParams:
    """How contexts are keyed and responses chosen.

    Attributes:
        context_turns: Turns of history in a context key (most recent first).
        decay: Weight factor per turn back in the history.
        top_k: Draw among this many best responses (1: greedy).
        position_weight: Penalty per T of position difference.
        max_exchanges: T, the position scale (the task's exchange budget).
    """

    context_turns: int = 3
    decay: float = 0.5
    top_k: int = 5
    position_weight: float = 0.5
    max_exchanges: int = 8

    def __post_init__(self) -> None:
        if self.context_turns < 1:
            raise ValueError(f"context_turns must be >= 1, got {self.context_turns}")
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {self.decay}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {self.top_k}")
        if self.position_weight < 0:
            raise ValueError(f"position_weight must be >= 0, got {self.position_weight}")
        if self.max_exchanges < 1:
            raise ValueError(f"max_exchanges must be >= 1, got {self.max_exchanges}")


@dataclasses.dataclass(frozen=True)
class RetrievalIndex:
    """Context keys and the responses that followed them.

    Attributes:
        keys: ``[n, d]`` float32 unit vectors.
        positions: ``[n]`` int32: turns the seat had taken before each response.
        responses: ``n`` records ``{"text", "dialogue_id", "turn", "act"}``.
    """

    keys: np.ndarray
    positions: np.ndarray
    responses: tuple[dict[str, Any], ...]

    def __len__(self) -> int:
        return len(self.responses)


# -- keys ------------------------------------------------------------------------------------------


def _normalize(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def context_keys(
    histories: Sequence[Sequence[str]],
    encoder: Encoder,
    params: RetrievalParams,
    embedded: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """The context keys of several histories (see the module docstring).

    Args:
        histories: Each a list of turn texts, oldest first.
        encoder: The sentence encoder.
        params: ``context_turns`` and ``decay``.
        embedded: Text → embedding, precomputed (texts missing from it are encoded here).

    Returns:
        ``[len(histories), d]`` float32 unit vectors.
    """
    table = dict(embedded or {})
    needed = {START} | {t for h in histories for t in h[-params.context_turns :]}
    missing = [t for t in needed if t not in table]
    if missing:
        for text, row in zip(missing, np.asarray(encoder.encode(missing)), strict=True):
            table[text] = row
    dim = len(table[START])
    keys = np.zeros((len(histories), dim), dtype=np.float64)
    for i, history in enumerate(histories):
        recent = list(history[-params.context_turns :])[::-1]
        if not recent:
            keys[i] = table[START]
        for j, text in enumerate(recent):
            keys[i] += params.decay**j * table[text]
    return _normalize(keys)


def build_index(
    dialogues: Sequence[Dialogue],
    seat: str,
    encoder: Encoder,
    params: RetrievalParams,
    batch_size: int = 256,
    progress: bool = True,
) -> RetrievalIndex:
    """Builds the index of ``seat``'s non-empty turns in ``dialogues``.

    Raises:
        ValueError: Unknown seat, or the dialogues hold no non-empty turn of the seat.
    """
    if seat not in SEATS:
        raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
    histories: list[list[str]] = []
    positions: list[int] = []
    responses: list[dict[str, Any]] = []
    for dialogue in dialogues:
        history: list[str] = []
        taken = 0
        for index, turn in enumerate(dialogue.turns):
            if turn.role == seat and turn.text:
                histories.append(list(history))
                positions.append(taken)
                responses.append(
                    {"text": turn.text, "dialogue_id": dialogue.id, "turn": index, "act": turn.act}
                )
            if turn.role == seat:
                taken += 1
            if turn.text:
                history.append(turn.text)
    if not responses:
        raise ValueError(f"the dialogues hold no {seat} turns with text to index")
    texts = list(
        dict.fromkeys([START, *(t for h in histories for t in h[-params.context_turns :])])
    )
    embedded: dict[str, np.ndarray] = {}
    bar = progress_bar(len(texts), "embedding contexts", progress, unit="text")
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        embedded.update(zip(chunk, np.asarray(encoder.encode(chunk)), strict=True))
        bar.update(len(chunk))
    bar.close()
    keys = context_keys(histories, encoder, params, embedded)
    return RetrievalIndex(
        keys=keys, positions=np.asarray(positions, dtype=np.int32), responses=tuple(responses)
    )


# -- storage ---------------------------------------------------------------------------------------


def save_index(index: RetrievalIndex, folder: str | Path) -> list[str]:
    """Writes the index files into ``folder``; returns their names (for the manifest)."""
    folder = Path(folder)
    np.save(folder / KEYS_FILE, index.keys.astype(np.float32), allow_pickle=False)
    np.save(folder / POSITIONS_FILE, index.positions.astype(np.int32), allow_pickle=False)
    with (folder / RESPONSES_FILE).open("w", encoding="utf-8") as handle:
        json.dump(list(index.responses), handle, ensure_ascii=False)
    return [KEYS_FILE, POSITIONS_FILE, RESPONSES_FILE]


def load_index(folder: str | Path) -> RetrievalIndex:
    """Reads index files written by :func:`save_index` (no pickles are ever loaded).

    Raises:
        CorruptCheckpointError: A file cannot be read or the arrays disagree in size.
    """
    folder = Path(folder)
    try:
        keys = np.load(folder / KEYS_FILE, allow_pickle=False)
        positions = np.load(folder / POSITIONS_FILE, allow_pickle=False)
        responses = json.loads((folder / RESPONSES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptCheckpointError(
            f"cannot read the retrieval index in {folder}: {exc}"
        ) from None
    if (
        keys.ndim != 2
        or positions.shape != (keys.shape[0],)
        or not isinstance(responses, list)
        or len(responses) != keys.shape[0]
    ):
        raise CorruptCheckpointError(
            f"the retrieval index in {folder} is inconsistent: keys {keys.shape}, positions "
            f"{positions.shape}, {len(responses) if isinstance(responses, list) else '?'} "
            "responses"
        )
    return RetrievalIndex(
        keys=keys.astype(np.float32),
        positions=positions.astype(np.int32),
        responses=tuple(responses),
    )


# -- the agent -------------------------------------------------------------------------------------


class RetrievalAgent:
    """Answers with the corpus response whose context is nearest to the current history.

    Args:
        card: The task card.
        index: The retrieval index.
        encoder: The encoder the index was built with.
        seat: The seat it plays (``"system"`` or ``"user"``).
        params: Scoring and sampling parameters.
        seed: Default seed (overridden by :meth:`reset`).

    Raises:
        ValueError: Unknown seat, or the encoder's dimension differs from the index's.
    """

    def __init__(
        self,
        card: TaskCard,
        index: RetrievalIndex,
        encoder: Encoder,
        seat: str = "system",
        params: RetrievalParams | None = None,
        seed: int | None = None,
    ) -> None:
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        self.card = card
        self.index = index
        self.encoder = encoder
        self.seat = seat
        self.params = params or RetrievalParams(max_exchanges=card.max_exchanges)
        if int(encoder.dim) != index.keys.shape[1]:
            raise ValueError(
                f"encoder {encoder.name!r} gives {encoder.dim}-d embeddings but the index keys "
                f"are {index.keys.shape[1]}-d: use the encoder the index was built with"
            )
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseeds the choice among the top-k responses."""
        self._rng = np.random.default_rng(seed)

    def scores(self, observation: dict[str, Any]) -> np.ndarray:
        """The score of every index entry for this observation (see the module docstring)."""
        texts = [t["text"] for t in observation["history"] if t["text"]]
        query = context_keys([texts], self.encoder, self.params)[0]
        own = SEATS.index(self.seat)
        taken = sum(1 for t in observation["history"] if t["speaker"] == own)
        gap = np.abs(self.index.positions.astype(np.float32) - taken)
        return self.index.keys @ query - self.params.position_weight * gap / float(
            self.params.max_exchanges
        )

    def act(self, observation: dict[str, Any]) -> str:
        """Returns a retrieved response for the seat's next turn.

        Raises:
            ValueError: The observation is of the other seat.
        """
        role = int(observation.get("role", SEATS.index(self.seat)))
        if role != SEATS.index(self.seat):
            raise ValueError(
                f"this sft-retrieval index plays the {self.seat} seat but was asked to act for "
                f"the {SEATS[role]} seat"
            )
        scores = self.scores(observation)
        said = {t["text"] for t in observation["history"]}
        order = np.argsort(-scores, kind="stable")
        picks: list[int] = []
        for i in order:
            if self.index.responses[int(i)]["text"] not in said:
                picks.append(int(i))
                if len(picks) == self.params.top_k:
                    break
        if not picks:  # everything was said already: repeat the best
            picks = [int(order[0])]
        choice = picks[int(self._rng.integers(len(picks)))] if len(picks) > 1 else picks[0]
        return str(self.index.responses[choice]["text"])


def sft_retrieval(
    card: TaskCard,
    checkpoint: str | Path | None = None,
    seed: int | None = None,
    top_k: int | None = None,
    **kwargs: Any,
) -> RetrievalAgent:
    """The ``sft-retrieval`` agent factory: ``--agent sft-retrieval:DIR``.

    Args:
        card: The task card of the env (must be the checkpoint's task).
        checkpoint: The checkpoint folder written by ``dialogue-gym train sft --method
            retrieval``.
        seed: Default seed of the response choice.
        top_k: Override the checkpoint's ``top_k``.
        **kwargs: Not used (accepted so that evaluation kwargs meant for other agents do not
            break this one).

    Raises:
        CheckpointError: No checkpoint given, or it is missing, corrupt, of another kind or
            trained for another task (see :mod:`dialogue_gym_agents.common.checkpoint`).
    """
    ckpt = load_checkpoint(checkpoint, kind=KIND, card=card, check_strategies=False)
    config = ckpt.config
    try:
        params = RetrievalParams(
            context_turns=int(config["context_turns"]),
            decay=float(config["decay"]),
            top_k=int(top_k if top_k is not None else config["top_k"]),
            position_weight=float(config["position_weight"]),
            max_exchanges=int(ckpt.info.get("max_exchanges", card.max_exchanges)),
        )
        seat = str(config["seat"])
        encoder_name = str(config["encoder"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpointError(
            f"checkpoint {ckpt.path} has an unusable retrieval config: {exc}"
        ) from None
    index = load_index(ckpt.path)
    encoder = make_encoder(encoder_name)
    if int(encoder.dim) != index.keys.shape[1]:
        raise CheckpointMismatchError(
            f"checkpoint {ckpt.path} keys are {index.keys.shape[1]}-d but its encoder "
            f"{encoder_name!r} gives {encoder.dim}-d embeddings"
        )
    return RetrievalAgent(card, index, encoder, seat=seat, params=params, seed=seed)


# -- training: ``dialogue-gym train sft --method retrieval`` ------------------------------


@dataclasses.dataclass
class RetrievalConfig(SFTConfig):
    """sft-retrieval: nearest-neighbour response retrieval over history embeddings."""

    context_turns: int = option(3, "history turns embedded into a context key")
    decay: float = option(0.5, "weight factor per turn back in the history, in (0, 1]")
    top_k: int = option(5, "the agent draws among this many best responses (1: greedy)")
    position_weight: float = option(
        0.5, "score penalty per T of difference in the seat's turn position"
    )
    batch_size: int = option(256, "texts per encoder call while indexing")

    def __post_init__(self) -> None:
        RetrievalParams(  # validates the scoring parameters early
            context_turns=self.context_turns,
            decay=self.decay,
            top_k=self.top_k,
            position_weight=self.position_weight,
        )
        if self.batch_size < 1:
            raise ValueError(f"--batch-size must be >= 1, got {self.batch_size}")


def train_retrieval(config: RetrievalConfig) -> Path:
    """Builds an ``sft-retrieval`` checkpoint (see :mod:`dialogue_gym_agents.sft.retrieval`).

    Raises:
        ValueError: Unknown task, a task without corpus, bad options, or an existing
            checkpoint at ``out`` without ``overwrite`` (a ``CheckpointError``).
        DataNotFoundError: The corpus is not found under the data root.
    """
    card = load_card(config.task)
    corpus_of(card.id)
    writer = CheckpointWriter(config.out, overwrite=config.overwrite)  # fail before any work
    run = generators(config.seed)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    split = config.split or TRAIN_SPLITS.get(card.id, "train")
    dialogues = load_training_dialogues(
        card.id,
        config.data,
        split=split,
        format=config.format or SFT_FORMATS.get(card.id),
        max_dialogues=config.max_dialogues,
        rng=run.numpy,
    )
    timings["load_s"] = time.perf_counter() - start
    encoder = make_encoder(config.encoder)
    params = RetrievalParams(
        context_turns=config.context_turns,
        decay=config.decay,
        top_k=config.top_k,
        position_weight=config.position_weight,
        max_exchanges=card.max_exchanges,
    )
    with writer, RunLogger(writer.path, tensorboard=config.tensorboard) as log:
        start, cpu = time.perf_counter(), time.process_time()
        index = build_index(
            dialogues, config.seat, encoder, params, config.batch_size, config.progress
        )
        files = save_index(index, writer.path)
        timings["index_s"] = time.perf_counter() - start
        timings["index_cpu_s"] = time.process_time() - cpu
        log.log_dict(
            {"dialogues": len(dialogues), "responses": len(index), **timings}, 0, prefix="sft/"
        )
        log.close()
        return writer.commit(
            KIND,
            card,
            config_to_dict(config),
            files,
            info={
                "corpus": corpus_of(card.id),
                "split": split,
                "dialogues": len(dialogues),
                "responses": len(index),
                "dim": int(index.keys.shape[1]),
                "max_exchanges": card.max_exchanges,
                "timings": timings,
            },
        )
