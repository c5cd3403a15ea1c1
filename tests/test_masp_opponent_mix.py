"""MASP's ``--opponent-mix``: a share of the system's self-play groups against the simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
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


def _selfplay(run_dir: Path, mix: float) -> SelfPlay:
    card = load_card("p4g")
    silver = [
        SilverTrajectory.from_json(r)
        for r in read_jsonl(run_dir / "phase0-mentalizers" / "silver.jsonl")
    ]
    config = tiny(run_dir, iterations=1, opponent_mix=mix)
    return SelfPlay(card, load_models(load_checkpoint(run_dir / "iter-0001"), card), silver, config)


def test_the_system_plays_the_mixed_share_of_its_groups_against_the_simulator(
    run_dir: Path,
) -> None:
    selfplay = _selfplay(run_dir, 0.5)
    # One of the two groups (two episodes) against the simulator: its envs have no user seat.
    assert len(selfplay.simulator_envs) == 2
    assert all(env.external == ("system",) for env in selfplay.simulator_envs)
    assert all(env.external == ("system", "user") for env in selfplay.envs)
    generator = torch.Generator().manual_seed(0)
    rollout = selfplay.rollout(3, "system", generator)
    assert len(rollout.records) == 4  # every group played, as in pure self-play
    assert all(env.history for env in selfplay.simulator_envs)
    assert sum(rollout.rewards) == pytest.approx(
        sum(r["sum_reward_system"] for r in rollout.records)
    )
    for group in {g[0] for g in rollout.groups}:
        members = [i for i, g in enumerate(rollout.groups) if g[0] == group]
        for turn in {rollout.groups[i][1] for i in members}:
            same = [i for i in members if rollout.groups[i][1] == turn]
            assert abs(float(np.mean(rollout.advantages[same]))) < 1e-6
    # The user learns against the system only: its rollout never touches the simulator envs.
    before = [list(env.history) for env in selfplay.simulator_envs]
    user_rollout = selfplay.rollout(3, "user", generator)
    assert len(user_rollout.records) == 4
    assert [list(env.history) for env in selfplay.simulator_envs] == before


def test_no_mix_builds_no_simulator_envs(run_dir: Path) -> None:
    assert _selfplay(run_dir, 0.0).simulator_envs == []


def test_the_mix_is_part_of_the_run_only_away_from_its_default(tmp_path: Path) -> None:
    """Checkpoints made before the option existed still resume at its default."""
    assert "opponent_mix" not in phase_config(tiny(tmp_path), 2)
    assert phase_config(tiny(tmp_path, opponent_mix=0.25), 2)["opponent_mix"]
    with pytest.raises(ValueError, match="opponent-mix must be in"):
        tiny(tmp_path, opponent_mix=1.5)
    with pytest.raises(ValueError, match="needs --opponent policy"):
        tiny(tmp_path, opponent_mix=0.5, opponent="simulator")


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
