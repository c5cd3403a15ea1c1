"""Self-play rollouts and the GRPO update, for any policy behind the two MASP protocols.

:func:`play` runs a batch of episodes in lockstep — both seats, one utterance per env step —
with one :class:`~dialogue_gym_agents.common.policy.Seat` per env and seat and one
:class:`~dialogue_gym_agents.common.policy.GRPOPolicy` per seat (batched sampling across the
envs whose turn it is). It keeps the *learner's* steps: context, action, old log-prob and the
reward of the exchange that action took part in (the env pays both seats when an exchange
completes). Episodes are played in groups that share an episode seed (same persona, same
simulator randomness); a step's GRPO group is its episode group and its turn index, so each
return-to-go is compared with the other rollouts' returns at the same turn of the same episode
(Appendix B.4, Eq. 23). :func:`grpo_update` then runs the clipped objective with the KL to the
reference (:func:`~dialogue_gym_agents.common.grpo.grpo_loss`) for a few epochs of
minibatches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from dialogue_gym_agents.common.grpo import grpo_loss, pad_token_rows
from dialogue_gym_agents.common.policy import GRPOPolicy, History, Seat
from dialogue_gym_agents.common.rl import (
    discounted_returns,
    episode_outcomes,
    group_advantages,
)

__all__ = ["Rollout", "grpo_update", "play"]

SEATS = ("system", "user")


@dataclasses.dataclass
class Rollout:
    """The learner's steps of a batch of episodes, with returns and group advantages.

    Attributes:
        learner: The seat whose steps these are.
        contexts: Per step, what the policy conditioned on.
        actions: Per step, the sampled action.
        logp_old: Per step, its log-prob under the sampling policy (detached).
        rewards: Per step, the learner's reward for the exchange (stop-gradient).
        returns: Per step, the discounted return-to-go within its episode.
        advantages: Per step, the return normalized within its group.
        groups: Per step, its group key ``(episode group, turn index)``.
        records: The env's episode records.
        prefixes: ``(history, profile)`` of every prefix the episodes went through (the
            initial one and one per completed exchange), for the student refresh.
        q: The rationality score of every completed exchange.
    """

    learner: str
    contexts: list[Any] = dataclasses.field(default_factory=list)
    actions: list[Any] = dataclasses.field(default_factory=list)
    logp_old: list[torch.Tensor] = dataclasses.field(default_factory=list)
    rewards: list[float] = dataclasses.field(default_factory=list)
    returns: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    advantages: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    groups: list[Hashable] = dataclasses.field(default_factory=list)
    records: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    prefixes: list[tuple[History, str]] = dataclasses.field(default_factory=list)
    q: list[int] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actions)

    def extend(self, other: Rollout) -> None:
        """Appends ``other``'s steps (the same learner's, from episode groups of its own).

        Returns and advantages are per step and were normalized within each group, so batches
        played apart (e.g. against different opponents) join into one update unchanged.

        Raises:
            ValueError: ``other`` is another seat's, or shares a group key with this one.
        """
        if other.learner != self.learner:
            raise ValueError(f"cannot join {other.learner!r} steps to {self.learner!r} steps")
        if _episode_groups(other.groups) & _episode_groups(self.groups):
            raise ValueError("the rollouts share an episode group: their advantages would mix")
        for name in ("contexts", "actions", "logp_old", "rewards", "groups", "records",
                     "prefixes", "q"):  # fmt: skip
            getattr(self, name).extend(getattr(other, name))
        self.returns = np.concatenate([self.returns, other.returns])
        self.advantages = np.concatenate([self.advantages, other.advantages])

    def stats(self) -> dict[str, float]:
        """Mean reward per step and per episode, mean q, SR and RCSR of the episodes."""
        T = max((int(r.get("T", 8)) for r in self.records), default=8)
        outcome = episode_outcomes(self.records, T)
        episodes = max(len(self.records), 1)
        return {
            "sr": outcome["sr"],
            "rcsr": outcome["rcsr"],
            "turns": outcome["turns"],
            "reward": float(np.mean(self.rewards)) if self.rewards else 0.0,
            "episode_reward": float(np.sum(self.rewards)) / episodes,
            "q": float(np.mean(self.q)) if self.q else 0.0,
            "steps": float(len(self)),
        }


def _episode_groups(groups: Sequence[Hashable]) -> set[Hashable]:
    """The episode groups of per-step keys (``(episode group, turn)`` in :func:`play`)."""
    return {key[0] if isinstance(key, tuple) else key for key in groups}


def _base(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def play(
    envs: Sequence[Any],
    seeds: Sequence[int],
    groups: Sequence[Hashable],
    seats: Mapping[str, Sequence[Seat]],
    policies: Mapping[str, GRPOPolicy],
    learner: str,
    generator: torch.Generator,
    gamma: float,
    seat_seeds: Sequence[int] | None = None,
    greedy: Mapping[str, bool] | None = None,
    into: Rollout | None = None,
) -> Rollout:
    """Plays one episode per env in lockstep and returns the learner's steps.

    Args:
        envs: Dialogue envs whose external seats are the keys of ``seats``.
        seeds: The episode seed of each env.
        groups: The episode group of each env (same seed → same group).
        seats: Per seat name, one seat adapter per env.
        policies: Per seat name, the policy that plays it.
        learner: The seat whose steps are kept (must be in ``seats``).
        generator: torch generator for action sampling.
        gamma: The return discount.
        seat_seeds: Per env, the seed handed to its seats' ``reset`` (default: ``seeds``).
        greedy: Per seat name, take the most likely action instead of sampling.
        into: An empty rollout to fill (e.g. an
            :class:`~dialogue_gym_agents.lm_grpo.train.LMRollout`); default: a new :class:`Rollout`.

    The opponent seat's actions need no log-probs: a policy with a ``generate(contexts,
    generator, greedy=...)`` method (an LM) is asked for its actions only.

    Returns:
        The :class:`Rollout` with returns and group-normalized advantages.

    Raises:
        ValueError: Mismatched lengths, or a learner without a seat.
    """
    n = len(envs)
    if not (len(seeds) == len(groups) == n) or any(len(s) != n for s in seats.values()):
        raise ValueError("envs, seeds, groups and every seat list must have the same length")
    if learner not in seats:
        raise ValueError(f"the learner {learner!r} has no seat (seats: {sorted(seats)})")
    greedy = dict(greedy or {})
    rollout = Rollout(learner=learner) if into is None else into
    if len(rollout) or rollout.learner != learner:
        raise ValueError("into must be an empty rollout of the learner's seat")
    observations: list[dict[str, Any]] = []
    for i, env in enumerate(envs):
        obs, _ = env.reset(seed=int(seeds[i]))
        observations.append(obs)
        for seat in seats.values():
            seat[i].reset(seed=int((seat_seeds or seeds)[i]))
        base = _base(env)
        rollout.prefixes.append((tuple(base.history), base.user.profile()))
    own_steps: list[list[int]] = [[] for _ in range(n)]
    active = list(range(n))
    while active:
        speaking: dict[str, list[int]] = {}
        for i in active:
            speaker = next(s for s in SEATS if s in seats and observations[i][s]["to_speak"])
            speaking.setdefault(speaker, []).append(i)
        finished: list[int] = []
        for speaker, members in speaking.items():
            contexts = [seats[speaker][i].context(observations[i][speaker]) for i in members]
            policy, heat = policies[speaker], greedy.get(speaker, False)
            generate = getattr(policy, "generate", None)
            if speaker != learner and callable(generate):
                actions = generate(contexts, generator, greedy=heat)
                logps: list[Any] = [None] * len(actions)
            else:
                actions, logps = policy.sample(contexts, generator, greedy=heat)
            for i, context, action, logp in zip(members, contexts, actions, logps, strict=True):
                env_action = seats[speaker][i].env_action(action, observations[i][speaker])
                obs, rewards, terminated, truncated, infos = envs[i].step({speaker: env_action})
                if speaker == learner:
                    own_steps[i].append(len(rollout.actions))
                    rollout.contexts.append(context)
                    rollout.actions.append(action)
                    rollout.logp_old.append(logp)
                    rollout.rewards.append(0.0)
                    rollout.groups.append((groups[i], len(own_steps[i]) - 1))
                if "q" in infos[learner]:  # an exchange completed: both seats were paid
                    rollout.rewards[own_steps[i][-1]] += float(rewards[learner])
                    rollout.q.append(int(infos[learner]["q"]))
                    base = _base(envs[i])
                    rollout.prefixes.append((tuple(base.history), base.user.profile()))
                observations[i] = obs
                if terminated[speaker] or truncated[speaker]:
                    rollout.records.append(infos[speaker]["episode"])
                    finished.append(i)
        active = [i for i in active if i not in finished]
    returns = np.zeros(len(rollout.rewards))
    for steps in own_steps:
        if steps:
            returns[steps] = discounted_returns([rollout.rewards[s] for s in steps], gamma)
    rollout.returns = returns
    rollout.advantages = group_advantages(returns, rollout.groups)
    return rollout


def _stack_old(values: Sequence[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """Old log-probs in the shape of the new ones (padded per token for LM policies)."""
    if like.dim() == 1:
        return torch.stack([v.reshape(()) for v in values])
    return pad_token_rows(values, like)


def grpo_update(
    policy: GRPOPolicy,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    *,
    epochs: int,
    minibatch_size: int,
    clip: float,
    beta: float,
    generator: torch.Generator,
    max_grad_norm: float | None = 1.0,
) -> dict[str, float]:
    """Clipped GRPO epochs with the KL to the reference policy on one rollout.

    Args:
        policy: The learner's policy (its reference stays frozen).
        optimizer: The optimizer over ``policy.trainable_parameters()``.
        rollout: The learner's steps from :func:`play`.
        epochs: Passes over the rollout.
        minibatch_size: Steps per gradient step.
        clip: The ratio clip ε.
        beta: The KL coefficient β.
        generator: torch generator for the minibatch order.
        max_grad_norm: Gradient-norm clip (``None`` or 0: off).

    Returns:
        Mean ``loss``, ``policy``, ``kl``, ``clip_fraction`` and ``ratio_mean`` over the
        gradient steps (empty rollouts give zeros).
    """
    sums = dict.fromkeys(("loss", "policy", "kl", "clip_fraction", "ratio_mean"), 0.0)
    steps = 0
    advantages = torch.as_tensor(rollout.advantages, dtype=torch.float32)
    parameters = list(policy.trainable_parameters())
    for _ in range(epochs):
        order = torch.randperm(len(rollout), generator=generator)
        for start in range(0, len(order), minibatch_size):
            rows = order[start : start + minibatch_size].tolist()
            out = policy.evaluate(
                [rollout.contexts[r] for r in rows], [rollout.actions[r] for r in rows]
            )
            old = _stack_old([rollout.logp_old[r] for r in rows], out.logp)
            result = grpo_loss(
                out.logp,
                old,
                advantages[rows].to(out.logp.device),
                out.logp_ref,
                mask=out.mask,
                clip=clip,
                beta=beta,
                kl=out.kl,
            )
            optimizer.zero_grad()
            result.loss.backward()
            if max_grad_norm:  # None or 0: off
                nn.utils.clip_grad_norm_(parameters, max_grad_norm)
            optimizer.step()
            steps += 1
            for key in sums:
                sums[key] += float(getattr(result, key).detach())
    return {key: value / max(steps, 1) for key, value in sums.items()}
