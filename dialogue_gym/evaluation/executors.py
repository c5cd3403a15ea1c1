"""Where :func:`dialogue_gym.evaluate` plays episodes: executors behind one interface.

An :class:`Executor` plays the missing episodes
(:class:`~dialogue_gym.evaluation.episode_loop.Job`) of
one (agent, env id) pair and hands each record to the evaluator's ``finish`` callback as the
episode ends, one call at a time (on the calling thread, or on one writer thread for
:class:`ThreadExecutor`, so that its calling thread stays free to take Ctrl-C). Every episode
is seeded by its own reset seed, so the records do not depend on the executor, on how many
workers it runs or on the order in which they finish: every executor writes the same records
for the same arguments.

* :class:`LoneEnvExecutor` — one env and one agent in this thread
  (:func:`~dialogue_gym.evaluation.episode_loop.run_episode`);
* :class:`ThreadExecutor` — worker threads, one env and agent each, for LLM-backed components
  whose calls wait on the network (:func:`~dialogue_gym.evaluation.episode_loop.run_threaded`);
* :class:`VectorExecutor` — one :mod:`dialogue_gym.env.vector` env whose steps move several
  episodes at once (:func:`~dialogue_gym.evaluation.episode_loop.run_vectorized`);
* :class:`RayExecutor` — Ray workers, actors that each build the env and the agent once, then
  play the episodes sent to them. Episode ``j`` of the missing list goes to worker ``j mod W``
  (a fixed assignment). Install with ``pip install "dialogue-gym[ray]"``. ``address=None``
  starts (or reuses) a local Ray instance; pass a cluster address (``"ray://head:10001"`` or
  ``"auto"``) to use many machines — their workers need ``dialogue_gym`` and the agents'
  packages installed, and an agent given as ``path/to/file.py:Class`` must exist at that path
  on every machine.

``finish`` is a callback rather than the executor yielding records, because it must run
before the next episode starts: the threaded loop starts a new episode only once a finished
one was written, and on Ctrl-C it still writes the episodes that ended while it stopped.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from dialogue_gym.env.registry import make
from dialogue_gym.evaluation.agents import Agent, AgentSource, make_agent
from dialogue_gym.evaluation.episode_loop import (
    Job,
    base_env,
    run_episode,
    run_threaded,
    run_vectorized,
    usage_of,
)

__all__ = [
    "EpisodeWorker",
    "Executor",
    "Finish",
    "LoneEnvExecutor",
    "PairSetup",
    "RayExecutor",
    "ThreadExecutor",
    "VectorExecutor",
    "check_ray_agent",
    "run_on_ray",
]

Finish = Callable[[Job, dict[str, Any]], None]
"""Takes a finished episode's job and record (writing, tallying); its calls never overlap."""


class Executor(Protocol):
    """Plays the episodes of one (agent, env id) pair."""

    def run(self, todo: Sequence[Job], finish: Finish) -> list[dict[str, Any]]:
        """Plays ``todo``, calling ``finish`` as each episode ends (never two calls at once).

        Args:
            todo: The episodes to play (index and reset seed), at least one.
            finish: Takes each job and its record, in completion order.

        Returns:
            The backend usage counters of the envs and agents the executor built
            (:func:`~dialogue_gym.evaluation.episode_loop.merge_usage` sums them).
        """
        ...


@dataclasses.dataclass(frozen=True)
class PairSetup:
    """What an executor builds the envs and agents of one (agent, env id) pair from.

    Attributes:
        env_id: The registered env id.
        env_kwargs: ``make`` overrides.
        source: How the agent is built (and released).
        agent_kwargs: Agent factory arguments.
        card: The env's task card, passed to the agent factory.
        shared_backend: The pair's env backend, shared by every env an executor builds (one
            request limit, connection pool, cache connection and usage account for the whole
            pair); ``None`` when the env has none.
        encoder: The env's sentence encoder, shared with agents whose factory takes one.
    """

    env_id: str
    env_kwargs: Mapping[str, Any]
    source: AgentSource
    agent_kwargs: Mapping[str, Any]
    card: Any = None
    shared_backend: Any = None
    encoder: Any = None

    def new_agent(self) -> Agent:
        """A fresh agent for the pair (the caller's object for an agent object)."""
        return self.source.build(self.card, self.agent_kwargs, self.encoder)

    def release(self, agent: Agent) -> None:
        """Closes an agent :meth:`new_agent` built."""
        self.source.release(agent)

    def worker_env_kwargs(self) -> dict[str, Any]:
        """``env_kwargs`` for more envs of the pair, on the pair's shared backend."""
        kwargs = dict(self.env_kwargs)
        if self.shared_backend is not None:
            kwargs.update(backend=self.shared_backend, backend_cache=None, backend_options=None)
        return kwargs


class LoneEnvExecutor:
    """Plays the episodes one after another on one env, in this thread.

    Args:
        pair: The pair.
        env: The env to play on (the caller closes it; its backend's usage is the caller's).
        agent: An agent already built for the pair, used (and released) instead of a new one.
    """

    def __init__(self, pair: PairSetup, env: Any, agent: Agent | None = None) -> None:
        self.pair = pair
        self.env = env
        self.agent = agent

    def run(self, todo: Sequence[Job], finish: Finish) -> list[dict[str, Any]]:
        """See :meth:`Executor.run`."""
        agent, self.agent = self.agent or self.pair.new_agent(), None
        try:
            for job in todo:
                finish(job, run_episode(self.env, agent, job.seed))
        finally:
            usage = [usage_of(None, agent)]
            self.pair.release(agent)
        return usage


class ThreadExecutor:
    """Plays the episodes on worker threads, one env and agent per thread.

    For LLM-backed components, whose calls wait on the network: the workers share the pair's
    backend (and its cache), so the backend's ``max_concurrency`` option caps the requests in
    flight across all of them. On Ctrl-C or a failed write no further episode starts
    (:func:`~dialogue_gym.evaluation.episode_loop.run_threaded`).

    Args:
        pair: The pair.
        threads: Worker threads.
    """

    def __init__(self, pair: PairSetup, threads: int) -> None:
        self.pair = pair
        self.threads = threads

    def run(self, todo: Sequence[Job], finish: Finish) -> list[dict[str, Any]]:
        """See :meth:`Executor.run`."""
        pair = self.pair
        local = threading.local()
        built: list[tuple[Any, Agent]] = []
        lock = threading.Lock()
        env_kwargs = pair.worker_env_kwargs()

        def play(job: Job, stop: threading.Event) -> dict[str, Any]:
            if not hasattr(local, "env"):
                local.env = make(pair.env_id, **env_kwargs)
                local.agent = pair.new_agent()
                with lock:
                    built.append((local.env, local.agent))
            return run_episode(local.env, local.agent, job.seed, stop)

        usage: list[dict[str, Any]] = []
        try:
            run_threaded(todo, play, finish, self.threads)
        finally:
            for env, agent in built:
                # Envs on the shared backend are counted once, with the pair's own env.
                usage.append(usage_of(env if pair.shared_backend is None else None, agent))
                pair.release(agent)
                env.close()
        return usage


class VectorExecutor:
    """Plays the episodes on a vector env of ``num_envs`` sub-envs, each with its own agent.

    Every vector step moves up to ``num_envs`` episodes with one batched encoding of their
    utterances and one coalesced backend call per LLM component; the agents of a step act
    at once as members of the vector env's rounds, so an agent that encodes with its sub-env's
    encoder (it is given that one) has its encodes batched with the others' too
    (:func:`~dialogue_gym.evaluation.episode_loop.run_vectorized`).

    Args:
        pair: The pair.
        num_envs: Sub-envs (fewer when there are fewer episodes).
    """

    def __init__(self, pair: PairSetup, num_envs: int) -> None:
        self.pair = pair
        self.num_envs = num_envs

    def run(self, todo: Sequence[Job], finish: Finish) -> list[dict[str, Any]]:
        """See :meth:`Executor.run`."""
        from dialogue_gym.env.vector import make_vec

        pair = self.pair
        num_envs = min(self.num_envs, len(todo))
        vec = make_vec(pair.env_id, num_envs, autoreset_mode="disabled", **pair.worker_env_kwargs())
        # An agent that encodes gets its sub-env's encoder, so its encodes join the vector
        # env's batches (run_vectorized runs the agents as members of the env's rounds).
        agents = []
        usage: list[dict[str, Any]] = []
        try:
            for i in range(num_envs):
                encoder = getattr(base_env(vec.envs[i]), "encoder", None) or pair.encoder
                agents.append(pair.source.build(pair.card, pair.agent_kwargs, encoder))
            run_vectorized(vec, agents, todo, finish)
        finally:
            vec.close()
            for agent in agents:
                usage.append(usage_of(None, agent))
                pair.release(agent)
        return usage


class RayExecutor:
    """Plays the episodes on Ray workers (:func:`run_on_ray`).

    Args:
        pair: The pair; its agent must have a name the workers can import
            (``pair.source.name``), and its options must be picklable.
        workers: Ray workers to start; ``1`` means one per CPU of the cluster.
        address: Ray cluster address, or ``None`` for a local instance.

    Raises:
        ValueError: The agent has no importable name.
    """

    def __init__(self, pair: PairSetup, workers: int = 1, address: str | None = None) -> None:
        self.pair = pair
        self.agent_name = check_ray_agent(pair.source)
        self.workers = workers
        self.address = address

    def run(self, todo: Sequence[Job], finish: Finish) -> list[dict[str, Any]]:
        """See :meth:`Executor.run`."""
        return run_on_ray(
            todo,
            finish,
            env_id=self.pair.env_id,
            agent=self.agent_name,
            env_kwargs=self.pair.env_kwargs,
            agent_kwargs=self.pair.agent_kwargs,
            workers=self.workers,
            address=self.address,
        )


# -- Ray ---------------------------------------------------------------------------------------


def check_ray_agent(source: AgentSource) -> str:
    """The name Ray workers build ``source``'s agent by.

    Raises:
        ValueError: The agent has no name a worker can import (a class defined in a
            notebook, an agent object).
    """
    if source.name is None:
        raise ValueError(
            f"Ray workers build agents by name, and {source.label!r} has none they can "
            "import: pass 'module:Class' or 'path/to/file.py:Class'"
        )
    return source.name


IN_FLIGHT_PER_WORKER = 4
"""Episodes queued per worker at a time (enough to keep every worker busy)."""


class EpisodeWorker:
    """One Ray worker: an env and an agent built once, playing episodes on request.

    Args:
        env_id: The registered env id.
        agent: The agent name (entry point, ``module:Class`` or ``file.py:Class``).
        env_kwargs: ``make`` overrides.
        agent_kwargs: Extra agent factory arguments.
    """

    def __init__(
        self,
        env_id: str,
        agent: str,
        env_kwargs: Mapping[str, Any],
        agent_kwargs: Mapping[str, Any],
    ) -> None:
        self.env = make(env_id, **env_kwargs)
        card = getattr(getattr(self.env, "unwrapped", self.env), "card", None)
        self.agent = make_agent(agent, card=card, **agent_kwargs)

    def play(self, seed: int) -> dict[str, Any]:
        """Plays the episode reset with ``seed``; returns its record (errors recorded)."""
        return run_episode(self.env, self.agent, seed)

    def usage(self) -> dict[str, Any]:
        """The backend usage counters of this worker's env."""
        return usage_of(self.env, self.agent)

    def close(self) -> None:
        """Closes the env."""
        self.env.close()


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "executor='ray' needs Ray: pip install \"dialogue-gym[ray]\" (or pip install ray)"
        ) from exc
    return ray


def _ensure_ray(address: str | None) -> tuple[Any, bool]:
    """Connects to ``address`` (or starts a local instance) unless Ray is already up.

    Returns:
        The ``ray`` module and whether this call initialized it (and so must shut it down).
    """
    ray = _ray()
    if ray.is_initialized():
        return ray, False
    ray.init(
        address=address,
        include_dashboard=False,
        log_to_driver=True,
        configure_logging=False,
    )
    return ray, True


def run_on_ray(
    todo: Sequence[Job],
    finish: Finish,
    *,
    env_id: str,
    agent: str,
    env_kwargs: Mapping[str, Any],
    agent_kwargs: Mapping[str, Any],
    workers: int = 1,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Plays ``todo`` on Ray workers, calling ``finish`` on this thread as each one ends.

    Args:
        todo: The episodes to play (index and reset seed).
        finish: Called with each job and its record, in completion order.
        env_id: The registered env id.
        agent: The agent name.
        env_kwargs: ``make`` overrides (must be picklable).
        agent_kwargs: Agent factory arguments (must be picklable).
        workers: Ray workers to start; ``1`` means one per CPU of the cluster.
        address: Ray cluster address, or ``None`` for a local instance.

    Returns:
        The backend usage counters of every worker (summed by the caller).

    Raises:
        ImportError: Ray is not installed.
        Exception: A worker that cannot be built (bad env kwargs, unknown agent) re-raises
            its error here; episode-level failures are recorded, never raised.

    The actors are killed when the call ends, however it ends (an exception, Ctrl-C, or the
    ``SIGTERM`` the command line turns into an exception); a Ray instance this call started
    is shut down with them, so no Ray process outlives the run.
    """
    ray, started = _ensure_ray(address)
    try:
        return _play(ray, todo, finish, env_id, agent, env_kwargs, agent_kwargs, workers)
    finally:
        if started:
            ray.shutdown()


def _play(
    ray: Any,
    todo: Sequence[Job],
    finish: Finish,
    env_id: str,
    agent: str,
    env_kwargs: Mapping[str, Any],
    agent_kwargs: Mapping[str, Any],
    workers: int,
) -> list[dict[str, Any]]:
    """The body of :func:`run_on_ray` on an initialized ``ray``."""
    if workers <= 1:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    workers = min(workers, len(todo))
    actor_class = ray.remote(num_cpus=1)(EpisodeWorker)
    actors = [
        actor_class.remote(env_id, agent, dict(env_kwargs), dict(agent_kwargs))
        for _ in range(workers)
    ]
    queue = iter(enumerate(todo))
    pending: dict[Any, Job] = {}

    def submit(count: int) -> None:
        # Fixed assignment: job j → worker j mod W; each actor plays its calls in order.
        for j, job in itertools.islice(queue, count):
            pending[actors[j % workers].play.remote(job.seed)] = job

    try:
        submit(IN_FLIGHT_PER_WORKER * workers)  # a bounded window keeps ray.wait cheap
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                finish(pending.pop(ref), ray.get(ref))
            submit(len(done))
        return ray.get([actor.usage.remote() for actor in actors])
    finally:
        for actor in actors:
            ray.kill(actor)
