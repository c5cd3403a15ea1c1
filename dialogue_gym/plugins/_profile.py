"""Wording helpers the plug-ins share for a corpus participant's profile text."""

from __future__ import annotations

from typing import Any

__all__ = ["clip", "number"]


def number(value: Any) -> str:
    """A survey score or a price as text: ``3`` for ``3.0``, one decimal otherwise."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def clip(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
