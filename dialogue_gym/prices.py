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

import dataclasses
import math
import re

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
_DISCOUNT_AFTER = re.compile(r"^\s*(?:off|discount|less|lower|cheaper|knocked off)\b", re.I)
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
    text = normalize_text(text)
    if reference is not None and (not math.isfinite(reference) or reference <= 0):
        reference = None
    mentions = _numeric_mentions(text, reference) + _word_mentions(text, reference)
    mentions.sort(key=lambda m: m.start)
    kept: list[PriceMention] = []
    for mention in mentions:  # digit and word spans never overlap, but be safe
        if kept and mention.start < kept[-1].end:
            continue
        kept.append(mention)
    return kept


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
