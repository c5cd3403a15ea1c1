"""Parsers for LLM outputs: judge labels, rationality, deals and prices, BDI records.

Every parser returns ``None`` (or reports missing fields) rather than guessing: judge answers
(labels, RATIONAL/NOT_RATIONAL, deals) are read only from the exact answer format, and hedges,
questions, echoes of the prompt and prose are unparseable. An unreadable vote is counted as
failed by the caller, never silently read as a label.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dialogue_gym.mind.bdi import BDI

__all__ = [
    "BDI_FIELDS",
    "BDIParse",
    "DealVote",
    "clean_utterance",
    "parse_bdi",
    "parse_deal",
    "parse_label",
    "parse_price",
    "parse_rationality",
]

# -- strict reading of answers -----------------------------------------------------------------
#
# A judge is asked for one label "and nothing else". Its answer is read only when it *is* in
# that format; everything else is unparseable (``None``) and counted as a failed vote by the
# caller. Accepted shapes (case, markdown, quotes and surrounding punctuation do not matter):
#
# 1. the whole answer is a label or one of its aliases (``**Agree.**``, ``"somewhat better"``);
# 2. an answer-marker line followed by exactly one label and nothing but punctuation
#    (``Answer: agree``, ``Label: agree``, ``Final answer: agree``, ``The final label is: agree``);
# 3. the answer starts with a label followed by a separator (``.`` ``,`` ``;`` ``:`` ``!`` ``(``,
#    `` - `` or a line break) and an explanation (``Agree. The persuadee said yes.``), the
#    explanation naming no other label (negated mentions such as ``did not refuse`` aside).
#
# Rejected whatever else they contain: any question mark (questions, echoed questions), hedges
# (``cannot tell``, ``unclear``, ``not sure``, ``maybe``, ``I don't know``, ``insufficient
# information`` ...), echoes of the prompt's instructions (``Question:``, ``exactly one
# label``, ``and nothing else`` ...), lists of options (``refused, neutral, positive or
# agree``), answer-marker lines that hold anything but one label, and prose that merely
# mentions a label (``I think the persuadee has decided to donate``).

_TRANSLATE = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-"})
_MARKDOWN = re.compile(r"[*`#]+|^[ \t]*>+", re.M)
_BULLET = re.compile(r"^[ \t]*(?:[-•]|\d{1,2}[.)])[ \t]+", re.M)
_JOINED = re.compile(r"(?<=\w)[_-](?=\w)")
_TOKEN = re.compile(r"[\w']+")
_HEDGE = re.compile(
    r"\b(?:cannot|can't|can not|could not|couldn't|unable to|impossible to|hard to|"
    r"difficult to|no way to)\s+(?:really\s+|yet\s+)?(?:tell|determine|say|judge|decide|know|"
    r"assess|evaluate|infer|be sure|be certain)\b"
    r"|\b(?:cannot|can't|can not|could not|couldn't)\s+be\s+(?:determined|told|judged|known)\b"
    r"|\bunclear\b|\bnot\s+(?:entirely\s+|completely\s+|quite\s+|really\s+)?(?:clear|sure|"
    r"certain)\b|\bunsure\b|\b(?:it|that)\s+depends\b|\bmaybe\b|\bperhaps\b|\bpossibly\b|"
    r"\bprobably\b|\b(?:i|we)\s+(?:don't|do not|dont)\s+know\b|\bdunno\b|\bi\s+guess\b|"
    r"\b(?:insufficient|not enough|inadequate)\s+(?:information|evidence|context|data|"
    r"details?)\b"
)
_ECHO = re.compile(
    r"\bquestion\s*:|\bchoose\s+(?:exactly\s+)?one\b|\bexactly\s+one\s+(?:label|response)\b|"
    r"\band\s+nothing\s+else\b|\b(?:reply|respond|answer)\s+with\s+(?:exactly|one|that|the)\b|"
    r"\bcopied\s+exactly\b|\breply\s+exactly\b|\bconversation\s+so\s+far\b|"
    r"\blatest\s+exchange\b|</?\s*dialogue\s*>|^\s*echo\s*:|\[price\]"
)
_MARKER = re.compile(
    r"^(?:the\s+|my\s+)?(?:final\s+)?(?:answer|label|verdict|judge?ment|response|output|"
    r"classification|decision)\s*(?:is\s*[:=]?|[:=]|-)\s*(?P<rest>.*)$"
)
_NEGATED = re.compile(r"(?:\bnot|\bnever|n't|\bnor|\bneither|\bno|\bwithout)\s+(?:\w+\s+)?$")
_LIST_GAP = re.compile(r"[\s,;/|&()\[\]\"']*(?:\b(?:or|and|nor|vs|versus)\b[\s,;/|&()\[\]\"']*)?")
_ALTERNATIVE = re.compile(r"\s*(?:(?:or|nor|vs|versus)\b|/)")
_SEPARATOR = r"[\"')\]]*(?:\s*[.,;:!(]|\s+-+\s*|\s*\n|\s*$)"
_OPENERS = r"[\s\"'(\[]*"
_TRIM = " \t\n.,;:!-'\"()[]{}"


def _clean(text: str) -> str:
    """Lower-case, markdown/bullets stripped, ``_``/``-`` inside words as spaces, lines kept."""
    text = _MARKDOWN.sub(" ", text.translate(_TRANSLATE))
    text = _BULLET.sub("", text)
    text = _JOINED.sub(" ", text).replace("_", " ")
    lines = (" ".join(line.split()) for line in text.lower().splitlines())
    return "\n".join(line for line in lines if line)


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(text))


@dataclasses.dataclass(frozen=True)
class _Phrase:
    label: str
    tokens: tuple[str, ...]
    pattern: re.Pattern[str]


def _phrases(options: Mapping[str, Sequence[str]]) -> list[_Phrase]:
    """Each label's accepted phrases, longest first."""
    out: dict[tuple[tuple[str, ...], str], _Phrase] = {}
    for label, phrases in options.items():
        for phrase in (label, *phrases):
            tokens = _tokens(_clean(str(phrase)))
            if tokens and (tokens, label) not in out:
                body = r"[^\w\n]+".join(re.escape(t) for t in tokens)
                pattern = re.compile(r"(?<![\w'])" + body + r"(?![\w'])")
                out[(tokens, label)] = _Phrase(label, tokens, pattern)
    return sorted(out.values(), key=lambda p: -len(p.tokens))


@dataclasses.dataclass(frozen=True)
class _Hit:
    label: str
    start: int
    end: int
    negated: bool


def _hits(text: str, phrases: Sequence[_Phrase]) -> list[_Hit]:
    """Non-overlapping phrase mentions (longest phrases first), in text order."""
    taken: list[tuple[int, int, str]] = []
    for phrase in phrases:
        for match in phrase.pattern.finditer(text):
            start, end = match.span()
            if all(end <= s or start >= e for s, e, _ in taken):
                taken.append((start, end, phrase.label))
    taken.sort()
    return [
        _Hit(label, start, end, bool(_NEGATED.search(text[max(0, start - 24) : start])))
        for start, end, label in taken
    ]


def _exact(text: str, phrases: Sequence[_Phrase]) -> set[str]:
    """The labels whose phrase is the whole of ``text`` (punctuation aside)."""
    tokens = _tokens(text)
    return {p.label for p in phrases if p.tokens == tokens}


def _read_label(text: str | None, options: Mapping[str, Sequence[str]]) -> str | None:
    if not text or not text.strip() or "?" in text:
        return None
    clean = _clean(text)
    phrases = _phrases(options)
    whole = _exact(clean, phrases)
    if whole:
        return next(iter(whole)) if len(whole) == 1 else None
    if _HEDGE.search(clean) or _ECHO.search(clean):
        return None
    hits = _hits(clean, phrases)
    for a, b in itertools.pairwise(hits):
        if a.label != b.label and _LIST_GAP.fullmatch(clean[a.end : b.start]):
            return None  # an echo of the options
    found: set[str] = set()
    for line in clean.splitlines():
        marker = _MARKER.match(line)
        if marker is None:
            continue
        labels = _exact(marker.group("rest").strip(_TRIM), phrases)
        if len(labels) != 1:
            return None  # a marker line that is not exactly one label
        found |= labels
    for phrase in phrases:
        lead = re.match(_OPENERS + phrase.pattern.pattern + _SEPARATOR, clean)
        if lead is None:
            continue
        rest = clean[lead.end() :]
        if _ALTERNATIVE.match(rest):
            return None  # "agree / positive", "agree, or positive"
        if any(h.label != phrase.label and not h.negated for h in _hits(rest, phrases)):
            return None  # the explanation names another label
        found.add(phrase.label)
        break
    return next(iter(found)) if len(found) == 1 else None


# -- judge labels ------------------------------------------------------------------------------


def parse_label(text: str | None, options: Mapping[str, Sequence[str]]) -> str | None:
    """Reads one label from a judge's answer given in the exact answer format, else ``None``.

    Accepted (case, markdown, quotes, surrounding punctuation and ``_``/space/hyphen variants
    such as ``somewhat better`` do not matter):

    1. the whole answer is a label or one of its aliases (ESConv's answer sentences, e.g.
       ``No, but the Patient feels better``, are aliases);
    2. an answer-marker line holding exactly one label and nothing but punctuation
       (``Answer: agree``, ``Label: agree``, ``Final answer: agree``);
    3. a label at the very start followed by a separator and an explanation that names no other
       label (``Agree. The persuadee said yes.``, ``agree - because ...``).

    Never guesses: hedges (``I cannot tell whether ...``, ``unclear``, ``maybe``), questions
    and echoed questions (any ``?``), echoes of the prompt's instructions, option lists
    (``refused, neutral, positive or agree``), negated labels (``not agree``), conflicting
    readings and prose that merely mentions a label (``I think they agreed``) are ``None``; the
    caller counts the vote as failed.

    Args:
        text: The model's answer.
        options: Label → accepted phrases (aliases); the label itself is always accepted.
    """
    return _read_label(text, options)


_RATIONALITY = {
    "NOT_RATIONAL": ("NOT_RATIONAL", "not rational", "irrational", "non rational", "nonrational"),
    "RATIONAL": ("RATIONAL",),
}


def parse_rationality(text: str | None) -> int | None:
    """Reads RATIONAL (+1) or NOT_RATIONAL (−1) with :func:`parse_label`'s strictness.

    ``not rational``, ``irrational`` and ``non-rational`` read as NOT_RATIONAL (``NOT_RATIONAL``
    contains ``RATIONAL``: the longer phrase wins). Accepted: the whole answer, an answer-marker
    line (``Answer: RATIONAL``) or a leading label with an explanation (``RATIONAL. The user
    updated on a concrete reason.``). Hedges, questions, echoes (``RATIONAL or NOT_RATIONAL``)
    and prose mentions are ``None``.
    """
    label = _read_label(text, _RATIONALITY)
    if label is None:
        return None
    return -1 if label == "NOT_RATIONAL" else 1


# -- deals and prices --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DealVote:
    """One CraigslistBargain judgment.

    Attributes:
        deal: Whether the judgment says a deal was reached.
        price: The agreed price it names (``None`` when it names none).
    """

    deal: bool
    price: float | None = None


_MONEY = re.compile(
    r"(?P<cur>\$|USD\s?|US\$)?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<k>\s?[kK]\b)?(?P<unit>\s?(?:dollars?|bucks|usd)\b)?",
    re.I,
)


def parse_price(text: str, reference: float | None = None) -> float | None:
    """The first money amount in a judge's answer (``$1,200``, ``250 dollars``, ``1.2k``).

    Uses :func:`dialogue_gym.text.prices.extract_prices` when available (it skips years, model
    numbers and units); falls back to a local pattern.
    """
    try:
        from dialogue_gym.text.prices import extract_prices
    except ImportError:  # pragma: no cover - the module ships with the package
        extract_prices = None  # type: ignore[assignment]
    if extract_prices is not None:
        amounts = [m.value for m in extract_prices(text, reference) if m.kind == "amount"]
        if amounts:
            return float(amounts[0])
    for match in _MONEY.finditer(text):
        if not (match.group("cur") or match.group("unit") or match.group("k")):
            before = text[max(0, match.start() - 12) : match.start()].lower()
            if not re.search(r"\b(?:at|for|of|price|is)\s*$", before):
                continue
        value = float(match.group("num").replace(",", ""))
        if match.group("k"):
            value *= 1000
        if value > 0:
            return value
    return None


_PRICE = (
    r"(?:us\$|\$|usd ?)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?: ?k\b)?"
    r"(?: ?(?:dollars?|bucks|usd)\b)?"
)
_NO_DEAL_ANSWER = (
    r"(?:(?:they|the buyer and (?:the )?seller)\s+)?(?:(?:have|has)\s+not|haven't|hasn't)\s+"
    r"(?:yet\s+)?reached\s+(?:a|any)\s+deal(?:\s+yet)?"
    r"|(?:(?:they|the buyer and (?:the )?seller)\s+)?(?:did\s+not|didn't)\s+reach\s+(?:a|any)\s+"
    r"deal|no\s+deal(?:\s+(?:was|has\s+been)\s+reached)?(?:\s+yet)?"
)
_DEAL_ANSWER = (
    r"(?:(?:(?:they|the buyer and (?:the )?seller)\s+)?(?:have\s+)?reached\s+a\s+deal|deal"
    r"(?:\s+(?:was|has\s+been)\s+reached)?)(?:\s+(?:at|for)\s+(?P<price>" + _PRICE + r"))?"
)
_DEAL_FORMS = re.compile(r"(?P<no>" + _NO_DEAL_ANSWER + r")|(?P<yes>" + _DEAL_ANSWER + r")")
_DEAL_STATED = re.compile(
    r"\b(?:reached|made|struck|closed)\s+(?:a|the|an)\s+(?:deal|agreement)\b|\bdeal\s+"
    r"(?:at|for|was reached|is reached)\b|\bagreed\s+(?:on|to|upon)\s+(?:a|the)\s+price\b"
)
_NO_DEAL_STATED = re.compile(
    r"\bno\s+deal\b|(?:\b(?:not|never|no longer|failed to|yet to)|n't)\s+(?:\w+\s+){0,2}"
    r"(?:reach|reached|make|made|strike|struck|close|closed)\s+(?:a|any|the|an)\s+"
    r"(?:deal|agreement)\b"
)


def _deal_statement(text: str, reference: float | None) -> DealVote | None:
    """``text`` as exactly one deal/no-deal answer (punctuation aside), else ``None``."""
    match = _DEAL_FORMS.fullmatch(text.strip(_TRIM))
    if match is None:
        return None
    if match.group("no"):
        return DealVote(False, None)
    price = match.group("price")
    return DealVote(True, parse_price(price, reference) if price else None)


def parse_deal(text: str | None, reference: float | None = None) -> DealVote | None:
    """Reads "They have reached a deal at [price]" / "They have not reached a deal".

    Accepted with :func:`parse_label`'s strictness: the whole answer is one of the two
    sentences (short forms ``Deal at $250``, ``No deal``, ``They haven't reached a deal yet``
    too); or an answer-marker line holds exactly one; or the answer starts with one, followed by
    a separator and an explanation that does not state the opposite. A deal answer without a
    readable price gives ``DealVote(True, None)``. Hedges, questions, echoes of the prompt (the
    template ``[price]``, both sentences), option lists and prose (``the buyer agreed on a price
    of $300``) are ``None``.

    Args:
        text: The judge's answer.
        reference: The listing price (helps read the scale of bare numbers).
    """
    if not text or not text.strip() or "?" in text:
        return None
    clean = _clean(text)
    whole = _deal_statement(clean, reference)
    if whole is not None:
        return whole
    if _HEDGE.search(clean) or _ECHO.search(clean):
        return None
    votes: list[DealVote] = []
    for line in clean.splitlines():
        marker = _MARKER.match(line)
        if marker is None:
            continue
        vote = _deal_statement(marker.group("rest"), reference)
        if vote is None:
            return None  # a marker line that is not exactly one answer
        votes.append(vote)
    lead = re.match(_OPENERS + r"(?:" + _DEAL_FORMS.pattern + r")" + _SEPARATOR, clean)
    if lead is not None:
        rest = clean[lead.end() :]
        vote = _deal_statement(clean[: lead.end()], reference)
        if vote is None or _ALTERNATIVE.match(rest):
            return None
        said_no = _NO_DEAL_STATED.search(rest) is not None
        said_yes = _DEAL_STATED.search(_NO_DEAL_STATED.sub(" ", rest)) is not None
        if (vote.deal and said_no) or (not vote.deal and said_yes):
            return None  # the explanation states the opposite
        votes.append(vote)
    if not votes or any(v.deal != votes[0].deal for v in votes):
        return None
    prices = {v.price for v in votes if v.deal}
    return votes[0] if len(prices) <= 1 else None


# -- BDI records -------------------------------------------------------------------------------

BDI_FIELDS = ("belief", "desire", "intention", "receptivity", "confidence", "valence")
_TEXT_FIELDS = BDI_FIELDS[:3]
_RANGES = {"receptivity": (0.0, 1.0), "confidence": (0.0, 1.0), "valence": (-1.0, 1.0)}
_FIELD_ALIASES = {
    "belief": "belief",
    "beliefs": "belief",
    "desire": "desire",
    "desires": "desire",
    "intention": "intention",
    "intentions": "intention",
    "intent": "intention",
    "receptivity": "receptivity",
    "receptiveness": "receptivity",
    "rho": "receptivity",
    "ρ": "receptivity",
    "confidence": "confidence",
    "c": "confidence",
    "valence": "valence",
    "v": "valence",
}
_FIELD_LINE = re.compile(
    r"(?im)(?:^[ \t]*(?:[-*#>•]+|\d+[.)])?[ \t]*|(?<=[\s,;|(]))\**[ \t]*"
    r"(belief|beliefs|desire|desires|intention|intentions|intent|receptivity|receptiveness|"
    r"confidence|valence)\s*\**\s*(?:\([^)\n]{0,40}\))?\s*\**\s*[:=]\s*"
)
_NUMBER = re.compile(r"[-+−]?(?:\d+(?:\.\d*)?|\.\d+)")


@dataclasses.dataclass(frozen=True)
class BDIParse:
    """The result of reading a BDI record from model output.

    Attributes:
        fields: The fields that were read (texts stripped; scalars clamped into range).
        missing: Fields that are absent, empty or (scalars) not a number.
        clamped: Scalar fields whose value was outside its range and was clamped.
    """

    fields: Mapping[str, Any]
    missing: tuple[str, ...]
    clamped: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether all six fields were read."""
        return not self.missing

    def to_bdi(self) -> BDI:
        """The record.

        Raises:
            ValueError: Some fields are missing (named in the message).
        """
        if self.missing:
            raise ValueError(f"BDI output is missing fields: {', '.join(self.missing)}")
        return BDI(**{name: self.fields[name] for name in BDI_FIELDS})


def _strip_text(value: Any) -> str:
    text = str(value).strip()
    text = re.sub(r"^\**\s*|\s*\**$", "", text)
    text = " ".join(text.split())
    if len(text) >= 2 and text[0] in "\"'“" and text[-1] in "\"'”":
        text = text[1:-1].strip()
    return text.rstrip(",;").strip()


def _scalar(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        match = _NUMBER.search(str(value))
        if match is None:
            return None
        number = float(match.group(0).replace("−", "-"))
        if re.match(r"\s*%", str(value)[match.end() :]):
            number /= 100.0
    return number if math.isfinite(number) else None


def _json_object(text: str) -> Mapping[str, Any] | None:
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S | re.I)
    candidates = [fence.group(1)] if fence else []
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(data, Mapping):
            return data
    return None


def _from_lines(text: str) -> dict[str, str]:
    matches = list(_FIELD_LINE.finditer(text))
    found: dict[str, str] = {}
    for index, match in enumerate(matches):
        name = _FIELD_ALIASES[match.group(1).lower()]
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        if name not in found:
            found[name] = text[match.end() : end]
    return found


def parse_bdi(text: str | None) -> BDIParse:
    """Reads the six BDI fields from JSON or ``Field: value`` lines.

    Accepts a JSON object (also inside a code fence or surrounded by prose; keys in any case),
    or ``Belief: ...`` lines (markdown bold, bullets and numbering tolerated; several fields on
    one line, as in ``Receptivity: 0.5 Confidence: 0.3 Valence: -0.2``; a field's text may
    continue on the next lines). Scalars take the first number of the value (``80%`` reads as
    0.8) and are clamped into range (receptivity and confidence [0, 1], valence [-1, 1]); the
    clamped fields are reported. Missing or empty fields are reported in ``missing``.
    """
    raw: dict[str, Any] = {}
    if text and text.strip():
        data = _json_object(text)
        if data is not None:
            for key, value in data.items():
                name = _FIELD_ALIASES.get(str(key).strip().lower())
                if name is not None and name not in raw:
                    raw[name] = value
        if len(raw) < len(BDI_FIELDS):
            for name, value in _from_lines(text).items():
                raw.setdefault(name, value)
    fields: dict[str, Any] = {}
    missing: list[str] = []
    clamped: list[str] = []
    for name in BDI_FIELDS:
        if name not in raw or raw[name] is None:
            missing.append(name)
            continue
        if name in _TEXT_FIELDS:
            value = _strip_text(raw[name])
            if not value:
                missing.append(name)
            else:
                fields[name] = value
            continue
        number = _scalar(raw[name])
        if number is None:
            missing.append(name)
            continue
        low, high = _RANGES[name]
        if not low <= number <= high:
            clamped.append(name)
            number = min(high, max(low, number))
        fields[name] = number
    return BDIParse(fields, tuple(missing), tuple(clamped))


# -- utterances --------------------------------------------------------------------------------

_TAGS = re.compile(r"</?\s*[a-z_]{1,30}\s*>", re.I)


def clean_utterance(
    text: str | None, labels: Iterable[str] = (), max_chars: int = 1200
) -> str | None:
    """Cleans a generated utterance; ``None`` when nothing usable is left.

    Strips code fences, block tags, a leading speaker label (``Persuadee: ...``), surrounding
    quotes, and anything from a line where the model starts writing another speaker's turn;
    collapses whitespace and caps the length.

    Args:
        text: The model output.
        labels: Speaker labels the model might prefix (``"Persuadee"``, ``"You"`` ...).
        max_chars: Longer texts are cut at the last sentence end before the cap.
    """
    if not text:
        return None
    body = re.sub(r"```[a-z]*", "", text, flags=re.I)
    body = _TAGS.sub("\n", body)
    names = [re.escape(label) for label in labels if label]
    names += ["user", "assistant", "system", "you", r"you \([^)]*\)"]
    label_re = re.compile(r"^\s*\**\s*(?:" + "|".join(names) + r")\s*\**\s*:\s*", re.I)
    lines = [line for line in body.strip().splitlines()]
    kept: list[str] = []
    for index, line in enumerate(lines):
        if index > 0 and label_re.match(line) and kept:
            break  # the model went on to write the next turn
        if index > 0 and re.match(r"^\s*[A-Z][\w -]{0,30}:\s", line) and kept:
            break
        kept.append(label_re.sub("", line, count=1) if index == 0 else line)
    out = " ".join(" ".join(kept).split())
    out = label_re.sub("", out, count=1)
    if len(out) >= 2 and out[0] in "\"'“" and out[-1] in "\"'”":
        out = out[1:-1].strip()
    if len(out) > max_chars:
        cut = out[:max_chars]
        end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
        out = cut[: end + 1] if end > max_chars // 2 else cut
    out = out.strip()
    return out or None
