r"""Exact and fast "does any cue of this family match the text" for card cue regexes.

Every exchange runs well over a hundred card cues (concern unlock/anti cues, the ``ask``,
``question``, ``greeting`` and ``pressure`` cues, the ``reply_*`` stance cues) over a turn. Most
are case-insensitive and start with a group or ``\b``, so the regex engine can use no literal
prefix scan and tries every position: each search costs microseconds although almost none
match. Once encoding is cheap (``encoder="static"``) these searches dominate an exchange.

This module answers the same question without changing a single answer. For each pattern it
derives, from the parsed pattern, a set of **required literals**: ASCII strings of which at
least one must occur (case-folded) in any text the pattern matches — ``would you (like|care)
to`` needs ``"would you like to"`` or ``"would you care to"``, ``\b(donate|give) now\b`` needs
``"donate now"`` or ``"give now"``. When the text is ASCII and none of them occurs in its
lowercase form (a substring test in C), the pattern cannot match and its search is skipped;
otherwise (a required literal occurs, the text is not ASCII, or the pattern has no usable
literals) the pattern is searched as before. Combining a family into one alternation was
measured slower: it loses each pattern's own scan optimizations.

Why the skip is exact: for ASCII text, a case-insensitive (or case-sensitive) match of an ASCII
literal implies the literal's lowercase form occurs in the text's lowercase form. Non-ASCII
literals are never used (``K``, the Kelvin sign, matches ``k`` under ``re.IGNORECASE``), and
non-ASCII texts are always searched (``İ`` lowercases to two characters).
"""

from __future__ import annotations

import functools
import itertools
import re
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

__all__ = ["CueIndex", "CueText", "any_cue", "required_literals"]

_OPS = sre_constants
_REPEATS = {_OPS.MAX_REPEAT, _OPS.MIN_REPEAT} | (
    {_OPS.POSSESSIVE_REPEAT} if hasattr(_OPS, "POSSESSIVE_REPEAT") else set()
)
_ATOMIC = getattr(_OPS, "ATOMIC_GROUP", object())
_ZERO_WIDTH = (_OPS.AT, _OPS.ASSERT, _OPS.ASSERT_NOT)
_MAX_STRINGS = 64  # the most alternatives one finite piece of a pattern is expanded into
_SELECTIVE_CHARS = 6  # a required string this long is selective enough (see _score)
_SMALL_REPEAT = 3  # repeats up to this many iterations (``s?``, ``x{1,3}``) are expanded

Strings = frozenset[str]


def _lower_ascii(code: int) -> str | None:
    char = chr(code)
    return char.lower() if char.isascii() else None


def _product(left: Strings, right: Strings) -> Strings | None:
    if len(left) * len(right) > _MAX_STRINGS:
        return None
    return frozenset(a + b for a, b in itertools.product(left, right))


def _flatten(items: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The items with groups opened: a group changes what is captured, not what is matched."""
    flat: list[tuple[Any, Any]] = []
    for op, av in items:
        if op is _OPS.SUBPATTERN:
            flat += _flatten(av[3])
        elif op is _ATOMIC:
            flat += _flatten(av)
        else:
            flat.append((op, av))
    return flat


def _exact(item: tuple[Any, Any]) -> Strings | None:
    """Every (lowercase ASCII) string ``item`` can match, when that is a small finite set."""
    op, av = item
    if op is _OPS.LITERAL:
        char = _lower_ascii(av)
        return None if char is None else frozenset({char})
    if op in _ZERO_WIDTH:
        return frozenset({""})  # consumes nothing: the literals around it stay adjacent
    if op is _OPS.IN:
        chars = set()
        for member_op, member in av:
            char = _lower_ascii(member) if member_op is _OPS.LITERAL else None
            if char is None:  # a range, a category, a negation: not a small literal set
                return None
            chars.add(char)
        return frozenset(chars)
    if op is _OPS.BRANCH:
        union: set[str] = set()
        for alternative in av[1]:
            strings = _exact_sequence(_flatten(alternative))
            if strings is None:
                return None
            union |= strings
        return frozenset(union) if len(union) <= _MAX_STRINGS else None
    if op in _REPEATS:
        low, high, body = av
        if high > _SMALL_REPEAT:
            return None
        once = _exact_sequence(_flatten(body))
        if once is None:
            return None
        union = set()
        power: Strings = frozenset({""})  # the strings of ``count`` iterations
        for count in range(high + 1):
            if count >= low:
                union |= power
            if count < high:
                longer = _product(power, once)
                if longer is None:
                    return None
                power = longer
        return frozenset(union) if len(union) <= _MAX_STRINGS else None
    return None


def _exact_sequence(items: Sequence[tuple[Any, Any]]) -> Strings | None:
    result: Strings | None = frozenset({""})
    for item in items:
        strings = _exact(item)
        if strings is None or result is None:
            return None
        result = _product(result, strings)
    return result


def _score(strings: Strings) -> tuple[int, int, int]:
    # Six characters rarely occur by chance in a turn; past that, each extra string costs one
    # more substring test per search, so fewer strings win over longer ones.
    shortest = min(map(len, strings))
    return min(shortest, _SELECTIVE_CHARS), -len(strings), shortest


def _better(candidate: Strings, best: Strings | None) -> bool:
    """Whether ``candidate`` is a cheaper or more selective requirement than ``best``."""
    if not candidate or "" in candidate:
        return False
    return best is None or _score(candidate) > _score(best)


def _best_in_run(run: Sequence[Strings], best: Strings | None) -> Strings | None:
    """The best requirement spelled by consecutive items of a run of finite items."""
    for start in range(len(run)):
        spelled: Strings | None = frozenset({""})
        for strings in run[start:]:
            spelled = _product(spelled, strings) if spelled is not None else None
            if spelled is None:
                break
            if _better(spelled, best):
                best = spelled
    return best


def _required(items: Sequence[tuple[Any, Any]]) -> Strings | None:
    """A set of strings one of which occurs in every match of the sequence, or ``None``.

    Consecutive items that each match a small finite set of strings spell the strings of
    their concatenation (``how'?s`` spells ``"hows"`` and ``"how's"``); an item that does not
    breaks the run but may itself require strings (a branch whose every alternative does, a
    repeat of at least one iteration). The best of all candidates is kept (see :func:`_score`).
    """
    best: Strings | None = None
    run: list[Strings] = []
    for item in _flatten(items):
        strings = _exact(item)
        if strings is not None:
            run.append(strings)
            continue
        best = _best_in_run(run, best)
        run = []
        inner = _required_of(item)
        if inner is not None and _better(inner, best):
            best = inner
    return _best_in_run(run, best)


def _required_of(item: tuple[Any, Any]) -> Strings | None:
    """Required strings of one item that is not a small finite set."""
    op, av = item
    if op is _OPS.BRANCH:
        union: set[str] = set()
        for alternative in av[1]:
            strings = _required(alternative)
            if strings is None:
                return None
            union |= strings
        return frozenset(union)
    if op in _REPEATS and av[0] >= 1:
        return _required(av[2])
    return None  # any character class, a back-reference, an optional part: nothing required


@functools.lru_cache(maxsize=4096)
def _required_literals(pattern: str, flags: int) -> tuple[str, ...] | None:
    try:
        parsed = sre_parse.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError):
        return None
    try:
        strings = _required(list(parsed.data))
    except RecursionError:
        return None
    return None if strings is None else tuple(sorted(strings))


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Lowercase ASCII strings one of which occurs in any ASCII text ``pattern`` matches.

    Args:
        pattern: A compiled ``str`` pattern (any flags).

    Returns:
        The strings (sorted), or ``None`` when the pattern requires no usable literal.
    """
    return _required_literals(pattern.pattern, pattern.flags)


class _Family:
    """One tuple of patterns with their required literals, in the tuple's order."""

    __slots__ = ("entries", "patterns")

    def __init__(self, patterns: tuple[re.Pattern[str], ...]) -> None:
        self.patterns = patterns  # held so that the id it is cached under stays its own
        self.entries = [(p, required_literals(p)) for p in patterns]


_FAMILIES: dict[int, _Family] = {}
_MAX_FAMILIES = 2048


def _family(patterns: tuple[re.Pattern[str], ...]) -> _Family:
    # Keyed on identity (a card's cue tuples live as long as the card): hashing a tuple of
    # patterns hashes every compiled program, which costs more than the search it saves.
    family = _FAMILIES.get(id(patterns))
    if family is None or family.patterns is not patterns:
        if len(_FAMILIES) >= _MAX_FAMILIES:
            _FAMILIES.clear()
        family = _FAMILIES[id(patterns)] = _Family(patterns)
    return family


def _trie_pattern(node: dict[str, Any]) -> str:
    """A regex matching the strings of a trie, longest first (greedy, one child per char)."""
    children = [re.escape(char) + _trie_pattern(child) for char, child in node.items() if char]
    if not children:
        return ""
    body = children[0] if len(children) == 1 else "(?:" + "|".join(children) + ")"
    return f"(?:{body})?" if "" in node else body


@functools.lru_cache(maxsize=64)
def _literal_finder(literals: tuple[str, ...]) -> tuple[re.Pattern[str], dict[str, frozenset[str]]]:
    """A regex finding the longest of ``literals`` at each position, and their prefixes.

    Returns:
        The regex (one group: the longest literal starting at a position), and for each
        literal the literals that are its prefixes (they start at that position too).
    """
    trie: dict[str, Any] = {}
    for literal in literals:
        node = trie
        for char in literal:
            node = node.setdefault(char, {})
        node[""] = {}
    known = set(literals)
    prefixes = {
        literal: frozenset(literal[:end] for end in range(1, len(literal) + 1)) & known
        for literal in literals
    }
    return re.compile(f"(?=({_trie_pattern(trie)}))"), prefixes


class CueIndex:
    """The required literals of a card's cue families, all found in one pass over a text.

    Testing each pattern's literals one substring test at a time costs more than the regex
    searches left once they are skipped. An index built once (per card, by its reader) finds
    every literal present in a turn with one regex over a trie of them, then rules a pattern
    out with one set operation. Families not given here are read as by :class:`CueText`.

    Args:
        families: The cue tuples (as cards hold them) that :meth:`read` texts will be asked.
    """

    def __init__(self, families: Iterable[tuple[re.Pattern[str], ...]]) -> None:
        self._families = {id(patterns): _Family(patterns) for patterns in families}
        literals = {
            literal
            for family in self._families.values()
            for _, required in family.entries
            for literal in required or ()
        }
        self._finder = _literal_finder(tuple(sorted(literals))) if literals else None

    def family(self, patterns: tuple[re.Pattern[str], ...]) -> _Family | None:
        """The indexed family of ``patterns`` (the same tuple object), or ``None``."""
        family = self._families.get(id(patterns))
        return family if family is not None and family.patterns is patterns else None

    def present(self, folded: str) -> frozenset[str]:
        """The indexed literals that occur in ``folded`` (a lowercase ASCII text)."""
        if self._finder is None:
            return frozenset()
        finder, prefixes = self._finder
        found: set[str] = set()
        for longest in set(finder.findall(folded)):
            found |= prefixes[longest]
        return frozenset(found)

    def read(self, text: str) -> CueText:
        """``text`` prepared for searches of the indexed families (and any other)."""
        return CueText(text, self)


class CueText:
    """A text prepared for many cue-family searches (its lowercase form is computed once).

    Args:
        text: The text the cues are searched in.
        index: The index of the families that will be asked (see :class:`CueIndex`).
    """

    __slots__ = ("_contains", "_index", "_present", "text")

    def __init__(self, text: str, index: CueIndex | None = None) -> None:
        self.text = text
        folded = text.lower() if text.isascii() else None  # None: search every cue
        self._contains = None if folded is None else folded.__contains__
        self._index = index
        self._present = None if index is None or folded is None else index.present(folded)

    def any(self, patterns: Iterable[re.Pattern[str]]) -> bool:
        """Whether any of ``patterns`` has a ``search`` match in the text.

        The same answer as ``any(p.search(text) for p in patterns)``; a tuple of patterns
        (as cards hold them) is prepared once, other iterables each call.
        """
        if not isinstance(patterns, tuple):
            patterns = tuple(patterns)
        if not patterns:
            return False
        text = self.text
        indexed = None if self._index is None else self._index.family(patterns)
        if indexed is not None and self._present is not None:
            present = self._present
            for pattern, literals in indexed.entries:
                if literals is not None and present.isdisjoint(literals):
                    continue  # no literal any match needs occurs: the pattern cannot match
                if pattern.search(text):
                    return True
            return False
        contains = self._contains
        for pattern, literals in _family(patterns).entries:
            if contains is not None and literals is not None and not any(map(contains, literals)):
                continue
            if pattern.search(text):
                return True
        return False


def any_cue(patterns: Iterable[re.Pattern[str]], text: str) -> bool:
    """``any(p.search(text) for p in patterns)``, skipping patterns that cannot match.

    Use :class:`CueText` to search several families in one text.
    """
    return CueText(text).any(patterns)
