"""``dialogue-gym train siavpo``: SI-AVPO (AOPD + STPR), its ablations, strategy-level or LM.

One run trains a :class:`~dialogue_gym_agents.siavpo.policy.ViewPolicy` against a
:class:`~dialogue_gym.users.CognitiveUser` (any card with ``user_model = "cognitive"``: Merchant,
Courier, P4G, ...): ``--policy strategy`` (default) a
:class:`~dialogue_gym_agents.siavpo.policy.StrategyViewPolicy` over the card's strategies,
``--policy lm`` a :class:`~dialogue_gym_agents.siavpo.lm_policy.LMViewPolicy` (a LoRA causal LM
that writes the replies; student view = the system seat's chat prompt, teacher view = the same
plus a rendered P_int block). Each iteration has three phases (each logged to ``scalars.csv``
and TensorBoard):

1. **Rollouts** (:func:`play_group`). ``--seeds-per-iteration`` groups; a group plays
   ``--group-size`` rollouts of one episode seed in lockstep, on envs built with
   ``privileged=True`` (the privileged record reaches only the teacher view's input, never the
   student's). With AOPD the first ``round(teacher_fraction · G)`` rollouts of every group act
   under the teacher view and the rest under the student view (the student's own rollouts);
   without AOPD all act under the student view. Every rollout counts towards the budget
   ``iterations × seeds_per_iteration × group_size`` episodes, whatever its view.
2. **Advantages** (:mod:`~dialogue_gym_agents.siavpo.losses`). The outcome d (the
   user accepted) normalized within the group of the same seed and view gives A_i; STPR
   scales each turn's credit by whether its Δw (``infos["system"]["privileged"]["delta_w"]``)
   agrees with the outcome: ``A_i,k = A_i · c_i,k``.
3. **Update** (:func:`siavpo_update`). ``--update-epochs`` full-batch Adam steps (an LM
   accumulates the gradients over chunks of ``--batch-size`` steps: the same loss) on::

       L = L_AOPD + λ_st · L_STPR − ent_coef · H

   L_STPR is the shared clipped :func:`~dialogue_gym_agents.common.grpo.grpo_loss` on the
   turn advantages (each step under the view that played it; ``--stpr-views both`` scores
   every step under both views); L_AOPD the mean over the student-rollout steps of the KL
   between the student view and the teacher view of θ_old (the parameters that played the
   rollouts, held fixed during the update), KL(sg π_T ‖ π_S) by default
   (``--aopd-direction``); H the mean entropy. L_AOPD is switched on after the first
   ``aopd_warmup · iterations`` iterations.

Why teacher-view rollouts and a warm-up: an LM prompted with P_int is a capable teacher from
the start (the paper's pilot study), but a freshly initialized network is not — its teacher
view learns to use P_int only from rollouts in which it acts, under L_STPR; AOPD then distils
it into the student view on the student's own rollouts. ``--teacher-fraction 0`` leaves the
teacher view to the shared weights alone: the LM setting, where it is the default together with
``--aopd-warmup 0`` (the paper's SI-AVPO: student rollouts only, AOPD from the first update).

**The LM policy** (``--policy lm``; :mod:`dialogue_gym_agents.siavpo.lm_policy`). A fresh LoRA
adapter on ``--model`` (``smollm2`` by default, or a local HF model folder; never downloaded)
or the adapter of an ``sft-lora`` system checkpoint (``--init``) as the warm start. An action
is a sampled reply (``--temperature``, ``--max-new-tokens``), its log-prob the sum of its
token log-probs (response-level ratios in L_STPR); L_AOPD is the token-level KL over the
vocabulary between the student prompt's and the teacher prompt's next-token distributions
along the reply, averaged over its tokens, the teacher side under θ_old (a snapshot of the
adapter swapped in for a no-grad pass); H the mean per-token entropy along the reply.
``--max-length`` bounds the student prompt plus the reply (the oldest turns are dropped).
There is no KL to a reference policy. The checkpoint holds the adapter (``adapter/``, peft's
format, vLLM-loadable) and records ``info["policy"] = "lm"``; ``--agent siavpo:DIR`` then
samples the student view at ``--eval-temperature`` (0.3). The strategy-level options
(``--hidden-sizes``, ``--deterministic``) do not apply, nor the LM ones to the strategy
policy. Per-policy defaults: learning rate 3e-3 (strategy) / 1e-5 (lm), teacher fraction 0.5 /
0, warm-up 0.25 / 0, torch threads 1 / torch's own.

Methods by flags (same budget): ``siavpo`` (default), ``--no-aopd`` (w/o AOPD: student
rollouts, STPR only), ``--no-turn-credit`` (w/o STPR: AOPD plus outcome-only advantages) and
``--no-aopd --no-turn-credit`` (the GRPO baseline: outcome-reward GRPO, groups = rollouts of
the same episode seed). The checkpoint (kind ``siavpo``) holds ``policy.pt`` (strategy) or
``adapter/`` (lm) and the manifest; ``--agent siavpo:DIR`` plays its student view.

Defaults (``λ_st = 4``, forward KL, learning rate 3e-3, warm-up 0.25, half of each group
under the teacher view) come from short runs on Merchant-hard and Courier-hard with the
hashing encoder; ``benchmarks/siavpo_claim.py`` reports what they give.

Example::

    dialogue-gym train siavpo --task Merchant --encoder hashing --iterations 60 --out runs/sv
    dialogue-gym eval Merchant-hard --agent siavpo:runs/sv --encoder hashing
    dialogue-gym train siavpo --task Merchant --policy lm --model smollm2 --device cuda \
        --dtype bfloat16 --iterations 20 --group-size 4 --out runs/sv-lm
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.common.checkpoint import CheckpointWriter
from dialogue_gym_agents.common.cli import run_trainer
from dialogue_gym_agents.common.config import config_to_dict
from dialogue_gym_agents.common.grpo import grpo_loss
from dialogue_gym_agents.common.rl import episode_outcomes
from dialogue_gym_agents.common.seeding import (
    RunGenerators,
    derive_seed,
    generators,
    torch_threads,
)
from dialogue_gym_agents.common.tracking import RunLogger, progress_bar
from dialogue_gym_agents.siavpo.config import SiavpoConfig
from dialogue_gym_agents.siavpo.losses import outcome_advantages, stpr_advantages
from dialogue_gym_agents.siavpo.policy import (
    KIND,
    POLICY_FILE,
    STUDENT,
    TEACHER,
    StrategyViewPolicy,
    View,
    ViewPolicy,
)
from dialogue_gym_agents.siavpo.users import user_preset

__all__ = [
    "Rollout",
    "main",
    "make_envs",
    "play_group",
    "rollout_stats",
    "run_siavpo",
    "siavpo_update",
    "torch_threads",
    "train_siavpo",
    "turn_advantages",
]


# -- phase 1: rollouts -----------------------------------------------------------------------------


@dataclasses.dataclass
class Rollout:
    """One episode played by the policy under one view.

    Attributes:
        seed: The episode seed (the group key together with the view).
        view: The view that chose the actions.
        inputs: Step inputs (both views' inputs) per turn.
        actions: The actions taken.
        logp: Their log-probs under ``view`` when sampled.
        delta_w: The willingness shift Δw of each turn (0 where the env reports none).
        events: The user's events of each turn.
        record: The env's episode record.
    """

    seed: int
    view: View
    inputs: list[Any] = dataclasses.field(default_factory=list)
    actions: list[Any] = dataclasses.field(default_factory=list)
    logp: list[float] = dataclasses.field(default_factory=list)
    delta_w: list[float] = dataclasses.field(default_factory=list)
    events: list[list[str]] = dataclasses.field(default_factory=list)
    record: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """The binary outcome d: the user accepted (the success judge fired)."""
        return bool(self.record.get("success"))


def make_envs(
    card: TaskCard, user: str, n: int, encoder: Encoder, max_exchanges: int | None = None
) -> list[DialogueEnv]:
    """``n`` privileged envs of ``card`` against the user preset ``user``, sharing ``encoder``.

    Raises:
        ValueError: The card's user is not a ``CognitiveUser``, or an unknown preset.
    """
    if card.user_model != "cognitive":
        raise ValueError(
            f"SI-AVPO needs a task whose user is a CognitiveUser (latent concerns and a "
            f"willingness); {card.id!r} has user model {card.user_model!r}"
        )
    preset = user_preset(card, user)
    return [
        DialogueEnv.from_options(
            card,
            user=preset,
            encoder=encoder,
            privileged=True,
            max_exchanges=max_exchanges,
            env_id=f"{card.id}-{user}-siavpo",
        )
        for _ in range(n)
    ]


def play_group(
    envs: Sequence[DialogueEnv],
    policy: ViewPolicy,
    seed: int,
    views: Sequence[View],
    generator: torch.Generator,
    realizer_seeds: Sequence[int],
) -> list[Rollout]:
    """Plays one rollout per env of episode ``seed`` in lockstep, rollout i under ``views[i]``.

    Each turn, the active rollouts of each view are sampled in one batch.
    """
    episodes = [policy.new_episode(s) for s in realizer_seeds]
    rollouts = [Rollout(seed=seed, view=view) for view in views]
    last = [env.reset(seed=seed) for env in envs]
    active = list(range(len(envs)))
    while active:
        for view in (TEACHER, STUDENT):
            members = [i for i in active if views[i] == view]
            if not members:
                continue
            inputs = [
                episodes[i].encode(last[i][0]["system"], last[i][1]["system"].get("privileged"))
                for i in members
            ]
            actions, logp = policy.sample(inputs, view, generator)
            for i, step_input, action, lp in zip(members, inputs, actions, logp, strict=True):
                observations, _, terminated, truncated, infos = envs[i].step(
                    {"system": episodes[i].act(action)}
                )
                info = infos["system"]
                rollout = rollouts[i]
                rollout.inputs.append(step_input)
                rollout.actions.append(action)
                rollout.logp.append(float(lp))
                rollout.delta_w.append(float(info.get("privileged", {}).get("delta_w") or 0.0))
                # The concern events (proactive:<id>, ...) are privileged: the envs are built
                # with privileged=True for the teacher view, so they are there.
                events = info.get("privileged", {}).get("user_events", info.get("user_events", ()))
                rollout.events.append(list(events))
                last[i] = (observations, infos)
                if terminated["system"] or truncated["system"]:
                    rollout.record = dict(info["episode"])
        active = [i for i in active if not rollouts[i].record]
    return rollouts


def rollout_stats(rollouts: Sequence[Rollout], T: int) -> dict[str, float]:
    """Acc (SR@T), RCSR, CSR, proactivity, proactive turns and asks/pressure per episode."""
    if not rollouts:
        return {}
    records = [r.record for r in rollouts]
    outcome = episode_outcomes(records, T)

    def per_episode(prefix: str) -> float:
        return float(np.mean([sum(e == prefix for ev in r.events for e in ev) for r in rollouts]))

    return {
        "acc": outcome["sr"],
        "rcsr": outcome["rcsr"],
        "turns": outcome["turns"],
        "csr": float(np.mean([r.get("csr", 0.0) for r in records])),
        "proactivity": float(np.mean([r.get("proactivity", 0.0) for r in records])),
        "proactive_turns": float(np.mean([r.get("proactive_turns", 0) for r in records])),
        "asks": per_episode("ask"),
        "pressure": per_episode("pressure"),
    }


# -- phase 2: advantages ---------------------------------------------------------------------------


def turn_advantages(rollouts: Sequence[Rollout], config: SiavpoConfig) -> list[np.ndarray]:
    """Per rollout, the turn advantages A_i,k (STPR) or A_i on every turn (no turn credit)."""
    trajectory = outcome_advantages(
        [r.accepted for r in rollouts], [(r.seed, r.view) for r in rollouts]
    )
    out = []
    for rollout, advantage in zip(rollouts, trajectory, strict=True):
        if config.turn_credit:
            out.append(
                stpr_advantages(
                    advantage,
                    rollout.accepted,
                    rollout.delta_w,
                    config.credit_reinforce,
                    config.credit_suppress,
                    config.credit_deadzone,
                )
            )
        else:
            out.append(np.full(len(rollout.actions), float(advantage)))
    return out


# -- phase 3: update -------------------------------------------------------------------------------


def _spans(n: int, chunk: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` row ranges of at most ``chunk`` rows covering ``n`` (one: all)."""
    if chunk is None or chunk >= n:
        return [(0, n)] if n else []
    return [(lo, min(lo + chunk, n)) for lo in range(0, n, chunk)]


def _rows(targets: Any, lo: int, hi: int) -> Any:
    """A chunk's share of the teacher targets.

    Per-row tensors are sliced; row-independent targets (an LM's parameter snapshot) are
    passed whole.
    """
    return targets[lo:hi] if isinstance(targets, torch.Tensor) else targets


def siavpo_update(
    policy: ViewPolicy,
    optimizer: torch.optim.Optimizer,
    rollouts: Sequence[Rollout],
    advantages: Sequence[np.ndarray],
    config: SiavpoConfig,
    distill: bool = True,
) -> dict[str, float]:
    """``update_epochs`` gradient steps on ``L = L_AOPD + λ_st·L_STPR − ent_coef·H``.

    The AOPD targets are the teacher view's distributions at the student-rollout states taken
    before the first step (the parameters that played the rollouts, θ_old), held fixed during
    the update as PPO holds π_old: a target that moved with every step would let the student
    chase its own shared weights.

    Each step is one full-batch step. With ``config.update_chunk`` (the LM policy's
    ``--batch-size``) the batch is processed in chunks of that many rows whose gradients are
    accumulated before the optimizer step: every term of ``L`` is a mean over rows, so chunk
    ``c`` of a term over ``n`` rows contributes its own mean weighted by ``n_c / n`` and the
    accumulated gradient is that of the full-batch loss.

    Args:
        policy: The policy.
        optimizer: Its optimizer.
        rollouts: This iteration's rollouts.
        advantages: Their turn advantages (:func:`turn_advantages`).
        config: The run's config.
        distill: Apply L_AOPD (with ``config.aopd``; off during the warm-up).

    Returns:
        The last step's loss parts: ``loss``, ``stpr``, ``aopd``, ``entropy``,
        ``clip_fraction``.
    """
    chunk = config.update_chunk
    batches: dict[View, dict[str, list[Any]]] = {}
    for rollout, adv in zip(rollouts, advantages, strict=True):
        batch = batches.setdefault(
            rollout.view, {"inputs": [], "actions": [], "old": [], "adv": []}
        )
        batch["inputs"] += rollout.inputs
        batch["actions"] += rollout.actions
        batch["old"] += rollout.logp
        batch["adv"] += list(adv)
    # STPR terms: (view scored, batch, log-probs of its actions under that view at θ_old).
    terms: list[tuple[View, dict[str, list[Any]], torch.Tensor]] = []
    for played, batch in batches.items():
        scored = (TEACHER, STUDENT) if config.aopd and config.stpr_views == "both" else (played,)
        for view in scored:
            if view == played:
                old = torch.as_tensor(batch["old"], dtype=torch.float32)
            else:
                with torch.no_grad():
                    old = torch.cat(
                        [
                            policy.log_probs(batch["inputs"][lo:hi], batch["actions"][lo:hi], view)
                            .detach()
                            .cpu()
                            for lo, hi in _spans(len(batch["actions"]), chunk)
                        ]
                    )
            terms.append((view, batch, old))
    total = sum(len(batch["actions"]) for _, batch, _ in terms)
    student = batches.get(STUDENT) if config.aopd and distill else None
    targets = None
    if student is not None:
        targets = policy.teacher_targets(student["inputs"], student["actions"])
    parameters = list(policy.parameters())
    stats: dict[str, float] = {}
    for _ in range(config.update_epochs):
        optimizer.zero_grad()
        stpr = entropy = aopd = clipped = 0.0
        for view, batch, old in terms:
            n = len(batch["actions"])
            adv = torch.as_tensor(batch["adv"], dtype=torch.float32)
            for lo, hi in _spans(n, chunk):
                inputs, actions = batch["inputs"][lo:hi], batch["actions"][lo:hi]
                logp = policy.log_probs(inputs, actions, view)
                part = grpo_loss(logp.cpu(), old[lo:hi], adv[lo:hi], clip=config.clip, beta=0.0)
                weight = (n / total) * ((hi - lo) / n)  # the term's share, then the chunk's
                ent = policy.entropy(inputs, view, actions=actions).mean().cpu()
                piece = weight * (config.lambda_st * part.loss - config.ent_coef * ent)
                piece.backward()
                stpr += weight * float(part.loss.detach())
                entropy += weight * float(ent.detach())
                clipped += weight * float(part.clip_fraction)
        if student is not None:
            n = len(student["actions"])
            for lo, hi in _spans(n, chunk):
                kl = policy.view_kl(
                    student["inputs"][lo:hi],
                    student["actions"][lo:hi],
                    config.aopd_direction,
                    _rows(targets, lo, hi),
                )
                piece = kl.sum().cpu() / n
                piece.backward()
                aopd += float(piece.detach())
        torch.nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
        optimizer.step()
        stats = {
            "loss": aopd + config.lambda_st * stpr - config.ent_coef * entropy,
            "stpr": stpr,
            "aopd": aopd,
            "entropy": entropy,
            "clip_fraction": clipped,
        }
    return stats


# -- the loop and the trainer ----------------------------------------------------------------------


def run_siavpo(
    policy: ViewPolicy,
    envs: Sequence[DialogueEnv],
    config: SiavpoConfig,
    run: RunGenerators,
    log: RunLogger,
) -> tuple[list[dict[str, float]], dict[str, float]]:
    """The training loop over any :class:`~dialogue_gym_agents.siavpo.policy.ViewPolicy`.

    Returns:
        The learning curve (one point per iteration) and totals (``episodes``, ``env_steps``,
        ``iterations``).
    """
    T = envs[0].max_exchanges
    optimizer = torch.optim.Adam(list(policy.parameters()), lr=config.learning_rate)
    n_teacher = config.teachers_per_group
    views: list[View] = [TEACHER] * n_teacher + [STUDENT] * (config.group_size - n_teacher)
    deadline = None if config.max_minutes is None else time.perf_counter() + 60 * config.max_minutes
    warmup = math.floor(config.aopd_warmup * config.iterations)
    curve: list[dict[str, float]] = []
    episodes = steps = 0
    bar = progress_bar(config.iterations, f"siavpo ({config.method})", config.progress, "iter")
    for iteration in range(1, config.iterations + 1):
        rollouts: list[Rollout] = []
        for group in range(config.seeds_per_iteration):
            seed = derive_seed(config.seed, "episode", iteration, group)
            realizer_seeds = [derive_seed(seed, "realizer", i) for i in range(len(envs))]
            rollouts += play_group(envs, policy, seed, views, run.torch, realizer_seeds)
        episodes += len(rollouts)
        steps += sum(len(r.actions) for r in rollouts)
        advantages = turn_advantages(rollouts, config)
        distill = iteration > warmup
        losses = siavpo_update(policy, optimizer, rollouts, advantages, config, distill)
        point: dict[str, float] = {"iteration": float(iteration), "env_steps": float(steps)}
        for view in (STUDENT, TEACHER):
            stats = rollout_stats([r for r in rollouts if r.view == view], T)
            point.update({f"{view}_{k}": v for k, v in stats.items()})
        point.update({f"loss_{k}": v for k, v in losses.items()})
        signs = np.concatenate([np.sign(a) for a in advantages]) if advantages else np.zeros(0)
        point["nonzero_advantage_share"] = float(np.mean(signs != 0)) if signs.size else 0.0
        curve.append(point)
        log.log_dict({k: v for k, v in point.items() if k != "iteration"}, iteration, "train/")
        bar.set_postfix(acc=f"{point.get('student_acc', 0.0):.2f}", kl=f"{losses['aopd']:.3f}")
        bar.update(1)
        if deadline is not None and time.perf_counter() > deadline:
            break
    bar.close()
    return curve, {"episodes": float(episodes), "env_steps": float(steps), "iterations": len(curve)}


def train_siavpo(config: SiavpoConfig) -> Path:
    """Trains an SI-AVPO policy (or an ablation); returns the checkpoint folder.

    ``config.policy`` picks the parameterization: ``strategy`` (a
    :class:`~dialogue_gym_agents.siavpo.policy.StrategyViewPolicy`, saved as ``policy.pt``) or
    ``lm`` (a :class:`~dialogue_gym_agents.siavpo.lm_policy.LMViewPolicy`, its adapter saved under
    ``adapter/``); both train with :func:`run_siavpo`.

    Raises:
        ValueError: Bad options, a task whose user is not a ``CognitiveUser``, an existing
            checkpoint without ``overwrite``.
        FileNotFoundError: No such task card; with ``--policy lm``, a base model path that does
            not exist (``ModelNotFoundError``).
        CheckpointError: With ``--policy lm``, an unusable ``--init``.
    """
    card = load_card(config.task)
    lm_policy = config.policy == "lm"
    if lm_policy:  # fail before any work for a model, device or --init that cannot be used
        from dialogue_gym_agents.sft.warm_start import check_policy_sources

        check_policy_sources(card, {"system": config.init}, config.model, config.device)
    encoder = make_encoder(config.encoder)
    envs = make_envs(card, config.user, config.group_size, encoder, config.max_exchanges)
    writer = CheckpointWriter(config.out, overwrite=config.overwrite)
    run = generators(config.seed)
    policy: Any
    if lm_policy:
        from dialogue_gym_agents.siavpo.lm_policy import build_lm_view_policy

        policy = build_lm_view_policy(
            card,
            model=config.model,
            init=config.init,
            lora_r=config.lora_r,
            lora_alpha=config.lora_alpha,
            seed=config.seed,
            device=config.device,
            dtype=config.dtype,
            temperature=config.temperature,
            max_new_tokens=config.max_new_tokens,
            max_length=config.max_length,
            batch_size=config.batch_size,
            examples=config.privileged_examples,
        )
    else:
        policy = StrategyViewPolicy(
            card,
            encoder,
            envs[0].max_exchanges,
            config.hidden_sizes,
            generator=run.torch,
            view=config.view,
        )
    threads = torch_threads(config.torch_threads)
    start = time.perf_counter()
    with writer, RunLogger(writer.path, tensorboard=config.tensorboard) as log:
        with threads:
            curve, totals = run_siavpo(policy, envs, config, run, log)
        if lm_policy:
            files = policy.save(writer.path)
            extra: tuple[str, ...] = ("transformers", "peft")
        else:
            torch.save(policy.net.state_dict(), writer.path / POLICY_FILE)
            files, extra = [POLICY_FILE], ()
        log.close()
        tail = curve[-3:]
        final = {
            key: float(np.mean([p[key] for p in tail if key in p]))
            for key in ("student_acc", "student_csr", "student_proactive_turns", "teacher_acc")
            if any(key in p for p in tail)
        }
        return writer.commit(
            KIND,
            card,
            config_to_dict(config),
            files,
            info={
                "policy": config.policy,
                **policy.info(),
                "method": config.method,
                "user_preset": config.user,
                "teachers_per_group": config.teachers_per_group,
                "max_exchanges": envs[0].max_exchanges,
                **totals,
                "final": {k: v for k, v in final.items() if not math.isnan(v)},
                "curve": curve,
                "train_s": round(time.perf_counter() - start, 3),
            },
            extra_versions=extra,
        )


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``dialogue-gym train siavpo OPTIONS``.

    Returns:
        0 on success (usage errors raise ``SystemExit``/``ValueError``).
    """
    return run_trainer(SiavpoConfig, train_siavpo, argv, prog=prog or "dialogue-gym train siavpo")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
