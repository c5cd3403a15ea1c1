"""Benchmark evaluation: agents × env ids × episodes, resumable, with a summary table.

``evaluate`` plays every requested agent against every requested environment for a fixed
number of seeded episodes. Episode ``i`` resets the env (and the agent, when it has ``reset``)
with ``seed + i``, so the same arguments always give the same records.

Results on disk (``out``):

* ``episodes.jsonl`` — one JSON line per finished episode, appended, flushed and fsync'ed as
  soon as the episode ends: a crash loses at most the episodes in flight. Rerunning the same
  call skips the episodes already recorded (keyed by agent, env id, episode index and seed),
  so it neither loses nor duplicates episodes; a truncated last line left by a crash is cut
  off (the reading rules, shared with :mod:`dialogue_gym.report`, are in
  :mod:`dialogue_gym.evaluation.journal`).
* ``summary.json`` — per (agent, env id) the :func:`dialogue_gym.metrics.summarize` row plus a
  ``config`` stamp (resolved env spec, its hash, the agent options and their hash, package
  version, encoder, T, τ_q, seeds, time).
* ``run.json`` — the agent and env options of each (agent, env id): a resume with other
  options is refused, naming them (:mod:`dialogue_gym.evaluation.run_config`); how requests reach
  the
  model (``base_url``, the key's variable, timeouts, retries, request concurrency) may differ.
* ``.lock`` — present while an evaluation writes the folder: a second one is refused.

Episodes play on one env in this process, on worker threads (``concurrency``), on a vector env
(``num_envs``) or on Ray workers (``executor="ray"``): the executors of
:mod:`dialogue_gym.evaluation.executors`, one interface for all four. The records do not depend on
which.

On negotiation tasks (a deal judge: CraigslistBargain) every record carries ``sl``, the
sale-to-list ratio of its deal (0 without one), and the summaries and table report the mean SL
with its CI next to SR; the table ranks those agents by SL (:func:`metrics.rank_rows`).

An agent that raises (or whose action the env rejects with ``TypeError``/``ValueError``) is
recorded as an *errored* episode with its partial transcript (and, for the agent's own
exceptions, the full traceback in ``traceback``; the first line goes to the console); the
evaluation continues and the metrics leave errored episodes out of every rate.

Example:
    >>> result = evaluate("scripted", "P4G-hard", episodes=20, out="runs/demo")  # doctest: +SKIP
    >>> print(result.table())  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from dialogue_gym import metrics
from dialogue_gym.argtypes import check_seed
from dialogue_gym.env.registry import EnvSpec, make, spec
from dialogue_gym.evaluation import run_config
from dialogue_gym.evaluation.agents import Agent, AgentSource, AgentSpec, agent_sources
from dialogue_gym.evaluation.episode_loop import SYSTEM, Job, base_env, merge_usage, usage_of
from dialogue_gym.evaluation.executors import (
    Executor,
    LoneEnvExecutor,
    PairSetup,
    RayExecutor,
    ThreadExecutor,
    VectorExecutor,
    check_ray_agent,
)
from dialogue_gym.evaluation.journal import (
    EPISODES_FILE,
    SUMMARY_FILE,
    RecordKey,
    append_line,
    open_out_dir,
    read_episodes,
    write_json,
)
from dialogue_gym.evaluation.results import (
    METRIC_FIELDS,
    EvalResult,
    ProgressTally,
    per_seed_rows,
    slim_record,
)
from dialogue_gym.evaluation.run_config import check_stamps, json_safe, received_options, stamp

__all__ = [
    "EPISODES_FILE",
    "MAX_EPISODES",
    "METRIC_FIELDS",
    "SUMMARY_FILE",
    "AgentSpec",
    "EvalResult",
    "Job",
    "evaluate",
]

_LOG = logging.getLogger(__name__)

MAX_EPISODES = 1_000_000
"""Upper bound on ``episodes`` per (agent, env) pair."""

EXECUTORS = ("local", "ray")
"""Where :func:`evaluate` plays episodes."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_episodes(episodes: Any) -> int:
    if not _is_int(episodes):
        raise ValueError(
            f"episodes must be an int between 1 and {MAX_EPISODES:,}, "
            f"got {episodes!r} ({type(episodes).__name__})"
        )
    if not 1 <= episodes <= MAX_EPISODES:
        raise ValueError(f"episodes must be between 1 and {MAX_EPISODES:,}, got {episodes:,}")
    return int(episodes)


def _check_seeds(seed: Any, seeds: Sequence[int] | None, episodes: int) -> list[int]:
    """The base seeds of the run: ``[seed]``, or ``seeds`` checked for overlapping blocks."""
    if seeds is None:
        return [check_seed(seed, optional=False)]
    if seed != 0:
        raise ValueError("pass either seed or seeds, not both")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty list of ints, got {seeds!r}")
    bases = sorted(check_seed(s, f"seeds[{i}]", optional=False) for i, s in enumerate(seeds))
    for low, high in itertools.pairwise(bases):
        if high - low < episodes:
            raise ValueError(
                f"seeds {low} and {high} overlap: each plays {episodes} episodes seeded "
                f"seed, seed + 1, ...; space the seeds at least {episodes} apart "
                f"(e.g. {', '.join(str(k * episodes) for k in range(len(bases)))})"
            )
    return [int(s) for s in dict.fromkeys(seeds)]


def _names(value: Sequence[str] | str, what: str) -> list[str]:
    names = [value] if isinstance(value, str) else list(value)
    if not names:
        raise ValueError(f"at least one {what} is required")
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what} names must be non-empty strings, got {name!r}")
    return list(dict.fromkeys(names))  # drop repeats, keep order


# -- JSON helpers ------------------------------------------------------------------------------


def _dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(json_safe(record), ensure_ascii=False, allow_nan=False)


# -- evaluate ----------------------------------------------------------------------------------


def evaluate(
    agents: AgentSpec | Sequence[AgentSpec],
    env_ids: Sequence[str] | str,
    episodes: int = 100,
    seed: int = 0,
    out: str | Path | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    progress: bool = True,
    concurrency: int = 1,
    seeds: Sequence[int] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    num_envs: int = 1,
    retry_errored: bool = False,
    keep_records: bool = True,
) -> EvalResult:
    """Evaluates each agent on each env for ``episodes`` seeded episodes.

    Episode ``i`` uses ``env.reset(seed=seed + i)`` and ``agent.reset(seed=seed + i)`` (when the
    agent has ``reset``). The env is built once per (agent, env id) with
    ``make(env_id, **env_kwargs)``; the agent by its factory, ``factory(card=env.card,
    **agent_kwargs)`` (``card`` only if the factory accepts it: a plain class with only
    ``act`` works). Every env and agent is built once before anything is written, so bad
    names or options fail before ``out`` is created. With ``out``, records are appended to
    ``out/episodes.jsonl`` as each episode ends and episodes already there are skipped
    (resume), and ``out/summary.json`` is written at the end.

    Args:
        agents: One agent or a list: a name (an entry-point name, ``"openai:MODEL"``,
            ``"module:Class"`` or ``"file.py:Class"``), a class or factory (called as above;
            its records are labelled ``module:Class``), or an agent object (anything with
            ``act``, e.g. built in a notebook: played as it is, reset before every episode,
            never closed; labelled by its class; local, ``concurrency=1`` and
            ``num_envs=1`` only, since one object plays one episode at a time).
        env_ids: Registered env id(s); unversioned ids resolve to the latest version.
        episodes: Episodes per (agent, env id), 1 to 1,000,000.
        seed: Seed of episode 0 (a non-negative int; numpy integers too, bools not).
        out: Output directory (created if missing; locked while the call runs), or ``None``
            to write nothing. A folder already holding episodes of an (agent, env id) with
            other agent or env options is refused (:mod:`dialogue_gym.evaluation.run_config`);
            transport
            options (``base_url``, timeouts, retries, request concurrency) may differ.
        env_kwargs: Overrides passed to every ``make`` (e.g. ``{"encoder": "hashing"}``).
        agent_kwargs: Extra keyword arguments for every agent factory.
        progress: Show a progress bar per (agent, env id) with the running SR and RCSR.
        concurrency: Episodes run at once. Locally: worker threads, each with its own env
            and agent — for LLM-backed components, whose calls wait on the network; the
            workers share one backend (and its cache), so the backend's ``max_concurrency``
            option caps the requests in flight across all of them. With Ray: the number of
            Ray workers (``1``: one per CPU of the cluster). Results do not depend on it
            (episode ``i`` is seeded by ``seed + i`` whichever worker plays it). On Ctrl-C or
            a failed write no new episode starts (:func:`episode_loop.run_threaded`).
        seeds: Several base seeds instead of ``seed``: each plays ``episodes`` episodes
            seeded ``s, s + 1, ...``, and the summaries pool them (with a ``per_seed``
            breakdown). The blocks must not overlap (e.g. ``[0, 1000, 2000]`` for up to 1,000
            episodes).
        executor: ``"local"`` (this process; threads when ``concurrency > 1``) or ``"ray"``
            (Ray workers; ``pip install "dialogue-gym[ray]"``). Records stream back into the
            same files and summaries; the same seeds give the same records either way.
        ray_address: The Ray cluster to join (``ray.init(address=...)``); ``None`` starts or
            reuses a local Ray instance.
        num_envs: Play the episodes on a :mod:`dialogue_gym.env.vector` env of this many
            sub-envs (each with its own agent; the agents of a step act at once on worker
            threads): every vector step moves up to ``num_envs`` episodes with one batched
            encoding of their utterances and one coalesced backend call per LLM component.
            Local executor, ``concurrency=1`` only. Results do not depend on it.
        retry_errored: On resume, play the episodes recorded as errored again; the new record
            replaces the errored one (:func:`dialogue_gym.evaluation.journal.supersedes`).
        keep_records: Return every record in full. ``False`` keeps only the fields the
            metrics read (:data:`METRIC_FIELDS`), so a long run's memory does not grow with
            its transcripts; the files are the same either way.

    Returns:
        The records and summaries (see :class:`EvalResult`).

    Raises:
        ValueError: Bad ``episodes``/``seed``/names, ``env_kwargs`` that make an env whose
            system seat is not the only external one, an agent object with ``concurrency``,
            ``num_envs`` or Ray, or a factory Ray workers cannot import by name.
        TypeError: An agent that is neither a name, a callable nor an object with ``act``; a
            seed that is not an int (:class:`~dialogue_gym.argtypes.SeedError`, which is a
            ``ValueError`` too).
        RegistryError: An unknown env id (with the closest registered ids).
        AgentResolutionError: An unknown agent name.
        ConfigMismatchError: ``out`` holds episodes played with other options (named).
        JournalError: ``out/episodes.jsonl`` has a corrupt line that is not the last one.
        OutDirError: ``out`` is not writable, or another evaluation holds it
            (:class:`~dialogue_gym.evaluation.journal.RunLockedError`, naming its pid).
        JournalWriteError: A write failed mid-run (e.g. disk full); finished episodes stay.
    """
    episodes = _check_episodes(episodes)
    base_seeds = _check_seeds(seed, seeds, episodes)
    if not _is_int(concurrency) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if ray_address is not None and executor != "ray":
        raise ValueError("ray_address is only used with executor='ray'")
    if not _is_int(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if num_envs > 1 and (concurrency > 1 or executor != "local"):
        raise ValueError(
            "num_envs > 1 (a vector env in this process) cannot be combined with "
            f"concurrency > 1 or executor='ray'; got concurrency={concurrency}, "
            f"executor={executor!r}"
        )
    sources = agent_sources(agents)  # names fail fast, before any episode runs
    for source in sources:
        if source.instance is not None and (concurrency > 1 or num_envs > 1):
            raise ValueError(
                f"the agent object {source.label} plays one episode at a time: pass its class "
                "or a factory to evaluate with concurrency > 1 or num_envs > 1"
            )
        if executor == "ray":
            check_ray_agent(source)
    specs = [spec(env_id) for env_id in _names(env_ids, "env id")]
    env_kwargs = dict(env_kwargs or {})
    agent_kwargs = dict(agent_kwargs or {})
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    plan = _Plan(
        episodes,
        base_seeds,
        agent_kwargs,
        progress,
        env_kwargs,
        concurrency,
        executor=executor,
        ray_address=ray_address,
        num_envs=int(num_envs),
        retry_errored=bool(retry_errored),
        keep_records=bool(keep_records),
        sources={source.label: source for source in sources},
    )
    configs = _prepare(plan, list(plan.sources), specs, created)
    if out is None:
        records, summaries = _run_pairs(plan, configs)
        return EvalResult(records=records, summaries=summaries, out=None)

    out_dir = Path(out)
    with open_out_dir(out_dir):
        stored = run_config.read_manifest(out_dir)
        manifest = run_config.check_settings(
            out_dir,
            stored,
            {pair: config["agent_kwargs"] for pair, config in configs.items()},
            json_safe(env_kwargs),
        )
        specs_by_id = {env_spec.id: env_spec for env_spec in specs}
        earlier = {
            pair: run_config.earlier_hashes(stored, pair, config, specs_by_id[pair[1]], env_kwargs)
            for pair, config in configs.items()
        }
        plan.episodes_path = out_dir / EPISODES_FILE
        plan.done = _load_done(plan.episodes_path, configs, plan.keep_records, earlier)
        run_config.write_manifest(out_dir, manifest)
        records, summaries = _run_pairs(plan, configs)
        write_json(out_dir / SUMMARY_FILE, json_safe({"created": created, "summaries": summaries}))
    return EvalResult(records=records, summaries=summaries, out=out_dir)


@dataclasses.dataclass
class _Plan:
    """The settings shared by every (agent, env id) pair of one :func:`evaluate` call."""

    episodes: int
    seeds: Sequence[int]
    agent_kwargs: Mapping[str, Any]
    progress: bool
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    concurrency: int = 1
    executor: str = "local"
    ray_address: str | None = None
    num_envs: int = 1
    retry_errored: bool = False
    keep_records: bool = True
    episodes_path: Path | None = None
    worker_usage: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    done: Mapping[RecordKey, dict[str, Any]] = dataclasses.field(default_factory=dict)
    first_agent: Agent | None = None  # built by _prepare for the first pair's lone-env loop
    sources: Mapping[str, AgentSource] = dataclasses.field(default_factory=dict)


def _prepare(
    plan: _Plan, agent_names: Sequence[str], specs: Sequence[EnvSpec], created: str
) -> dict[tuple[str, str], dict[str, Any]]:
    """Builds every env and agent once (so bad options fail before anything is written).

    Returns:
        The config stamp of each (agent, env id) pair, in evaluation order.
    """
    configs: dict[tuple[str, str], dict[str, Any]] = {}
    for env_spec in specs:
        env = make(env_spec.id, **plan.env_kwargs)
        try:
            base = base_env(env)
            if tuple(getattr(base, "external", (SYSTEM,))) != (SYSTEM,):
                raise ValueError(
                    f"evaluate() drives the system seat only; {env_spec.id} was built with "
                    f"external={getattr(base, 'external', None)!r}"
                )
            pair_stamp = stamp(
                env_spec,
                env,
                plan.env_kwargs,
                plan.agent_kwargs,
                plan.episodes,
                plan.seeds,
                created,
            )
            for name in agent_names:
                source = plan.sources[name]
                agent = source.build(
                    getattr(base, "card", None), plan.agent_kwargs, getattr(base, "encoder", None)
                )
                if not configs:  # the first pair reuses its agent (a model loads once)
                    plan.first_agent = agent
                else:
                    source.release(agent)
                if source.factory is None:
                    options = {}  # an agent object receives no options
                else:
                    options = json_safe(received_options(name, plan.agent_kwargs, source.factory))
                configs[(name, env_spec.id)] = {
                    **pair_stamp,
                    "agent_kwargs": options,
                    "agent_hash": run_config.agent_hash(name, run_config.identity_options(options)),
                }
        finally:
            env.close()
    # Evaluation order: agent by agent, then env id by env id.
    return {(n, s.id): configs[(n, s.id)] for n in agent_names for s in specs}


def _load_done(
    path: Path,
    configs: Mapping[tuple[str, str], Mapping[str, Any]],
    keep: bool,
    earlier: Mapping[tuple[str, str], Mapping[str, set[str]]],
) -> dict[RecordKey, dict[str, Any]]:
    """The recorded episodes of this call's pairs (read by ``journal.read_episodes``).

    An incomplete last line is cut off the file (its episode plays again); records made with
    another env or agent configuration are refused (``earlier``: the hashes of older records
    also accepted per pair, :func:`~dialogue_gym.evaluation.run_config.earlier_hashes`).
    """
    if not path.exists():
        return {}

    def take(record: dict[str, Any]) -> dict[str, Any] | None:
        pair = (record["agent"], record["env_id"])
        config = configs.get(pair)
        if config is None:
            return None
        check_stamps(record, config, earlier[pair])
        return slim_record(record, keep)

    return read_episodes(path, take=take, repair=True).records


def _run_pairs(
    plan: _Plan, configs: Mapping[tuple[str, str], Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Plays every pair; returns the records and the summaries."""
    records: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    for (name, env_id), config in configs.items():
        env = make(env_id, **plan.env_kwargs)
        try:
            pair = _run_pair(plan, name, env_id, env, config)
            usage = merge_usage([usage_of(env), *plan.worker_usage])
            plan.worker_usage.clear()
        finally:
            env.close()
        records.extend(pair)
        summary = metrics.summarize(pair, T=config["T"], tau_q=config["tau_q"])
        if len(plan.seeds) > 1:
            summary["per_seed"] = per_seed_rows(pair, plan.seeds, config)
        if usage:
            summary["usage"] = usage
        summaries.append({"agent": name, "env_id": env_id, **summary, "config": config})
    return records, summaries


_LOGGED_ERRORS = 5
"""Errored episodes reported on the console per (agent, env id); the rest are counted."""


def _run_pair(
    plan: _Plan, name: str, env_id: str, env: Any, config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Runs the missing episodes of one (agent, env id) pair; returns all its records."""
    base = base_env(env)
    jobs = [Job(i, start + i) for start in plan.seeds for i in range(plan.episodes)]
    found = {job: plan.done.get((name, env_id, job.episode, job.seed)) for job in jobs}
    if plan.retry_errored:
        found = {job: None if r is not None and r.get("errored") else r for job, r in found.items()}
    records: list[dict[str, Any]] = [r for r in found.values() if r is not None]
    todo = [job for job, record in found.items() if record is None]
    bar = tqdm(
        total=len(jobs),
        initial=len(records),
        desc=f"{name} | {env_id}",
        unit="ep",
        disable=None if plan.progress else True,
        dynamic_ncols=True,
    )
    tally = ProgressTally(int(config["T"]))
    for record in records:
        tally.add(record)
    card = getattr(base, "card", None)
    errored = 0

    def finish(job: Job, result: dict[str, Any]) -> None:
        nonlocal errored
        line = _dumps(
            {
                **result,
                "agent": name,
                "env_id": env_id,
                "episode": job.episode,
                "seed": job.seed,
                "config_hash": config["config_hash"],
                "agent_hash": config["agent_hash"],
            }
        )
        if plan.episodes_path is not None:
            append_line(plan.episodes_path, line)
        record = slim_record(json.loads(line), plan.keep_records)  # what a resumed run reads back
        records.append(record)
        tally.add(record)
        if record.get("errored"):
            errored += 1
            if errored <= _LOGGED_ERRORS:
                _LOG.warning(
                    "%s | %s: episode %d (seed %d) errored: %s",
                    *(name, env_id, job.episode, job.seed, record.get("error")),
                )
        bar.set_postfix(tally.postfix(), refresh=False)
        bar.update(1)

    first_agent, plan.first_agent = plan.first_agent, None
    with bar:
        bar.set_postfix(tally.postfix())
        if todo:
            pair = PairSetup(
                env_id,
                plan.env_kwargs,
                plan.sources[name],
                plan.agent_kwargs,
                card=card,
                shared_backend=getattr(base, "backend", None),
                encoder=getattr(base, "encoder", None),
            )
            executor = _executor(plan, pair, env, first_agent)
            if isinstance(executor, LoneEnvExecutor):
                first_agent = None  # the executor plays with it and releases it
            plan.worker_usage.extend(executor.run(todo, finish))
    if first_agent is not None:  # built by _prepare but not used (nothing left to play)
        plan.sources[name].release(first_agent)
    if errored > _LOGGED_ERRORS:
        _LOG.warning(
            "%s | %s: %d more errored episodes (each record holds its error and traceback)",
            *(name, env_id, errored - _LOGGED_ERRORS),
        )
    records.sort(key=lambda r: (r["seed"] - r["episode"], r["episode"]))
    return records


def _executor(plan: _Plan, pair: PairSetup, env: Any, agent: Agent | None) -> Executor:
    """The executor of ``plan``'s settings for one pair (:mod:`dialogue_gym.evaluation.executors`).

    The lone-env executor plays on the pair's ``env`` with ``agent`` (when given), the one
    :func:`_prepare` built, so a model loads once.
    """
    if plan.executor == "ray":
        return RayExecutor(pair, workers=plan.concurrency, address=plan.ray_address)
    if plan.num_envs > 1:
        return VectorExecutor(pair, plan.num_envs)
    if plan.concurrency > 1:
        return ThreadExecutor(pair, plan.concurrency)
    return LoneEnvExecutor(pair, env, agent)
