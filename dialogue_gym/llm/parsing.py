"""Robust parsers for LLM outputs: judge labels, rationality, deals and prices, BDI records.

Every parser returns ``None`` (or reports missing fields) rather than guessing when the output
is ambiguous: an unreadable vote is counted as failed by the caller, never silently read as a
label.
"""

from __future__ import annotations

import dataclasses
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

# -- helpers -----------------------------------------------------------------------------------

_MARKDOWN = re.compile(r"[*_`#>]+")
_NEGATION_BEFORE = re.compile(r"(?:\bnot|\bnever|n't|\bnor|\bneither)\s+(?:\w+\s+)?$", re.I)
_ALTERNATIVE = re.compile(r"\s*(?:or|/|and|vs\.?|versus)\b|\s*/", re.I)
_ANSWER_MARKER = re.compile(
    r"(?:final\s+)?(?:answer|label|response|verdict|judg(?:e)?ment|outcome|choice|decision)"
    r"\s*(?:is|:|=|-)\s*",
    re.I,
)


def _normalize(text: str) -> str:
    """Lower-case, markdown stripped, underscores and hyphens as spaces, spaces collapsed."""
    text = _MARKDOWN.sub(" ", text.replace("_", " "))
    text = text.replace("’", "'").replace("-", " ")
    return " ".join(text.lower().split())


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    words = re.findall(r"[\w']+", _normalize(phrase))
    return re.compile(r"(?<![\w'])" + r"\W+".join(re.escape(w) for w in words) + r"(?![\w'])")


@dataclasses.dataclass(frozen=True)
class _Hit:
    label: str
    start: int
    end: int
    negated: bool


def _hits(text: str, options: Mapping[str, Sequence[str]]) -> list[_Hit]:
    """Non-overlapping phrase matches (longest phrases first), in text order."""
    candidates: list[tuple[int, int, str]] = []
    for label, phrases in options.items():
        for phrase in {label, *phrases}:
            if not re.search(r"\w", phrase):
                continue
            for match in _phrase_pattern(phrase).finditer(text):
                candidates.append((match.start(), match.end(), label))
    candidates.sort(key=lambda c: (-(c[1] - c[0]), c[0]))
    taken: list[tuple[int, int, str]] = []
    for start, end, label in candidates:
        if all(end <= s or start >= e for s, e, _ in taken):
            taken.append((start, end, label))
    taken.sort()
    return [
        _Hit(label, start, end, bool(_NEGATION_BEFORE.search(text[max(0, start - 24) : start])))
        for start, end, label in taken
    ]


# -- judge labels ------------------------------------------------------------------------------


def parse_label(text: str | None, options: Mapping[str, Sequence[str]]) -> str | None:
    """Reads one label from a judge's answer.

    Tolerates case, punctuation, markdown, surrounding words, ``_``/space/hyphen variants
    (``somewhat better``) and answer sentences given as aliases (ESConv's "No, but the Patient
    feels better"). Resolution order:

    1. the whole answer is a label or alias;
    2. the first label after an answer marker (``Answer: agree``, ``final label is agree``);
    3. a label at the very start of the answer (``Agree. The persuadee said yes``);
    4. the only label mentioned (negated mentions such as ``did not agree`` are ignored).

    Anything else (no label, or several different labels with no marker) is ``None``.

    Args:
        text: The model's answer.
        options: Label → accepted phrases (aliases); the label itself is always accepted.
    """
    if not text or not text.strip():
        return None
    norm = _normalize(text)
    stripped = norm.strip(" .!,;:'\"()[]{}")
    for label, phrases in options.items():
        for phrase in (label, *phrases):
            if stripped == _normalize(phrase).strip(" .!,;:'\"()"):
                return label
    hits = _hits(norm, options)
    positive = [h for h in hits if not h.negated]
    if not positive:
        return None
    for marker in _ANSWER_MARKER.finditer(norm):
        after = [h for h in positive if h.start >= marker.end()]
        if after and after[0].start - marker.end() <= 16:
            return after[0].label
    lead = len(norm) - len(norm.lstrip(" .,;:!'\"([{"))
    if positive[0].start <= lead and not _ALTERNATIVE.match(norm[positive[0].end :]):
        return positive[0].label  # "Agree. The persuadee said yes" — the leading label wins
    labels = {h.label for h in positive}
    return positive[0].label if len(labels) == 1 else None


_NOT_RATIONAL = re.compile(r"\bnot[\s_\-]*rational\b|\birrational\b|\bnon[\s_\-]*rational\b", re.I)
_RATIONAL = re.compile(r"(?<![\w-])rational\b", re.I)


def parse_rationality(text: str | None) -> int | None:
    """Reads RATIONAL (+1) or NOT_RATIONAL (−1); ``None`` when absent or ambiguous.

    ``NOT_RATIONAL`` contains ``RATIONAL``: negative forms (``NOT_RATIONAL``, ``not rational``,
    ``irrational``) are matched first and masked before looking for ``RATIONAL``. When both
    appear, the one the answer starts with (or that follows an answer marker) wins; otherwise
    the answer is ambiguous.
    """
    if not text or not text.strip():
        return None
    clean = _MARKDOWN.sub(" ", text)
    negatives = [m.start() for m in _NOT_RATIONAL.finditer(clean)]
    masked = _NOT_RATIONAL.sub(lambda m: " " * len(m.group(0)), clean)
    positives = [m.start() for m in _RATIONAL.finditer(masked)]
    if negatives and not positives:
        return -1
    if positives and not negatives:
        return 1
    if not positives:
        return None
    for marker in _ANSWER_MARKER.finditer(clean):
        end = marker.end()
        next_neg = min((p for p in negatives if p >= end), default=None)
        next_pos = min((p for p in positives if p >= end), default=None)
        candidates = [(p, v) for p, v in ((next_neg, -1), (next_pos, 1)) if p is not None]
        if candidates:
            position, value = min(candidates)
            if position - end <= 8:
                return value
    lead = len(clean) - len(clean.lstrip(" \t\n\"'([{.:"))
    first = min(min(negatives), min(positives))
    if first != lead:
        return None
    end = _NOT_RATIONAL.match(clean, first) or _RATIONAL.match(masked, first)
    if end is not None and _ALTERNATIVE.match(clean[end.end() :]):
        return None  # "RATIONAL or NOT_RATIONAL": an echo of the options
    return -1 if first in negatives else 1


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


_NO_DEAL = re.compile(
    r"\bno[\s_\-]+deal\b|(?:\b(?:not|never|no longer|failed to|yet to)|n't)\b[^.;!?]{0,24}"
    r"\b(?:reach|reached|make|made|come to|came to|agree|agreed|close|closed|strike|struck|"
    r"finali[sz]e|finali[sz]ed)\b|\bwithout (?:a|any) deal\b|\bdeal (?:was|is) not\b",
    re.I,
)
_DEAL = re.compile(
    r"\b(?:reached|made|struck|closed|agreed (?:on|to|upon)|come to|came to|settled on|"
    r"finali[sz]ed)\b[^.;!?]{0,20}\b(?:deal|agreement|price)\b|\bdeal (?:at|for|was reached|"
    r"is reached|reached)\b|^\W*deal\b|\bagreed price\b",
    re.I,
)
_MONEY = re.compile(
    r"(?P<cur>\$|USD\s?|US\$)?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<k>\s?[kK]\b)?(?P<unit>\s?(?:dollars?|bucks|usd)\b)?",
    re.I,
)


def parse_price(text: str, reference: float | None = None) -> float | None:
    """The first money amount in a judge's answer (``$1,200``, ``250 dollars``, ``1.2k``).

    Uses :func:`dialogue_gym.prices.extract_prices` when available (it skips years, model
    numbers and units); falls back to a local pattern.
    """
    try:
        from dialogue_gym.prices import extract_prices
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


def parse_deal(text: str | None, reference: float | None = None) -> DealVote | None:
    """Reads "They have reached a deal at [price]" / "They have not reached a deal".

    No-deal phrasings are matched first (``not reached a deal`` contains ``reached a deal``).
    A deal answer without a readable price gives ``DealVote(True, None)``; an answer that is
    neither gives ``None``.

    Args:
        text: The judge's answer.
        reference: The listing price (helps read the scale of bare numbers).
    """
    if not text or not text.strip():
        return None
    clean = _MARKDOWN.sub(" ", text.replace("_", " ")).strip()
    if _NO_DEAL.search(clean):
        return DealVote(False, None)
    if _DEAL.search(clean):
        return DealVote(True, parse_price(clean, reference))
    return None


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
