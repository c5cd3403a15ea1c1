"""What a money amount in a turn stands for: its period, a total, a cost, a budget, a correction.

:func:`dialogue_gym.text.prices.read_offer` decides which amount a turn *proposes*; the cues here
tell it what the other amounts are:

* **period** — ``$1,225 a month``, ``$1,225/mo``, ``$300 per week``, ``$14,700 a year``:
  :func:`period_after` names the period an amount is quoted in (``"month"``, ``"week"``,
  ``"year"``, ``"day"``), so a rent is compared with a monthly listing and a yearly figure
  converted (:func:`convert`);
* **total** — ``$22,000+``, ``a guaranteed $22,000``, ``$22,000 over the lease``, ``a total of
  $3,600``: a figure summed over a term (:func:`is_total`), never the monthly offer;
* **cost** — ``I'd have to spend $200 on repairs``, ``shipping would cost me $40``, ``plus the
  $60 for the rack``: money the buyer spends elsewhere (:func:`is_cost`), no offer;
* **budget** — ``my budget is $500``, ``I can only afford $400``: the buyer's ceiling
  (:func:`is_budget`), a reason, not a price to close on;
* **correction** — ``I meant $1,225``, ``to be clear, my offer is 1225``, ``not $22,000``: a
  turn that restates or corrects its offer (:func:`clarifies`, :func:`is_clarified`,
  :func:`is_restated`, :func:`is_disowned`).

All functions read the normalized text (:func:`dialogue_gym.text.view.normalize_text`) and offsets
into it, as :class:`~dialogue_gym.text.price_extraction.PriceMention` gives them.
"""

from __future__ import annotations

import re

__all__ = [
    "PERIODS",
    "clarifies",
    "convert",
    "is_budget",
    "is_clarified",
    "is_cost",
    "is_disowned",
    "is_restated",
    "is_total",
    "listing_period",
    "period_after",
    "plus_after",
]

# Months per period: a price quoted per ``period`` is worth ``PERIODS[period]`` months' rent.
PERIODS = {"day": 12.0 / 365.0, "week": 12.0 / 52.0, "month": 1.0, "year": 12.0}
_PERIOD_NAMES = {
    "day": "day",
    "days": "day",
    "night": "day",
    "nights": "day",
    "nightly": "day",
    "daily": "day",
    "week": "week",
    "weeks": "week",
    "wk": "week",
    "wks": "week",
    "weekly": "week",
    "month": "month",
    "months": "month",
    "mo": "month",
    "mos": "month",
    "mth": "month",
    "mths": "month",
    "monthly": "month",
    "year": "year",
    "years": "year",
    "yr": "year",
    "yrs": "year",
    "annum": "year",
    "yearly": "year",
    "annually": "year",
}
_PERIOD_AFTER = re.compile(
    r"^\s*(?:(?:/\s*|(?:a|an|per|each|every|a\s+whole)\s+)"
    r"(?P<unit>months?|mos?|mths?|weeks?|wks?|years?|yrs?|annum|nights?|days?)\b|"
    r"(?P<adverb>monthly|weekly|yearly|annually|nightly|daily)\b)",
    re.IGNORECASE,
)
_TOTAL_AFTER = re.compile(
    r"^(?:\+|\s*(?:total\b|in total|all told|altogether|overall|in all\b|over (?:the |a |an |"
    r"the whole |the full |the entire |its )?(?:\w+[\s-]){0,2}?(?:lease|term|contract|"
    r"years?|months?)\b|for the (?:whole |entire |full )?(?:lease|term|year|contract)\b))",
    re.IGNORECASE,
)
_TOTAL_BEFORE = re.compile(
    r"\b(?:guaranteed|a total of|total of|in total|totals?|totaling|totalling|adds up to|"
    r"(?:over|for) (?:the|a|an) (?:whole |entire |full )?(?:lease|term|year|contract))"
    r"\b[^$\d]*$",
    re.IGNORECASE,
)
# What the buyer spends elsewhere: on repairs, shipping, parts, an accessory.
_COST_AFTER = re.compile(
    r"^\s*(?:(?:on|in|for|into|towards?)\s+(?:the\s+|a\s+|some\s+|new\s+|its?\s+)?(?:repairs?|"
    r"fix(?:es|ing)?|parts|shipping|delivery|movers?|moving|gas|tires|replac\w+|cleaning|"
    r"paint\w*|labou?r|install\w*|insurance|registration|taxe?s?|fees?|upkeep|maintenance|"
    r"(?:a|the) mechanic|the shop|(?:a )?tune-?ups?|servic\w+|a (?:new|replacement)\b)|"
    r"worth of (?:repairs?|work|parts|fixes)|to (?:fix|repair|replace|get it (?:fixed|"
    r"repaired|running|working)))\b",
    re.IGNORECASE,
)
_COST_BEFORE = re.compile(
    r"\b(?:(?:have|need|got|going) to (?:spend|pay|put|sink|invest|shell out|fork out)|"
    r"(?:i'?d|i would|i'?ll|i will|we'?d) (?:also |still )?(?:spend|sink|put in)|"
    r"(?:would|will|could|gonna|going to|might|that'?ll|it'?ll) (?:cost|run|set) (?:me|us)?|"
    r"(?:repairs?|fixing it|the fix|shipping|delivery|gas|movers?|parts|tires|a mechanic) "
    r"(?:alone )?(?:is|are|would be|will be|costs?|runs?|would (?:cost|run)|will (?:cost|run)|"
    r"comes? to)|after (?:the|paying|spending|i pay|i spend)|plus (?:the|another|an extra)|"
    r"on top of)\b[^$\d]*$",
    re.IGNORECASE,
)
_BUDGET_BEFORE = re.compile(
    r"\b(?:budget(?:ed)?(?: is| was| of| at|'s)?|(?:can|could) (?:only )?afford|"
    r"max(?:imum)? budget)\b[^$\d]*$",
    re.IGNORECASE,
)
# A correction names its amount right after the cue: "I meant $1,225", "my offer is 1225".
_CLARIFY_BEFORE = re.compile(
    r"\b(?:i meant|i mean|meant to (?:say|write|type)|to be clear|to clarify|let me clarify|"
    r"let me be clear|correction|(?:my|the) (?:actual |real )?offer (?:is|was|stands at|"
    r"remains)|what i(?:'m| am)? (?:offer(?:ing|ed)|meant|said) (?:is|was))\b[^$\d.!?]*$",
    re.IGNORECASE,
)
_RESTATED_BEFORE = re.compile(
    r"\b(?:i said|i offered|i'?ve offered|i was offering)"
    r"\s*(?:\w+\s+)?$",
    re.IGNORECASE,
)
_DISOWNED_BEFORE = re.compile(r"\b(?:not|never|rather than|instead of)\s*(?:\w+\s+)?$", re.I)
_DISOWNED_AFTER = re.compile(
    r"^\s*(?:(?:is|was)(?:n'?t| not) (?:my|an|the) (?:offer|price)|(?:is|was) (?:a )?(?:typo|"
    r"mistake)|was the total)\b",
    re.IGNORECASE,
)
_CLARIFIES = re.compile(
    r"\b(?:i meant|meant to (?:say|write|type)|to be clear|to clarify|let me clarify|"
    r"let me be clear|correction|misunderst\w*|misread|typo|that'?s not what i (?:said|offered|"
    r"meant)|(?:was|is)(?:n'?t| not) (?:my|an|the) offer|i never (?:said|offered|agreed)|"
    r"(?:that )?was (?:the|a) total|i was talking about the total)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[.!?]\s|\n")


def period_after(text: str, end: int) -> str | None:
    """The period an amount ending at ``end`` is quoted in (``$1,225 a month`` → ``"month"``).

    Returns ``"day"``, ``"week"``, ``"month"``, ``"year"`` or ``None`` (a one-off amount).
    """
    match = _PERIOD_AFTER.match(text[end:])
    if match is None:
        return None
    word = (match.group("unit") or match.group("adverb")).lower()
    return _PERIOD_NAMES.get(word)


def listing_period(unit: str) -> str:
    """The period of a listing price from its unit text (``" a month"`` → ``"month"``).

    Returns ``"item"`` for a one-off price (no unit).
    """
    match = re.search(r"\b(day|night|week|month|mo|year|yr|annum)s?\b", unit, re.IGNORECASE)
    return _PERIOD_NAMES.get(match.group(1).lower(), "item") if match else "item"


def convert(value: float, quoted: str, wanted: str) -> float:
    """``value`` quoted per ``quoted`` expressed per ``wanted`` (both keys of :data:`PERIODS`)."""
    return value * PERIODS[wanted] / PERIODS[quoted]


def _window(text: str, start: int, width: int = 80) -> str:
    """Up to ``width`` characters before ``start``, from the start of the sentence."""
    window = text[max(0, start - width) : start]
    cut = None
    for match in _SENTENCE.finditer(window):
        cut = match.end()
    return window[cut:] if cut is not None else window


def is_total(text: str, start: int, end: int, before: str) -> bool:
    """The amount is a figure summed over a term, not a price per period.

    ``$22,000+``, ``a total of $3,600``, ``$22,000 over the lease``; ``before`` is the clause
    before the amount.
    """
    return bool(_TOTAL_AFTER.match(text[end:]) or _TOTAL_BEFORE.search(before))


def plus_after(text: str, end: int) -> bool:
    """The amount carries a ``+`` (``$22,000+``: "or more", a cited estimate)."""
    return text[end : end + 1] == "+"


def is_cost(text: str, end: int, before: str) -> bool:
    """Money the buyer spends elsewhere (``spend $200 on repairs``, ``shipping is $40``)."""
    return bool(_COST_AFTER.match(text[end:]) or _COST_BEFORE.search(before))


def is_budget(before: str) -> bool:
    """The amount is the buyer's budget (``my budget is $500``, ``I can only afford $400``)."""
    return bool(_BUDGET_BEFORE.search(before))


def is_clarified(text: str, start: int) -> bool:
    """The amount is named as the corrected or restated offer (``I meant $1,225``)."""
    return bool(_CLARIFY_BEFORE.search(_window(text, start)))


def is_restated(before: str) -> bool:
    """The amount is one the buyer says it offered earlier (``I said $1,225``)."""
    return bool(_RESTATED_BEFORE.search(before))


def is_disowned(text: str, end: int, before: str) -> bool:
    """The amount is one the turn says is *not* its offer (``not $22,000``)."""
    return bool(_DISOWNED_BEFORE.search(before) or _DISOWNED_AFTER.match(text[end:]))


def clarifies(text: str) -> bool:
    """The turn corrects or restates an offer (``I meant``, ``to be clear``, ``not my offer``)."""
    return bool(_CLARIFIES.search(text))
