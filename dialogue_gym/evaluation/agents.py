"""The agent protocol, and how agents are resolved by name.

Writing an agent
----------------

An agent is any object with an ``act(observation) -> action`` method. That is all the
evaluator (:func:`dialogue_gym.evaluate`, ``dialogue-gym eval``) needs; these are optional:

* ``reset(seed)`` — called before every episode with that episode's seed (episode ``i`` of an
  evaluation gets ``seed + i``); seed your own randomness from it so runs are reproducible;
* ``async aact(observation) -> action`` — the same as ``act`` for asyncio code (an LLM agent
  awaiting its endpoint); see :class:`AsyncAgent`;
* ``act_batch(observations) -> list[action]`` — actions for a list of observations (one per
  env of a vectorized batch), in order; see :class:`BatchAgent`.

**The observation** is the system seat's dict from the env (``obs["system"]``):

==============  ===================================================================================
``history``     tuple of turns ``{"speaker": 0 | 1, "text": str}`` — 0 is the system (you), 1 the
                user; empty when you open the conversation
``goal``        the task goal (text), e.g. "Convince the persuadee to donate ..."
``role``        0 (the system seat)
``exchange``    exchanges completed so far (0 on the first turn)
``to_speak``    1 when it is your turn (always, under the evaluator)
``estimate``    a student mentalizer's rendered estimate of the user's hidden mental state
                (Belief / Desire / Intention / Receptivity / Confidence / Valence); ``""`` when
                the env has no student
==============  ===================================================================================

The user's hidden state is never in it. What the task is about — roles, strategies with
realizer templates, concerns the user may voice — is in the task card your factory receives
(:class:`~dialogue_gym.cards.card.TaskCard`).

**The action** is the next utterance, a ``str`` (``""`` is a silent turn), or a dict
``{"utterance": str, "estimate": ...}`` whose ``estimate`` (a :class:`~dialogue_gym.mind.BDI`,
a dict of its six fields, or a latent vector) is your own guess of the user's state: the env
then adds the inference term ``-w_inf·‖ẑ − z‖²_A`` to the system reward.

**Failures.** An exception from ``reset`` or ``act`` ends that episode as *errored* (recorded
with the error and the partial transcript; left out of every rate) and the evaluation goes on —
so raise rather than return something made up (an LLM agent raises when its backend fails).

**Building.** Agents are built by a *factory* — usually the class itself — called as
``factory(card=<TaskCard>, **agent_kwargs)`` if it accepts ``card`` (a ``card`` parameter or
``**kwargs``), else ``factory(**agent_kwargs)``: once per (agent, env) pair, and once per
worker thread with ``concurrency > 1`` (so an agent instance is only ever used by one thread).
A plain ``class MyAgent`` with only ``act`` is a factory too. :func:`dialogue_gym.evaluate`
also takes the factory itself, or a ready agent object (played as it is, one episode at a
time).

Example (a complete third-party agent)::

    class Polite:
        def __init__(self, card):
            self.card = card

        def reset(self, seed=None):
            self.turn = 0

        def act(self, observation):
            self.turn += 1
            if not observation["history"]:
                return "Hi! Have you heard of Save the Children?"
            return "Would you consider giving a small amount to Save the Children?"

Evaluate it with ``dialogue_gym.evaluate("path/to/polite.py:Polite", "P4G-hard")``.

Resolving names
---------------

:func:`agent_factory` and :func:`make_agent` resolve a name in one way for our agents and
third parties, in this order:

* an entry point in the group ``dialogue_gym.agents`` (how ``dialogue-gym-agents`` registers
  ``random``, ``scripted`` and ``pushy``, and how a third-party package registers its own:
  ``[project.entry-points."dialogue_gym.agents"] myagent = "mypkg:MyAgent"``);
* ``"NAME:CHECKPOINT"`` where ``NAME`` is a registered entry point — a trained agent loaded
  from a checkpoint directory: ``factory(card=card, checkpoint="CHECKPOINT")``
  (``planner:runs/planner``, ``sft-retrieval:runs/sft``);
* ``"openai:MODEL"`` — an LLM system agent on any OpenAI-compatible endpoint
  (:class:`~dialogue_gym.llm.system_agent.LLMSystemAgent`; ``base_url=...``, key from
  ``$OPENAI_API_KEY``);
* ``"package.module:Factory"``;
* ``"path/to/file.py:Factory"``.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, TypeGuard, runtime_checkable

from dialogue_gym.cards.card import TaskCard

__all__ = [
    "ENTRY_POINT_GROUP",
    "OPENAI_PREFIX",
    "Action",
    "Agent",
    "AgentResolutionError",
    "AgentSource",
    "AgentSpec",
    "AsyncAgent",
    "BatchAgent",
    "Observation",
    "accepts_card",
    "agent_factory",
    "agent_sources",
    "available_agents",
    "build_agent",
    "close_agent",
    "make_agent",
    "parse_agent_option",
]

ENTRY_POINT_GROUP = "dialogue_gym.agents"

OPENAI_PREFIX = "openai:"
"""Names starting with it resolve to the LLM system agent on an OpenAI-compatible endpoint."""

Observation = dict[str, Any]
"""A system observation: ``history``, ``goal``, ``role``, ``exchange``, ``to_speak``,
``estimate`` (see the module docstring)."""

Action = Any
"""An utterance (``str``) or ``{"utterance": str, "estimate": BDI | dict | vector}``."""


@runtime_checkable
class Agent(Protocol):
    """Anything that maps an observation to an action (``reset(seed)`` is optional)."""

    def act(self, observation: Observation) -> Action:
        """Returns the next action: an utterance, or ``{"utterance", "estimate"}``."""
        ...


@runtime_checkable
class AsyncAgent(Protocol):
    """An agent that can also be awaited (``aact``), e.g. one calling a remote model."""

    def act(self, observation: Observation) -> Action:
        """Returns the next action (see :class:`Agent`)."""
        ...

    async def aact(self, observation: Observation) -> Action:
        """Async :meth:`act`: the same action, awaited."""
        ...


@runtime_checkable
class BatchAgent(Protocol):
    """An agent that acts for several observations at once (``act_batch``)."""

    def act(self, observation: Observation) -> Action:
        """Returns the next action (see :class:`Agent`)."""
        ...

    def act_batch(self, observations: Sequence[Observation]) -> list[Action]:
        """One action per observation (e.g. one per env of a vectorized batch), in order."""
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


def _openai_factory(name: str) -> Any:
    model = name[len(OPENAI_PREFIX) :].strip()
    if not model:
        raise AgentResolutionError("an OpenAI-compatible agent needs a model: 'openai:MODEL'")
    # Imported here: the backends stay out of ``import dialogue_gym``.
    from dialogue_gym.llm.system_agent import LLMSystemAgent

    return functools.partial(LLMSystemAgent, backend=f"{OPENAI_PREFIX}{model}")


def agent_factory(name: str) -> Any:
    """Returns the factory (class or callable) behind an agent name.

    The name is an entry-point name, ``"openai:MODEL"``, ``"module:Factory"`` or
    ``"path/to/file.py:Factory"`` (see the module docstring).

    Raises:
        AgentResolutionError: With the registered names when nothing matches.
    """
    registered = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name in registered:
        return registered[name].load()
    if name.startswith(OPENAI_PREFIX):
        return _openai_factory(name)
    prefix, _, argument = name.partition(":")
    if prefix in registered and argument:
        # ``planner:runs/planner``: a registered trained agent and its checkpoint directory.
        return functools.partial(registered[prefix].load(), checkpoint=argument)
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
        "Third-party agents: 'module:Class' or 'path/to/file.py:Class'; "
        "LLM agents: 'openai:MODEL'."
    )


def _names_parameter(factory: Any, parameter: str) -> bool:
    """Whether ``factory``'s signature names ``parameter`` (``**kwargs`` does not count)."""
    try:
        found = inspect.signature(factory).parameters.get(parameter)
    except (TypeError, ValueError):
        return False
    return found is not None and found.kind in (found.POSITIONAL_OR_KEYWORD, found.KEYWORD_ONLY)


def accepts_card(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` takes the ``card`` keyword (a ``card`` parameter or ``**kwargs``).

    A factory whose signature cannot be read (some builtins) is assumed to take it.
    """
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "card" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        for p in parameters
    )


def build_agent(
    factory: Callable[..., Any],
    card: TaskCard | None,
    options: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    encoder: Any = None,
) -> Agent:
    """Calls ``factory`` for ``card``: with ``card=card`` only if it accepts it.

    So both ``class Polite: def __init__(self, card)`` and a plain ``class MyAgent: def
    act(self, observation)`` are factories. ``base_url`` goes only to a factory that names
    it (and to ``openai:`` agents; see :func:`make_agent`).

    Args:
        factory: A class or callable returning the agent.
        card: The env's task card.
        options: The agent options (keyword arguments of the factory).
        name: The agent's name, for messages (default: the factory's).
        encoder: The env's sentence encoder, passed as ``encoder=`` to a factory that names an
            ``encoder`` parameter unless ``options`` sets one: an agent that encodes text then
            shares the env's encoder (one model in memory; ``--encoder hashing`` or ``static``
            makes the agent fast too) instead of loading MiniLM for itself.

    Raises:
        TypeError: The built object has no ``act`` method (or the factory rejects a keyword).
    """
    label = name if name is not None else getattr(factory, "__qualname__", repr(factory))
    kwargs = dict(options or {})
    if (
        "base_url" in kwargs
        and not label.startswith(OPENAI_PREFIX)
        and not _names_parameter(factory, "base_url")
    ):
        kwargs = {key: value for key, value in kwargs.items() if key != "base_url"}
    if encoder is not None and "encoder" not in kwargs and _names_parameter(factory, "encoder"):
        kwargs["encoder"] = encoder
    agent = factory(card=card, **kwargs) if accepts_card(factory) else factory(**kwargs)
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"agent {label!r} built a {type(agent).__name__} without an act() method")
    return agent


def make_agent(name: str, card: TaskCard | None, **kwargs: Any) -> Agent:
    """Resolves ``name`` and builds the agent for ``card`` (:func:`build_agent`).

    The factory gets ``card=card`` when it accepts a ``card`` keyword. ``base_url`` is the
    endpoint of ``openai:`` agents. So that one set of keyword arguments can serve a mixed
    list of agents (``dialogue-gym eval --agent openai:M --agent scripted --base-url URL``),
    any other agent receives ``base_url`` only when its factory names a ``base_url``
    parameter. Every other keyword goes to every agent.

    Raises:
        AgentResolutionError: Unknown name.
        TypeError: The built object has no ``act`` method (or the factory rejects a keyword).
    """
    return build_agent(agent_factory(name), card, kwargs, name=name)


def close_agent(agent: Any) -> None:
    """Releases what an agent holds (an LLM agent's backend), when it can be closed."""
    if callable(getattr(agent, "close", None)):
        agent.close()


AgentSpec = str | Callable[..., Any] | Agent
"""What :func:`dialogue_gym.evaluate` takes for an agent: a name, a class or factory, or an
agent object."""


@dataclasses.dataclass(frozen=True)
class AgentSource:
    """One agent of an evaluation: how it is built, and the name its records carry.

    Built by :func:`agent_sources` from what :func:`dialogue_gym.evaluate` was given.

    Attributes:
        label: The ``agent`` field of its records (the name, or ``module:Class``).
        factory: Builds an agent (``None`` for an agent object).
        instance: The caller's agent object, played as it is (never closed here).
        name: A name a Ray worker can resolve (``None`` when there is none).
    """

    label: str
    factory: Callable[..., Any] | None = None
    instance: Any = None
    name: str | None = None

    def build(self, card: Any, options: Mapping[str, Any], encoder: Any = None) -> Agent:
        """A fresh agent for ``card`` (the instance itself for an agent object).

        ``encoder`` is the env's, shared with a factory that takes one (:func:`build_agent`).
        """
        if self.factory is None:
            return self.instance  # checked by agent_sources to have act()
        return build_agent(self.factory, card, options, name=self.label, encoder=encoder)

    def release(self, agent: Any) -> None:
        """Closes an agent built here (the caller's object stays open)."""
        if agent is not self.instance:
            close_agent(agent)


def _qualified(obj: Any) -> str:
    """``module:qualname`` of a class or function (just the qualname outside a module)."""
    obj = getattr(obj, "func", obj)  # functools.partial
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    module = getattr(obj, "__module__", None) or ""
    if not module or module == "__main__" or module.startswith("_dialogue_gym_agent_"):
        return str(qualname)
    return f"{module}:{qualname}"


def _resolvable(label: str, obj: Any) -> str | None:
    """``label`` if :func:`agent_factory` resolves it to ``obj`` (a Ray worker can build it)."""
    try:
        return label if agent_factory(label) is obj else None
    except Exception:  # not importable by that name: fine locally, refused for Ray
        return None


def _is_agent_list(agents: object) -> TypeGuard[Iterable[AgentSpec]]:
    """Whether ``agents`` is a list of agents rather than one agent."""
    if isinstance(agents, (str, bytes, type)) or callable(getattr(agents, "act", None)):
        return False
    return isinstance(agents, Sequence) or (not callable(agents) and hasattr(agents, "__iter__"))


def agent_sources(agents: AgentSpec | Sequence[AgentSpec]) -> list[AgentSource]:
    """Resolves names, classes, factories and agent objects, dropping repeats.

    Names are resolved here (an unknown one fails before anything runs). A class or factory
    is labelled ``module:Class``; an agent object by its class.

    Raises:
        ValueError: No agent, an empty name, or two different agents with the same label.
        TypeError: Something that is neither a name, a callable nor an object with ``act``.
        AgentResolutionError: An unknown name.
    """
    given: list[object] = list(agents) if _is_agent_list(agents) else [agents]
    if not given:
        raise ValueError("at least one agent is required")
    sources: dict[str, AgentSource] = {}
    for agent in given:
        if isinstance(agent, str):
            if not agent:
                raise ValueError(f"agent names must be non-empty strings, got {agent!r}")
            source = AgentSource(agent, factory=agent_factory(agent), name=agent)
        elif not isinstance(agent, type) and callable(getattr(agent, "act", None)):
            source = AgentSource(_qualified(type(agent)), instance=agent)
        elif callable(agent):
            label = _qualified(agent)
            source = AgentSource(label, factory=agent, name=_resolvable(label, agent))
        else:
            raise TypeError(
                "an agent is a name, a class or factory, or an object with an act() method; "
                f"got {agent!r}"
            )
        kept = sources.get(source.label)
        if kept is not None and (kept.factory, kept.instance) != (source.factory, source.instance):
            raise ValueError(
                f"two different agents are both named {source.label!r} in the results: "
                "evaluate them in separate calls (or out folders)"
            )
        sources.setdefault(source.label, source)
    return list(sources.values())


def parse_agent_option(text: str) -> tuple[str, Any]:
    """Reads one ``KEY=VALUE`` agent option (``dialogue-gym eval --agent-option``).

    The value is read as JSON (``true``, ``0.2``, ``{"max_retries": 0}``, ``null``), else as a
    Python literal (``True``, ``(0.1, 0.2)``), else kept as the string itself
    (``cache=runs/agent.sqlite``).

    Raises:
        ValueError: No ``=`` or a key that is not a Python identifier.
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise ValueError(f"options are KEY=VALUE with KEY a Python name, got {text!r}")
    raw = raw.strip()
    try:
        return key, json.loads(raw)
    except ValueError:
        pass
    try:
        return key, ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return key, raw
