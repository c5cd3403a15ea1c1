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

Every function reads :func:`dialogue_gym.text.view.normalize_text` of its text — the same view the
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

from dialogue_gym.text import price_context as context
from dialogue_gym.text.price_context import convert, listing_period
from dialogue_gym.text.price_extraction import PriceMention, extract_prices
from dialogue_gym.text.view import normalize_text

__all__ = [
    "OfferReading",
    "PriceMention",
    "asking_price_in",
    "buyer_utility",
    "extract_prices",
    "format_price",
    "listing_period",
    "mask_prices",
    "offer_in",
    "read_offer",
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
# "I was hoping for something closer to $1,150": a proposal in the past tense, not a price
# that "was" (cited).
_PROPOSED_BEFORE = re.compile(
    r"\b(?:i|we) (?:was|were) (?:hoping|thinking|wondering|looking|aiming|planning)\b"
    r"(?:(?!\b(?:paid|cost|retail|listed|sold|asking)\b).)*$",
    re.IGNORECASE,
)
_CITED_NEAR = re.compile(
    r"\b(?:instead of|rather than|down from|up from|from|not|i said|i offered|you offered|"
    # A bound, not a price: "is there any number under $240 you'd be comfortable with?" (the
    # seller had closed at $240 on a $225 offer; blind play round 13, CB seeds 121, 123).
    r"under|below|beneath|less than|lower than|short of|"
    # A price turned down: "I'll pass at $370" is no offer of $370 (the seller closed on it;
    # blind play round 17, CB seeds 160, 166).
    r"pass(?: on (?:it|that|this))? (?:at|for)|can'?t (?:do|go to|pay|manage)|"
    r"won'?t (?:pay|do|go to)|cannot (?:do|go to|pay))"
    r"\s*(?:\w+\s+)?$",
    re.IGNORECASE,
)
_CITED_AFTER = re.compile(
    r"^\s*(?:new|brand new|retail|when new|originally|at the store|in stores|online|elsewhere|"
    r"on (?:ebay|amazon|craigslist|marketplace)|or (?:so )?(?:new|retail)|is (?:what|the) "
    r"(?:i|they|it) (?:paid|cost|retail)|(?:is|was) (?:(?:truly|really|actually|honestly) )?"
    r"(?:where you (?:started|are|were)|what you(?:'re| are| were)? asking|firm|final|fixed|"
    r"non-?negotiable|(?:the )?(?:lowest|best) you can (?:go|do)|your (?:\w+ )?"
    r"(?:price|ask|floor|bottom(?: line)?|lowest|limit|minimum|best|final)|"
    r"the (?:full |asking |listing |list |original )+price|"
    r"(?:too|a bit|a little|way) (?:high|much|steep)))\b",
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
    r"^\s*(?:each(?!\s+(?:month|week|year))|apiece|per(?!\s+(?:month|mo|week|year|annum)\b)|"
    r"(?:for|on) (?:the |a |an |that |those |your |each )?(?:other|second|"
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
    """What the amount is in the turn.

    ``"offer"``, ``"clarified"`` (named as the corrected offer: ``I meant $1,225``),
    ``"restated"`` (``I said $1,225``), ``"cited"``, ``"retracted"``, ``"other_item"``,
    ``"cost"`` (money spent elsewhere), ``"budget"`` or ``"total"`` (a figure over a term);
    see :mod:`dialogue_gym.text.price_context`. ``next_start`` is where the next price mention
    starts (``None`` for the last one): a take-back phrase counts only between this price and
    the next.
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
    if mention.kind == "amount":
        if context.is_cost(text, mention.end, before):
            return "cost"
        if context.is_budget(before):
            return "budget"
        if context.period_after(text, mention.end) is None and (
            context.plus_after(text, mention.end)
            or context.is_total(text, mention.start, mention.end, before)
        ):
            return "total"
        if _CITED_AFTER.match(after):
            return "cited"  # "to be clear, $380 is where you started": the seller's price
        if context.is_clarified(text, mention.start):
            return "clarified"
        if context.is_restated(before):
            return "restated"
    if (
        mention.kind == "amount"
        and _PROPOSED_BEFORE.search(before)
        and not _CITED_AFTER.match(after)
    ):
        return "offer"
    if _CITED_BEFORE.search(before) or _CITED_NEAR.search(before) or _CITED_AFTER.match(after):
        return "cited"
    return "offer"


def _next_start(mentions: list[PriceMention], index: int) -> int | None:
    return mentions[index + 1].start if index + 1 < len(mentions) else None


@dataclasses.dataclass(frozen=True)
class OfferReading:
    """How a turn reads as an offer (:func:`read_offer`).

    Attributes:
        offer: The price the turn proposes, in the listing's period (the low end of a range),
            or ``None``.
        high: The high end when the turn offers a range (``$300-350``), else ``None``.
        clarified: The turn corrects or restates its offer (``I meant $1,225 a month, not
            $22,000``; ``to be clear, my offer is 1225``).
        disowned: Amounts the turn says are not its offer (``not $22,000``) or takes back.
        budget: A budget the turn states (``my budget is $500``): a ceiling, not an offer.
        totals: Figures over a term the turn cites (``$22,000+ over the lease``), and amounts
            too large to be the price (over ``3×`` the reference when a period is given).
    """

    offer: float | None = None
    high: float | None = None
    clarified: bool = False
    disowned: tuple[float, ...] = ()
    budget: float | None = None
    totals: tuple[float, ...] = ()


_RANGE_BETWEEN = re.compile(r"^\s*(?:-|–|—|to)\s*$", re.IGNORECASE)
_RANGE_AND = re.compile(r"^\s*and\s*$", re.IGNORECASE)
_BETWEEN_BEFORE = re.compile(r"\bbetween\s*$", re.IGNORECASE)


def _in_periods(value: float, quoted: str | None, period: str | None) -> float | None:
    """``value`` in the listing's ``period``, or ``None`` when it cannot be the price."""
    if period is None:
        return value  # the listing's period is unknown: the amount as written
    if period == "item":
        return None if quoted is not None else value  # a rate is no price for an item
    return value if quoted is None else convert(value, quoted, period)


def read_offer(
    text: str, reference: float | None = None, period: str | None = None
) -> OfferReading:
    """Reads the offer ``text`` makes, with the amounts around it (:class:`OfferReading`).

    Cited prices (original, retail, a comparable listing, the other side's asking price),
    prices for a different item, money the buyer spends elsewhere (``$200 on repairs``), a
    budget, totals (``$22,000+``) and retracted prices are skipped; of the remaining ones the
    last wins (later words override earlier ones), except that an amount named as the
    corrected offer (``I meant $1,225``, ``to be clear, my offer is 1225``) wins over the
    ones before it. A price taken back (``I'll pay $450 – scratch that``) is no offer. Discounts
    (``$50 off``) and relative offers (``15% off``, ``half the asking price``) are resolved
    against ``reference``. When two proposals remain and a reference is given, a proposal
    below 15% of the reference is taken to be for something else if a plausible one exists. A
    range (``$300-350``, ``between 300 and 350``) offers its low end, with ``high`` set.

    Args:
        text: The turn.
        reference: The listing (asking) price: scale hint and base of relative offers.
        period: The listing price's period: ``"month"`` (a rent), ``"week"``, ``"year"``,
            ``"day"``, ``"item"`` (a one-off price: a rate such as ``$100 a month`` is no
            offer) or ``None`` (unknown: amounts are read as written). With a period, an
            amount quoted per another period is converted (``$14,700 a year`` → 1225 a
            month), a total over a term is no offer, and an amount over ``3×`` the reference
            is no offer (a total or a slip, which the seller must not close on).
    """
    text = normalize_text(text)
    mentions = extract_prices(text, reference)
    clarifying = context.clarifies(text)
    roles = [
        _role(text, m, i == len(mentions) - 1, _next_start(mentions, i))
        for i, m in enumerate(mentions)
    ]
    disowned: list[float] = []
    totals: list[float] = []
    budget: float | None = None
    # (value, clarified, index of the mention)
    offers: list[tuple[float, bool, int]] = []
    periods = [context.period_after(text, m.end) for m in mentions]
    for index in range(len(mentions) - 1):  # "$1,200-1,300 a month": the range shares it
        gap = text[mentions[index].end : mentions[index + 1].start]
        if periods[index] is None and _RANGE_BETWEEN.match(gap):
            periods[index] = periods[index + 1]
    befores = [text[_clause_bounds(text, m.start, m.end)[0] : m.start] for m in mentions]
    clarifying = clarifying or any(
        role in ("cited", "restated") and context.is_disowned(text, m.end, before)
        for m, role, before in zip(mentions, roles, befores, strict=True)
    )
    for index, (mention, role) in enumerate(zip(mentions, roles, strict=True)):
        before = befores[index]
        if role == "budget":
            budget = mention.value
            continue
        if role == "retracted" and mention.kind == "amount":
            disowned.append(mention.value)  # taken back: "$400, I mean $1,250"
            continue
        if role == "total" or (role == "cited" and context.plus_after(text, mention.end)):
            totals.append(mention.value)
            continue
        if role in ("cited", "restated") and context.is_disowned(text, mention.end, before):
            disowned.append(mention.value)
            continue
        if role == "restated" and clarifying:
            role = "clarified"  # "I said $1,225 a month, not $22,000"
        if role not in ("offer", "clarified"):
            continue
        if mention.kind == "discount":
            if reference:
                offers.append((max(0.0, reference - mention.value), False, index))
            continue
        value = _in_periods(mention.value, periods[index], period)
        if value is None:
            continue
        if period is not None and reference and periods[index] is None and value > 3 * reference:
            totals.append(value)  # far over the price: a total or a slip, never the offer
            continue
        offers.append((value, role == "clarified", index))
    if reference and len(offers) > 1:
        plausible = [o for o in offers if o[0] >= 0.15 * reference]
        offers = plausible or offers
    # A clarified amount wins over the proposals before it; a proposal after it is the new
    # offer ("my offer was $200. If you could meet me in between, say $210, I'd take it":
    # $210; blind play round 13, CB seed 123).
    clarified = [o for o in offers if o[1]]
    after = [o for o in offers if clarified and o[2] > clarified[-1][2]]
    picked = after or clarified or offers
    found = _relative_offer(text, reference) if not picked else None
    reading = OfferReading(
        offer=found,
        clarified=clarifying or any(o[1] for o in offers) or bool(disowned),
        disowned=tuple(disowned),
        budget=budget,
        totals=tuple(totals),
    )
    if not picked:
        return reading
    value, _, index = picked[-1]
    low, high = value, None
    for other, _, other_index in offers:
        if abs(other_index - index) != 1:
            continue
        first, second = sorted((index, other_index))
        gap = text[mentions[first].end : mentions[second].start]
        between = _BETWEEN_BEFORE.search(text[: mentions[first].start])
        if _RANGE_BETWEEN.match(gap) or (between and _RANGE_AND.match(gap)):
            low, high = min(value, other), max(value, other)
    return dataclasses.replace(reading, offer=low, high=high)


def _relative_offer(text: str, reference: float | None) -> float | None:
    """A relative offer (``15% off``, ``half the asking price``) against ``reference``."""
    if not reference:
        return None
    relative: list[tuple[int, float]] = []
    for match in _PERCENT_OFF.finditer(text):
        pct = float(match.group("pct"))
        if 0 < pct < 100 and not _TAKE_BACK.search(text[match.end() :]):
            relative.append((match.start(), reference * (1 - pct / 100)))
    for match in _FRACTION_OF.finditer(text):
        if _TAKE_BACK.search(text[match.end() :]):
            continue
        relative.append((match.start(), reference * _FRACTIONS[match.group("frac").lower()]))
    return max(relative)[1] if relative else None


def offer_in(text: str, reference: float | None = None, period: str | None = None) -> float | None:
    """The price that ``text`` proposes, or ``None`` when it proposes none.

    :func:`read_offer`'s ``offer``: cited prices, prices for a different item, costs, budgets,
    totals and retracted prices are skipped, a corrected offer wins, and a range offers its
    low end.

    Args:
        text: The turn.
        reference: The listing (asking) price: scale hint and base of relative offers.
        period: The listing price's period (see :func:`read_offer`); ``None``: unknown.
    """
    return read_offer(text, reference, period).offer


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
    the *normalized* text (:func:`dialogue_gym.text.view.normalize_text`) with its prices masked.
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
