"""Sentence encoders for the latent space: MiniLM (default), static, hashing (for tests).

``"static"`` (:mod:`dialogue_gym.mind.static`) is a lookup table distilled from MiniLM, for RL
at scale.

Every encoder returns unit-normalized float32 rows, and a text's row does not depend on the
other texts of the call — so a cache's state, or batching the texts of several envs together
(:mod:`dialogue_gym.env.vector`), never changes an episode. ``CachedEncoder`` memoizes repeated
texts, which matters because BDI texts and prototype sentences recur on every exchange.

The :class:`Encoder` protocol is defined in :mod:`dialogue_gym.types` (the text view names it
too) and re-exported here. Its ``to_reference_cosine`` is the identity for MiniLM and the
hashing encoder; the static encoder maps its cosines onto MiniLM's scale.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from dialogue_gym.mind.minilm import MiniLMEncoder
from dialogue_gym.mind.minilm_assets import minilm_model_dir, normalize_rows
from dialogue_gym.text.view import MAX_VIEW_CHARS, cap_chars
from dialogue_gym.types import ArrayOrFloat, Encoder

__all__ = [
    "CachedEncoder",
    "Encoder",
    "HashingEncoder",
    "MiniLMEncoder",
    "make_encoder",
    "minilm_model_dir",
]

_TOKEN = re.compile(r"[a-z0-9$']+")


class HashingEncoder(Encoder):
    """A dependency-free bag-of-words encoder using signed feature hashing.

    Texts sharing words get positive cosine similarity, so it is a usable (if crude)
    stand-in for a sentence encoder in tests and on machines without torch. Its cosines are
    not mapped onto MiniLM's scale (:meth:`Encoder.to_reference_cosine` is the identity).

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
        return normalize_rows(out)

    def visible_prefix(self, text: str) -> str:
        """``text`` cut to :data:`~dialogue_gym.text.view.MAX_VIEW_CHARS` characters at a word.

        Bag-of-words reads any length; the cap keeps its views comparable to MiniLM's.
        """
        return cap_chars(text, MAX_VIEW_CHARS)


class CachedEncoder(Encoder):
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

    def visible_prefix(self, text: str) -> str:
        """The inner encoder's ``visible_prefix``, or the character cap when it has none."""
        inner = getattr(self.inner, "visible_prefix", None)
        if callable(inner):
            return inner(text)
        return cap_chars(text, MAX_VIEW_CHARS)

    def to_reference_cosine(self, cosines: ArrayOrFloat) -> ArrayOrFloat:
        """The inner encoder's ``to_reference_cosine``.

        An inner encoder written without the method (before it was part of :class:`Encoder`)
        is taken as already on the reference scale: ``cosines`` come back unchanged.
        """
        to_reference = getattr(self.inner, "to_reference_cosine", None)
        return cosines if to_reference is None else to_reference(cosines)

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
        name: ``"minilm"`` (default), ``"static"`` (a table distilled from MiniLM, built once and
            cached: :class:`dialogue_gym.mind.static.StaticEncoder`), ``"hashing"`` /
            ``"hashing-<dim>"``, or an encoder object (returned wrapped in a cache unless it
            already is one).

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
        elif name == "static":
            from dialogue_gym.mind.static import StaticEncoder  # imports this module

            _SHARED[name] = CachedEncoder(StaticEncoder())
        elif name == "hashing" or name.startswith("hashing-"):
            dim = int(name.split("-", 1)[1]) if "-" in name else 256
            _SHARED[name] = CachedEncoder(HashingEncoder(dim=dim))
        else:
            raise ValueError(
                f"unknown encoder {name!r}; use 'minilm', 'static', 'hashing' or 'hashing-<dim>'"
            )
    return _SHARED[name]
