"""Reading text: the normalized view every reader sees, card-cue matching, prices.

* :mod:`dialogue_gym.text.view` — :func:`text_view` (NFKC, invisible characters removed, cut
  to what the encoder sees);
* :mod:`dialogue_gym.text.cue_search` — fast, exact matching of a card's cue regexes;
* :mod:`dialogue_gym.text.safe_regex` — the regex subset a card may use, compiled safely;
* :mod:`dialogue_gym.text.prices` on :mod:`~dialogue_gym.text.price_extraction` and
  :mod:`~dialogue_gym.text.price_context` — offers and prices read from a turn.

The bottom of the stack: nothing here imports a card, a user or an env. This package
re-exports the names of the former module ``dialogue_gym.text`` (now
:mod:`dialogue_gym.text.view`).
"""

from __future__ import annotations

from dialogue_gym.text.view import (
    MAX_VIEW_CHARS,
    cap_chars,
    normalize_text,
    text_view,
)

__all__ = [
    "MAX_VIEW_CHARS",
    "cap_chars",
    "normalize_text",
    "text_view",
]
