"""The agent protocol and agent resolution.

An agent is any object with ``act(observation) -> action``; ``reset(seed)`` is optional and
called at the start of every episode. Agents are built by a factory called as
``factory(card=<TaskCard>, **kwargs)``, and resolved by name in one way for everybody:

* an entry point in the group ``dialogue_gym.agents`` (how ``dialogue-gym-agents`` registers
  ``random``, ``scripted`` and ``pushy``, and how a third-party package registers its own);
* ``"package.module:Factory"``;
* ``"path/to/file.py:Factory"``.

Example (a complete third-party agent)::

    class Polite:
        def __init__(self, card):
            self.card = card

        def reset(self, seed=None):
            pass

        def act(self, observation):
            return "Would you consider giving a small amount to Save the Children?"
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dialogue_gym.cards import TaskCard

ENTRY_POINT_GROUP = "dialogue_gym.agents"


@runtime_checkable
class Agent(Protocol):
    """Anything that maps an observation to an action."""

    def act(self, observation: dict[str, Any]) -> Any:
        """Returns the next utterance (``str``) for the seat it plays."""
        ...


class AgentResolutionError(LookupError):
    """An agent name could not be resolved; the message says what was tried."""


def available_agents() -> dict[str, str]:
    """Names registered in the ``dialogue_gym.agents`` entry-point group → their targets."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _from_file(path: Path, attr: str) -> Any:
    if not path.exists():
        raise AgentResolutionError(f"agent file {str(path)!r} does not exist")
    module_name = f"_dialogue_gym_agent_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise AgentResolutionError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    module_spec.loader.exec_module(module)
    if not hasattr(module, attr):
        raise AgentResolutionError(f"{str(path)!r} has no attribute {attr!r}")
    return getattr(module, attr)


def agent_factory(name: str) -> Any:
    """Returns the factory (class or callable) behind an agent name.

    Raises:
        AgentResolutionError: With the registered names when nothing matches.
    """
    registered = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name in registered:
        return registered[name].load()
    if ":" in name:
        target, _, attr = name.rpartition(":")
        if target.endswith(".py") or "/" in target or "\\" in target:
            return _from_file(Path(target), attr)
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise AgentResolutionError(f"cannot import module {target!r}: {exc}") from exc
        if not hasattr(module, attr):
            raise AgentResolutionError(f"module {target!r} has no attribute {attr!r}")
        return getattr(module, attr)
    known = ", ".join(sorted(registered)) or "none (pip install -e ./agents)"
    raise AgentResolutionError(
        f"unknown agent {name!r}. Registered agents: {known}. "
        "Third-party agents: 'module:Class' or 'path/to/file.py:Class'."
    )


def make_agent(name: str, card: TaskCard, **kwargs: Any) -> Agent:
    """Resolves ``name`` and builds the agent for ``card``.

    Raises:
        AgentResolutionError: Unknown name.
        TypeError: The built object has no ``act`` method.
    """
    agent = agent_factory(name)(card=card, **kwargs)
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"agent {name!r} built a {type(agent).__name__} without an act() method")
    return agent
