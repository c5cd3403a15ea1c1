"""Field-by-field validation of task cards: every value is checked before it is used.

:func:`dialogue_gym.cards.card.parse_card` reads each field through the helpers here, so a bad
value is a :class:`CardError` whose message names the field (``concerns.price.blocking_weight:
expected a finite number in [0, 1], got nan``) and, through ``parse_card``, the card's file. No
``ValueError``/``TypeError``/``OverflowError``/``AttributeError`` of Python's own escapes.

The rules:

* numbers are real numbers (``true`` is not a number), finite and in their documented range;
  integers are true integers (``2.9``, ``"6"`` and ``true`` are refused);
* counts are bounded (:data:`MAX_EXCHANGES`, :data:`MAX_JUDGE_N`, :data:`MAX_PERSONAS`), so a
  card cannot ask for a billion personas or judge votes;
* regex cues go through :func:`dialogue_gym.text.safe_regex.compile_safe` (catastrophic patterns
  are refused);
* ``str.format`` templates (persona backgrounds) may only name known fields, and a width or
  precision in a format spec is at most :data:`MAX_FORMAT_WIDTH`.
"""

from __future__ import annotations

import math
import numbers
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym.text.safe_regex import UnsafeRegexError, compile_safe

__all__ = [
    "MAX_EXCHANGES",
    "MAX_FORMAT_WIDTH",
    "MAX_JUDGE_N",
    "MAX_LABEL_ABS",
    "MAX_PERSONAS",
    "CardError",
    "boolean",
    "check_extra_sections",
    "choice",
    "exchange_budget",
    "format_template",
    "integer",
    "number",
    "patterns",
    "real",
    "table",
    "tables",
    "text",
    "texts",
]

MAX_EXCHANGES = 1000
"""The largest exchange budget ``task.max_exchanges`` (and ``make(..., max_exchanges=)``)."""

MAX_JUDGE_N = 64
"""The most sampled judgments (``judge.success.n``)."""

MAX_PERSONAS = 10_000
"""The largest persona bank (``personas.count``) and listing bank (``listings.count``)."""

MAX_LABEL_ABS = 1000.0
"""Label rewards (``judge.success.labels``) lie in ``[-MAX_LABEL_ABS, MAX_LABEL_ABS]``."""

MAX_FORMAT_WIDTH = 1000
"""The largest width or precision in a template's format spec (``{name:>20}``)."""

MAX_SEED = 2**63 - 1

_MISSING = object()


class CardError(ValueError):
    """A task card is missing fields or holds invalid values."""


def _kind(value: Any) -> str:
    return "a boolean" if isinstance(value, bool) else type(value).__name__


def _fetch(parent: Mapping[str, Any], key: str, where: str, default: Any) -> Any:
    if not isinstance(parent, Mapping):
        raise CardError(f"{where}: expected a table, got {_kind(parent)}")
    if key in parent:
        return parent[key]
    if default is _MISSING:
        raise CardError(f"{where}: missing required key {key!r}")
    return default


def table(
    parent: Mapping[str, Any], key: str, where: str, default: Any = _MISSING
) -> Mapping[str, Any]:
    """``parent[key]`` as a table (``[section]`` or ``{...}``).

    Args:
        parent: The enclosing table.
        key: The key.
        where: The enclosing table's path, for messages (``""`` at the top level).
        default: The value when the key is absent; required when not given.

    Raises:
        CardError: Missing, or not a table.
    """
    path = f"{where}.{key}" if where else key
    value = _fetch(parent, key, where or "card", default)
    if not isinstance(value, Mapping):
        raise CardError(f"{path}: expected a table, got {_kind(value)}")
    return value


def tables(parent: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
    """``parent[key]`` as an array of tables (``[[key]]``).

    Raises:
        CardError: Missing, not a list, or an entry that is not a table.
    """
    path = f"{where}.{key}" if where else key
    value = _fetch(parent, key, where or "card", _MISSING)
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise CardError(f"{path}: expected an array of tables ([[{path}]])")
    return value


def text(
    parent: Mapping[str, Any], key: str, where: str, default: Any = _MISSING, empty: bool = True
) -> str:
    """``parent[key]`` as a string.

    Args:
        parent: The enclosing table.
        key: The key.
        where: The enclosing table's path.
        default: The value when absent; required when not given.
        empty: Whether ``""`` is allowed.

    Raises:
        CardError: Missing, not a string, or empty when it must not be.
    """
    value = _fetch(parent, key, where, default)
    if not isinstance(value, str):
        raise CardError(f"{where}.{key}: expected a string, got {_kind(value)} {value!r}")
    if not empty and not value.strip():
        raise CardError(f"{where}.{key}: must not be empty")
    return value


def texts(
    parent: Mapping[str, Any],
    key: str,
    where: str,
    minimum: int = 1,
    default: Any = _MISSING,
) -> tuple[str, ...]:
    """``parent[key]`` as a list of strings with at least ``minimum`` entries.

    Raises:
        CardError: Missing, not a list of strings, or too short.
    """
    value = _fetch(parent, key, where, default)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise CardError(f"{where}.{key}: expected a list of strings, got {value!r:.80}")
    if len(value) < minimum:
        raise CardError(f"{where}.{key}: expected at least {minimum} entries, got {len(value)}")
    return tuple(value)


def boolean(parent: Mapping[str, Any], key: str, where: str, default: Any = _MISSING) -> bool:
    """``parent[key]`` as ``true``/``false`` (no numbers or strings).

    Raises:
        CardError: Missing or not a boolean.
    """
    value = _fetch(parent, key, where, default)
    if not isinstance(value, bool):
        raise CardError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def choice(
    parent: Mapping[str, Any],
    key: str,
    where: str,
    options: Sequence[str],
    default: Any = _MISSING,
) -> str:
    """``parent[key]``, one of ``options``.

    Raises:
        CardError: Not one of the options.
    """
    value = _fetch(parent, key, where, default)
    if not isinstance(value, str) or value not in options:
        raise CardError(f"{where}.{key}: must be one of {tuple(options)}, got {value!r}")
    return value


def _range_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    return f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def real(
    value: Any,
    path: str,
    low: float,
    high: float,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite real number in ``[low, high]`` (ends open when told).

    Args:
        value: The value read from the card.
        path: The field, for messages.
        low: The smallest value allowed.
        high: The largest value allowed.
        low_open: Whether ``low`` itself is excluded.
        high_open: Whether ``high`` itself is excluded.

    Raises:
        CardError: Not a number (booleans and strings are not), NaN/inf, or out of range.
    """
    bounds = _range_text(low, high, low_open, high_open)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CardError(f"{path}: expected a number in {bounds}, got {_kind(value)} {value!r:.80}")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf if value > 0 else -math.inf
    if not math.isfinite(result):
        raise CardError(f"{path}: expected a finite number in {bounds}, got {value!r:.80}")
    too_low = result <= low if low_open else result < low
    too_high = result >= high if high_open else result > high
    if too_low or too_high:
        raise CardError(f"{path}: expected a number in {bounds}, got {value!r:.80}")
    return result


def number(
    parent: Mapping[str, Any],
    key: str,
    where: str,
    low: float,
    high: float,
    default: Any = _MISSING,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``parent[key]`` checked by :func:`real` (``default`` when absent, else required).

    Raises:
        CardError: Missing, or not a finite number in range.
    """
    value = _fetch(parent, key, where, default)
    return real(value, f"{where}.{key}", low, high, low_open, high_open)


def integer(
    parent: Mapping[str, Any],
    key: str,
    where: str,
    low: int,
    high: int,
    default: Any = _MISSING,
) -> int:
    """``parent[key]`` as a true integer in ``[low, high]`` (``2.9``, ``"6"``, ``true`` fail).

    Raises:
        CardError: Missing, not an integer, or out of range.
    """
    value = _fetch(parent, key, where, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CardError(
            f"{where}.{key}: expected a whole number in [{low}, {high}], got {_kind(value)} "
            f"{value!r:.80}"
        )
    if not low <= value <= high:
        raise CardError(f"{where}.{key}: expected a whole number in [{low}, {high}], got {value}")
    return value


def exchange_budget(value: Any, name: str = "max_exchanges") -> int:
    """Checks an exchange budget given to an environment (not from a card).

    Args:
        value: The budget.
        name: The argument's name, for the message.

    Returns:
        ``value`` as an ``int``: it must be an integer (a NumPy one will do, a bool will not)
        in ``[1, MAX_EXCHANGES]``.

    Raises:
        ValueError: Not such an integer (``0``, ``-1``, ``2.5``, ``True``, ``"8"``).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not 1 <= int(value) <= MAX_EXCHANGES
    ):
        raise ValueError(
            f"{name} must be a whole number in [1, {MAX_EXCHANGES}] (or None for the card's "
            f"budget), got {value!r}"
        )
    return int(value)


def patterns(parent: Mapping[str, Any], key: str, where: str) -> tuple[re.Pattern[str], ...]:
    """``parent[key]`` (optional) as a list of regexes, compiled case-insensitively.

    Raises:
        CardError: Not a list of strings, an invalid regex, or one that could backtrack
            catastrophically (:mod:`dialogue_gym.text.safe_regex`).
    """
    compiled = []
    for index, pattern in enumerate(texts(parent, key, where, minimum=0, default=[])):
        try:
            compiled.append(compile_safe(pattern, re.IGNORECASE))
        except UnsafeRegexError as exc:
            raise CardError(
                f"{where}.{key}[{index}]: regex {pattern!r:.120} refused: {exc}"
            ) from None
    return tuple(compiled)


_SPEC_NUMBER = re.compile(r"\d+")


def format_template(template: str, where: str, sample: Mapping[str, Any]) -> None:
    """Checks a ``str.format`` template against the fields it will be given.

    Every ``{field}`` must be one of ``sample``'s keys (no attribute, index or positional
    fields), a format spec holds no nested fields and no width/precision above
    :data:`MAX_FORMAT_WIDTH`, and formatting ``sample`` must work.

    Args:
        template: The template.
        where: The field holding it, for messages.
        sample: A value of the right type for each field.

    Raises:
        CardError: The template is malformed or would fail (or allocate without bound).
    """
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise CardError(f"{where}: bad template {template!r:.120}: {exc}") from None
    for _, field, spec, _ in parts:
        if field is None:
            continue
        if field not in sample:
            raise CardError(
                f"{where}: template {template!r:.120} uses unknown field {{{field}}}; known: "
                f"{sorted(sample)}"
            )
        if spec and "{" in spec:
            raise CardError(f"{where}: template {template!r:.120}: nested fields in a format spec")
        if spec and any(int(n) > MAX_FORMAT_WIDTH for n in _SPEC_NUMBER.findall(spec)):
            raise CardError(
                f"{where}: template {template!r:.120}: width/precision above "
                f"{MAX_FORMAT_WIDTH} in format spec {spec!r}"
            )
    try:
        template.format(**sample)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise CardError(f"{where}: template {template!r:.120} fails: {exc}") from None


# -- task-specific sections (kept in TaskCard.extra) --------------------------------------------


def _preset_tables(parent: Mapping[str, Any], where: str) -> None:
    for name in parent:
        preset = table(parent, name, where)
        for key, value in preset.items():
            path = f"{where}.{name}"
            if isinstance(value, bool):
                continue
            if isinstance(value, list):
                for index, item in enumerate(value):
                    real(item, f"{path}.{key}[{index}]", -1e6, 1e6)
                continue
            number(preset, key, path, -1e6, 1e6)


def check_extra_sections(data: Mapping[str, Any]) -> None:
    """Validates the task-specific sections the shipped user models read.

    ``[presets.<name>]`` and ``[seller.presets.<name>]`` values are finite numbers (or
    booleans, or lists of numbers; their names are checked by the user model), ``[listings]``
    holds a bounded, seeded bank of priced items, ``[seller.mind]`` texts,
    ``[seller.replies]`` lists of texts and ``[seller.unfit]`` lists of regexes.

    Raises:
        CardError: Naming the offending field.
    """
    if "presets" in data:
        _preset_tables(table(data, "presets", ""), "presets")
    if "seller" in data:
        seller = table(data, "seller", "")
        if "presets" in seller:
            _preset_tables(table(seller, "presets", "seller"), "seller.presets")
        if "mind" in seller:
            mind = table(seller, "mind", "seller")
            for key in mind:
                text(mind, key, "seller.mind")
        if "replies" in seller:
            replies = table(seller, "replies", "seller")
            for key in replies:
                texts(replies, key, "seller.replies")
        if "unfit" in seller:
            unfit = table(seller, "unfit", "seller")
            for key in unfit:
                patterns(unfit, key, "seller.unfit")
    if "listings" in data:
        listings = table(data, "listings", "")
        integer(listings, "count", "listings", 1, MAX_PERSONAS, default=240)
        integer(listings, "seed", "listings", 0, MAX_SEED, default=0)
        number(listings, "buyer_target_fraction", "listings", 0, 1, 0.7, True, True)
        categories = tables(listings, "categories", "listings")
        if not categories:
            raise CardError("listings.categories: expected at least one [[listings.categories]]")
        for index, category in enumerate(categories):
            where = f"listings.categories[{index}]"
            text(category, "id", where, empty=False)
            text(category, "unit", where, default="")
            texts(category, "highlights", where)
            texts(category, "flaws", where)
            items = tables(category, "items", where)
            if not items:
                raise CardError(f"{where}.items: expected at least one item")
            for k, item in enumerate(items):
                path = f"{where}.items[{k}]"
                text(item, "title", path, empty=False)
                low = number(item, "low", path, 0, 1e9, low_open=True)
                high = number(item, "high", path, 0, 1e9, low_open=True)
                if low > high:
                    raise CardError(f"{path}.high: must not be below low ({low:g}), got {high:g}")
                if "flaws" in item:  # the item's own flaws, instead of its category's
                    texts(item, "flaws", path)
