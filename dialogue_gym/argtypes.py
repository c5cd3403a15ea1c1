"""Argument checks shared by the public API and the command-line tools.

* :func:`check_seed` — every seed that enters the public API (``env.reset(seed=...)``, the
  vector envs' and views' resets, :func:`dialogue_gym.evaluate`'s ``seed`` and ``seeds``);
* :func:`int_range` — an argparse ``type`` for whole numbers in a range (``--seed``,
  ``--episodes``).
"""

from __future__ import annotations

import argparse
import numbers
from collections.abc import Callable
from typing import Literal, overload

__all__ = ["SeedError", "check_seed", "int_range"]


class SeedError(TypeError, ValueError):
    """A seed that is not an integer (a bool, a float, a string, ...).

    A ``TypeError``, and a ``ValueError`` too, since :func:`dialogue_gym.evaluate` and the LLM
    system agent raised ``ValueError`` for such seeds before this check was shared.
    """


@overload
def check_seed(seed: object, name: str = ..., *, optional: Literal[False]) -> int: ...
@overload
def check_seed(seed: object, name: str = ..., *, optional: bool = ...) -> int | None: ...
def check_seed(seed: object, name: str = "seed", *, optional: bool = True) -> int | None:
    """``seed`` as an ``int``, or ``None`` when it is ``None`` and ``optional``.

    Python and numpy integers are accepted; ``True``/``False`` are refused although Python
    counts them as integers, since ``seed=True`` is always a mistake (for "seeded"), and so
    are floats (even ``1.0``), strings and anything else. Negative seeds are refused like
    Gymnasium's ``np_random`` refuses them.

    Args:
        seed: The value given.
        name: The argument's name, for the message (``"seed"``, ``"seeds[2]"``).
        optional: Whether ``None`` is accepted.

    Returns:
        The seed (``None`` only when ``optional``).

    Raises:
        SeedError: Not an integer (or ``None`` when not ``optional``), e.g. "seed must be an
            int or None, got bool True".
        ValueError: A negative integer.

    Example:
        >>> check_seed(3), check_seed(None)
        (3, None)
        >>> check_seed(True)
        Traceback (most recent call last):
        ...
        dialogue_gym.argtypes.SeedError: seed must be an int or None, got bool True
    """
    if seed is None and optional:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        wanted = "an int or None" if optional else "an int"
        raise SeedError(f"{name} must be {wanted}, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be >= 0, got {int(seed)}")
    return int(seed)


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers in ``[low, high]`` (no upper bound: None).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> _ = parser.add_argument("--n", type=int_range(1, 10))
        >>> parser.parse_args(["--n", "3"]).n
        3
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low:,}" if high is None else f"between {low:,} and {high:,}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value:,}")
        return value

    parse.__name__ = f"int_range({low}, {high})"
    return parse
