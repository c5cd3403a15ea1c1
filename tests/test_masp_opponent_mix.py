"""MASP's mixed pools: a share of the system's self-play groups against the simulator
(``--opponent-mix``), of the user's against ``scripted`` (``--user-opponent-mix``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import load_benchmark
from test_masp import tiny

from dialogue_gym.cards.card import load_card
from dialogue_gym_agents.common.checkpoint import load_checkpoint
from dialogue_gym_agents.common.selfplay import Rollout
from dialogue_gym_agents.masp.agent import load_models
from dialogue_gym_agents.masp.config import phase_config
from dialogue_gym_agents.masp.selfplay import SelfPlay
from dialogue_gym_agents.masp.silver import SilverTrajectory, read_jsonl
from dialogue_gym_agents.masp.train import train_masp


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mix") / "run"
    train_masp(tiny(out, iterations=1, opponent_mix=0.5))
    return out


def _selfplay(run_dir: Path, mix: float, user_mix: float = 0.0) -> SelfPlay:
    card = load_card("p4g")
    silver = [
        SilverTrajectory.from_json(r)
        for r in read_jsonl(run_dir / "phase0-mentalizers" / "silver.jsonl")
    ]
    config = tiny(run_dir, iterations=1, opponent_mix=mix, user_opponent_mix=user_mix)
    return SelfPlay(card, load_models(load_checkpoint(run_dir / "iter-0001"), card), silver, config)


def test_the_system_plays_the_mixed_share_of_its_groups_against_the_simulator(
    run_dir: Path,
) -> None:
    selfplay = _selfplay(run_dir, 0.5)
    # One of the two groups (two episodes) against the simulator: its envs have no user seat.
    assert len(selfplay.fixed_envs["system"]) == 2
    assert all(env.external == ("system",) for env in selfplay.fixed_envs["system"])
    assert all(env.external == ("system", "user") for env in selfplay.envs)
    generator = torch.Generator().manual_seed(0)
    rollout = selfplay.rollout(3, "system", generator)
    assert len(rollout.records) == 4  # every group played, as in pure self-play
    assert all(env.history for env in selfplay.fixed_envs["system"])
    assert sum(rollout.rewards) == pytest.approx(
        sum(r["sum_reward_system"] for r in rollout.records)
    )
    for group in {g[0] for g in rollout.groups}:
        members = [i for i, g in enumerate(rollout.groups) if g[0] == group]
        for turn in {rollout.groups[i][1] for i in members}:
            same = [i for i in members if rollout.groups[i][1] == turn]
            assert abs(float(np.mean(rollout.advantages[same]))) < 1e-6
    # The user learns against the system only: its rollout never touches the simulator envs.
    before = [list(env.history) for env in selfplay.fixed_envs["system"]]
    user_rollout = selfplay.rollout(3, "user", generator)
    assert len(user_rollout.records) == 4
    assert [list(env.history) for env in selfplay.fixed_envs["system"]] == before


def test_no_mix_builds_no_simulator_envs(run_dir: Path) -> None:
    assert _selfplay(run_dir, 0.0).fixed_envs == {"system": [], "user": []}


def test_the_user_plays_its_mixed_share_against_scripted(run_dir: Path) -> None:
    selfplay = _selfplay(run_dir, 0.0, user_mix=0.5)
    scripted = selfplay.fixed_envs["user"]
    # One of the two groups against `scripted`: the env plays the system seat itself.
    assert len(scripted) == 2 and all(env.external == ("user",) for env in scripted)
    assert all(env.system_policy is not None for env in scripted)
    assert scripted[0].system_policy is not scripted[1].system_policy  # per-episode state
    generator = torch.Generator().manual_seed(0)
    rollout = selfplay.rollout(3, "user", generator)
    assert len(rollout.records) == 4 and rollout.learner == "user"
    assert all(env.history for env in scripted)
    assert sum(rollout.rewards) == pytest.approx(sum(r["sum_reward_user"] for r in rollout.records))
    # Same seeds, same opponent, same transcript: the fixed share is reproducible.
    again = _selfplay(run_dir, 0.0, user_mix=0.5)
    again.rollout(3, "user", torch.Generator().manual_seed(0))
    replayed = [list(env.history) for env in again.fixed_envs["user"]]
    assert replayed == [list(env.history) for env in scripted]
    # The system's rollout never touches them.
    before = [list(env.history) for env in scripted]
    selfplay.rollout(4, "system", generator)
    assert [list(env.history) for env in scripted] == before


def test_the_mix_is_part_of_the_run_only_away_from_its_default(tmp_path: Path) -> None:
    """Checkpoints made before the option existed still resume at its default."""
    assert "opponent_mix" not in phase_config(tiny(tmp_path), 2)
    assert phase_config(tiny(tmp_path, opponent_mix=0.25), 2)["opponent_mix"]
    with pytest.raises(ValueError, match="opponent-mix must be in"):
        tiny(tmp_path, opponent_mix=1.5)
    with pytest.raises(ValueError, match="needs --opponent policy"):
        tiny(tmp_path, opponent_mix=0.5, opponent="simulator")
    assert "user_opponent_mix" not in phase_config(tiny(tmp_path), 2)
    assert phase_config(tiny(tmp_path, user_opponent_mix=0.5), 2)["user_opponent_mix"]
    with pytest.raises(ValueError, match="user-opponent-mix must be in"):
        tiny(tmp_path, user_opponent_mix=-0.1)
    with pytest.raises(ValueError, match="needs --opponent policy and user updates"):
        tiny(tmp_path, user_opponent_mix=0.5, update_user=False)


def test_rollouts_join_only_the_same_learners_separate_groups() -> None:
    first = Rollout("system", actions=[0, 1], rewards=[1.0, 0.0], groups=[(0, 0), (0, 0)])
    first.returns, first.advantages = np.array([1.0, 0.0]), np.array([1.0, -1.0])
    second = Rollout("system", actions=[2], rewards=[0.5], groups=[(1, 0)])
    second.returns, second.advantages = np.array([0.5]), np.array([0.0])
    first.extend(second)
    assert first.actions == [0, 1, 2] and first.groups == [(0, 0), (0, 0), (1, 0)]
    assert first.advantages.tolist() == [1.0, -1.0, 0.0] and len(first.returns) == 3
    with pytest.raises(ValueError, match="share an episode group"):
        first.extend(Rollout("system", groups=[(1, 3)]))
    with pytest.raises(ValueError, match="cannot join"):
        first.extend(Rollout("user"))


def test_the_trained_user_benchmark_sets_a_policy_beside_the_blind_ones(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_benchmark("trained_user")
    out = tmp_path / "cells.json"
    argv = ["--runs", str(run_dir), "--episodes", "2", "--encoder", "hashing", "--out", str(out)]
    assert bench.main(argv) == 0
    cells = json.loads(out.read_text())
    assert set(cells) == {"rational", "always_refuse", "trained"}
    trained = cells["trained"][str(run_dir)]
    assert 0.0 <= trained["agree_when_due"] <= 1.0 or trained["due_turns"] == 0
    # The blind refuser never agrees, and refuses every resolved turn it meets.
    assert cells["always_refuse"]["sr"] == 0.0 and cells["always_refuse"]["agree_otherwise"] == 0
    assert cells["rational"]["agree_when_due"] in (1.0,) or cells["rational"]["due_turns"] == 0
    assert f"trained {'/'.join(run_dir.parts[-2:])}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--runs", str(tmp_path / "missing")])
