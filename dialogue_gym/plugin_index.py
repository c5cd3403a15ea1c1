"""The registered cards' plug-ins, and the entries they add to the core's tables.

A card names its plug-in (``[task] plugin``, :mod:`dialogue_gym.cards.task_plugin`);
:func:`dialogue_gym.env.tasks.register_card` notes it here. A few tables of the core are open to
the plug-ins: the corpus loaders (:data:`dialogue_gym.data.CORPORA`), the user models
(:data:`dialogue_gym.users.USER_MODELS`), the learned ask and appeal readers a card can turn
on (:data:`dialogue_gym.calibration.ASK_DETECTORS`, ``APPEAL_READERS``) and the calibration
fitters (:data:`dialogue_gym.calibration.FITTERS`, registered when a plug-in is imported). Such a
table is a :class:`Contributions`: read when looked up, it imports the noted plug-ins and merges
one attribute of each, so the core names no task and imports no plug-in.

This module imports nothing of the package but :mod:`dialogue_gym.types` (which imports
nothing of it), so the lowest layers (the card sections' checks, the corpus table) can read it
without a cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from dialogue_gym.types import LazyTable

__all__ = ["Contributions", "contributions", "import_plugin", "note_plugin", "plugins"]

_SPECS: dict[str, None] = {}
"""The noted plug-in specs (``"module"`` or ``"module:attr"``), in registration order."""


def note_plugin(spec: str | None) -> None:
    """Notes the plug-in a registered card names (``None``: the card names none)."""
    if spec is not None:
        _SPECS.setdefault(spec, None)


def import_plugin(spec: str) -> Any:
    """The plug-in object ``spec`` names: the module's ``PLUGIN``, or ``"module:attr"``.

    Raises:
        ImportError: The module cannot be imported.
        AttributeError: It lacks the attribute.
    """
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "PLUGIN")


def plugins(extra: str | None = None) -> Iterator[Any]:
    """The noted plug-ins (and ``extra``, a card's own), imported on first use.

    A plug-in that cannot be imported is passed over: its card reports it when an env of it
    is made (:func:`dialogue_gym.cards.task_plugin.plugin_of`).
    """
    for spec in [*_SPECS, *([extra] if extra is not None and extra not in _SPECS else [])]:
        try:
            plugin = import_plugin(spec)
        except (ImportError, AttributeError, ValueError, TypeError):  # a misspelled spec too
            continue
        yield plugin


def contributions(attribute: str, extra: str | None = None) -> dict[str, Any]:
    """One mapping attribute of every noted plug-in, merged (the first plug-in's key wins).

    Args:
        attribute: The plug-ins' attribute (e.g. ``"corpora"``); a plug-in without it adds
            nothing.
        extra: A card's own plug-in, read too when its card is not registered.
    """
    merged: dict[str, Any] = {}
    for plugin in plugins(extra):
        for key, value in getattr(plugin, attribute, {}).items():
            merged.setdefault(key, value)
    return merged


class Contributions(LazyTable):
    """A read-only table: ``base`` plus what the noted plug-ins add, read when looked up.

    Args:
        attribute: The plug-ins' mapping attribute merged in (see :func:`contributions`).
        base: The core's own entries (they win over a plug-in's).
    """

    def __init__(self, attribute: str, base: Mapping[str, Any] | None = None) -> None:
        self.attribute = attribute
        self._base = dict(base or {})

    def with_plugin(self, extra: str | None) -> dict[str, Any]:
        """The table with a card's own plug-in read too (for checking an unregistered card)."""
        return {**contributions(self.attribute, extra), **self._base}

    def _table(self) -> dict[str, Any]:
        return self.with_plugin(None)

    def __getitem__(self, key: str) -> Any:
        if key in self._base:  # the core's own entries need no plug-in imported
            return self._base[key]
        return self._table()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._base or key in self._table()
