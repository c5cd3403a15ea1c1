"""The environment registry: frozen ``EnvSpec``s, ``register``, ``make`` and friends.

Ids follow ``Task-user-vN`` (``P4G-hard-v0``). ``make("P4G-hard")`` resolves to the highest
registered version; unknown ids fail with the closest registered ids.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib
import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # env.py imports the whole simulator; make() loads it through the entry point
    from dialogue_gym.env import DialogueEnv

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


def register(
    id: str,
    entry_point: str | Callable[..., Any],
    description: str = "",
    **kwargs: Any,
) -> EnvSpec:
    """Registers an environment under ``id``, and its Gymnasium views.

    The views are ``dialogue_gym/<id>`` (the system seat, text) and
    ``dialogue_gym/<Task-user>-Strategy-vN`` (strategy actions); see
    :mod:`dialogue_gym.gym_views`.

    Raises:
        RegistryError: ``id`` is already registered.
    """
    if id in registry:
        raise RegistryError(f"env id {id!r} is already registered")
    env_spec = EnvSpec(id=id, entry_point=entry_point, kwargs=kwargs, description=description)
    registry[id] = env_spec
    from dialogue_gym.gym_views import register_views  # gymnasium's registry only

    register_views([env_spec])
    return env_spec


def spec(env_id: str) -> EnvSpec:
    """Returns the spec of ``env_id`` (unversioned ids resolve to the latest version).

    Raises:
        RegistryError: Unknown id, naming the closest registered ids.
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env id must be a str, got {type(env_id).__name__}")
    if env_id in registry:
        return registry[env_id]
    versions = [s for s in registry.values() if s.name == env_id]
    if versions:
        return max(versions, key=lambda s: s.version)
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
    its ``spec``.

    Example:
        >>> env = dialogue_gym.make("P4G-hard", encoder="hashing")  # doctest: +SKIP

    Raises:
        RegistryError: Unknown id.
        TypeError: An override the environment does not accept (named in the message).
    """
    env_spec = spec(env_id)
    factory = _load(env_spec.entry_point)
    try:
        env: DialogueEnv = factory(**env_spec.resolved(**overrides))
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise TypeError(f"make({env_spec.id!r}): {exc}") from exc
        raise
    env.spec = env_spec
    return env


def pprint_registry(file: Any = None) -> None:
    """Prints the registered ids grouped by task."""
    by_task: dict[str, list[EnvSpec]] = {}
    for env_spec in sorted(registry.values(), key=lambda s: s.id):
        by_task.setdefault(env_spec.id.split("-")[0], []).append(env_spec)
    lines = []
    for task, specs in by_task.items():
        lines.append(f"===== {task} =====")
        lines += [f"  {s.id:<24} {s.description}" for s in specs]
    print("\n".join(lines), file=file)
