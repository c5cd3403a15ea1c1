"""GRPO for LoRA causal-LM policies on an env seat, and ``dialogue-gym train lm-grpo``.

:class:`LMGRPO` runs GRPO iterations of one :class:`~dialogue_gym_agents.lm.policy.LMPolicy`
on one seat of a dialogue env (MASP Appendix B.4), standalone — without mentalizers; the full
MASP algorithm with LM policies is ``dialogue-gym train masp --policy lm``. Both play their
rollouts with :func:`~dialogue_gym_agents.training.selfplay.play` and update with
:func:`~dialogue_gym_agents.training.selfplay.grpo_update`. Each iteration:

1. **Rollouts in groups.** ``groups`` episode seeds, each played ``group_size`` times (same
   persona, same simulator randomness; the policy's samples differ). The other seat is the
   env's own simulated user (``external=("system",)``) or, in self-play, a frozen ``opponent``
   ``LMPolicy`` (``external=("system", "user")``). The learner's prompts carry the B.5
   control block: the rendered student estimate (system; present when the env has a
   ``student``) or its current BDI state and profile (user).
2. **Returns and advantages.** The learner's reward per exchange (``r_S`` or ``r_U``, paid by
   the env when the exchange completes; stop-gradient by construction), discounted returns
   ``G_t`` with γ = 0.97 within each episode
   (:func:`~dialogue_gym_agents.training.rl.discounted_returns`), and group-normalized
   advantages (:func:`~dialogue_gym_agents.training.rl.group_advantages`) where a step's group
   is its episode seed and turn index — each return is compared with the other rollouts'
   returns at the same turn of the same episode.
3. **Update.** ``epochs`` passes of minibatches over the steps with the shared objective
   :func:`~dialogue_gym_agents.training.grpo.grpo_loss` on token-level inputs (``mask=``):
   clipped ratio of current to sampling-time ("old") token log-probs and the token-level k3 KL
   to the reference policy (the frozen SFT adapter by default), AdamW on the adapter only.

``dialogue-gym train lm-grpo`` wraps it: system policy from an ``sft-lora`` checkpoint
(``--init``), optionally an LM user from a user-seat ``sft-lora`` checkpoint (``--user-init``,
self-play) updated in turn with ``--alternate`` (system update with the user frozen, then user
update against the updated system, as in Algorithm 1, without the student refresh). Rollouts
are generated locally with transformers, or on an OpenAI-compatible server (vLLM) serving the
current adapter (``--rollout-backend openai:NAME --base-url URL``; the adapter is pushed to the
server after every update, :class:`~dialogue_gym_agents.lm.policy.VLLMAdapterSync`).
Log-probs are always computed here, on the trained weights.

Randomness: episode seeds are derived from the run seed; sampling seeds and minibatch orders
come from the run's own torch generators.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

import dialogue_gym
from dialogue_gym.cards import load_card
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym_agents.lm.policy import LMPolicy, LMSeat
from dialogue_gym_agents.training.checkpoint import (
    CheckpointMismatchError,
    CheckpointWriter,
    load_checkpoint,
)
from dialogue_gym_agents.training.cli import run_trainer
from dialogue_gym_agents.training.config import TrainConfig, config_to_dict, option
from dialogue_gym_agents.training.rl import (
    DEFAULT_GAMMA,
)
from dialogue_gym_agents.training.seeding import derive_seed
from dialogue_gym_agents.training.selfplay import Rollout, grpo_update, play
from dialogue_gym_agents.training.tracking import RunLogger, progress_bar

__all__ = [
    "KIND",
    "LMGRPO",
    "LMGRPOConfig",
    "LMRollout",
    "build_policy",
    "check_policy_sources",
    "grpo_update",
    "main",
    "rollout",
    "train_lm_grpo",
]

KIND = "lm-grpo"
"""The checkpoint kind and agent name."""

SERVED_DIR = "served"
"""Scratch folder (in the staging folder, removed before commit) of adapters pushed to vLLM."""

SEATS = ("system", "user")


class LMRollout(Rollout):
    """A :class:`~dialogue_gym_agents.training.selfplay.Rollout` of LM replies.

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
            (e.g. :class:`~dialogue_gym_agents.lm.policy.VLLMAdapterSync`).

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


@dataclasses.dataclass
class LMGRPOConfig(TrainConfig):
    """lm-grpo: GRPO of LoRA causal-LM policies on the env (system; optionally the user too)."""

    user: str = option("hard", "user preset of the env: hard or soft (the env is TASK-USER)")
    init: str | None = option(
        None,
        "sft-lora checkpoint of the system seat: warm start and KL reference (default: a "
        "fresh adapter on --model)",
    )
    user_init: str | None = option(
        None,
        "sft-lora checkpoint of the user seat: an LM plays the user (self-play) instead of "
        "the env's simulated user",
    )
    alternate: bool = option(
        False, "also update the LM user each iteration, after the system (needs --user-init)"
    )
    model: str = option("smollm2", "base model of a fresh adapter (without --init)")
    iterations: int = option(10, "outer iterations K (rollouts + one GRPO update per seat)")
    group_size: int = option(4, "rollouts per episode seed (one GRPO group)")
    groups: int = option(2, "episode seeds per iteration")
    max_exchanges: int | None = option(None, "exchange budget T of the env (default: the card's)")
    epochs: int = option(1, "GRPO epochs over each iteration's rollouts")
    minibatch_size: int = option(8, "rollout steps per gradient step")
    learning_rate: float = option(1e-5, "AdamW learning rate on the adapter")
    clip: float = option(0.2, "ratio clip epsilon")
    beta: float = option(0.04, "KL coefficient to the reference policy")
    gamma: float = option(DEFAULT_GAMMA, "return discount")
    max_grad_norm: float = option(1.0, "gradient-norm clip (0: off)")
    reference: Literal["copy", "base"] = option(
        "copy",
        "KL reference: copy (frozen copy of the warm-start adapter) or base (adapter disabled: "
        "the base model, = the SFT policy when it was merged into the base)",
    )
    temperature: float = option(0.75, "rollout sampling temperature of the system policy")
    user_temperature: float = option(
        0.9, "rollout temperature of the LM user (the paper's user-simulator temperature)"
    )
    eval_temperature: float = option(
        0.3, "temperature of the trained agent at evaluation (the paper's MASP decoding)"
    )
    max_new_tokens: int = option(64, "longest reply, in tokens")
    max_length: int = option(512, "prompt + reply tokens (the oldest turns are dropped to fit)")
    lora_r: int = option(16, "rank of a fresh adapter (without --init)")
    lora_alpha: float = option(32.0, "alpha of a fresh adapter")
    rollout_backend: str | None = option(
        None,
        "openai:NAME: sample the system's rollouts on an OpenAI-compatible server (vLLM) that "
        "serves the current adapter as NAME (default: local transformers)",
    )
    user_rollout_backend: str | None = option(
        None, "openai:NAME for the LM user's rollouts (default: local transformers)"
    )
    base_url: str | None = option(None, "URL of the rollout server (http://127.0.0.1:8000/v1)")
    sync_adapter: bool = option(
        True, "with --rollout-backend: push each update's adapter to the vLLM server"
    )
    device: str = option("auto", "torch device: auto, cpu, cuda, cuda:1")
    dtype: Literal["float32", "bfloat16", "float16"] = option(
        "float32", "weight dtype (bfloat16 on GPUs)"
    )
    batch_size: int = option(8, "rows per local generate call")

    def __post_init__(self) -> None:
        for flag, value in (
            ("--iterations", self.iterations),
            ("--group-size", self.group_size),
            ("--groups", self.groups),
            ("--epochs", self.epochs),
            ("--minibatch-size", self.minibatch_size),
            ("--max-new-tokens", self.max_new_tokens),
            ("--lora-r", self.lora_r),
            ("--batch-size", self.batch_size),
        ):
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
        if self.group_size < 2:
            raise ValueError("--group-size must be >= 2 (a group of one has no relative advantage)")
        if self.max_length <= self.max_new_tokens + 16:
            raise ValueError("--max-length must leave room for a prompt (> --max-new-tokens + 16)")
        for flag, value in (
            ("--temperature", self.temperature),
            ("--user-temperature", self.user_temperature),
            ("--eval-temperature", self.eval_temperature),
            ("--beta", self.beta),
            ("--max-grad-norm", self.max_grad_norm),
        ):
            if value < 0:
                raise ValueError(f"{flag} must be >= 0, got {value}")
        if self.clip <= 0 or self.learning_rate <= 0:
            raise ValueError("--clip and --learning-rate must be > 0")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"--gamma must be in [0, 1], got {self.gamma}")
        if self.alternate and not self.user_init:
            raise ValueError("--alternate needs --user-init (an LM user to update)")
        for flag, spec in (
            ("--rollout-backend", self.rollout_backend),
            ("--user-rollout-backend", self.user_rollout_backend),
        ):
            if spec is not None:
                if not spec.startswith("openai:") or len(spec) <= len("openai:"):
                    raise ValueError(f"{flag} must be openai:NAME, got {spec!r}")
                if not self.base_url:
                    raise ValueError(f"{flag} needs --base-url (the server's URL)")


def _sft_checkpoint(init: str | Path, seat: str, card: Any) -> Any:
    """The ``sft-lora`` checkpoint ``init``, verified, of ``seat``.

    Raises:
        CheckpointError: Missing, corrupt, of another kind/task, or of the other seat.
    """
    from dialogue_gym_agents.lm.sft_lora import KIND as SFT_KIND

    ckpt = load_checkpoint(init, kind=SFT_KIND, card=card, check_strategies=False)
    trained_seat = str(ckpt.config.get("seat", "system"))
    if trained_seat != seat:
        raise CheckpointMismatchError(
            f"{ckpt.path} clones the {trained_seat} seat, not the {seat} seat"
        )
    return ckpt


def check_policy_sources(
    card: Any, inits: Mapping[str, str | Path | None], model: str, device: str
) -> None:
    """Fails before any work for what :func:`build_policy` would load for these seats.

    Args:
        card: The task card.
        inits: Per seat, its ``sft-lora`` checkpoint, or ``None`` for a fresh adapter on
            ``model``.
        model: The base model of fresh adapters.
        device: The torch device.

    Raises:
        CheckpointError: An unusable checkpoint (missing, corrupt, another kind, task or seat).
        ModelNotFoundError: The base model path does not exist.
        ValueError: An unusable device.
    """
    from dialogue_gym_agents.lm import model as lm

    for seat, init in inits.items():
        if init is None:
            lm.check_model(model)
        else:
            _sft_checkpoint(init, seat, card)
    lm.resolve_device(device)


def build_policy(
    *,
    seat: str,
    init: str | Path | None,
    model: str,
    lora_r: int,
    lora_alpha: float,
    seed: int,
    device: str,
    dtype: str,
    card: Any,
    temperature: float,
    max_new_tokens: int,
    reference: Literal["copy", "base"] = "copy",
    backend: Any = None,
    batch_size: int = 8,
) -> tuple[LMPolicy, dict[str, Any]]:
    """An LM policy for ``seat``: from an ``sft-lora`` checkpoint, or a fresh adapter.

    Returns:
        The policy and what it was built from (for the manifest).

    Raises:
        CheckpointError: ``init`` is missing, corrupt, of another kind/task, or of the other
            seat.
        ModelNotFoundError: The base model path does not exist.
    """
    from dialogue_gym_agents.lm import model as lm
    from dialogue_gym_agents.lm.agent import load_adapter_model
    from dialogue_gym_agents.lm.sft_lora import ADAPTER_DIR

    if init is not None:
        ckpt = _sft_checkpoint(init, seat, card)
        peft_model, tokenizer, info = load_adapter_model(
            ckpt, ADAPTER_DIR, device, trainable=True, dtype=dtype
        )
        source = {"init": str(ckpt.path), "content_hash": ckpt.manifest["content_hash"]}
        base_spec = str(ckpt.config["model"])
    else:
        base, tokenizer, info = lm.load_base(model, device=device, dtype=dtype)
        settings = lm.LoraSettings(r=lora_r, alpha=lora_alpha, dropout=0.0)
        peft_model = lm.attach_lora(base, settings, derive_seed(seed, seat))
        source = {"init": None}
        base_spec = model
    policy = LMPolicy(
        peft_model,
        tokenizer,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        reference=reference,
        backend=backend,
        batch_size=batch_size,
        name=f"lm-grpo-{seat}",
    )
    return policy, {**source, "model": base_spec, "base_model": info}


def train_lm_grpo(config: LMGRPOConfig) -> Path:
    """Trains LoRA LM policies with GRPO and writes an ``lm-grpo`` checkpoint.

    Raises:
        ValueError: Bad options or an existing checkpoint without ``--overwrite``.
        CheckpointError: An unusable ``--init`` / ``--user-init``.
        ModelNotFoundError: A base model path that does not exist.
    """
    from dialogue_gym.backends import make_backend
    from dialogue_gym_agents.lm.policy import VLLMAdapterSync
    from dialogue_gym_agents.lm.prompts import PROMPT_VERSION

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
