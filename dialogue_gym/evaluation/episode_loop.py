"""Playing episodes for :func:`dialogue_gym.evaluate`: one episode's bookkeeping and the loops.

:class:`Episode` keeps score of one episode whichever loop drives it, so the lone-env loop
(:func:`run_episode`), the vector loop (:func:`run_vectorized`), the threaded loop
(:func:`run_threaded`) and the Ray workers write the same record for the same episode.

Stopping: :func:`run_threaded` plays its jobs on worker threads, writes their records on a
writer thread and, on any exception (Ctrl-C in the driving thread, which only waits, so the
signal takes effect even during a slow write; a failed write), cancels the jobs not started and
tells the running ones to stop before their next step (:class:`EpisodeStopped`): no episode
starts after the signal. On Ctrl-C it does not wait for the running ones either: a worker
inside an LLM request may wait for it for as long as the endpoint takes (a slow endpoint: 20 s
and more), so the workers (daemon threads, :class:`~dialogue_gym.mind.threads.DaemonPool`) are
abandoned and the process exits without them. The episodes that had ended are recorded; the
abandoned ones are not, and play again on resume.

:func:`run_vectorized` stops the same way: this thread only drives the vector env, whose
sub-env steps and batched calls run on daemon threads while it waits in short slices
(:class:`~dialogue_gym.env.vector.batching.SlotRunner`), so Ctrl-C leaves the step in flight
at once, abandoned with its requests; its episodes are not recorded and play again on resume.
"""

from __future__ import annotations

import dataclasses
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, NamedTuple

from dialogue_gym import metrics
from dialogue_gym.evaluation.agents import Agent
from dialogue_gym.mind.threads import DaemonPool

__all__ = [
    "SYSTEM",
    "Episode",
    "EpisodeStopped",
    "Job",
    "merge_usage",
    "run_episode",
    "run_threaded",
    "run_vectorized",
    "usage_of",
]

SYSTEM = "system"


class Job(NamedTuple):
    """One episode to play: its index within its seed block and its reset seed."""

    episode: int
    seed: int


class EpisodeStopped(Exception):
    """The run is stopping: the episode was abandoned before its end (and is not recorded)."""


def error_text(exc: BaseException) -> str:
    """``"Type: first line of the message"``."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def agent_traceback(exc: BaseException) -> str:
    """The traceback of an agent's exception, from the agent's own frames down.

    The evaluator's frame (where it was caught) is left out, so the text is the same
    whichever loop played the episode.
    """
    tb = exc.__traceback__
    tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb
    return "".join(traceback.format_exception(type(exc), exc, tb))


def base_env(env: Any) -> Any:
    """The unwrapped env."""
    return getattr(env, "unwrapped", env)


class Episode:
    """One episode's bookkeeping for the evaluator: agent calls, step infos and the record.

    The lone-env loop (:func:`run_episode`) and the vector loop (:func:`run_vectorized`)
    drive the env differently but keep score through this one class, so both write the same
    record for the same episode.

    Failures end the episode as *errored* instead of propagating: ``error_source`` says whether
    the agent raised (``"agent"``), the env rejected its action with ``TypeError`` or
    ``ValueError`` (``"action"``), or the env failed otherwise, e.g. an LLM backend (``"env"``).

    Args:
        env: The env playing the episode (a wrapper or a :class:`~dialogue_gym.DialogueEnv`).
        agent: The system agent.
        seed: The episode seed (the env was just reset with it).
        observations: The reset observations, keyed by seat.
    """

    def __init__(self, env: Any, agent: Agent, seed: int, observations: Mapping[str, Any]) -> None:
        self.base = base_env(env)
        self.agent = agent
        self.observation = observations[SYSTEM]
        self.steps: list[dict[str, Any]] = []
        self.error: tuple[str, str] | None = None
        self.traceback: str | None = None
        self.episode: dict[str, Any] | None = None
        try:
            reset = getattr(agent, "reset", None)  # optional (the Agent protocol needs act only)
            if callable(reset):
                reset(seed=seed)
        except Exception as exc:  # any agent failure is recorded, never fatal
            self.fail("agent", exc)

    @property
    def done(self) -> bool:
        """Whether the episode ended (normally or by an error)."""
        return self.error is not None or self.episode is not None

    def act(self) -> Any:
        """The agent's next action (``None``, and the episode errored, when the agent raised)."""
        try:
            return self.agent.act(self.observation)
        except Exception as exc:  # any agent failure is recorded, never fatal
            self.fail("agent", exc)
            return None

    def fail(self, source: str, exc: BaseException) -> None:
        """Ends the episode as errored by ``source`` (``"agent"``, ``"action"``, ``"env"``).

        An agent's exception keeps its full traceback (the record's ``traceback``).
        """
        self.error = (source, error_text(exc))
        if source == "agent":
            self.traceback = agent_traceback(exc)

    def fail_step(self, exc: BaseException) -> None:
        """Ends the episode on an exception from ``env.step`` (an action or an env failure)."""
        self.fail("action" if isinstance(exc, (TypeError, ValueError)) else "env", exc)

    def observe(
        self,
        observations: Mapping[str, Any],
        terminations: Mapping[str, Any],
        truncations: Mapping[str, Any],
        infos: Mapping[str, Any],
    ) -> None:
        """Takes one step's result (the env's dicts keyed by seat)."""
        info = infos.get(SYSTEM, {})
        self.steps.append(info)
        if SYSTEM in observations:
            self.observation = observations[SYSTEM]
        if terminations.get(SYSTEM) or truncations.get(SYSTEM):
            self.episode = dict(info.get("episode") or {})

    def record(self) -> dict[str, Any]:
        """The env's episode record plus transcript, events, errors and revealed state."""
        base, steps, error = self.base, self.steps, self.error
        record: dict[str, Any]
        if self.episode is not None:
            record = self.episode
        else:
            record = {
                "env_id": getattr(base, "env_id", None),
                "success": False,
                "success_turn": None,
                "turns": len([s for s in steps if "q" in s]),
                "T": getattr(base, "max_exchanges", None),
                "q": [s["q"] for s in steps if "q" in s],
                "s": [s["s"] for s in steps if "s" in s],
                "labels": [s["success_label"] for s in steps if "success_label" in s],
            }
        record["errored"] = error is not None
        record["error"] = None if error is None else error[1]
        record["error_source"] = None if error is None else error[0]
        record["traceback"] = self.traceback
        record["transcript"] = [
            {"role": role, "text": text} for role, text in getattr(base, "history", ())
        ]
        revealed = dict(base.revealed()) if callable(getattr(base, "revealed", None)) else {}
        # The infos' user events leave out what names a latent concern; the revealed ones (one
        # list per completed exchange) are complete, so the record shows those.
        complete = iter(revealed.pop("user_events", ()))
        record["events"] = []
        for step in steps:
            user = step.get("user_events", [])
            if "q" in step:  # a completed exchange: its complete events, when revealed
                user = next(complete, None) or user
            record["events"].append([*user, *(f"fallback:{f}" for f in step.get("fallbacks", ()))])
        record.update(revealed)
        # Negotiation (a deal judge puts ``utility`` into every exchange's infos): the
        # sale-to-list ratio of the episode's deal, 0 without one (metrics.sl_from_steps).
        sl = metrics.sl_from_steps(steps)
        if sl is not None:
            record["sl"] = sl
        episode_info = getattr(self.agent, "episode_info", None)
        if callable(episode_info):  # e.g. an LLM agent's fallbacks
            try:
                record["agent_info"] = episode_info()
            except Exception as exc:  # reporting must not lose the episode
                record["agent_info"] = {"error": error_text(exc)}
        persona = getattr(getattr(getattr(base, "user", None), "persona", None), "id", None)
        if persona is not None:
            record["persona"] = persona
        return record


def run_episode(
    env: Any, agent: Agent, seed: int, stop: threading.Event | None = None
) -> dict[str, Any]:
    """Plays one episode on a lone env; returns its record (see :class:`Episode`).

    Args:
        env: The env.
        agent: The system agent.
        seed: The reset seed.
        stop: Checked before the reset, before each agent turn and before each step.

    Raises:
        EpisodeStopped: ``stop`` was set before the episode ended, or the episode failed
            once it was set (a request cut short by the stop is no error of the episode's).
    """

    def check(what: str) -> None:
        if stop is not None and stop.is_set():
            raise EpisodeStopped(f"{what} (seed {seed})")

    check("not started")
    observations, _ = env.reset(seed=seed)
    episode = Episode(env, agent, seed, observations)
    while not episode.done:
        check("stopped mid-episode")
        action = episode.act()
        if episode.done:
            break
        check("stopped mid-episode")
        try:
            observations, _, terminations, truncations, infos = env.step({SYSTEM: action})
        except Exception as exc:  # an action or backend failure: recorded, the run goes on
            episode.fail_step(exc)
            break
        episode.observe(observations, terminations, truncations, infos)
    if episode.error is not None:
        check("failed while stopping")
    return episode.record()


def run_vectorized(
    vec: Any,
    agents: Sequence[Agent],
    todo: Sequence[Job],
    finish: Callable[[Job, dict[str, Any]], None],
) -> None:
    """Plays ``todo`` on the sub-envs of ``vec`` (``autoreset_mode="disabled"``), in order.

    Sub-env ``i`` plays with ``agents[i]``; each finished slot takes the next job (reset with
    its seed), so every episode is the one a lone env plays with that seed. One vector step
    moves every running episode (one batched encoding of their utterances; coalesced LLM
    calls). The agents of a step act at once, as members of the vector env's rounds
    (:meth:`~dialogue_gym.env.vector.VectorDialogueEnv.run_batched`): an LLM agent's requests
    overlap, and agents that encode with the sub-envs' encoder have their encodes batched too;
    each agent is called by one thread at a time. ``finish`` runs on this thread as each
    episode ends. Ctrl-C during a step abandons it (see the module doc): the episodes it
    moved are not handed to ``finish``.
    """
    from dialogue_gym.env.vector import SubEnvError

    jobs = iter(todo)
    slots: list[tuple[Job, Episode] | None] = [None] * vec.num_envs

    def refill(i: int) -> None:
        """Finishes slot ``i``'s ended episode(s) and starts the next job there (if any)."""
        while True:
            slot = slots[i]
            if slot is not None and not slot[1].done:
                return
            if slot is not None:
                finish(slot[0], slot[1].record())
            job = next(jobs, None)
            if job is None:
                slots[i] = None
                return
            observations, _ = vec.reset_at(i, seed=job.seed)
            slots[i] = (job, Episode(vec.envs[i], agents[i], job.seed, observations))

    for i in range(vec.num_envs):
        refill(i)
    while any(slot is not None for slot in slots):
        running = [(i, slot[1]) for i, slot in enumerate(slots) if slot is not None]
        if len(running) > 1:
            chosen = vec.run_batched([episode.act for _, episode in running])
        else:
            chosen = [episode.act() for _, episode in running]
        actions: list[Any] = [None] * vec.num_envs
        for (i, episode), action in zip(running, chosen, strict=True):
            if not episode.done:
                actions[i] = {SYSTEM: action}
        # ``{SYSTEM: action}`` always passes the vector env's own check, so a malformed action
        # fails inside its sub-env's step (a ``SubEnvError`` entry), as it would in a lone env.
        errors: Mapping[int, BaseException] = {}
        if any(action is not None for action in actions):
            try:
                results = vec.step(actions)
            except SubEnvError as exc:  # the other sub-envs stepped: keep their results
                errors, results = exc.errors, exc.results
            observations, _, terminations, truncations, infos = results
            for i, action in enumerate(actions):
                if action is None:
                    continue
                episode = slots[i][1]  # type: ignore[index]
                if i in errors:
                    episode.fail_step(errors[i])
                else:
                    episode.observe(observations[i], terminations[i], truncations[i], infos[i])
        for i in range(vec.num_envs):
            refill(i)


def usage_of(env: Any, agent: Any = None) -> dict[str, Any]:
    """Per-component calls, tokens, cost, retries and errors of the env's and agent's backends.

    An LLM agent exposes its own backend's counters as a ``usage`` mapping (``agent.system``);
    they are added unless the agent shares the env's backend (counted once).
    """
    backend = getattr(base_env(env), "backend", None)
    usage = dict(getattr(backend, "usage", None) or {})
    agent_backend = getattr(agent, "backend", None)
    if agent_backend is None or agent_backend is not backend:
        agent_usage = getattr(agent, "usage", None)
        if isinstance(agent_usage, Mapping):
            usage.update(agent_usage)
    return {
        name: dataclasses.asdict(u)
        if dataclasses.is_dataclass(u) and not isinstance(u, type)
        else dict(u)
        for name, u in usage.items()
    }


def merge_usage(parts: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Sums per-component usage counters over several envs' backends."""
    total: dict[str, dict[str, Any]] = {}
    for part in parts:
        for component, counters in part.items():
            into = total.setdefault(component, {})
            for key, value in counters.items():
                into[key] = into.get(key, 0) + value
    return total


_POLL_SECONDS = 0.2
"""How often the driving thread wakes while it waits on episodes and writes. A signal lands
on whichever thread the kernel picks and Python runs its handler on the main thread only when
that thread next runs bytecode; waking it now and then bounds how late Ctrl-C takes effect."""


def run_threaded(
    todo: Sequence[Job],
    play: Callable[[Job, threading.Event], dict[str, Any]],
    finish: Callable[[Job, dict[str, Any]], None],
    threads: int,
) -> None:
    """Plays ``todo`` on ``threads`` worker threads and hands each record to ``finish``.

    ``finish`` runs on one writer thread, never two calls at once, in completion order; the
    calling thread only waits, so Ctrl-C stops the workers at once even while ``finish`` is
    inside a slow write (a journal ``fsync`` on a busy disk can take seconds). Once stopped,
    it waits for the write in progress (records stay whole) and writes the episodes that had
    ended. On Ctrl-C (``KeyboardInterrupt``, or a subclass such as the command line's
    ``SIGTERM``) it does not wait for the running episodes: their workers are daemon threads,
    left to end with the process, and their episodes are not recorded. On any other exception
    it waits for them to stop at their next step.

    Args:
        todo: The episodes.
        play: Plays one job on the calling worker thread and returns its record; it should
            pass the event to :func:`run_episode` (set when the run stops).
        finish: Takes each record, in completion order, one call at a time.
        threads: Worker threads.

    Raises:
        BaseException: Whatever stopped the run (``KeyboardInterrupt``, a failed write in
            ``finish``, a worker that could not be built), after the jobs not yet started
            were cancelled and the running ones stopped at their next step.
    """
    stop = threading.Event()
    pool = DaemonPool(threads, name="episode")
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="episode-writer")
    queue = iter(todo)
    running: dict[Future[dict[str, Any]], Job] = {}
    ended: list[tuple[Job, dict[str, Any]]] = []  # played, not yet handed to ``finish``
    writing: Future[None] | None = None

    def submit_next() -> None:
        job = next(queue, None)
        if job is not None:
            running[pool.submit(play, job, stop)] = job

    # A sliding window: a new episode starts only when a finished one has been taken by
    # ``finish``, so workers never run ahead of the journal. When the run stops (Ctrl-C, a
    # full disk) at most ``threads`` episodes are in flight and none is waiting to be written.
    for _ in range(threads):
        submit_next()
    try:
        while running or ended or writing is not None:
            if writing is None and ended:
                writing = writer.submit(finish, *ended.pop(0))
            pending: list[Future[Any]] = [*running, *([] if writing is None else [writing])]
            done, _ = wait(pending, timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
            for future in sorted((f for f in done if f in running), key=running.__getitem__):
                job = running.pop(future)  # (a Ctrl-C between the two loses no more than
                ended.append((job, future.result()))  # an unrecorded episode, replayed)
            if writing is not None and writing in done:
                written, writing = writing, None
                written.result()  # a failed write stops the run
                submit_next()
    except KeyboardInterrupt:
        # Ctrl-C: a worker may sit in a request for as long as the endpoint takes, so the
        # running episodes are abandoned, not waited for; no further step of theirs starts.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        writer.shutdown(wait=True)  # the write in progress completes: records stay whole
        if writing is None or writing.exception() is None:
            # Episodes that had ended are complete: keep them.
            for future, job in sorted(running.items(), key=lambda item: item[1]):
                if future.done() and not future.cancelled() and future.exception() is None:
                    ended.append((job, future.result()))
            for job, record in ended:
                finish(job, record)
        raise
    except BaseException:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        writer.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)
    writer.shutdown(wait=True)
