"""The executors behind one interface (issue 17 item 3): same jobs, same records, any executor.

The Ray executor against a real Ray instance is in ``test_executors.py`` (it needs ``ray``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from dialogue_gym.env.registry import make
from dialogue_gym.evaluation.agents import agent_sources
from dialogue_gym.evaluation.episode_loop import Job
from dialogue_gym.evaluation.executors import (
    Executor,
    LoneEnvExecutor,
    PairSetup,
    RayExecutor,
    ThreadExecutor,
    VectorExecutor,
)

ENV_ID = "P4G-hard"
ENV_KWARGS = {"encoder": "hashing"}


def _play(executor: Executor, todo: list[Job]) -> tuple[dict[Job, dict[str, Any]], list[Any]]:
    """The records ``executor`` hands to ``finish`` (by job), and the usage it returns."""
    records: dict[Job, dict[str, Any]] = {}

    def finish(job: Job, record: dict[str, Any]) -> None:
        assert job not in records  # each episode is finished once
        records[job] = record

    usage = executor.run(todo, finish)
    return records, usage


def test_every_local_executor_plays_the_same_records() -> None:
    (source,) = agent_sources("scripted")
    todo = [Job(i, 40 + i) for i in range(4)]
    env = make(ENV_ID, **ENV_KWARGS)
    try:
        pair = PairSetup(ENV_ID, ENV_KWARGS, source, {}, card=env.unwrapped.card)
        lone, usage = _play(LoneEnvExecutor(pair, env), todo)
    finally:
        env.close()
    assert list(lone) == todo  # one env: in order
    assert usage == [{}]  # one agent, no LLM backend
    assert all(not record["errored"] for record in lone.values())

    threaded, usage = _play(ThreadExecutor(pair, threads=2), todo)
    assert threaded == lone
    assert len(usage) <= 2  # one entry per worker thread that played
    vectorized, usage = _play(VectorExecutor(pair, num_envs=3), todo)
    assert vectorized == lone
    assert len(usage) == 3  # one entry per sub-env's agent


def test_lone_env_executor_uses_and_releases_the_given_agent() -> None:
    closed: list[Any] = []

    class Closing:
        def act(self, observation: Any) -> str:
            return "Hello! Would you consider donating to Save the Children?"

        def close(self) -> None:
            closed.append(self)

    (source,) = agent_sources(Closing)
    given = Closing()
    env = make(ENV_ID, **ENV_KWARGS)
    try:
        pair = PairSetup(ENV_ID, ENV_KWARGS, source, {}, card=env.unwrapped.card)
        records, _ = _play(LoneEnvExecutor(pair, env, agent=given), [Job(0, 0), Job(1, 1)])
    finally:
        env.close()
    assert len(records) == 2
    assert closed == [given]  # played with it, then released it (no second agent built)


def test_pair_setup_shares_the_pair_backend_with_the_envs_executors_build() -> None:
    (source,) = agent_sources("scripted")
    alone = PairSetup(ENV_ID, {"encoder": "hashing", "backend_cache": "x.db"}, source, {})
    assert alone.worker_env_kwargs() == {"encoder": "hashing", "backend_cache": "x.db"}
    backend = object()
    shared = PairSetup(ENV_ID, alone.env_kwargs, source, {}, shared_backend=backend)
    assert shared.worker_env_kwargs() == {
        "encoder": "hashing",
        "backend": backend,
        "backend_cache": None,
        "backend_options": None,
    }


def test_ray_executor_refuses_an_agent_workers_cannot_import() -> None:
    class Plain:
        def act(self, observation: Any) -> str:
            return "hi"

    (source,) = agent_sources(Plain())
    with pytest.raises(ValueError, match="Ray workers build agents by name"):
        RayExecutor(PairSetup(ENV_ID, ENV_KWARGS, source, {}))


class _Echoing:
    """An agent that encodes the user's last reply with the encoder it is given, then asks."""

    built: ClassVar[list[_Echoing]] = []

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.calls = 0
        _Echoing.built.append(self)

    def act(self, observation: Any) -> str:
        self.calls += 1
        self.encoder.encode([f"{observation!s:.80} #{self.calls}"])  # a miss every turn
        return "Would you consider donating to Save the Children today?"


def test_vector_agents_share_their_sub_envs_encoder_and_its_batches(monkeypatch) -> None:
    """Agents get the sub-env's encoder, and their encodes are batched like the sub-envs'."""
    from dialogue_gym.env.vector.batching import BatchingEncoder

    batch_sizes: list[int] = []
    original = BatchingEncoder._encode_lists

    def counting(self: BatchingEncoder, lists: list[list[str]]) -> Any:
        batch_sizes.append(len(lists))
        return original(self, lists)

    monkeypatch.setattr(BatchingEncoder, "_encode_lists", counting)
    _Echoing.built.clear()
    (source,) = agent_sources(_Echoing)
    env = make(ENV_ID, **ENV_KWARGS)
    try:
        pair = PairSetup(
            ENV_ID, ENV_KWARGS, source, {}, card=env.unwrapped.card, encoder=env.unwrapped.encoder
        )
        todo = [Job(i, 70 + i) for i in range(3)]
        lone, _ = _play(LoneEnvExecutor(pair, env), todo)
    finally:
        env.close()
    lone_agent = _Echoing.built[0]
    assert lone_agent.encoder is pair.encoder
    _Echoing.built.clear()
    batch_sizes.clear()
    vectorized, _ = _play(VectorExecutor(pair, num_envs=3), todo)
    assert vectorized == lone  # batching never changes an episode
    agents = _Echoing.built
    assert len(agents) == 3 and all(a.encoder is not pair.encoder for a in agents)
    # The three agents' first encodes (one miss each) went to the inner encoder as one batch.
    assert 3 in batch_sizes
