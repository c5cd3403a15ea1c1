r"""Regexes from task cards, compiled only when they cannot backtrack catastrophically.

Card cues are matched against agent text, which is hostile input: ``^(a+)+$`` takes forever on
``"aaaa…!"``, and even ``.*a.*b`` takes seconds on 2,000 characters. :func:`compile_safe`
parses a pattern (the standard library's own parser) and refuses, with the reason:

* **nested repeats whose iterations can trade characters** — ``(a+)+``, ``(a*)*``,
  ``(\w+ ?)+``: the body repeated twice is checked with the rule below, so ``(?: \w+)+``
  (each iteration starts with a space the word cannot take) is fine;
* **ambiguous alternatives under a repeat** — ``(a|a)+``, ``(a|ab)+``, ``(x\w*|xy)+``: literal
  alternatives must form a prefix-free set (``(cat|car)+`` is fine), others must start with
  disjoint characters;
* **repeats in one sequence that can trade characters** — ``.*a.*``, ``\w+\s*\w+``: two
  variable-width parts share characters and nothing between them stops the trade (``\w+\s+\w+``
  is fine: the spaces cannot be word characters). Small bounded ones pass when the product of
  their slack stays under :data:`TRADE_BUDGET` (``.{0,40}x.{0,40}``);
* patterns longer than :data:`MAX_PATTERN_CHARS`.

The analysis is conservative (it may refuse a pattern that is in fact linear) and works on
character sets approximated over a probe alphabet.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import string
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # typeshed stubs these under their public (pre-3.11) names only
    import sre_constants
    import sre_parse
elif sys.version_info >= (3, 11):
    from re import _constants as sre_constants
    from re import _parser as sre_parse
else:  # pragma: no cover - exercised on 3.10 only
    import sre_constants
    import sre_parse

__all__ = ["MAX_PATTERN_CHARS", "TRADE_BUDGET", "UnsafeRegexError", "check_safe", "compile_safe"]

MAX_PATTERN_CHARS = 2000
"""The longest cue pattern accepted."""

TRADE_BUDGET = 64_000
"""The largest product of slack (``max − min`` width + 1, unbounded counted as :data:`_CAP`)
of variable-width parts that can trade characters in one sequence: an unbounded part next to
a ``{0,31}`` one passes, two unbounded ones do not. At the budget, a search over 2,000
characters of hostile text takes about a second at worst."""

_CAP = 2000  # unbounded widths count as this (the default utterance limit)
_TINY = 32  # a repeat never wider than this is harmless whatever its shape
_OPS = sre_constants
_REPEATS = {_OPS.MAX_REPEAT, _OPS.MIN_REPEAT} | (
    {_OPS.POSSESSIVE_REPEAT} if hasattr(_OPS, "POSSESSIVE_REPEAT") else set()
)
_ALPHABET = (
    string.printable + "éÉßñ\u00a0\u2028\u0085Жж中٣_" + "".join(chr(c) for c in range(0x80, 0xA0))
)


class UnsafeRegexError(ValueError):
    """A pattern is invalid or could backtrack catastrophically (the message says why)."""


@dataclasses.dataclass(frozen=True)
class _Chars:
    """A character set: ``chars`` or, when ``negated``, everything but ``chars``."""

    chars: frozenset[str] = frozenset()
    negated: bool = False

    def __or__(self, other: _Chars) -> _Chars:
        if not self.negated and not other.negated:
            return _Chars(self.chars | other.chars)
        if self.negated and other.negated:
            return _Chars(self.chars & other.chars, True)
        positive, negative = (self, other) if other.negated else (other, self)
        return _Chars(negative.chars - positive.chars, True)

    def meets(self, other: _Chars) -> bool:
        """Whether the two sets share a character."""
        if self.negated and other.negated:
            return True
        if not self.negated and not other.negated:
            return bool(self.chars & other.chars)
        positive, negative = (self, other) if other.negated else (other, self)
        return bool(positive.chars - negative.chars)

    def __and__(self, other: _Chars) -> _Chars:
        if not self.negated and not other.negated:
            return _Chars(self.chars & other.chars)
        if self.negated and other.negated:
            return _Chars(self.chars | other.chars, True)
        positive, negative = (self, other) if other.negated else (other, self)
        return _Chars(positive.chars - negative.chars)


_NONE = _Chars()
_ALL = _Chars(frozenset(), True)


@functools.cache
def _category(code: Any) -> _Chars:
    names = {
        "CATEGORY_DIGIT": (r"\d", False),
        "CATEGORY_NOT_DIGIT": (r"\d", True),
        "CATEGORY_SPACE": (r"\s", False),
        "CATEGORY_NOT_SPACE": (r"\s", True),
        "CATEGORY_WORD": (r"\w", False),
        "CATEGORY_NOT_WORD": (r"\w", True),
    }
    probe, negated = names.get(str(code), (".", False))
    return _Chars(frozenset(c for c in _ALPHABET if re.fullmatch(probe, c)), negated)


class _Analyzer:
    """Walks one parsed pattern; :meth:`check` raises on the first unsafe construct."""

    def __init__(self, flags: int) -> None:
        self.ignorecase = bool(flags & re.IGNORECASE)
        self.dotall = bool(flags & re.DOTALL)

    # -- character sets ------------------------------------------------------------------------

    def _literal(self, code: int) -> frozenset[str]:
        char = chr(code)
        return frozenset({char, char.lower(), char.upper()} if self.ignorecase else {char})

    def _in(self, items: Iterable[tuple[Any, Any]]) -> _Chars:
        result, negate = _NONE, False
        for op, av in items:
            if op is _OPS.NEGATE:
                negate = True
            elif op is _OPS.LITERAL:
                result = result | _Chars(self._literal(av))
            elif op is _OPS.RANGE:
                low, high = av
                inside = {c for c in _ALPHABET if low <= ord(c) <= high}
                inside |= {chr(low), chr(high)}
                if self.ignorecase:
                    inside |= {c.lower() for c in inside} | {c.upper() for c in inside}
                result = result | _Chars(frozenset(inside))
            elif op is _OPS.CATEGORY:
                result = result | _category(av)
            else:  # pragma: no cover - other set members (e.g. RANGE_UNI_IGNORE) are compiled
                result = _ALL
        return _Chars(result.chars, not result.negated) if negate else result

    def chars(self, items: Sequence[tuple[Any, Any]]) -> _Chars:
        """Every character the items can consume."""
        result = _NONE
        for op, av in items:
            if op is _OPS.LITERAL:
                result = result | _Chars(self._literal(av))
            elif op is _OPS.NOT_LITERAL:
                result = result | _Chars(self._literal(av), True)
            elif op is _OPS.ANY:
                result = result | (_ALL if self.dotall else _Chars(frozenset("\n"), True))
            elif op is _OPS.IN:
                result = result | self._in(av)
            elif op is _OPS.BRANCH:
                for alternative in av[1]:
                    result = result | self.chars(alternative)
            elif op is _OPS.SUBPATTERN or op in _REPEATS or op is getattr(_OPS, "ATOMIC_GROUP", 0):
                result = result | self.chars(av[-1] if op is not _OPS.SUBPATTERN else av[3])
            elif op in (_OPS.GROUPREF, _OPS.GROUPREF_EXISTS):
                result = _ALL
        return result

    def first(self, items: Sequence[tuple[Any, Any]], last: bool = False) -> tuple[_Chars, bool]:
        """The characters a match of the items can start (or end) with, and if it can be empty.

        Args:
            items: Parsed items.
            last: The characters a match can end with instead.
        """
        result = _NONE
        for item in reversed(items) if last else items:
            op, av = item
            if op in (_OPS.AT, _OPS.ASSERT, _OPS.ASSERT_NOT):
                continue
            if op is _OPS.BRANCH:
                nullable = False
                for alternative in av[1]:
                    chars, empty = self.first(alternative, last)
                    result, nullable = result | chars, nullable or empty
            elif op is _OPS.SUBPATTERN:
                chars, nullable = self.first(av[3], last)
                result = result | chars
            elif op in _REPEATS:
                chars, empty = self.first(av[2], last)
                result, nullable = result | chars, empty or av[0] == 0
            elif op in (_OPS.GROUPREF, _OPS.GROUPREF_EXISTS):
                return _ALL, True
            elif op is getattr(_OPS, "ATOMIC_GROUP", 0):
                chars, nullable = self.first(av, last)
                result = result | chars
            else:
                return result | self.chars([item]), False
            if not nullable:
                return result, False
        return result, True

    def loops(self, items: Sequence[tuple[Any, Any]]) -> bool:
        """Whether the items hold a repeat of more than one iteration (or a back-reference)."""
        for op, av in items:
            if op in _REPEATS and av[1] > 1:
                return True
            if op in (_OPS.GROUPREF, _OPS.GROUPREF_EXISTS):
                return True
            parts: list[Any] = []
            if op is _OPS.BRANCH:
                parts = list(av[1])
            elif op is _OPS.SUBPATTERN:
                parts = [av[3]]
            elif op in _REPEATS:
                parts = [av[2]]
            elif op is getattr(_OPS, "ATOMIC_GROUP", 0):
                parts = [av]
            if any(self.loops(part) for part in parts):
                return True
        return False

    # -- widths and sequences -------------------------------------------------------------------

    @staticmethod
    def width(items: Sequence[tuple[Any, Any]]) -> tuple[int, int]:
        """``(min, max)`` characters the items match, ``max`` capped at ``_CAP``."""
        subpattern = sre_parse.SubPattern(sre_parse.State(), list(items))
        low, high = subpattern.getwidth()
        return min(low, _CAP), min(high, _CAP)

    def _flatten(self, items: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        flat: list[tuple[Any, Any]] = []
        for op, av in items:
            if op is _OPS.SUBPATTERN:
                flat += self._flatten(av[3])
            elif op in (_OPS.AT, _OPS.ASSERT, _OPS.ASSERT_NOT):
                continue  # zero width: neither stops nor joins a trade
            else:
                flat.append((op, av))
        return flat

    def trade(self, items: Sequence[tuple[Any, Any]], budget: float) -> str | None:
        """Why two variable-width parts of the sequence can trade characters, or ``None``."""
        flat = self._flatten(items)
        simple = (_OPS.LITERAL, _OPS.NOT_LITERAL, _OPS.ANY, _OPS.IN)
        loops = [op not in simple and self.loops([(op, av)]) for op, av in flat]
        if sum(loops) < 2:
            return None
        facts = []
        for item, looping in zip(flat, loops, strict=True):
            low, high = self.width([item])
            facts.append((high - low if looping else 0, low == 0, self.chars([item])))
        variable = [i for i, (slack, _, _) in enumerate(facts) if slack]
        starts = {i: self.first([flat[i]])[0] for i in variable}
        for i in variable:
            ends = self.first([flat[i]], last=True)[0]
            for j in variable:
                if j <= i:
                    continue
                shared = ends & starts[j]
                if not shared.meets(shared):
                    continue
                between = facts[i + 1 : j]
                if any(not empty and not chars.meets(shared) for _, empty, chars in between):
                    continue
                cost = 1.0
                for slack, _, chars in facts[i : j + 1]:
                    if slack and chars.meets(shared):
                        cost *= slack + 1
                if cost > budget:
                    return (
                        "two variable-width parts can trade characters (like '.*a.*' or "
                        "'\\w+\\s*\\w+'), which backtracks polynomially on long text; separate "
                        "them with something neither can match, or bound them (e.g. '.{0,40}')"
                    )
        return None

    # -- the walk -------------------------------------------------------------------------------

    def _ambiguous_branch(self, alternatives: Sequence[Sequence[tuple[Any, Any]]]) -> bool:
        literals = []
        for alternative in alternatives:
            flat = self._flatten(alternative)
            if not all(op is _OPS.LITERAL for op, _ in flat):
                break
            text = "".join(chr(code) for _, code in flat)
            literals.append(text.casefold() if self.ignorecase else text)
        else:
            ordered = sorted(literals)
            return any(b.startswith(a) for a, b in itertools.pairwise(ordered))
        starts = [self.first(alternative) for alternative in alternatives]
        if any(empty for _, empty in starts):
            return True
        return any(a.meets(b) for k, (a, _) in enumerate(starts) for b, _ in starts[k + 1 :])

    def _branches(self, items: Sequence[tuple[Any, Any]]) -> Iterable[Any]:
        for op, av in items:
            if op is _OPS.BRANCH:
                yield av[1]
                for alternative in av[1]:
                    yield from self._branches(alternative)
            elif op is _OPS.SUBPATTERN:
                yield from self._branches(av[3])
            elif op in _REPEATS:
                yield from self._branches(av[2])
            elif op is getattr(_OPS, "ATOMIC_GROUP", 0):
                yield from self._branches(av)

    def check(self, items: Sequence[tuple[Any, Any]]) -> None:
        """Raises :class:`UnsafeRegexError` at the first unsafe construct in ``items``."""
        reason = self.trade(items, TRADE_BUDGET)
        if reason:
            raise UnsafeRegexError(reason)
        for op, av in items:
            if op is _OPS.BRANCH:
                for alternative in av[1]:
                    self.check(alternative)
            elif op is _OPS.SUBPATTERN:
                self.check(av[3])
            elif op in (_OPS.ASSERT, _OPS.ASSERT_NOT):
                self.check(av[1])
            elif op is getattr(_OPS, "ATOMIC_GROUP", 0):
                self.check(av)
            elif op is _OPS.GROUPREF_EXISTS:
                for part in av[1:]:
                    if part is not None:
                        self.check(part)
            elif op in _REPEATS:
                self._check_repeat(av)

    def _check_repeat(self, av: tuple[int, int, Any]) -> None:
        _, high, body = av
        self.check(body)
        if high <= 1 or self.width([(_OPS.MAX_REPEAT, av)])[1] <= _TINY:
            return
        if self.trade(list(body) + list(body), 1):
            raise UnsafeRegexError(
                "a repeated group holds a repeat whose iterations can trade characters (like "
                "'(a+)+', '(a*)*' or '(\\w+ ?)+'): catastrophic backtracking; make each "
                "iteration start or end with something the inner repeat cannot match"
            )
        if any(self._ambiguous_branch(alts) for alts in self._branches(body)):
            raise UnsafeRegexError(
                "a repeated group holds alternatives that can match the same text (like "
                "'(a|a)+', '(a|ab)+' or '(\\w|\\d)+'): catastrophic backtracking; make the "
                "alternatives start with different characters"
            )


@functools.lru_cache(maxsize=4096)
def _verdict(pattern: str, flags: int) -> str | None:
    try:
        parsed = sre_parse.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"invalid regex: {exc}"
    try:
        _Analyzer(flags | parsed.state.flags).check(list(parsed.data))
    except UnsafeRegexError as exc:
        return str(exc)
    except RecursionError:
        return "the pattern nests groups too deeply"
    return None


def check_safe(pattern: str, flags: int = 0) -> None:
    """Raises :class:`UnsafeRegexError` when ``pattern`` is invalid or unsafe (see the module).

    Args:
        pattern: The regular expression.
        flags: ``re`` flags it will be compiled with.
    """
    if not isinstance(pattern, str):
        raise UnsafeRegexError(f"expected a string pattern, got {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafeRegexError(
            f"the pattern is {len(pattern):,} characters long; at most {MAX_PATTERN_CHARS:,}"
        )
    reason = _verdict(pattern, flags)
    if reason is not None:
        raise UnsafeRegexError(reason)


def compile_safe(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Compiles ``pattern`` after :func:`check_safe`.

    Raises:
        UnsafeRegexError: The pattern is invalid or could backtrack catastrophically.
    """
    check_safe(pattern, flags)
    try:
        return re.compile(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:  # pragma: no cover - parsed above
        raise UnsafeRegexError(f"invalid regex: {exc}") from None
