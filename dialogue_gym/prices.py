"""Prices in free negotiation text: extraction, the offer a turn makes, and buyer utility.

Used by the CraigslistBargain seller simulator, its deal judge and the bargaining agents.

* :func:`extract_prices` finds money amounts — ``$1,200``, ``1200 dollars``, ``1.2k``,
  ``$1.2K``, ``2 grand``, ``twelve hundred``, ``two fifty``, ``350 bucks``, ``$15 off`` — and
  skips numbers that are not prices: years (``a 2015 Civic``), model numbers (``iPhone 12``,
  ``RTX 3080``, ``F-150``), counts and units (``2 chairs``, ``98k miles``, ``3 years``), phone
  numbers, times, percentages and dimensions. Bare numbers without a currency marker count only
  with price context (``I'll take 300``, ``how about 250?``, ``300 is my best``) and, when a
  reference price is given, a plausible scale.
* :func:`offer_in` picks the one price a turn *proposes*: not a price it merely cites (``it was
  $500 new``, ``I saw one for $250``, ``you're asking $400``), not one for a different item
  (``$20 for the helmet``), not one it takes back (``I said 200 — scratch that, 180``,
  ``I'll pay $450 – scratch that``, ``$450, no wait``); relative offers (``15% off``, ``knock
  $50 off``, ``half the asking price``) are resolved against the reference.
* :func:`buyer_utility` is the buyer-normalized utility of a deal (MASP, Appendix C.7).

Every function reads :func:`dialogue_gym.text.normalize_text` of its text — the same view the
sentence encoder and the cue regexes read — so zero-width characters (``$4\u200b50``),
fullwidth digits (``$４５０``) and typographic quotes and dashes cannot hide or forge a price.
The offsets of a :class:`PriceMention` therefore refer to the **normalized** text (identical to
the input for plain ASCII text with single spaces), and :func:`mask_prices` returns the
normalized text with its prices masked.
"""

from __future__ import annotations

import math
import re

from dialogue_gym.price_extraction import PriceMention, extract_prices
from dialogue_gym.text import normalize_text

__all__ = [
    "PriceMention",
    "asking_price_in",
    "buyer_utility",
    "extract_prices",
    "format_price",
    "mask_prices",
    "offer_in",
]


# -- the offer of a turn -------------------------------------------------------------------------

_CLAUSE_SPLIT = re.compile(
    r"[.;!?]+(?=\s|$)|[,:]\s|\s[—–-]{1,2}\s|[—–]|--|\n|\s(?:but|and|so|though|although|while|"
    r"whereas|because|since)\s",
    re.IGNORECASE,
)
# Cues in the clause before a price that make it a cited price, not the turn's proposal.
_CITED_BEFORE = re.compile(
    r"\b(?:was|were|paid|bought (?:it|this|them|mine|one)?\s*(?:for|at)|cost(?:s)? (?:me|us|new)|"
    r"retail(?:s|ed)?|msrp|originally|original(?:ly)? price|list(?:ed|ing)? (?:at|for|price)|"
    r"you(?:'re| are)? asking|your (?:price|ask(?:ing price)?|listing|number)|asking price|"
    r"you want|you said|(?:saw|seen|found|spotted) (?:one|it|them|a|an|the|some|similar|the "
    r"same)|(?:they|these|those|ones?|it|models?|others?|people) (?:usually |typically |"
    r"normally |often )?(?:go|goes|are going|sell|sells|are selling|sold|went) for|on "
    r"(?:craigslist|ebay|amazon|marketplace|offerup|sale)|elsewhere|at (?:the store|walmart|"
    r"target|ikea|best buy|costco)|other (?:listings?|sellers?|ones)|similar (?:ones?|listings?)|"
    r"comparable|same (?:model|one|bike|phone|thing)|valued at|appraised)\b[^$\d]*$",
    re.IGNORECASE,
)
_CITED_NEAR = re.compile(
    r"\b(?:instead of|rather than|down from|up from|from|not|i said|i offered|you offered)"
    r"\s*(?:\w+\s+)?$",
    re.IGNORECASE,
)
_CITED_AFTER = re.compile(
    r"^\s*(?:new|brand new|retail|when new|originally|at the store|in stores|online|elsewhere|"
    r"on (?:ebay|amazon|craigslist|marketplace)|or (?:so )?(?:new|retail)|is (?:what|the) "
    r"(?:i|they|it) (?:paid|cost|retail))\b",
    re.IGNORECASE,
)
_RETRACT_AFTER = re.compile(
    r"^\W*(?:scratch that|no wait|wait,? no|sorry|i mean|actually|correction|make (?:it|that)|"
    r"rather|on second thought|never ?mind|let me (?:revise|rephrase|correct))",
    re.IGNORECASE,
)
# Phrases that take back what came before even when no new price follows. They count at the
# start of a clause after the price (``$450 - scratch that``, ``$450. Actually, forget it.``),
# not inside one (``$450 or forget it`` is an ultimatum, ``never mind the scratches`` is not
# a retraction).
_END = r"(?=\s*(?:$|[.,;:!?)\-]|(?:i|i'?ll|i'?m|i'?d|we|let'?s|let|lol|haha|sorry|then)\b))"
_TAKE_BACK = re.compile(
    rf"(?:^|[.,;:!?\-]|\.\.\.)\s*(?:(?:actually|oh|um+|uh+|hmm+|ok(?:ay)?|well|sorry|wait|"
    rf"no|hold on|on second thought|lol|haha)\b\W*)*(?:scratch that|strike that|cancel that|"
    rf"no,? wait|wait,? no|(?:i )?take (?:that|it) back|(?:just|i'?m|i was) (?:just )?kidding|"
    rf"j/?k\b|disregard (?:that|it|this)\b|ignore (?:that|it|this){_END}|never ?mind{_END}|"
    rf"nvm\b|forget (?:it|that|about it|(?:what |that )?i said(?: that)?){_END})",
    re.IGNORECASE,
)
_OTHER_ITEM_AFTER = re.compile(
    r"^\s*(?:each|apiece|per|(?:for|on) (?:the |a |an |that |those |your |each )?(?:other|second|"
    r"extra|extras|helmet|case|charger|cover|lock|cable|cables|stand|mount|bag|pump|rack|lights?|"
    r"accessor(?:y|ies)|cushions?|delivery|shipping|gas|tax|taxes|fees?|deposit|utilities|"
    r"parking|lamp|rug|mattress|ottoman|screen protector|dock|controllers?|games?|lens|"
    r"battery|batteries|tires?|mat|box))\b",
    re.IGNORECASE,
)
_PERCENT_OFF = re.compile(
    r"(?P<pct>\d{1,2}(?:\.\d+)?)\s?(?:%|percent|pct)\s+(?:off|less|discount|below|under|lower)",
    re.IGNORECASE,
)
_FRACTION_OF = re.compile(
    r"\b(?P<frac>half|a third|two thirds|three quarters|a quarter)\b\s+(?:of\s+)?"
    r"(?:the\s+|your\s+)?(?:asking|listing|listed|list|original)?\s*(?:price|ask)",
    re.IGNORECASE,
)
_FRACTIONS = {"half": 0.5, "a third": 1 / 3, "two thirds": 2 / 3, "three quarters": 0.75}
_FRACTIONS["a quarter"] = 0.25


def _clause_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    left, right = 0, len(text)
    for match in _CLAUSE_SPLIT.finditer(text):
        if match.end() <= start:
            left = match.end()
        elif match.start() >= end:
            right = match.start()
            break
    return left, right


def _role(text: str, mention: PriceMention, is_last: bool, next_start: int | None) -> str:
    """``"offer"``, ``"cited"``, ``"retracted"`` or ``"other_item"``.

    ``next_start`` is where the next price mention starts (``None`` for the last one): a
    take-back phrase counts only between this price and the next.
    """
    left, right = _clause_bounds(text, mention.start, mention.end)
    before = text[left : mention.start]
    after = text[mention.end : right]
    tail = text[mention.end : next_start]
    if _OTHER_ITEM_AFTER.match(after):
        return "other_item"
    if not is_last and _RETRACT_AFTER.match(tail.lstrip(" ,—–-")):
        return "retracted"  # a correction: the next price replaces this one
    if _TAKE_BACK.search(tail):
        return "retracted"  # taken back outright (with or without a replacement)
    if _CITED_BEFORE.search(before) or _CITED_NEAR.search(before) or _CITED_AFTER.match(after):
        return "cited"
    return "offer"


def _next_start(mentions: list[PriceMention], index: int) -> int | None:
    return mentions[index + 1].start if index + 1 < len(mentions) else None


def offer_in(text: str, reference: float | None = None) -> float | None:
    """The price that ``text`` proposes, or ``None`` when it proposes none.

    Cited prices (original, retail, a comparable listing, the other side's asking price),
    prices for a different item and retracted prices are skipped; of the remaining ones the
    last wins (later words override earlier ones). A price taken back (``I'll pay $450 –
    scratch that``, ``$450, no wait``, ``$450. Actually, forget it.``) is no offer, so such a
    turn proposes nothing unless a later price replaces it. Discounts (``$50 off``) and
    relative offers (``15% off``, ``half the asking price``) are resolved against
    ``reference``. When two proposals remain and a reference is given, a proposal below 15% of
    the reference is taken to be for something else if a plausible one exists.

    Args:
        text: The turn.
        reference: The listing (asking) price: scale hint and base of relative offers.
    """
    text = normalize_text(text)
    mentions = extract_prices(text, reference)
    offers: list[float] = []
    for index, mention in enumerate(mentions):
        role = _role(text, mention, index == len(mentions) - 1, _next_start(mentions, index))
        if role != "offer":
            continue
        if mention.kind == "discount":
            if reference:
                offers.append(max(0.0, reference - mention.value))
            continue
        offers.append(mention.value)
    if reference and len(offers) > 1:
        plausible = [v for v in offers if v >= 0.15 * reference]
        offers = plausible or offers
    if offers:
        return offers[-1]
    if reference:
        relative: list[tuple[int, float]] = []
        for match in _PERCENT_OFF.finditer(text):
            pct = float(match.group("pct"))
            if 0 < pct < 100 and not _TAKE_BACK.search(text[match.end() :]):
                relative.append((match.start(), reference * (1 - pct / 100)))
        for match in _FRACTION_OF.finditer(text):
            if _TAKE_BACK.search(text[match.end() :]):
                continue
            relative.append((match.start(), reference * _FRACTIONS[match.group("frac").lower()]))
        if relative:
            return max(relative)[1]
    return None


_ASKING = re.compile(
    r"(?:asking|list(?:ed|ing)?(?: it)? (?:at|for)|price (?:is|of)|want(?:ing)?|selling (?:it )?"
    r"for|priced at|yours for|go(?:ing)? for)\W*(?:\w+\W+){0,3}$",
    re.IGNORECASE,
)


def asking_price_in(text: str, reference: float | None = None) -> float | None:
    """The asking (listing) price a seller states, e.g. in an opening line.

    Prefers a price introduced as the asking price (``I'm asking $450``, ``listed at``,
    ``price is``); otherwise the first price that is not cited as an original or retail price.
    """
    text = normalize_text(text)
    mentions = [m for m in extract_prices(text, reference) if m.kind == "amount"]
    if not mentions:
        return None
    roles = [
        _role(text, mention, index == len(mentions) - 1, _next_start(mentions, index))
        for index, mention in enumerate(mentions)
    ]
    for mention, role in zip(mentions, roles, strict=True):
        left, _ = _clause_bounds(text, mention.start, mention.end)
        if role != "retracted" and _ASKING.search(text[left : mention.start]):
            return mention.value
    for mention, role in zip(mentions, roles, strict=True):
        if role == "offer":
            return mention.value
    return mentions[0].value


def mask_prices(text: str, reference: float | None = None, token: str = "$N") -> str:
    """``text`` with every price mention replaced by ``token``.

    Lets a sentence encoder (and its cache) see ``Would you take $300?`` and ``Would you take
    $280?`` as the same utterance: what a turn argues does not depend on the number. Returns
    the *normalized* text (:func:`dialogue_gym.text.normalize_text`) with its prices masked.
    """
    text = normalize_text(text)
    out, last = [], 0
    for mention in extract_prices(text, reference):
        out.append(text[last : mention.start])
        out.append(token)
        last = mention.end
    out.append(text[last:])
    return "".join(out)


def buyer_utility(p_deal: float, p_seller: float, p_buyer: float) -> float:
    """Buyer-normalized utility ``(p_deal − p_seller) / (p_buyer − p_seller)``.

    0 at the seller's price (the listing), 1 at the buyer's target, negative above the
    listing and above 1 below the target (MASP, Appendix C.7).

    Raises:
        ValueError: ``p_buyer == p_seller`` (the normalization is undefined) or a price is not
            a finite number.
    """
    for name, value in (("p_deal", p_deal), ("p_seller", p_seller), ("p_buyer", p_buyer)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
    if math.isclose(p_buyer, p_seller, rel_tol=0.0, abs_tol=1e-12):
        raise ValueError(
            f"buyer utility is undefined when the buyer's target equals the seller's price "
            f"(p_buyer == p_seller == {p_seller!r}): it divides by p_buyer − p_seller"
        )
    return (p_deal - p_seller) / (p_buyer - p_seller)


def format_price(value: float) -> str:
    """``$1,200`` for whole dollars, ``$12.50`` otherwise."""
    if abs(value - round(value)) < 0.005:
        return f"${round(value):,}"
    return f"${value:,.2f}"
