"""``dialogue-gym train planner``: a PPDPP-style strategy planner, pretrained then PPO-tuned.

Phases (each logged to ``scalars.csv`` and TensorBoard; wall-clock in the manifest):

1. **Pretraining** (``--pretrain-epochs``): supervised cross-entropy on the task corpus's
   strategy-annotated system turns (P4G annotated, ESConv, CB PPDPP acts, ED intents; labels
   mapped to the card's strategies by :mod:`dialogue_gym_agents.training.corpora`). Each
   example is the :class:`~dialogue_gym_agents.planner.agent.StrategyFeatures` vector of the corpus
   history before the turn — the same features the env's ``StrategyActions`` view gives. On
   the concern view each corpus turn is labelled with a listening move (``--move-labels``: the
   nearest wording, or the corpus's act picking the family:
   :mod:`dialogue_gym_agents.training.move_labels`), optionally from the successful dialogues
   only (``--successful-only``) and with a balanced loss (``--class-weights``).
2. **PPO** (``--ppo-steps``, ``--max-minutes``): stable-baselines3 PPO on
   ``StrategyActions(make("<task>-<user>"))`` with the pretrained weights copied into the actor.
   The learning curve — rollout SR, RCSR and discounted return per PPO update — is logged as
   ``ppo/rollout_sr`` etc. The reward (``--reward``) is ``success`` (1 at the exchange where the
   dialogue succeeds) by default; ``judge`` is PPDPP's (the success judge's score of every
   exchange) and ``env`` the env's own r_S (MASP's latent progress; aligned with success since
   issue 14: s = 1 only at success). ``judge`` can lead PPO to keep the user agreeable without
   asking (a "positive" reply earns +0.1 every exchange while an early ask risks −1). With
   ``env`` the planner matches ``success`` on P4G-hard and ESConv-hard at the default entropy
   bonus (0.05; at 0.01 it learned never to suggest on ESConv, see docs/training.md). The
   exchange budget T ends an episode as a true termination (see :class:`_DialogueOutcome`).
3. **Checkpoint** (kind ``planner``): ``policy.pt`` (the actor's state dict) and the manifest
   (feature layout, T, label-mapping counts, curve). ``--agent planner:DIR`` loads it.

Example::

    dialogue-gym train planner --task P4G --user hard --ppo-steps 400000 --out runs/planner-p4g
    dialogue-gym eval P4G-hard --agent planner:runs/planner-p4g
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import dialogue_gym
from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.data import Dialogue, Turn
from dialogue_gym.env.registry import spec
from dialogue_gym.env.wrappers import ConcernActions, ListeningFeatures, StrategyActions
from dialogue_gym.env.wrappers.strategy_actions import split_sentences
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.common.checkpoint import CheckpointWriter, check_backend_spec
from dialogue_gym_agents.common.cli import run_trainer
from dialogue_gym_agents.common.config import TrainConfig, config_to_dict, option
from dialogue_gym_agents.common.sb3 import copy_actor_weights, curve_callback, sb3_actor
from dialogue_gym_agents.common.seeding import (
    RunGenerators,
    derive_seed,
    generators,
    isolated_global_rng,
    torch_threads,
)
from dialogue_gym_agents.common.tracking import RunLogger, progress_bar
from dialogue_gym_agents.planner.agent import (
    KIND,
    POLICY_FILE,
    LLMStrategyRealizer,
    StrategyFeatures,
    StrategyPolicyNet,
    view_features,
)
from dialogue_gym_agents.training.corpora import (
    PLANNER_FORMATS,
    TRAIN_SPLITS,
    corpus_of,
    load_training_dialogues,
    successful_dialogues,
)
from dialogue_gym_agents.training.move_labels import corpus_labels

__all__ = [
    "PlannerConfig",
    "build_ppo",
    "copy_actor_weights",
    "corpus_examples",
    "corpus_labels",
    "main",
    "make_training_env",
    "pretrain",
    "train_planner",
    "train_ppo",
]


@dataclasses.dataclass
class PlannerConfig(TrainConfig):
    """planner-only (PPDPP-style): supervised strategy pretraining, then PPO against a user."""

    user: Literal["soft", "hard"] = option("hard", "user preset PPO trains against")
    hidden_sizes: tuple[int, ...] = option((64, 64), "hidden layer widths of the policy MLP")
    split: str | None = option(None, "corpus split for pretraining (default: train; CB: valid)")
    format: str | None = option(
        None, "corpus format with strategy labels (default: P4G annotated, CB ppdpp, ED intents)"
    )
    max_dialogues: int | None = option(
        None, "pretrain on a random subset of this many dialogues (default: all)"
    )
    view: Literal["strategy", "concern"] = option(
        "strategy",
        "actions: the card's strategies (StrategyActions), or listening moves (ConcernActions: "
        "answer concern c, probe, reflect, ask ...)",
    )
    pretrain_epochs: int | None = option(
        None,
        "epochs of supervised pretraining on the corpus (0: skip; default: 20 on the strategy "
        "view, on the corpus's strategy labels; 0 on the concern view, where each corpus turn "
        "is labelled with a listening move: --move-labels)",
    )
    move_labels: Literal["nearest", "acts"] = option(
        "nearest",
        "concern view: how corpus turns become move labels: nearest (the nearest wording over "
        "every move) or acts (the corpus's act annotation picks the move family, e.g. a price "
        "offer's price move, the nearest wording the move within it; see training.move_labels)",
    )
    successful_only: bool = option(
        False,
        "pretrain only on corpus dialogues whose recorded outcome is a success (filtered "
        "cloning: P4G donated, ESConv emotion intensity fell, CB deal within the buyer's "
        "target; ED records none)",
    )
    class_weights: Literal["none", "balanced"] = option(
        "none",
        "pretraining loss per action: none (as often as the corpus uses it) or balanced "
        "(inverse label frequency: every action weighs the same in all; a reweighting)",
    )
    pretrain_lr: float = option(1e-3, "Adam learning rate of pretraining")
    pretrain_batch_size: int = option(64, "minibatch size of pretraining")
    reward: Literal["success", "judge", "env", "utility"] = option(
        "success",
        "PPO reward: success (1 when the dialogue succeeds), judge (PPDPP: the success "
        "judge's score of each exchange), env (the env's r_S, MASP's latent progress) or "
        "utility (negotiation: the buyer utility of a successful deal, what SL ranks)",
    )
    ppo_steps: int = option(
        400_000, "PPO environment steps, one exchange each (0: skip PPO; ~5-10 CPU minutes)"
    )
    n_envs: int = option(4, "parallel environments of PPO")
    n_steps: int = option(128, "steps per environment per PPO update")
    batch_size: int = option(128, "PPO minibatch size")
    n_epochs: int = option(4, "PPO epochs per update")
    learning_rate: float = option(3e-4, "PPO Adam learning rate")
    gamma: float = option(0.97, "discount factor (MASP's 0.97)")
    gae_lambda: float = option(0.95, "GAE lambda")
    clip_range: float = option(0.2, "PPO ratio clip")
    # 0.05, not SB3's 0.01: a strategy whose payoff comes after an immediate cost (ESConv's
    # suggestion: premature advice lowers s, timely advice meets a need) must stay in play
    # long enough for PPO to learn when to use it; at 0.01, PPO on the env's r_S stopped
    # suggesting altogether (ESConv-hard SR 0.41 vs 0.68 at 0.05; success reward 0.54 vs 0.62).
    ent_coef: float = option(0.05, "entropy bonus coefficient")
    vf_coef: float = option(0.5, "value loss coefficient")
    max_minutes: float | None = option(
        None, "stop PPO after this many minutes of wall-clock time (default: no limit)"
    )
    torch_threads: int | None = option(
        1,
        "torch CPU threads while training (a small MLP: 1 avoids thread contention); none: "
        "leave torch's setting",
    )
    vec_env: Literal["dummy", "subproc"] = option(
        "dummy", "run the PPO envs in this process (dummy) or in worker processes (subproc)"
    )
    realizer: Literal["template", "llm"] = option(
        "template", "how strategies become text: the card's templates or an LLM"
    )
    backend: str | None = option(
        None, "LLM backend for --realizer llm: openai:MODEL, hf:PATH, hf:smollm2 or fake"
    )
    temperature: float = option(0.3, "LLM realizer sampling temperature (PPDPP: 0.3)")
    deterministic: bool = option(
        True, "the trained agent plays its most likely strategy (--no-deterministic: samples)"
    )

    def __post_init__(self) -> None:
        if self.pretrain_epochs is None:
            self.pretrain_epochs = 20 if self.view == "strategy" else 0
        positive = ("pretrain_batch_size", "n_envs", "n_steps", "batch_size", "n_epochs")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
        for name in ("pretrain_epochs", "ppo_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0")
        if not self.hidden_sizes or min(self.hidden_sizes) < 1:
            raise ValueError("--hidden-sizes must be one or more positive widths")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"--gamma must be in [0, 1], got {self.gamma}")
        if self.realizer == "llm" and not self.backend:
            raise ValueError("--realizer llm needs --backend SPEC (e.g. openai:MODEL or fake)")
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ValueError("--torch-threads must be >= 1 (or none)")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError("--max-minutes must be positive")


# -- phase 1: supervised pretraining ---------------------------------------------------------------


def corpus_examples(
    dialogues: Sequence[Dialogue],
    features: StrategyFeatures | ListeningFeatures,
    label: Callable[[Turn, list[str], list[str]], np.ndarray | None],
    n_actions: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Feature vectors and soft action targets of the system turns within the first T exchanges.

    Args:
        dialogues: The corpus dialogues.
        features: The view's feature tracker (what the env's view would observe).
        label: ``label(turn, replies, own)``: a system turn's target over the actions given the
            user's replies and the system's turns before it (``None``: no label, skipped).
        n_actions: Number of actions.

    Returns:
        ``(X [n, n_features] float32, Y [n, n_actions] float32)``.
    """
    replies: list[str] = []  # the user replies seen before the T-th system turn
    for dialogue in dialogues:
        system_turns = 0
        for turn in dialogue.turns:
            system_turns += turn.role == "system"
            if system_turns >= features.max_exchanges:
                break
            if turn.role == "user" and turn.text:
                replies.append(turn.text)
    sentences = dict.fromkeys(s for r in replies for s in split_sentences(r))
    features.encoder.encode(list(sentences))  # one batched pass; observe() then hits the cache
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for dialogue in dialogues:
        features.reset()
        history: list[dict[str, Any]] = []
        exchange = 0
        for turn in dialogue.turns:
            if turn.role == "system":
                if exchange >= features.max_exchanges:
                    break
                x = features.observe({"history": tuple(history), "role": 0, "exchange": exchange})
                said = [[h["text"] for h in history if h["speaker"] == s] for s in (1, 0)]
                target = label(turn, *said)
                if target is not None:
                    xs.append(x)
                    ys.append(target)
                    features.record(target)
                exchange += 1
            if turn.text:
                history.append({"speaker": 0 if turn.role == "system" else 1, "text": turn.text})
    if not xs:
        return np.zeros((0, features.n_features), np.float32), np.zeros((0, n_actions), np.float32)
    return np.stack(xs).astype(np.float32), np.stack(ys).astype(np.float32)


def pretrain(
    net: StrategyPolicyNet,
    X: np.ndarray,
    Y: np.ndarray,
    config: PlannerConfig,
    run: RunGenerators,
    log: RunLogger,
) -> dict[str, float]:
    """Cross-entropy on soft strategy targets; logs ``pretrain/loss`` and ``/accuracy`` per epoch.

    Accuracy counts a prediction right when the argmax strategy is among the turn's labels.
    With ``class_weights="balanced"`` each action's loss is weighted by ``n / (k n_a)`` (``n_a``
    its label mass, ``k`` the actions labelled at all), as scikit-learn's ``balanced``.
    """
    inputs, targets = torch.as_tensor(X), torch.as_tensor(Y)
    weight = None
    if config.class_weights == "balanced":
        mass = targets.sum(dim=0)
        weight = torch.where(mass > 0, len(targets) / (int((mass > 0).sum()) * mass), 0.0)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.pretrain_lr)
    epochs = config.pretrain_epochs or 0
    bar = progress_bar(epochs, "pretraining", config.progress, unit="epoch")
    stats: dict[str, float] = {}
    for epoch in range(1, epochs + 1):
        order = torch.randperm(len(inputs), generator=run.torch)
        total, right = 0.0, 0.0
        for start in range(0, len(order), config.pretrain_batch_size):
            batch = order[start : start + config.pretrain_batch_size]
            logits = net(inputs[batch])
            loss = F.cross_entropy(logits, targets[batch], weight=weight)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
            hit = targets[batch].gather(1, logits.argmax(dim=1, keepdim=True)) > 0
            right += float(hit.sum())
        stats = {"loss": total / len(inputs), "accuracy": right / len(inputs)}
        log.log_dict(stats, epoch, prefix="pretrain/")
        bar.set_postfix(loss=f"{stats['loss']:.3f}", acc=f"{stats['accuracy']:.2f}")
        bar.update(1)
    bar.close()
    return stats


# -- phase 2: PPO ----------------------------------------------------------------------------------


REWARDS = ("success", "judge", "env", "utility")
"""PPO reward signals: see :class:`PlannerConfig` ``reward``."""


class _DialogueOutcome(gym.Wrapper):
    """Picks the PPO reward, ends episodes at the exchange budget, keeps the episode record.

    SB3's ``Monitor`` reuses ``info["episode"]``, so the dialogue record is also put under
    ``info["dialogue_episode"]`` (and ``info["is_success"]``).

    Args:
        env: The ``StrategyActions`` env.
        reward: ``"success"``: 1 at the exchange where the dialogue succeeds, else 0 (the
            SR objective itself); ``"judge"``: the success judge's score of the exchange
            (PPDPP's reward: the critic's scalar of the user's state, e.g. P4G refused −1,
            neutral −0.5, positive 0.1, agree 1); ``"env"``: the env's own system reward r_S
            (MASP's latent progress Δs); ``"utility"``: on a negotiation, the buyer utility
            of the deal at the exchange that closes it (SL, what ranks negotiators), else 0.
    """

    def __init__(self, env: gym.Env, reward: str = "success") -> None:
        super().__init__(env)
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.reward = reward

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        # The exchange budget T is part of the task (and observed: the `exchange` feature),
        # so reaching it is a true end: no value is bootstrapped past it. Left as a Gymnasium
        # truncation, SB3 would add γ·V(last state) to the final reward of every failed
        # episode and PPO drifts towards stalling until T (it stops asking altogether).
        terminated, truncated = terminated or truncated, False
        if self.reward == "judge":
            reward = float(info.get("success_score", 0.0))
        elif self.reward == "success":
            reward = float(bool(info.get("success")))
        elif self.reward == "utility":
            reward = float(info.get("utility") or 0.0) if info.get("success") else 0.0
        if "episode" in info:
            info = {
                **info,
                "dialogue_episode": info["episode"],
                "is_success": bool(info["episode"].get("success")),
            }
        return obs, reward, terminated, truncated, info


def make_training_env(
    env_id: str,
    encoder: str,
    realizer: str = "template",
    backend: str | None = None,
    temperature: float = 0.3,
    reward: str = "success",
    view: str = "strategy",
) -> gym.Env:
    """One PPO env: ``Monitor(StrategyActions(make(env_id)))`` (or ``ConcernActions``)."""
    from stable_baselines3.common.monitor import Monitor

    par_env = dialogue_gym.make(env_id, encoder=encoder)
    if view == "concern":
        return Monitor(_DialogueOutcome(ConcernActions(par_env), reward=reward))
    base = getattr(par_env, "unwrapped", par_env)
    strategy_realizer = None
    if realizer == "llm":
        assert backend is not None
        strategy_realizer = LLMStrategyRealizer(
            base.card, backend, temperature=temperature, history=lambda: tuple(base.history)
        )
    strategy_env = StrategyActions(par_env, realizer=strategy_realizer)
    return Monitor(_DialogueOutcome(strategy_env, reward=reward))


def build_ppo(envs: Any, config: PlannerConfig) -> Any:
    """SB3 PPO on ``envs`` with the config's hyperparameters, silent, on the CPU.

    Seeded by the global generators (the trainer wraps it in :func:`isolated_global_rng`).
    """
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    sizes = list(config.hidden_sizes)
    model = PPO(
        "MlpPolicy",
        envs,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        policy_kwargs={"net_arch": {"pi": sizes, "vf": sizes}, "activation_fn": nn.Tanh},
        device="cpu",
        verbose=0,
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # silent; no temp dir
    return model


def train_ppo(
    net: StrategyPolicyNet,
    card: TaskCard,
    env_id: str,
    T: int,
    config: PlannerConfig,
    log: RunLogger,
) -> list[dict[str, float]]:
    """Runs SB3 PPO from ``net``'s weights and copies the tuned actor back into ``net``.

    Returns:
        The learning curve: one point per PPO update.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    factory = functools.partial(
        make_training_env,
        env_id,
        config.encoder,
        config.realizer,
        config.backend,
        config.temperature,
        config.reward,
        config.view,
    )
    curve: list[dict[str, float]] = []
    deadline = None if config.max_minutes is None else time.perf_counter() + 60 * config.max_minutes
    with isolated_global_rng(derive_seed(config.seed, "ppo")), torch_threads(config.torch_threads):
        vec_cls = SubprocVecEnv if config.vec_env == "subproc" else DummyVecEnv
        envs = vec_cls([factory] * config.n_envs)
        try:
            envs.seed(derive_seed(config.seed, "envs"))
            model = build_ppo(envs, config)
            copy_actor_weights(net.linears(), sb3_actor(model.policy))
            bar = progress_bar(config.ppo_steps, "PPO", config.progress, unit="step")
            callback = curve_callback(log, T, config.gamma, deadline, bar, curve)
            model.learn(total_timesteps=config.ppo_steps, callback=callback, log_interval=None)
            bar.close()
            copy_actor_weights(sb3_actor(model.policy), net.linears())
        finally:
            envs.close()
    return curve


# -- the trainer -----------------------------------------------------------------------------------


def _setup(config: PlannerConfig) -> tuple[TaskCard, str, int, Encoder]:
    """Validates everything that can fail before training starts."""
    card = load_card(config.task)
    env_id = spec(f"{card.id}-{config.user}").id
    if config.view == "concern" and config.realizer == "llm":
        raise ValueError("--view concern realizes its moves itself: use --realizer template")
    if config.reward == "utility" and not card.is_negotiation:
        raise ValueError(f"--reward utility is a negotiation's: {card.id} has no deal (CB has)")
    if config.pretrain_epochs:
        try:
            corpus_of(card.id)
        except ValueError as exc:
            raise ValueError(f"{exc}: train with --pretrain-epochs 0 (PPO only)") from None
    if config.backend:
        check_backend_spec(config.backend)
    if config.realizer == "llm":
        LLMStrategyRealizer(card, config.backend or "")  # builds the backend: fails early
    T = int(spec(env_id).kwargs.get("max_exchanges") or card.max_exchanges)
    return card, env_id, T, make_encoder(config.encoder)


def train_planner(config: PlannerConfig) -> Path:
    """Pretrains and PPO-tunes a strategy planner; returns the checkpoint folder.

    Raises:
        ValueError: Bad options, a task without corpus while pretraining, an existing
            checkpoint without ``overwrite``.
        FileNotFoundError: Missing corpus files, or a local ``hf:PATH`` backend that does not
            exist.
    """
    card, env_id, T, encoder = _setup(config)
    writer = CheckpointWriter(config.out, overwrite=config.overwrite)
    run = generators(config.seed)
    features, moves = view_features(card, encoder, T, config.view)
    n_actions = len(card.strategies) if moves is None else len(moves.names)
    net = StrategyPolicyNet(
        features.n_features, n_actions, config.hidden_sizes, generator=run.torch
    )
    timings: dict[str, float] = {}
    info: dict[str, Any] = {}
    with writer, RunLogger(writer.path, tensorboard=config.tensorboard) as log:
        if config.pretrain_epochs:
            start, cpu = time.perf_counter(), time.process_time()
            split = config.split or TRAIN_SPLITS.get(card.id, "train")
            dialogues = load_training_dialogues(
                card.id,
                config.data,
                split=split,
                format=config.format or PLANNER_FORMATS.get(card.id),
                max_dialogues=config.max_dialogues,
                rng=run.numpy,
            )
            if config.successful_only:
                dialogues = successful_dialogues(dialogues)
            label, report = corpus_labels(card, moves, encoder, config.move_labels)
            X, Y = corpus_examples(dialogues, features, label, n_actions)
            if len(X) == 0:
                raise ValueError(f"no {card.id} corpus turn carries a label of this view")
            timings["features_s"] = time.perf_counter() - start
            timings["features_cpu_s"] = time.process_time() - cpu
            start, cpu = time.perf_counter(), time.process_time()
            with torch_threads(config.torch_threads):
                stats = pretrain(net, X, Y, config, run, log)
            timings["pretrain_s"] = time.perf_counter() - start
            timings["pretrain_cpu_s"] = time.process_time() - cpu
            info["pretrain"] = {
                "split": split,
                "dialogues": len(dialogues),
                "examples": len(X),
                **report(),
                **stats,
            }
        if config.ppo_steps > 0:
            start, cpu = time.perf_counter(), time.process_time()
            curve = train_ppo(net, card, env_id, T, config, log)
            timings["ppo_s"] = time.perf_counter() - start
            timings["ppo_cpu_s"] = time.process_time() - cpu  # this process (dummy vec env)
            tail = curve[-3:]
            info["ppo"] = {
                "env_id": env_id,
                "steps": int(curve[-1]["steps"]) if curve else 0,
                "updates": len(curve),
                "final_rollout_sr": float(np.mean([p["rollout_sr"] for p in tail]))
                if tail
                else 0.0,
                "curve": curve,
            }
        torch.save(net.state_dict(), writer.path / POLICY_FILE)
        log.close()
        return writer.commit(
            KIND,
            card,
            config_to_dict(config),
            [POLICY_FILE],
            info={
                **info,
                "env_id": env_id,
                "max_exchanges": T,
                "feature_names": list(features.feature_names),
                "n_features": features.n_features,
                "n_actions": n_actions,
                "view": config.view,
                "hidden_sizes": list(net.hidden_sizes),
                "timings": timings,
            },
            extra_versions=("stable-baselines3",),
        )


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``dialogue-gym train planner OPTIONS``.

    Returns:
        0 on success (usage errors raise ``SystemExit``/``ValueError``).
    """
    return run_trainer(
        PlannerConfig, train_planner, argv, prog=prog or "dialogue-gym train planner"
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
