"""Phase 1 of the strategy-level MASP: behaviour-cloned warm starts, frozen as KL references.

The system policy is cloned from the corpus's strategy-annotated persuader turns (the
planner's data and label mapping; ``--system-bc scripted``: the task's scripted agent in the
phase-0 episodes, each of its utterances labelled with the nearest strategy template — for
tasks without a corpus — or, with ``--view concern``, with the nearest listening move); the
user policy from the simulator's response acts in the silver episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.cognitive import USER_ACTS
from dialogue_gym_agents.common.seeding import (
    RunGenerators,
)
from dialogue_gym_agents.masp.agent import (
    MASPModels,
)
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.masp.mentalizers import (
    LearnedStudent,
)
from dialogue_gym_agents.masp.silver import SilverTrajectory
from dialogue_gym_agents.masp.strategy_policy import (
    StrategyPolicy,
    SystemFeatures,
    UserFeatures,
)
from dialogue_gym_agents.training.corpora import (
    PLANNER_FORMATS,
    TRAIN_SPLITS,
    LabelMapper,
    load_training_dialogues,
)

__all__ = ["behaviour_clone", "system_bc_examples", "user_bc_examples", "warm_start"]


def _as_observation(history: Sequence[tuple[str, str]], exchange: int) -> dict[str, Any]:
    turns = tuple({"speaker": int(r != "system"), "text": t} for r, t in history)
    return {"history": turns, "role": 0, "exchange": exchange}


def system_bc_examples(
    episodes: Iterable[Sequence[tuple[str, str, np.ndarray | None]]],
    features: SystemFeatures,
    student: LearnedStudent,
    T: int,
) -> tuple[np.ndarray, np.ndarray]:
    """System features (with the student's ẑ) and soft strategy targets of labelled turns.

    Args:
        episodes: Dialogues as ``(role, text, target)`` turns; ``target`` is a distribution
            over the card's strategies for labelled system turns, else ``None``.
        features: The system features (reset per dialogue).
        student: The student mentalizer.
        T: The exchange budget (later system turns are skipped).
    """
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for turns in episodes:
        features.reset()
        history: list[tuple[str, str]] = []
        exchange = 0
        for role, text, target in turns:
            if role == "system":
                if exchange >= T:
                    break
                if target is not None:
                    observation = _as_observation(history, exchange)
                    xs.append(features.observe(observation, student.predict(history)))
                    ys.append(target)
                    features.record(target)
                exchange += 1
            if text:
                history.append((role, text))
    k = features.n_actions
    if not xs:
        return np.zeros((0, features.n_features), np.float32), np.zeros((0, k), np.float32)
    return np.stack(xs).astype(np.float32), np.stack(ys).astype(np.float32)


def user_bc_examples(
    trajectories: Iterable[SilverTrajectory], features: UserFeatures
) -> tuple[np.ndarray, np.ndarray]:
    """User features before each simulator reply and the one-hot act it realized."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for trajectory in trajectories:
        for k, act in enumerate(trajectory.user_acts):
            start = trajectory.prefixes[k]
            observation = {
                **_as_observation(trajectory.turns[: start + 1], k),
                "role": 1,
                "state": trajectory.states[k].render(),
            }
            xs.append(features.observe(observation))
            ys.append(np.eye(len(USER_ACTS), dtype=np.float32)[USER_ACTS.index(act)])
    if not xs:
        raise ValueError("no simulator replies to clone the user from")
    return np.stack(xs).astype(np.float32), np.stack(ys)


def behaviour_clone(
    policy: StrategyPolicy,
    X: np.ndarray,
    Y: np.ndarray,
    epochs: int,
    lr: float,
    batch_size: int,
    generator: torch.Generator,
) -> dict[str, float]:
    """Cross-entropy on (soft) targets; returns the last epoch's loss and accuracy.

    Accuracy counts a prediction right when the argmax action has target mass.
    """
    inputs, targets = torch.as_tensor(X), torch.as_tensor(Y)
    optimizer = torch.optim.Adam(policy.trainable_parameters(), lr=lr)
    stats = {"loss": float("nan"), "accuracy": float("nan"), "examples": float(len(X))}
    for _ in range(epochs):
        order = torch.randperm(len(inputs), generator=generator)
        total, right = 0.0, 0.0
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            logits = policy.net(inputs[rows])
            loss = F.cross_entropy(logits, targets[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(rows)
            right += float((targets[rows].gather(1, logits.argmax(1, keepdim=True)) > 0).sum())
        stats.update(loss=total / len(inputs), accuracy=right / len(inputs))
    return stats


def _system_bc_data(
    card: TaskCard,
    models: MASPModels,
    silver: Sequence[SilverTrajectory],
    config: MASPConfig,
    run: RunGenerators,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    student = LearnedStudent(models.mentalizers)
    T = models.mentalizers.featurizer.max_exchanges
    if config.system_bc == "corpus":
        dialogues = load_training_dialogues(
            card.id,
            config.data,
            split=config.split or TRAIN_SPLITS.get(card.id, "train"),
            format=config.format or PLANNER_FORMATS.get(card.id),
            max_dialogues=config.max_dialogues,
            rng=run.numpy,
        )
        mapper = LabelMapper(card)
        episodes = [
            [(t.role, t.text, mapper(t.acts) if t.role == "system" else None) for t in d.turns]
            for d in dialogues
        ]
        X, Y = system_bc_examples(episodes, models.system_features, student, T)
        source = {"source": "corpus", "dialogues": len(dialogues), **mapper.report()}
    else:
        chosen = [t for t in silver if t.split == "train" and t.policy == "scripted"]
        label = _nearest_action(card, models.mentalizers.featurizer.encoder, models.system_features)
        episodes = [
            [(r, x, label(x) if r == "system" else None) for r, x in t.turns] for t in chosen
        ]
        X, Y = system_bc_examples(episodes, models.system_features, student, T)
        source = {"source": "scripted", "dialogues": len(chosen)}
    if len(X) == 0:
        raise ValueError(
            f"no labelled {card.id} system turn to clone (source: {config.system_bc}); try "
            "more --silver-episodes or the other --system-bc"
        )
    return X, Y, source


def _nearest_action(
    card: TaskCard, encoder: Encoder, features: SystemFeatures
) -> Callable[[str], np.ndarray]:
    """``label(text)``: the one-hot action whose wording is most similar to ``text``.

    The actions' wordings are the strategies' templates, or the listening moves' fixed
    wordings (``reflect`` has none: it says back the user's own words, so no turn is
    labelled with it).
    """
    moves = features.moves
    pools = (
        [moves.wordings(i) for i in range(features.n_actions)]
        if moves is not None
        else [s.templates for s in card.strategies]
    )
    owners = [i for i, pool in enumerate(pools) for _ in pool]
    rows = np.asarray(encoder.encode([text for pool in pools for text in pool]))
    eye = np.eye(features.n_actions, dtype=np.float32)

    def label(text: str) -> np.ndarray:
        return eye[owners[int(np.argmax(rows @ np.asarray(encoder.encode([text]))[0]))]]

    return label


def warm_start(
    card: TaskCard,
    models: MASPModels,
    silver: Sequence[SilverTrajectory],
    config: MASPConfig,
    run: RunGenerators,
) -> dict[str, Any]:
    """Clones the system and the user policy and freezes them as references (in ``models``)."""
    X, Y, source = _system_bc_data(card, models, silver, config, run)
    models.system = StrategyPolicy(X.shape[1], Y.shape[1], config.hidden_sizes, run.torch)
    system = behaviour_clone(
        models.system, X, Y, config.bc_epochs, config.bc_lr, config.bc_batch_size, run.torch
    )
    chosen = [t for t in silver if t.split == "train" and t.user in config.user_bc_users]
    Xu, Yu = user_bc_examples(chosen, models.user_features)
    models.user = StrategyPolicy(Xu.shape[1], len(USER_ACTS), config.hidden_sizes, run.torch)
    user = behaviour_clone(
        models.user, Xu, Yu, config.bc_epochs, config.bc_lr, config.bc_batch_size, run.torch
    )
    models.system.freeze_reference()
    models.user.freeze_reference()
    acts = Yu.sum(axis=0)
    user["act_shares"] = {
        a: float(n / max(acts.sum(), 1)) for a, n in zip(USER_ACTS, acts, strict=True)
    }
    return {"system": {**system, **source}, "user": user}
