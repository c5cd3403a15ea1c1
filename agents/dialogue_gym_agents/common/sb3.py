"""stable-baselines3 glue shared by the PPO trainers: actor weights in and out, learning curves."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from dialogue_gym_agents.common.rl import discounted_returns, episode_outcomes
from dialogue_gym_agents.common.tracking import RunLogger

__all__ = ["copy_actor_weights", "curve_callback", "sb3_actor"]


def sb3_actor(policy: Any) -> list[nn.Linear]:
    """The linear layers of an SB3 ``MlpPolicy``'s actor, input to output."""
    layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    return [*layers, policy.action_net]


def copy_actor_weights(source: Sequence[nn.Linear], target: Sequence[nn.Linear]) -> None:
    """Copies weights layer by layer between a ``StrategyPolicyNet`` and an SB3 actor.

    Raises:
        ValueError: The layer counts or shapes differ.
    """
    if len(source) != len(target):
        raise ValueError(f"{len(source)} layers cannot be copied onto {len(target)}")
    with torch.no_grad():
        for src, dst in zip(source, target, strict=True):
            if src.weight.shape != dst.weight.shape:
                raise ValueError(f"layer shape {src.weight.shape} != {dst.weight.shape}")
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)


def curve_callback(
    log: RunLogger,
    T: int,
    gamma: float,
    deadline: float | None,
    bar: Any,
    curve: list[dict[str, float]],
) -> Any:
    """An SB3 callback logging the rollout SR/RCSR/return of every PPO update."""
    from stable_baselines3.common.callbacks import BaseCallback

    class CurveCallback(BaseCallback):
        def _on_training_start(self) -> None:
            self.rewards: list[list[float]] = [[] for _ in range(self.training_env.num_envs)]
            self.records: list[dict[str, Any]] = []
            self.returns: list[float] = []
            self.update = 0

        def _on_rollout_start(self) -> None:
            values = self.model.logger.name_to_value
            train = {
                k.split("/", 1)[1]: float(v) for k, v in values.items() if k.startswith("train/")
            }
            if train and self.update:
                log.log_dict(train, self.num_timesteps, prefix="ppo/")
            self.records, self.returns = [], []

        def _on_step(self) -> bool:
            for i, (reward, done, info) in enumerate(
                zip(self.locals["rewards"], self.locals["dones"], self.locals["infos"], strict=True)
            ):
                self.rewards[i].append(float(reward))
                if done:
                    if "dialogue_episode" in info:
                        self.records.append(info["dialogue_episode"])
                    self.returns.append(float(discounted_returns(self.rewards[i], gamma)[0]))
                    self.rewards[i] = []
            bar.update(self.training_env.num_envs)
            return deadline is None or time.perf_counter() < deadline

        def _on_rollout_end(self) -> None:
            self.update += 1
            outcome = episode_outcomes(self.records, T)
            point = {
                "update": float(self.update),
                "steps": float(self.num_timesteps),
                "rollout_sr": outcome["sr"],
                "rollout_rcsr": outcome["rcsr"],
                "episodes": outcome["episodes"],
                "return": float(np.mean(self.returns)) if self.returns else 0.0,
            }
            curve.append(point)
            log.log_dict(
                {k: v for k, v in point.items() if k != "steps"}, self.num_timesteps, prefix="ppo/"
            )
            bar.set_postfix(update=self.update, sr=f"{outcome['sr']:.2f}")

    return CurveCallback()
