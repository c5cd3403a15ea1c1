"""A small read-out that puts the static table's pooled tokens where MiniLM puts sentences.

A text's mean token row (model2vec's static embedding) agrees with MiniLM only loosely: on the
shipped cards' sentences paired within each card, the two encoders' cosines correlate at
Spearman ρ 0.44. MiniLM does not average its tokens' stand-alone meanings, it composes them;
part of that composition can be learned from MiniLM itself. The head reads a text as
``[mean, elementwise max, elementwise min of its token rows]`` and maps that to MiniLM's 384
dimensions with a one-hidden-layer ReLU network plus a linear skip path, trained to MiniLM's
own embeddings of a fixed text set (every sentence of the shipped cards, :func:`head_texts`)
with a cosine loss.

Measured on text the fit never saw (real P4G persuader turns paired with the P4G card's
concern prototypes), the head raises the cosine agreement with MiniLM from ρ 0.38 to 0.82
(a linear ridge read-out of the same features reaches 0.75). The fit reads no benchmark,
agent, corpus or outcome: its only target is MiniLM's embedding of the card sentences, so the
head makes the static encoder a closer copy of MiniLM and nothing else.

**How long it trains** was chosen on card text alone, by leave-one-card-out cross-validation
(``benchmarks/static_head_cv.py``): trained on five cards' sentences, how well does the head
rank the sixth card's sentence pairs like MiniLM? Longer training copies the training
sentences ever more closely (in-sample ρ 0.77 at 30 epochs, 0.86 at 60, 0.95 at 300) but
reads a new card worse past 60 (held-out ρ 0.61, 0.62, 0.60 at 100, 0.52 at 300), so the
default is 60 epochs.

Training is full-batch AdamW from a seeded initialization on one torch thread, so it is
deterministic on a given software stack; encoding needs only numpy (:class:`CompiledHead`). The
parameters are stored as one flat float32 vector (:func:`pack_head` / :func:`unpack_head`),
whose bytes do not depend on when it was written.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FEATURES",
    "CompiledHead",
    "HeadConfig",
    "apply_head",
    "fit_head",
    "head_texts",
    "pack_head",
    "pooled_features",
    "unpack_head",
]

FEATURES = "mean+max+min"
"""Name of the pooled features the head reads (part of the static model's cache key)."""

#: Parameter names in storage order.
_NAMES = ("mean", "scale", "w1", "b1", "w2", "skip", "bias")


@dataclass(frozen=True)
class HeadConfig:
    """How the head is trained; every field is part of the static model's cache key.

    Attributes:
        hidden: Width of the ReLU layer.
        epochs: Full-batch AdamW steps (60: the best held-out-card ρ in
            ``benchmarks/static_head_cv.py``; longer training reads new text worse).
        learning_rate: AdamW learning rate.
        weight_decay: AdamW weight decay.
        seed: Seed of the initial weights and of the sentence pairs.
        pairs: Per card sentence, how many two-sentence texts (it, then another sentence of
            the same card) join the training texts (:func:`head_texts`). A turn is often
            several sentences; without pairs the head learns single sentences only and reads
            real multi-sentence turns further from MiniLM.
    """

    hidden: int = 256
    epochs: int = 60
    learning_rate: float = 3e-3
    weight_decay: float = 1e-2
    seed: int = 0
    pairs: int = 0

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.epochs < 1:
            raise ValueError(f"a head needs hidden >= 1 and epochs >= 1, got {self}")
        if self.pairs < 0:
            raise ValueError(f"a head needs pairs >= 0, got {self}")
        if not self.learning_rate > 0 or self.weight_decay < 0:
            raise ValueError(f"a head needs learning_rate > 0 and weight_decay >= 0, got {self}")


def head_texts(pairs: int = 0, seed: int = 0) -> list[str]:
    """The head's training texts: every shipped card's sentences, then sentence pairs.

    The sentences are the cosine map's calibration set
    (:func:`dialogue_gym.mind.cosine_scale.calibration_texts`), flattened, deduplicated, in
    card order. Then, per card and per sentence, ``pairs`` texts made of that sentence and
    another sentence of the same card (drawn with ``random.Random(seed)``, joined by a
    space), deduplicated. Only card text is used: no corpus, agent or benchmark text.

    Args:
        pairs: Two-sentence texts per sentence (``HeadConfig.pairs``).
        seed: Seed of the draw.

    Returns:
        The texts, the same list for the same arguments and cards.
    """
    from dialogue_gym.mind.cosine_scale import calibration_texts

    groups = calibration_texts()
    texts = [text for group in groups for text in group]
    rng = random.Random(seed)
    for group in groups:
        if len(group) < 2:
            continue
        for first in group:
            for _ in range(pairs):
                second = group[rng.randrange(len(group) - 1)]
                second = group[-1] if second == first else second
                texts.append(f"{first} {second}")
    return list(dict.fromkeys(texts))


def pooled_features(table: np.ndarray, rows: Sequence[Sequence[int]]) -> np.ndarray:
    """Per text, ``[mean, max, min]`` of its token rows of ``table``; zeros for a text with none.

    Args:
        table: The static token table, ``(vocabulary, d)``.
        rows: Per text, the table rows (token ids) it is read from.

    Returns:
        A float32 array ``(len(rows), 3 d)``.
    """
    dim = table.shape[1]
    out = np.zeros((len(rows), 3 * dim), dtype=np.float32)
    for index, ids in enumerate(rows):
        if len(ids):
            vectors = table[list(ids)]
            out[index, :dim] = vectors.mean(axis=0)
            out[index, dim : 2 * dim] = vectors.max(axis=0)
            out[index, 2 * dim :] = vectors.min(axis=0)
    return out


@dataclass(frozen=True, eq=False)
class CompiledHead:
    """A trained head folded for fast one-text calls (what the encoder applies).

    The feature standardization is folded into the first layer, and the first layer and the
    skip path share one product, so a text costs two small matrix products.

    Attributes:
        first: ``(f, hidden + d)``: the ReLU layer's weights, then the skip path's.
        first_bias: ``(hidden + d,)``: the ReLU layer's bias, then the output bias.
        second: ``(hidden, d)``: the ReLU layer's output weights.
    """

    first: np.ndarray
    first_bias: np.ndarray
    second: np.ndarray

    @classmethod
    def from_params(cls, head: dict[str, np.ndarray]) -> CompiledHead:
        """Folds the parameters of :func:`fit_head` (computed in float64, stored float32)."""
        scale = head["scale"].astype(np.float64)[:, None]
        weights = np.concatenate([head["w1"], head["skip"]], axis=1).astype(np.float64) / scale
        bias = np.concatenate([head["b1"], head["bias"]]).astype(np.float64)
        bias -= head["mean"].astype(np.float64) @ weights
        return cls(weights.astype(np.float32), bias.astype(np.float32), head["w2"])

    def __call__(self, features: np.ndarray) -> np.ndarray:
        """The output (not normalized) for ``(n, f)`` features: ``(n, d)`` float32.

        Rows are computed one at a time: BLAS blocks a batched product differently from a
        single row's, and a text's embedding must not depend on the other texts of the call.
        """
        x = np.asarray(features, dtype=np.float32)
        hidden = self.second.shape[0]
        out = np.empty((x.shape[0], self.second.shape[1]), dtype=np.float32)
        for index in range(x.shape[0]):
            first = x[index] @ self.first + self.first_bias
            out[index] = np.maximum(first[:hidden], 0.0) @ self.second + first[hidden:]
        return out


def apply_head(head: dict[str, np.ndarray], features: np.ndarray) -> np.ndarray:
    """The head's output (not normalized) for ``(n, f)`` features (see :class:`CompiledHead`)."""
    return CompiledHead.from_params(head)(features)


def fit_head(
    features: np.ndarray, targets: np.ndarray, config: HeadConfig
) -> dict[str, np.ndarray]:
    """Trains the head so that its outputs point where ``targets`` do (cosine loss).

    Args:
        features: ``(n, f)`` pooled features (:func:`pooled_features`).
        targets: ``(n, d)`` reference embeddings of the same texts.
        config: The training settings.

    Returns:
        The float32 parameters by name (``mean``/``scale`` standardize the features; ``w1``,
        ``b1``: the ReLU layer; ``w2``, ``skip``, ``bias``: the output).

    Raises:
        ValueError: Mismatched shapes or fewer than two texts.
        ModuleNotFoundError: torch is not installed.
    """
    import torch

    x_np = np.asarray(features, dtype=np.float32)
    y_np = np.asarray(targets, dtype=np.float32)
    if x_np.ndim != 2 or y_np.ndim != 2 or x_np.shape[0] != y_np.shape[0] or x_np.shape[0] < 2:
        raise ValueError("fit_head needs (n, f) features and (n, d) targets, n >= 2")
    mean = x_np.mean(axis=0)
    scale = x_np.std(axis=0) + 1e-6
    x = torch.from_numpy((x_np - mean) / scale)
    y = torch.from_numpy(y_np)
    generator = torch.Generator().manual_seed(config.seed)

    def weight(rows: int, cols: int) -> torch.Tensor:
        return (torch.randn(rows, cols, generator=generator) * 0.02).requires_grad_()

    params = {
        "w1": weight(x.shape[1], config.hidden),
        "b1": torch.zeros(config.hidden, requires_grad=True),
        "w2": weight(config.hidden, y.shape[1]),
        "skip": weight(x.shape[1], y.shape[1]),
        "bias": torch.zeros(y.shape[1], requires_grad=True),
    }
    optimizer = torch.optim.AdamW(
        list(params.values()), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    for _ in range(config.epochs):
        optimizer.zero_grad()
        hidden = torch.relu(x @ params["w1"] + params["b1"])
        out = hidden @ params["w2"] + x @ params["skip"] + params["bias"]
        loss = (1.0 - torch.nn.functional.cosine_similarity(out, y, dim=1)).mean()
        loss.backward()
        optimizer.step()
    trained = {name: tensor.detach().numpy().astype(np.float32) for name, tensor in params.items()}
    return {"mean": mean.astype(np.float32), "scale": scale.astype(np.float32), **trained}


def pack_head(head: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, list[int]]]:
    """The parameters as one flat float32 vector, and their shapes (for :func:`unpack_head`)."""
    flat = np.concatenate([np.asarray(head[name], dtype=np.float32).ravel() for name in _NAMES])
    return flat, {name: list(head[name].shape) for name in _NAMES}


def unpack_head(flat: np.ndarray, shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack_head`.

    Raises:
        ValueError: ``flat`` does not hold exactly the parameters ``shapes`` describe.
    """
    head: dict[str, np.ndarray] = {}
    offset = 0
    for name in _NAMES:
        shape = tuple(int(n) for n in shapes[name])
        size = int(np.prod(shape))
        head[name] = np.asarray(flat[offset : offset + size], dtype=np.float32).reshape(shape)
        offset += size
    if offset != flat.size:
        raise ValueError(f"a packed head of {flat.size} values, expected {offset}")
    return head
