"""Finding money amounts in free negotiation text (:func:`extract_prices`).

:func:`extract_prices` finds money amounts — ``$1,200``, ``1200 dollars``, ``1.2k``, ``$1.2K``,
``2 grand``, ``twelve hundred``, ``two fifty``, ``350 bucks``, ``$15 off`` — and skips numbers
that are not prices: years (``a 2015 Civic``), model numbers (``iPhone 12``, ``RTX 3080``,
``F-150``), counts and units (``2 chairs``, ``98k miles``, ``3 years``), phone numbers, times,
percentages and dimensions. Bare numbers without a currency marker count only with price
context (``I'll take 300``, ``how about 250?``, ``300 is my best``) and, when a reference price
is given, a plausible scale. Which of the amounts a turn *proposes* is
:func:`dialogue_gym.text.prices.offer_in`'s question; both read the same normalized text (see
:mod:`dialogue_gym.text.prices`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re

from dialogue_gym.text.view import normalize_text

__all__ = ["PriceMention", "extract_prices"]


@dataclasses.dataclass(frozen=True)
class PriceMention:
    """One money amount found in a text.

    Attributes:
        value: The amount in dollars.
        text: The matched span as written (in the normalized text).
        start: Offset of the span in ``normalize_text(text)``, not in the raw text.
        end: End offset of the span in ``normalize_text(text)``.
        explicit: The span carries a currency or money marker (``$``, ``dollars``, ``bucks``,
            ``k``, ``grand``, ``hundred``) rather than being a bare number read from context.
        kind: ``"amount"`` (a price) or ``"discount"`` (an amount taken off: ``$50 off``).
    """

    value: float
    text: str
    start: int
    end: int
    explicit: bool
    kind: str = "amount"


# -- number words ------------------------------------------------------------------------------

_ONES = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
}
_TEENS = {
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fourty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SMALL = {**_ONES, **_TEENS, **_TENS}
_SCALES = {"hundred": 100, "thousand": 1000, "grand": 1000}
_NUMBER_WORD = "|".join(sorted([*_SMALL, *_SCALES, "couple"], key=len, reverse=True))
_WORD_SPAN = re.compile(
    rf"\b(?:an?\s+)?(?:{_NUMBER_WORD})(?:(?:\s+|-|\s+and\s+(?:an?\s+)?)(?:{_NUMBER_WORD}))*\b",
    re.IGNORECASE,
)

# -- digits ------------------------------------------------------------------------------------

_NUMERIC = re.compile(
    r"(?P<cur>\$|US\$|USD\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<mult>\s?[kK](?![A-Za-z])|\s?grand\b|\s?thousand\b|\s?hundred\b)?"
    r"(?P<unit>\s?(?:dollars?|bucks?|usd)\b)?",
    re.IGNORECASE,
)
_PHONE = re.compile(
    r"(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\b\d{3}[\s.-])\d{3}[\s.-]\d{4}\b|\b\d{3}[.-]\d{4}\b"
)
_K_NOT_MONEY = re.compile(
    r"\s*(?:tv|monitor|display|screen|video|resolution|run|race|views|steps)\b", re.IGNORECASE
)
_CURRENCY_AFTER = re.compile(r"\s?(?:dollars?|bucks?|usd)\b", re.IGNORECASE)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words after a number that make it a count or a measurement, not a price.
_UNITS = _words(
    """
    mile miles mi km kms kilometer kilometers k lb lbs pound pounds kg kgs oz ounce ounces inch
    inches ft feet foot cm mm meter meters gb tb mb mp megapixel megapixels hp cc rpm mph mpg
    year years yr yrs yo month months day days week weeks hour hours hr hrs minute minutes min
    mins second seconds sec owner owners people person persons piece pieces pcs chair chairs
    seat seats seater bedroom bedrooms bed beds br bath baths ba bathroom bathrooms door doors
    speed speeds gear gears percent pct times x series watt watts w v volt volts mah ghz mhz
    core cores cylinder cylinders cyl sq sqft square th st nd rd am pm oclock more other others
    items item of kids models drawers shelves wheels tires
    """
)
# Words ending in "s" that may follow a price (the plural-noun rule must not skip them).
_S_WORDS = _words(
    """
    is was has as plus less unless tops this thus us yes its it's does bucks dollars
    """
)
# Words right before a number that make it a model, version or identifier.
_ID_WORDS = _words(
    """
    model version gen generation series size number no room apt apartment unit suite page step
    level grade type mark route highway exit zip channel chapter season episode part lot aisle
    gate flight iphone ipad galaxy pixel ps xbox windows ios android macbook rtx gtx rx ryzen
    playstation
    """
)
# Words before a bare number that make it a price.
_OFFER_BEFORE = re.compile(
    r"(?:\b(?:take|taking|give|giving|pay|paying|paid|offer|offering|offered|about|around|"
    r"like|do|at|for|is|go|going|to|accept|spend|budget|max|maximum|best|asking|listed|cost|"
    r"costs|meet|settle|split|counter|than|under|over|below|above|only|just|say|sell|sold|"
    r"priced|price|worth|retails?|msrp|it|was|were|down|up|make|me|you|with|drop|lowest|"
    r"highest|least|most|firm|said|offered|mentioned|thought)|[$:])\s*(?:\w+\s+){0,1}$",
    re.IGNORECASE,
)
_OFFER_AFTER = re.compile(
    r"^\s*(?:\?|!|\.\s*$|$|is (?:my|the|our|your) (?:best|final|last|top|max|limit|offer|price)|"
    r"(?:firm|obo|cash|tops|max|final|even|flat|total|out the door|otd|and (?:it'?s|its) yours|"
    r"for (?:it|the|that|this|everything|both)|would|could|will|works|sounds|ok|okay|is fine|"
    r"and we|off|,\s*(?:deal|ok|okay|final|firm|take it))\b)",
    re.IGNORECASE,
)
_YEAR_BEFORE = re.compile(
    r"\b(?:in|since|from|circa|year|model|made|built|back|a|an|the|my|his|her|our|their|"
    r"this|that|of|'|until|before|after)\s*$",
    re.IGNORECASE,
)
_STRONG_PRICE_BEFORE = re.compile(
    r"\b(?:take|give you|pay|offer|for|at|do|how about|what about|accept|spend|budget of|"
    r"price is|asking|go to|down to|settle (?:on|for|at))\s*$",
    re.IGNORECASE,
)
_RANGE_GAP = re.compile(r"\s*,?\s*(?:-|–|to|or)\s*", re.IGNORECASE)
_DISCOUNT_AFTER = re.compile(
    r"^\s*(?:off|discount|less|lower|cheaper|knocked off|"
    r"(?:under|below) (?:the |your )?(?:asking|listing|list|listed|price|ask))\b",
    re.I,
)
_LETTER_DIGIT = re.compile(r"[A-Za-z]")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)\s*$")


def _prev_word(before: str) -> str:
    match = re.search(r"([A-Za-z][\w'’.-]*)\W*$", before)
    return match.group(1) if match else ""


def _next_word(after: str) -> str:
    match = re.match(r"\s*([A-Za-z][\w']*)", after)
    return match.group(1) if match else ""


def _is_count_or_unit(word: str) -> bool:
    lower = word.lower().replace("'", "")
    if not lower:
        return False
    if lower in _UNITS:
        return True
    return len(lower) > 3 and lower.endswith("s") and lower not in _S_WORDS and lower.isalpha()


def _looks_like_id(before: str) -> bool:
    """The number right after ``before`` names a model or an identifier (``iPhone 12``)."""
    stripped = before.rstrip()
    if not stripped:
        return False
    if stripped[-1] == "#":
        return True
    match = re.search(r"([A-Za-z][\w'’-]*)\.?$", stripped)
    if not match:
        return False
    word = match.group(1)
    if word.lower() in _ID_WORDS:
        return True
    if any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]):
        return True  # S10 5, iPhone 12, RTX 3080
    if word[0].isupper() and word not in ("I", "A"):
        # A capitalized word mid-sentence is a brand or product name (Trek 3500, Model 3).
        return not _SENTENCE_START.search(stripped[: match.start()])
    return False


def _scale_ok(value: float, reference: float | None, low: float, high: float) -> bool:
    return reference is None or reference <= 0 or low * reference <= value <= high * reference


def _numeric_mentions(text: str, reference: float | None) -> list[PriceMention]:
    masked = _PHONE.sub(lambda m: "#" * len(m.group(0)), text)
    mentions: list[PriceMention] = []
    for match in _NUMERIC.finditer(masked):
        start, end = match.span()
        cur, num, mult, unit = (match.group(k) for k in ("cur", "num", "mult", "unit"))
        before, after = masked[:start], masked[end:]
        prev_char = before[-1:] if before else ""
        if (
            not cur
            and mentions
            and mentions[-1].explicit
            and _RANGE_GAP.fullmatch(masked[mentions[-1].end : start])
        ):
            cur = "$"  # the second end of a range: $200-250, $200 to 250
        if not cur:
            if prev_char and (prev_char.isalnum() or prev_char in "._#/\\:"):
                continue  # part of a token: S10, v2.5, #3, 1/2
            if prev_char == "-" and len(before) >= 2 and before[-2].isalpha():
                continue  # F-150
        if not mult and not unit:
            if re.match(r"[A-Za-z]", after) and not re.match(r"[kK](?![A-Za-z])", after):
                continue  # 5pm, 2nd, 12gb, 3080ti, 90s
            if re.match(r"\s?(?::\d|%|x\s?\d|[/]\d|'s\b|’s\b|\.\d)", after, re.IGNORECASE):
                continue  # 5:30, 20%, 6x4, 5/10, 1990's
        if re.match(r"\s?(?:%|percent\b|pct\b)", after, re.IGNORECASE):
            continue
        digits = num.replace(",", "")
        try:
            value = float(digits)
        except ValueError:  # pragma: no cover - the regex only matches numbers
            continue
        multiplier = 1.0
        explicit = bool(cur or unit)
        if mult:
            word = mult.strip().lower()
            if word == "k" and (_is_count_or_unit(_next_word(after)) or _K_NOT_MONEY.match(after)):
                continue  # 98k miles, a 4k TV, a 5k run
            multiplier = {"k": 1000.0, "grand": 1000.0, "thousand": 1000.0, "hundred": 100.0}[word]
            explicit = True
        value *= multiplier
        if not explicit:
            if "," not in num and len(digits.split(".")[0]) >= 7:
                continue  # an id or a phone number
            if _looks_like_id(before):
                continue
            next_word = _next_word(after)
            if _is_count_or_unit(next_word) and not _CURRENCY_AFTER.match(after):
                continue  # 2 chairs, 3 years, 120 miles
            year_like = 1900 <= value <= 2099 and float(value).is_integer() and "," not in num
            if year_like and (
                _YEAR_BEFORE.search(before)
                or not _STRONG_PRICE_BEFORE.search(before)
                or not _scale_ok(value, reference, 0.3, 3.0)
            ):
                continue  # a 2015 Civic, made in 1998
            context = _OFFER_BEFORE.search(before) or _OFFER_AFTER.match(after)
            starts = _SENTENCE_START.search(before) is not None
            alone = starts and (
                re.match(r"\s*(?:[?!.]|$)", after) is not None
                or (reference is not None and re.match(r"\s*,", after) is not None)
            )
            if not (context or alone):
                continue
            if not _scale_ok(value, reference, 0.1, 10.0):
                continue
        elif (
            not cur
            and not unit
            and mult.strip().lower() in ("hundred", "thousand")
            and _is_count_or_unit(_next_word(after))
        ):
            continue  # 3 hundred miles
        kind = "discount" if _DISCOUNT_AFTER.match(after) else "amount"
        mentions.append(PriceMention(value, text[start:end].strip(), start, end, explicit, kind))
    return mentions


def _parse_words(words: list[str]) -> list[int]:
    """Splits number words into additive groups: ``two fifty`` → [2, 50].

    ``twenty five`` (tens then ones), ``three hundred fifty`` (hundreds then a smaller number)
    and ``two thousand five hundred`` add up; any other sequence starts a new group.
    """
    groups: list[int] = []
    total, current, last = 0, 0, ""
    for word in words:
        if word == "hundred":
            current = max(current, 1) * 100
            last = "hundred"
            continue
        if word in ("thousand", "grand"):
            total += max(current, 1) * 1000
            current, last = 0, "thousand"
            continue
        value = _SMALL[word]
        additive = (
            (current == 0 and last in ("", "thousand"))
            or (last == "tens" and word in _ONES)
            or (last == "hundred" and value < 100)
        )
        if not additive:
            groups.append(total + current)
            total, current = 0, 0
        current += value
        last = "tens" if word in _TENS else "small"
    groups.append(total + current)
    return groups


def _closest(candidates: list[float], reference: float | None, default: float) -> float:
    if reference is None or reference <= 0:
        return default
    return min(candidates, key=lambda v: abs(math.log(max(v, 1e-9) / reference)))


def _word_mentions(text: str, reference: float | None) -> list[PriceMention]:
    mentions: list[PriceMention] = []
    for match in _WORD_SPAN.finditer(text):
        span = match.group(0)
        raw = [w for w in re.split(r"[\s-]+", span.lower()) if w and w not in ("and",)]
        words = [w for w in raw if w not in ("a", "an")]
        if not words:
            continue
        start, end = match.span()
        before, after = text[:start], text[end:]
        if "couple" in words:  # a couple hundred / a couple grand
            index = words.index("couple")
            if index + 1 < len(words) and words[index + 1] in _SCALES:
                words = [*words[:index], "two", *words[index + 1 :]]
            else:
                continue
        if words[0] in _SCALES and raw[0] not in ("a", "an"):
            continue  # "hundred" alone
        currency = _CURRENCY_AFTER.match(after)
        has_scale = any(w in _SCALES for w in words)
        groups = _parse_words(words)
        if len(groups) == 1:
            value = float(groups[0])
        elif (
            len(groups) == 2
            and 1 <= groups[0] < 100
            and 10 <= groups[1] < 100
            and "hundred" not in words
        ):
            # Colloquial "two fifty": 250 or 2.50; "twelve fifty": 1250 or 12.50.
            hundreds = groups[0] * 100.0 + groups[1]
            cents = groups[0] + groups[1] / 100.0
            value = _closest([hundreds, cents], reference, hundreds)
        else:
            continue
        if value <= 0:
            continue
        explicit = bool(currency) or "grand" in words
        if not explicit:
            if _is_count_or_unit(_next_word(after)):
                continue  # two chairs, three hundred miles
            context = _OFFER_BEFORE.search(before) or _OFFER_AFTER.match(after)
            if not has_scale and len(groups) == 1:
                # A lone small number word needs price context and a plausible scale.
                if value < 10 or not context or not _scale_ok(value, reference, 0.1, 10.0):
                    continue
            elif (len(groups) == 2 and not (context or reference)) or not _scale_ok(
                value, reference, 0.05, 20.0
            ):
                continue
            explicit = has_scale
        stop = end + (currency.end() if currency else 0)
        kind = "discount" if _DISCOUNT_AFTER.match(text[stop:]) else "amount"
        mentions.append(PriceMention(value, text[start:stop].strip(), start, stop, explicit, kind))
    return mentions


def extract_prices(text: str, reference: float | None = None) -> list[PriceMention]:
    """Finds the money amounts in ``text``, in order of appearance.

    Args:
        text: Free text (a negotiation turn).
        reference: A price of the right magnitude (e.g. the listing price), used to read
            ambiguous scales (``two fifty`` is 250 near a $300 listing but 2.50 near a $3 one)
            and to drop bare numbers of an implausible magnitude. Without it, ``two fifty`` reads
            as 250.

    Returns:
        The :class:`PriceMention` list (discounts such as ``$50 off`` have ``kind="discount"``),
        with offsets into ``normalize_text(text)`` (see the module docstring).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if reference is not None and (not math.isfinite(reference) or reference <= 0):
        reference = None
    return list(_extract(text, reference))


@functools.lru_cache(maxsize=4096)
def _extract(text: str, reference: float | None) -> tuple[PriceMention, ...]:
    """:func:`extract_prices`, memoized (its mentions are immutable).

    A seller reads each turn's prices two or three times: the offer, the masked text it
    encodes, the deal judge.
    """
    text = normalize_text(text)
    mentions = _numeric_mentions(text, reference) + _word_mentions(text, reference)
    mentions.sort(key=lambda m: m.start)
    kept: list[PriceMention] = []
    for mention in mentions:  # digit and word spans never overlap, but be safe
        if kept and mention.start < kept[-1].end:
            continue
        kept.append(mention)
    return tuple(kept)
