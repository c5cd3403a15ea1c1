"""One normalized view of a text, shared by the sentence encoder, the cue regexes and prices.

A user simulator reads a turn three ways: its sentence encoder embeds it, cue regexes scan
it, and the price parser reads offers from it. If those three disagree on what the text *is*,
a policy can game the gap — zero-width characters that vanish for the tokenizer but break a
regex (``$4\u200b50``), fullwidth digits, or a concession buried past the encoder's 256
tokens where only the regexes find it. :func:`text_view` gives all of them the same text:

* :func:`normalize_text` — Unicode NFKC; zero-width, bidi-control and other invisible
  format/control characters removed; typographic quotes and dashes mapped to ASCII; runs of
  whitespace (newlines and tabs included) collapsed to one space; stripped.
* :func:`text_view` — the normalized text cut to the prefix the encoder actually sees: the
  encoder's own ``visible_prefix`` when it has one (MiniLM: the words inside its 256-token
  window), else the first :data:`MAX_VIEW_CHARS` characters, cut back to a word boundary.

Both are deterministic and memoized, so calling them on every turn of every episode is cheap.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from dialogue_gym.types import Encoder

__all__ = ["MAX_VIEW_CHARS", "cap_chars", "normalize_text", "text_view"]

#: Characters a view keeps when the encoder does not say what it sees. About what MiniLM's
#: 256-token window holds of ordinary English (roughly 4-5 characters a token), so a
#: tokenizer-free encoder and MiniLM see a turn of similar length.
MAX_VIEW_CHARS = 1000

# Invisible characters that are not category Cf/Cc (those are removed by category):
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, variation selectors.
_INVISIBLE_EXTRA = frozenset(
    [
        *(0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    ]
)
# Named in the brief; all are Cf except U+180E (Mongolian vowel separator, Cf since Unicode
# 6.3) — listed explicitly so the rule does not depend on the Unicode version.
_INVISIBLE_NAMED = frozenset(
    [
        *(0x00AD, 0x061C, 0x180E, 0xFEFF),
        *range(0x200B, 0x2010),
        *range(0x202A, 0x202F),
        *range(0x2060, 0x2065),
        *range(0x2066, 0x206A),
    ]
)
# Typographic characters NFKC leaves alone, mapped to their ASCII equivalents.
_TYPOGRAPHIC = {
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u201a": "'",  # ‚
    "\u201b": "'",  # ‛
    "\u2032": "'",  # ′ prime
    "\u02bc": "'",  # ʼ modifier apostrophe
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u201f": '"',  # ‟
    "\u2033": '"',  # ″ (NFKC gives two primes; mapped before it too)
    "\u00ab": '"',  # «
    "\u00bb": '"',  # »
    "\u2010": "-",  # hyphen
    "\u2011": "-",  # non-breaking hyphen
    "\u2012": "-",  # figure dash
    "\u2013": "-",  # – en dash
    "\u2212": "-",  # − minus sign
    "\u2043": "-",  # hyphen bullet
    "\u2014": "--",  # — em dash
    "\u2015": "--",  # ― horizontal bar
}
_WHITESPACE = re.compile(r"\s+")


def _is_invisible(char: str) -> bool:
    code = ord(char)
    if code in _INVISIBLE_NAMED or code in _INVISIBLE_EXTRA:
        return True
    category = unicodedata.category(char)
    if category == "Cc":
        return not char.isspace()  # \t \n \r ... become spaces below, others go
    return category in ("Cf", "Cs")


@functools.lru_cache(maxsize=4096)
def _translation(char: str) -> str:
    if _is_invisible(char):
        return ""
    return _TYPOGRAPHIC.get(char, char)


def _clean(text: str) -> str:
    if text.isascii():
        # ASCII has no invisible format characters; only C0 controls other than whitespace.
        if text.isprintable():
            return text
        return "".join(c for c in text if c.isprintable() or c.isspace())
    return "".join(_translation(c) for c in text)


def _drop_stray_marks(text: str) -> str:
    """Removes combining marks left on ASCII characters after NFKC (``4\u0301 50``).

    NFKC composes every mark that has a precomposed letter (``e`` + U+0301 is ``é``), so a
    mark still sitting on an ASCII character only obfuscates: an uncased tokenizer strips it
    while a regex stops at it.
    """
    if text.isascii():
        return text
    out: list[str] = []
    base_ascii = False
    for char in text:
        if unicodedata.category(char) in ("Mn", "Me"):
            if base_ascii:
                continue
        else:
            base_ascii = char.isascii()
        out.append(char)
    return "".join(out)


@functools.lru_cache(maxsize=8192)
def normalize_text(text: str) -> str:
    """The canonical form of ``text`` that every reader of a turn sees.

    Steps: invisible characters removed (zero-width U+200B–U+200F, U+2060–U+2064, U+FEFF,
    U+180E, soft hyphen U+00AD, bidi controls U+202A–U+202E, U+2066–U+2069, U+061C, every
    other format (Cf) or control (Cc) character and lone surrogates, variation selectors and
    other default-ignorable fillers); Unicode NFKC (fullwidth ``＄４５０`` is ``$450``, no-break
    spaces are spaces, ``…`` is ``...``); combining marks stranded on ASCII characters removed;
    typographic quotes to ``'``/``"``, hyphens, en dashes and minus signs to ``-``, em dashes to
    ``--``; newlines, tabs and every other run of whitespace collapsed to one space; stripped.

    Idempotent: ``normalize_text(normalize_text(t)) == normalize_text(t)``.

    Raises:
        TypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out = _clean(text)
    if not out.isascii():
        out = unicodedata.normalize("NFKC", out)
        # NFKC can produce characters mapped above (″ → ′′, ﹘ → —): map once more.
        out = _drop_stray_marks(_clean(out))
    return _WHITESPACE.sub(" ", out).strip()


def cap_chars(text: str, limit: int = MAX_VIEW_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, backed off to a word boundary.

    Never splits a word or a number (``$1,200`` cut to ``$1`` would read as a price); when the
    first ``limit`` characters hold no space at all, they are kept as they are.
    """
    if len(text) <= limit:
        return text
    if text[limit].isspace():
        return text[:limit].rstrip()
    head = text[:limit]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[:cut].rstrip() if cut > 0 else head


class _ByName:
    """Keys the view cache on an encoder's name (a stable identifier of its tokenizer)."""

    __slots__ = ("encoder", "name")

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.name = str(encoder.name)

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByName) and other.name == self.name


@functools.lru_cache(maxsize=4096)
def _encoder_view(normalized: str, key: _ByName) -> str:
    view = key.encoder.visible_prefix(normalized)  # type: ignore[attr-defined]
    if not isinstance(view, str) or not normalized.startswith(view):
        raise ValueError(
            f"encoder {key.name!r}: visible_prefix must return a prefix of its input text"
        )
    return view


def text_view(text: str, encoder: Encoder | None = None) -> str:
    """The one view of ``text`` that the encoder, cue regexes and price parser all read.

    :func:`normalize_text`, then cut to what ``encoder`` sees: its ``visible_prefix(text)``
    when it has that (optional) method, else the first :data:`MAX_VIEW_CHARS` characters
    (:func:`cap_chars`; also when ``encoder`` is ``None``). Memoized on ``(text, encoder
    name)``, so encoders sharing a name must share a tokenizer.

    Raises:
        TypeError: ``text`` is not a str.
        ValueError: The encoder's ``visible_prefix`` returned something that is not a prefix.
    """
    normalized = normalize_text(text)
    if encoder is None or not callable(getattr(encoder, "visible_prefix", None)):
        return cap_chars(normalized)
    return _encoder_view(normalized, _ByName(encoder))
