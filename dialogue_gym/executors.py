"""The Ray executor of :func:`dialogue_gym.evaluate` (``executor="ray"``).

Episodes fan out to Ray workers — actors that each build the env and the agent once, then
play the episodes sent to them. Episode ``j`` of the missing list goes to worker ``j mod W``
(a fixed assignment), and every episode is seeded by its own reset seed, so the records do not
depend on the executor, the number of workers or the order in which they finish: a Ray run and
a local run of the same arguments write the same records. Records stream back to the driver as
episodes finish and go through the same writer as a local run (``episodes.jsonl`` appends,
progress bar, resume).

Install with ``pip install "dialogue-gym[ray]"``. ``address=None`` starts (or reuses) a local
Ray instance; pass a cluster address (``"ray://head:10001"`` or ``"auto"``) to use many
machines — their workers need ``dialogue_gym`` and the agents' packages installed, and an
agent given as ``path/to/file.py:Class`` must exist at that path on every machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dialogue_gym.episode_loop import Job

__all__ = ["run_on_ray"]

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
        from dialogue_gym.agents import make_agent
        from dialogue_gym.registry import make

        self.env = make(env_id, **env_kwargs)
        card = getattr(getattr(self.env, "unwrapped", self.env), "card", None)
        self.agent = make_agent(agent, card=card, **agent_kwargs)

    def play(self, seed: int) -> dict[str, Any]:
        """Plays the episode reset with ``seed``; returns its record (errors recorded)."""
        from dialogue_gym.episode_loop import run_episode

        return run_episode(self.env, self.agent, seed)

    def usage(self) -> dict[str, Any]:
        """The backend usage counters of this worker's env."""
        from dialogue_gym.episode_loop import usage_of

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
    finish: Callable[[Job, dict[str, Any]], None],
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
    finish: Callable[[Job, dict[str, Any]], None],
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
