"""argparse types shared by the command-line tools."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["int_range"]


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
