"""GRPO for LoRA causal-LM policies on an env seat, and ``dialogue-gym train lm-grpo``.

:class:`LMGRPO` runs GRPO iterations of one :class:`~dialogue_gym_agents.common.lm.policy.LMPolicy`
on one seat of a dialogue env (MASP Appendix B.4), standalone — without mentalizers; the full
MASP algorithm with LM policies is ``dialogue-gym train masp --policy lm``. Both play their
rollouts with :func:`~dialogue_gym_agents.common.selfplay.play` and update with
:func:`~dialogue_gym_agents.common.selfplay.grpo_update`. Each iteration:

1. **Rollouts in groups.** ``groups`` episode seeds, each played ``group_size`` times (same
   persona, same simulator randomness; the policy's samples differ). The other seat is the
   env's own simulated user (``external=("system",)``) or, in self-play, a frozen ``opponent``
   ``LMPolicy`` (``external=("system", "user")``). The learner's prompts carry the B.5
   control block: the rendered student estimate (system; present when the env has a
   ``student``) or its current BDI state and profile (user).
2. **Returns and advantages.** The learner's reward per exchange (``r_S`` or ``r_U``, paid by
   the env when the exchange completes; stop-gradient by construction), discounted returns
   ``G_t`` with γ = 0.97 within each episode
   (:func:`~dialogue_gym_agents.common.rl.discounted_returns`), and group-normalized
   advantages (:func:`~dialogue_gym_agents.common.rl.group_advantages`) where a step's group
   is its episode seed and turn index — each return is compared with the other rollouts'
   returns at the same turn of the same episode.
3. **Update.** ``epochs`` passes of minibatches over the steps with the shared objective
   :func:`~dialogue_gym_agents.common.grpo.grpo_loss` on token-level inputs (``mask=``):
   clipped ratio of current to sampling-time ("old") token log-probs and the token-level k3 KL
   to the reference policy (the frozen SFT adapter by default), AdamW on the adapter only.

``dialogue-gym train lm-grpo`` wraps it: system policy from an ``sft-lora`` checkpoint
(``--init``), optionally an LM user from a user-seat ``sft-lora`` checkpoint (``--user-init``,
self-play) updated in turn with ``--alternate`` (system update with the user frozen, then user
update against the updated system, as in Algorithm 1, without the student refresh). Rollouts
are generated locally with transformers, or on an OpenAI-compatible server (vLLM) serving the
current adapter (``--rollout-backend openai:NAME --base-url URL``; the adapter is pushed to the
server after every update, :class:`~dialogue_gym_agents.common.lm.policy.VLLMAdapterSync`).
Log-probs are always computed here, on the trained weights.

Randomness: episode seeds are derived from the run seed; sampling seeds and minibatch orders
come from the run's own torch generators.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointWriter,
)
from dialogue_gym_agents.common.cli import run_trainer
from dialogue_gym_agents.common.config import config_to_dict
from dialogue_gym_agents.common.lm.policy import LMPolicy, LMSeat
from dialogue_gym_agents.common.rl import (
    DEFAULT_GAMMA,
)
from dialogue_gym_agents.common.seeding import derive_seed
from dialogue_gym_agents.common.selfplay import Rollout, grpo_update, play
from dialogue_gym_agents.common.tracking import RunLogger, progress_bar
from dialogue_gym_agents.lm_grpo.config import KIND, LMGRPOConfig
from dialogue_gym_agents.sft.warm_start import build_policy, check_policy_sources

__all__ = [
    "KIND",
    "LMGRPO",
    "LMGRPOConfig",
    "LMRollout",
    "grpo_update",
    "main",
    "rollout",
    "train_lm_grpo",
]


SERVED_DIR = "served"
"""Scratch folder (in the staging folder, removed before commit) of adapters pushed to vLLM."""

SEATS = ("system", "user")


class LMRollout(Rollout):
    """A :class:`~dialogue_gym_agents.common.selfplay.Rollout` of LM replies.

    ``contexts`` are chat prompts, ``actions`` :class:`LMResponse` replies and ``logp_old``
    their per-token log-probs; :meth:`stats` adds reply statistics.
    """

    def stats(self) -> dict[str, float]:
        """The rollout statistics plus mean reply length and the count of empty replies."""
        return {
            **super().stats(),
            "reply_tokens": float(np.mean([len(a.tokens) for a in self.actions]))
            if self.actions
            else 0.0,
            "empty_replies": float(sum(1 for a in self.actions if not a.text.strip())),
        }


def rollout(
    envs: Sequence[Any],
    seeds: Sequence[int],
    groups: Sequence[Hashable],
    learner: str,
    policies: Mapping[str, LMPolicy],
    seats: Mapping[str, LMSeat],
    generator: torch.Generator,
    gamma: float = DEFAULT_GAMMA,
) -> LMRollout:
    """Plays one episode per env in lockstep and returns the learner's steps.

    Args:
        envs: Envs whose external seats are the keys of ``seats``.
        seeds: Episode seed per env.
        groups: Episode group per env (same seed → same group).
        learner: The seat whose steps are kept and scored.
        policies: The LM policy of each external seat (the learner's and, in self-play, the
            opponent's).
        seats: The seat adapter of each external seat.
        generator: Sampling seeds.
        gamma: Return discount.

    Raises:
        ValueError: Mismatched lengths, or a seat without a policy.
    """
    if learner not in policies or set(seats) != set(policies):
        raise ValueError("every external seat (the learner's included) needs a policy and a seat")
    # The seats are stateless (a prompt is a function of the observation): one serves every env.
    per_env = {name: [seat] * len(envs) for name, seat in seats.items()}
    return play(
        envs,
        seeds,
        groups,
        per_env,
        policies,
        learner,
        generator,
        gamma,
        into=LMRollout(learner=learner),
    )  # type: ignore[return-value]


class LMGRPO:
    """GRPO iterations of an LM policy on one env seat (see the module docstring).

    Args:
        policy: The trained policy.
        env_id: The env to roll out in (``P4G-hard``, ...).
        learner: The seat it plays (``system`` or ``user``).
        opponent: A frozen LM policy for the other seat (self-play); ``None``: the env's own
            simulated user (or, for a ``user`` learner, ``env_kwargs["system_policy"]``).
        group_size: Rollouts per episode seed.
        groups: Episode seeds per iteration.
        seed: Run seed (episode seeds, sampling, minibatch order).
        env_kwargs: ``make`` overrides (``encoder``, ``max_exchanges``, ``student``, ...).
        learning_rate: AdamW learning rate on the adapter.
        epochs: GRPO epochs per iteration.
        minibatch_size: Steps per gradient step.
        clip: Ratio clip ε.
        beta: KL coefficient β.
        gamma: Return discount γ.
        max_grad_norm: Gradient-norm clip (``None``/0: off).
        max_prompt_tokens: Prompt budget of the seats (oldest turns dropped).
        context_turns: Most recent turns in the prompts (``None``: all that fit).
        on_update: Called with the policy before the first rollout and after every update
            (e.g. :class:`~dialogue_gym_agents.common.lm.policy.VLLMAdapterSync`).

    Raises:
        ValueError: Bad sizes, an unknown seat, or a ``user`` learner with nothing to play the
            system seat.
    """

    def __init__(
        self,
        policy: LMPolicy,
        env_id: str,
        *,
        learner: str = "system",
        opponent: LMPolicy | None = None,
        group_size: int = 2,
        groups: int = 1,
        seed: int = 0,
        env_kwargs: Mapping[str, Any] | None = None,
        learning_rate: float = 1e-5,
        epochs: int = 1,
        minibatch_size: int = 8,
        clip: float = 0.2,
        beta: float = 0.04,
        gamma: float = DEFAULT_GAMMA,
        max_grad_norm: float | None = 1.0,
        max_prompt_tokens: int | None = None,
        context_turns: int | None = None,
        on_update: Callable[[LMPolicy], Any] | None = None,
    ) -> None:
        if learner not in SEATS:
            raise ValueError(f"learner must be one of {SEATS}, got {learner!r}")
        for name, value in (
            ("group_size", group_size),
            ("groups", groups),
            ("epochs", epochs),
            ("minibatch_size", minibatch_size),
        ):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        kwargs = dict(env_kwargs or {})
        if learner == "user" and opponent is None and "system_policy" not in kwargs:
            raise ValueError(
                "a user learner needs an opponent LM policy or env_kwargs['system_policy']"
            )
        if isinstance(kwargs.get("encoder", "minilm"), str):  # one encoder for every env
            kwargs["encoder"] = make_encoder(kwargs.get("encoder", "minilm"))
        other = "user" if learner == "system" else "system"
        kwargs["external"] = (learner,) if opponent is None else ("system", "user")
        self.envs = [dialogue_gym.make(env_id, **kwargs) for _ in range(group_size * groups)]
        card = self.envs[0].card
        self.policy = policy
        self.policies = (
            {learner: policy} if opponent is None else {learner: policy, other: opponent}
        )
        self.seats = {
            seat: LMSeat(card, seat, p.tokenizer, max_prompt_tokens, context_turns)
            for seat, p in self.policies.items()
        }
        self.learner = learner
        self.group_size, self.groups, self.seed = group_size, groups, seed
        self.epochs, self.minibatch_size = epochs, minibatch_size
        self.clip, self.beta, self.gamma = clip, beta, gamma
        self.max_grad_norm = max_grad_norm
        self.optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=learning_rate)
        self.on_update = on_update
        self.iteration = 0
        self._synced = -1
        self.sample_generator = torch.Generator().manual_seed(derive_seed(seed, learner, "sample"))
        self.order_generator = torch.Generator().manual_seed(derive_seed(seed, learner, "order"))

    def episode_seeds(self, iteration: int) -> list[int]:
        """The episode seed of each env at ``iteration`` (groups of ``group_size`` equal seeds)."""
        return [
            derive_seed(self.seed, "episode", iteration, g)
            for g in range(self.groups)
            for _ in range(self.group_size)
        ]

    def step(self) -> dict[str, float]:
        """One iteration: rollouts, returns and advantages, GRPO update. Returns its stats."""
        if self.on_update is not None and self._synced != self.iteration:
            self.on_update(self.policy)  # the server samples from the current adapter
            self._synced = self.iteration
        start = time.perf_counter()
        seeds = self.episode_seeds(self.iteration)
        group_keys = [
            (self.iteration, g) for g in range(self.groups) for _ in range(self.group_size)
        ]
        batch = rollout(
            self.envs,
            seeds,
            group_keys,
            self.learner,
            self.policies,
            self.seats,
            self.sample_generator,
            self.gamma,
        )
        rollout_s = time.perf_counter() - start
        start = time.perf_counter()
        losses = grpo_update(
            self.policy,
            self.optimizer,
            batch,
            epochs=self.epochs,
            minibatch_size=self.minibatch_size,
            clip=self.clip,
            beta=self.beta,
            generator=self.order_generator,
            max_grad_norm=self.max_grad_norm,
        )
        self.iteration += 1
        if self.on_update is not None:
            self.on_update(self.policy)
            self._synced = self.iteration
        return {
            **batch.stats(),
            **losses,
            "rollout_s": rollout_s,
            "update_s": time.perf_counter() - start,
        }

    def run(
        self, steps: int, log: RunLogger | None = None, progress: bool = False
    ) -> list[dict[str, float]]:
        """``steps`` iterations; each one's stats go to ``log`` under ``lm-grpo/<learner>/``."""
        history = []
        bar = progress_bar(steps, f"lm-grpo {self.learner}", progress, unit="iter")
        for _ in range(steps):
            stats = self.step()
            history.append(stats)
            if log is not None:
                log.log_dict(stats, self.iteration, prefix=f"lm-grpo/{self.learner}/")
            bar.update(1)
            bar.set_postfix(sr=f"{stats['sr']:.2f}", loss=f"{stats['loss']:.3f}")
        bar.close()
        return history


# -- the trainer ---------------------------------------------------------------------------------


def train_lm_grpo(config: LMGRPOConfig) -> Path:
    """Trains LoRA LM policies with GRPO and writes an ``lm-grpo`` checkpoint.

    Raises:
        ValueError: Bad options or an existing checkpoint without ``--overwrite``.
        CheckpointError: An unusable ``--init`` / ``--user-init``.
        ModelNotFoundError: A base model path that does not exist.
    """
    from dialogue_gym.backends import make_backend
    from dialogue_gym_agents.common.lm.policy import VLLMAdapterSync
    from dialogue_gym_agents.common.lm.prompts import PROMPT_VERSION

    card = load_card(config.task)
    env_id = f"{card.id}-{config.user}"
    dialogue_gym.spec(env_id)  # an unknown preset fails here, with the registered ids
    inits = {"system": config.init, **({"user": config.user_init} if config.user_init else {})}
    check_policy_sources(card, inits, config.model, config.device)
    writer = CheckpointWriter(config.out, overwrite=config.overwrite)
    common = {
        "lora_r": config.lora_r,
        "lora_alpha": config.lora_alpha,
        "seed": config.seed,
        "device": config.device,
        "dtype": config.dtype,
        "card": card,
        "max_new_tokens": config.max_new_tokens,
        "reference": config.reference,
        "batch_size": config.batch_size,
    }
    specs = {"system": config.rollout_backend, "user": config.user_rollout_backend}
    in_flight = config.group_size * config.groups  # one request per env at a time
    backends = {
        seat: make_backend(spec, base_url=config.base_url, max_concurrency=in_flight)
        if spec
        else None
        for seat, spec in specs.items()
    }
    system, system_info = build_policy(
        seat="system",
        init=config.init,
        model=config.model,
        temperature=config.temperature,
        backend=backends["system"],
        **common,
    )
    user = user_info = None
    if config.user_init:
        user, user_info = build_policy(
            seat="user",
            init=config.user_init,
            model=config.model,
            temperature=config.user_temperature,
            backend=backends["user"],
            **common,
        )
    env_kwargs: dict[str, Any] = {"encoder": config.encoder}
    if config.max_exchanges is not None:
        env_kwargs["max_exchanges"] = config.max_exchanges
    prompt_budget = config.max_length - config.max_new_tokens
    settings = {
        "group_size": config.group_size,
        "groups": config.groups,
        "seed": config.seed,
        "env_kwargs": env_kwargs,
        "learning_rate": config.learning_rate,
        "epochs": config.epochs,
        "minibatch_size": config.minibatch_size,
        "clip": config.clip,
        "beta": config.beta,
        "gamma": config.gamma,
        "max_grad_norm": config.max_grad_norm,
        "max_prompt_tokens": prompt_budget,
    }
    history: list[dict[str, Any]] = []
    with writer, RunLogger(writer.path, tensorboard=config.tensorboard) as log:

        def sync(seat: str) -> Callable[[LMPolicy], Any] | None:
            spec = specs[seat]
            if spec is None or not config.sync_adapter:
                return None
            assert config.base_url is not None  # checked by the config
            return VLLMAdapterSync(config.base_url, spec.split(":", 1)[1], writer.path / SERVED_DIR)

        trainers = {
            "system": LMGRPO(
                system,
                env_id,
                learner="system",
                opponent=user,
                on_update=sync("system"),
                **settings,
            )
        }
        if config.alternate and user is not None:
            trainers["user"] = LMGRPO(
                user, env_id, learner="user", opponent=system, on_update=sync("user"), **settings
            )
        bar = progress_bar(config.iterations, "lm-grpo", config.progress, unit="iter")
        for k in range(1, config.iterations + 1):
            row: dict[str, Any] = {"iteration": k}
            for seat, trainer in trainers.items():  # system first, then the user against it
                stats = trainer.step()
                log.log_dict(stats, k, prefix=f"lm-grpo/{seat}/")
                row[seat] = stats
            history.append(row)
            bar.update(1)
            bar.set_postfix(sr=f"{row['system']['sr']:.2f}")
        bar.close()
        shutil.rmtree(writer.path / SERVED_DIR, ignore_errors=True)  # adapters pushed to vLLM
        files: list[str] = []
        policies = {"system": system} if user is None else {"system": system, "user": user}
        for seat, policy in policies.items():
            files += [f"{seat}/{name}" for name in policy.save(writer.path / seat)]
        log.close()
        return writer.commit(
            KIND,
            card,
            config_to_dict(config),
            files,
            info={
                "env": env_id,
                "policies": sorted(policies),
                "trained": sorted(trainers),
                "system_policy": system_info,
                "user_policy": user_info,
                "iterations": config.iterations,
                "history": history,
                "prompt_version": PROMPT_VERSION,
                "max_exchanges": config.max_exchanges or card.max_exchanges,
            },
            extra_versions=("transformers", "peft"),
        )


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``dialogue-gym train lm-grpo OPTIONS`` (``--help`` lists them)."""
    return run_trainer(LMGRPOConfig, train_lm_grpo, argv, prog=prog or "dialogue-gym train lm-grpo")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
