"""The old import paths of the modules that moved into folders by concept (issue 36 item 1).

Until then the package was ~35 loose modules; they now sit in ``cards/``, ``text/``, ``env/``,
``evaluation/``, ``cli/`` (and ``mind/``, ``mentalizers/``). Code written against the old paths
keeps working: ``import dialogue_gym.journal`` returns the very module
``dialogue_gym.evaluation.journal`` (the same object, so monkeypatching it and ``isinstance``
checks against its classes behave as before) and warns once with a :class:`DeprecationWarning`
naming the new path. :data:`MOVED` is the table; a moved package (``wrappers``, ``vector``)
carries its submodules along (:data:`MOVED_PACKAGES`).

A task's own modules that moved into its plug-in (``dialogue_gym.data.p4g``,
``dialogue_gym.calibration.cb``, ``dialogue_gym.users.seller``, ...) are in the table too;
importing one of those old paths imports the plug-in, as the old module did its code (the
core itself never does).

The five old modules whose names the folders took (``cards``, ``env``, ``text``,
``evaluation``, ``cli``) are not in the table: the folder's ``__init__`` re-exports the old
module's public names (``from dialogue_gym.env import DialogueEnv`` works unchanged).

:func:`install` puts :class:`MovedFinder` first on :data:`sys.meta_path` (``dialogue_gym/__init__``
calls it), so an editable install's finder cannot claim an old name first; it answers only for
the old names, and any other import costs it one table lookup. This module imports nothing of
the package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import MappingProxyType, ModuleType

__all__ = ["MOVED", "MOVED_PACKAGES", "MovedFinder", "install", "new_name"]

MOVED: Mapping[str, str] = MappingProxyType(
    {
        "dialogue_gym.cue_search": "dialogue_gym.text.cue_search",
        "dialogue_gym.safe_regex": "dialogue_gym.text.safe_regex",
        "dialogue_gym.prices": "dialogue_gym.text.prices",
        "dialogue_gym.price_extraction": "dialogue_gym.text.price_extraction",
        "dialogue_gym.price_context": "dialogue_gym.text.price_context",
        "dialogue_gym.card_sections": "dialogue_gym.cards.sections",
        "dialogue_gym.card_schema": "dialogue_gym.cards.schema",
        "dialogue_gym.stance": "dialogue_gym.cards.stance",
        "dialogue_gym.realize": "dialogue_gym.cards.realize",
        "dialogue_gym.task_plugin": "dialogue_gym.cards.task_plugin",
        "dialogue_gym.threads": "dialogue_gym.mind.threads",
        "dialogue_gym.annotate": "dialogue_gym.mentalizers.annotate",
        "dialogue_gym.env_components": "dialogue_gym.env.components",
        "dialogue_gym.env_parts": "dialogue_gym.env.parts",
        "dialogue_gym.env_reveal": "dialogue_gym.env.reveal",
        "dialogue_gym.spaces": "dialogue_gym.env.spaces",
        "dialogue_gym.registry": "dialogue_gym.env.registry",
        "dialogue_gym.tasks": "dialogue_gym.env.tasks",
        "dialogue_gym.gym_views": "dialogue_gym.env.gym_views",
        "dialogue_gym.checkers": "dialogue_gym.env.checkers",
        "dialogue_gym.executors": "dialogue_gym.evaluation.executors",
        "dialogue_gym.episode_loop": "dialogue_gym.evaluation.episode_loop",
        "dialogue_gym.journal": "dialogue_gym.evaluation.journal",
        "dialogue_gym.results": "dialogue_gym.evaluation.results",
        "dialogue_gym.run_config": "dialogue_gym.evaluation.run_config",
        "dialogue_gym.agents": "dialogue_gym.evaluation.agents",
        "dialogue_gym.play": "dialogue_gym.cli.play",
        "dialogue_gym.play_replay": "dialogue_gym.cli.play_replay",
        # A task's own code moved into its plug-in (issue 36 item 3).
        "dialogue_gym.data.p4g": "dialogue_gym.plugins.p4g.loader",
        "dialogue_gym.data.esconv": "dialogue_gym.plugins.esconv.loader",
        "dialogue_gym.data.ed": "dialogue_gym.plugins.ed.loader",
        "dialogue_gym.data.cb": "dialogue_gym.plugins.cb.loader",
        "dialogue_gym.calibration.p4g": "dialogue_gym.plugins.p4g.calibration",
        "dialogue_gym.calibration.p4g_persona": "dialogue_gym.plugins.p4g.persona",
        "dialogue_gym.calibration.esconv": "dialogue_gym.plugins.esconv.calibration",
        "dialogue_gym.calibration.cb": "dialogue_gym.plugins.cb.calibration",
        "dialogue_gym.users.esconv_seeker": "dialogue_gym.plugins.esconv.seeker",
        "dialogue_gym.users.seller": "dialogue_gym.plugins.cb.seller",
        "dialogue_gym.users.seller_dynamics": "dialogue_gym.plugins.cb.seller_dynamics",
        "dialogue_gym.users.seller_listings": "dialogue_gym.plugins.cb.seller_listings",
        "dialogue_gym.users.seller_presets": "dialogue_gym.plugins.cb.seller_presets",
    }
)
"""Old module path → its new path."""

MOVED_PACKAGES: Mapping[str, str] = MappingProxyType(
    {
        "dialogue_gym.wrappers": "dialogue_gym.env.wrappers",
        "dialogue_gym.vector": "dialogue_gym.env.vector",
    }
)
"""Old package path → its new path; their submodules moved with them."""


def new_name(old: str) -> str | None:
    """The new path of an old module path, or ``None`` if ``old`` did not move."""
    if old in MOVED:
        return MOVED[old]
    for package, new in MOVED_PACKAGES.items():
        if old == package or old.startswith(package + "."):
            return new + old[len(package) :]
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module already imported under its new path."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module imported under its new path (nothing is created)."""
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        """Runs nothing (the module ran under its new path); gives back its own ``__spec__``.

        The import system sets ``__spec__`` to the old name's spec on the module it was
        handed; the module keeps its real one, so ``importlib.reload`` and pickling by module
        name see the new path.
        """
        module.__spec__ = self._spec


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds an old module path (:func:`new_name`) as the module at its new path."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """The spec of ``fullname``'s new module, or ``None`` for a name that did not move."""
        new = new_name(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; import it from there (the old path will be removed)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        return importlib.machinery.ModuleSpec(
            fullname, _Alias(module), is_package=hasattr(module, "__path__")
        )


class _Package(ModuleType):
    """The package ``dialogue_gym``, whose attributes an old path's import must not replace.

    Importing a submodule sets it as an attribute of its parent. Before the move
    ``dialogue_gym.registry`` was imported with the package, so ``import dialogue_gym.registry``
    left the attribute ``dialogue_gym.registry`` (the registry dict, a public name) alone; the
    first import of that old path now loads it anew, and would put the module there.
    """

    def __setattr__(self, name: str, value: object) -> None:
        current = self.__dict__.get(name)
        if (
            isinstance(value, ModuleType)
            and current is not None
            and not isinstance(current, ModuleType)
            and new_name(f"{self.__name__}.{name}") is not None
        ):
            return  # an old path was imported: the public attribute of that name stays
        super().__setattr__(name, value)


def install(package: ModuleType | None = None) -> None:
    """Puts :class:`MovedFinder` first on :data:`sys.meta_path` (once).

    Args:
        package: The package ``dialogue_gym`` itself (its ``__init__`` passes it), whose
            public attributes named like an old module (``registry``) an old path's import
            then leaves alone.
    """
    if package is not None and not isinstance(package, _Package):
        package.__class__ = _Package
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())  # before an editable install's finder
