"""The environment registry: frozen ``EnvSpec``s, ``register``, ``make`` and friends.

Ids follow ``Task-user-vN`` (``P4G-hard-v0``). ``make("P4G-hard")`` resolves to the highest
registered version; unknown ids fail with the closest registered ids.

**Tasks come from cards**: :func:`dialogue_gym.env.tasks.register_card` registers a card's
``<id>-soft-v0`` and ``<id>-hard-v0``; ``import dialogue_gym`` does so for every shipped card.
(A card's envs are ordinary specs: ``kwargs["card"]`` is the card's name or path.)

**Third-party tasks** reach :func:`make`, :func:`dialogue_gym.evaluate` and the CLI
(``dialogue-gym eval``, ``list``) in two ways:

* the entry-point group ``dialogue_gym.envs`` (:data:`ENTRY_POINT_GROUP`): each entry point
  names a module (registering its envs when imported) or a callable (called with no
  arguments to register them). The group is loaded lazily, once, by :func:`load_plugins`: on
  the first lookup of an unknown id and by :func:`pprint_registry`, never at import. A plugin
  that fails to load is skipped with a ``RuntimeWarning``;
* Gymnasium-style ids ``"module:Task-hard-v0"``: :func:`spec` imports ``module`` (which
  registers its envs) and then looks up ``Task-hard-v0``.

A plugin package holds its card TOML and a module ``mytask_plugin/__init__.py`` such as::

    from pathlib import Path

    import dialogue_gym

    dialogue_gym.register_card(Path(__file__).with_name("mytask.toml"))

with, in its ``pyproject.toml``::

    [project.entry-points."dialogue_gym.envs"]
    mytask = "mytask_plugin"
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib
import json
import re
import warnings
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # env.py imports the whole simulator; make() loads it through the entry point
    from dialogue_gym.env.dialogue_env import DialogueEnv

ENTRY_POINT_GROUP = "dialogue_gym.envs"
"""The entry-point group third-party packages register their envs under."""


_ID = re.compile(r"^(?P<name>[A-Za-z0-9][\w.]*(?:-[A-Za-z][\w.]*)*?)(?:-v(?P<version>\d+))?$")


class RegistryError(KeyError):
    """An id is unknown, ambiguous or already registered."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """A registered environment: an entry point plus the keyword arguments it is built with.

    Attributes:
        id: ``Task-user-vN``.
        entry_point: ``"module:attr"`` or a callable returning the env.
        kwargs: Default constructor arguments (read-only).
        description: One line for ``pprint_registry``.
    """

    id: str
    entry_point: str | Callable[..., Any]
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        match = _ID.match(self.id)
        if not match or match.group("version") is None:
            raise ValueError(f"env id {self.id!r} must look like 'Task-user-vN'")
        object.__setattr__(self, "kwargs", MappingProxyType(dict(self.kwargs)))

    @property
    def name(self) -> str:
        """The id without its version."""
        return self.id.rsplit("-v", 1)[0]

    @property
    def version(self) -> int:
        """The version number N."""
        return int(self.id.rsplit("-v", 1)[1])

    def resolved(self, **overrides: Any) -> dict[str, Any]:
        """The constructor arguments with ``overrides`` merged in."""
        return {**self.kwargs, **overrides, "env_id": self.id}

    def config_hash(self, **overrides: Any) -> str:
        """A short hash of the resolved configuration (stamped into result files)."""
        payload = json.dumps(self.resolved(**overrides), sort_keys=True, default=repr)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


registry: dict[str, EnvSpec] = {}

# Called with every spec registered from now on. ``dialogue_gym/__init__`` adds the Gymnasium
# views' registration here, so the registry never imports the views (which import it).
_register_listeners: list[Callable[[EnvSpec], object]] = []


def on_register(listener: Callable[[EnvSpec], object]) -> None:
    """Calls ``listener(spec)`` for every env :func:`register` registers from now on."""
    _register_listeners.append(listener)


def register(
    id: str,
    entry_point: str | Callable[..., Any],
    description: str = "",
    **kwargs: Any,
) -> EnvSpec:
    """Registers an environment under ``id``, and its Gymnasium views.

    The views are ``dialogue_gym/<id>`` (the system seat, text) and
    ``dialogue_gym/<Task-user>-Strategy-vN`` (strategy actions); see
    :mod:`dialogue_gym.env.gym_views` (registered by the listener ``dialogue_gym`` adds with
    :func:`on_register`).

    Raises:
        RegistryError: ``id`` is already registered.
    """
    if id in registry:
        raise RegistryError(f"env id {id!r} is already registered")
    env_spec = EnvSpec(id=id, entry_point=entry_point, kwargs=kwargs, description=description)
    registry[id] = env_spec
    for listener in _register_listeners:
        listener(env_spec)
    return env_spec


_plugins_loaded = False


def load_plugins() -> None:
    """Loads the ``dialogue_gym.envs`` entry points once (see the module docstring).

    A plugin that fails to import or register is skipped with a ``RuntimeWarning`` naming it;
    the others and the built-in envs stay usable.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for plugin in entry_points(group=ENTRY_POINT_GROUP):
        try:
            hook = plugin.load()
            if callable(hook) and not isinstance(hook, ModuleType):
                hook()
        except Exception as exc:  # a broken plugin must not take the others down
            warnings.warn(
                f"dialogue_gym: skipped the env plugin {plugin.name!r} ({plugin.value}) of the "
                f"{ENTRY_POINT_GROUP!r} entry points: {type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )


def _import_namespace(env_id: str) -> str:
    """For ``"module:Task-hard-v0"``: imports ``module`` (it registers its envs); the id part.

    Raises:
        RegistryError: The module cannot be imported.
    """
    module, _, name = env_id.partition(":")
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise RegistryError(
            f"env id {env_id!r}: cannot import {module!r}, the module that should register "
            f"{name!r} ({type(exc).__name__}: {exc})"
        ) from exc
    return name


def _lookup(env_id: str) -> EnvSpec | None:
    if env_id in registry:
        return registry[env_id]
    versions = [s for s in registry.values() if s.name == env_id]
    return max(versions, key=lambda s: s.version) if versions else None


def spec(env_id: str) -> EnvSpec:
    """Returns the spec of ``env_id`` (unversioned ids resolve to the latest version).

    ``"module:Task-hard-v0"`` imports ``module`` first; an id not registered yet loads the
    ``dialogue_gym.envs`` plugins before failing.

    Raises:
        RegistryError: Unknown id, naming the closest registered ids, or a ``module:`` id
            whose module cannot be imported.
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env id must be a str, got {type(env_id).__name__}")
    if ":" in env_id:
        env_id = _import_namespace(env_id)
    found = _lookup(env_id)
    if found is None:
        load_plugins()
        found = _lookup(env_id)
    if found is not None:
        return found
    close = difflib.get_close_matches(env_id, list(registry), n=3, cutoff=0.4)
    close += [k for k in registry if k.lower().startswith(env_id.lower()) and k not in close]
    hint = f" Did you mean: {', '.join(close[:3])}?" if close else ""
    raise RegistryError(
        f"no environment {env_id!r}.{hint} dialogue_gym.pprint_registry() lists them all."
    )


def _load(entry_point: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(entry_point):
        return entry_point
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)


def make(env_id: str, **overrides: Any) -> DialogueEnv:
    """Builds the environment ``env_id`` with ``overrides`` merged into its spec's kwargs.

    An entry point returns a :class:`~dialogue_gym.DialogueEnv` (or a subclass); ``make`` sets
    its ``spec``. An entry point that is a class with a ``from_options`` constructor
    (``DialogueEnv`` and its subclasses, which receive built parts) is built through it: it
    assembles the parts from the spec's keyword options, and applies the torch thread setting
    (``threads=``, see :mod:`dialogue_gym.mind.threads`).

    Example:
        >>> env = dialogue_gym.make("P4G-hard", encoder="hashing")  # doctest: +SKIP

    Raises:
        RegistryError: Unknown id.
        TypeError: An override the environment does not accept (named in the message).
    """
    env_spec = spec(env_id)
    factory = _load(env_spec.entry_point)
    if isinstance(factory, type):  # DialogueEnv assembles its parts from the options here
        factory = getattr(factory, "from_options", factory)
    try:
        env: DialogueEnv = factory(**env_spec.resolved(**overrides))
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise TypeError(f"make({env_spec.id!r}): {exc}") from exc
        raise
    env.spec = env_spec
    return env


def pprint_registry(file: Any = None) -> None:
    """Prints the registered ids grouped by task (plugins included)."""
    load_plugins()
    by_task: dict[str, list[EnvSpec]] = {}
    for env_spec in sorted(registry.values(), key=lambda s: s.id):
        by_task.setdefault(env_spec.id.split("-")[0], []).append(env_spec)
    lines = []
    for task, specs in by_task.items():
        lines.append(f"===== {task} =====")
        lines += [f"  {s.id:<24} {s.description}" for s in specs]
    print("\n".join(lines), file=file)
