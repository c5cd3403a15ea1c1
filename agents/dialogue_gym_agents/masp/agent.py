"""``masp``: the MASP system agent (strategy level), and its checkpoints.

A MASP run folder (``dialogue-gym train masp --out DIR``) holds one checkpoint per phase and
per outer iteration (see :mod:`dialogue_gym_agents.masp.train`)::

    DIR/phase0-mentalizers   teacher.pt, student.pt, prior.jsonl, silver.jsonl
    DIR/phase1-warmstart     + system.pt, user.pt (each with its frozen reference)
    DIR/iter-0001 ...        + optim.pt (optimizer states, to resume)

``--agent masp:DIR`` (``masp(card=card, checkpoint=DIR)``) loads the latest complete one — the
last iteration, or the warm start before any — or exactly the checkpoint folder given. The
agent plays the system seat with its own student mentalizer: each turn it estimates the user's
state from the visible history (ẑ = M(h)), picks a strategy (or, for a run with ``--view
concern``, a listening move) from its features and ẑ (the most likely one by default) and
realizes it from the card's templates (or the move's wordings). The env it is evaluated in
needs no student.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.mind.latent import LatentSpace
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.cognitive import USER_ACTS, CognitiveUser
from dialogue_gym_agents.common.checkpoint import (
    MANIFEST,
    Checkpoint,
    CheckpointError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    load_checkpoint,
)
from dialogue_gym_agents.masp.mentalizers import (
    HistoryFeaturizer,
    LearnedStudent,
    MentalizerNet,
    Mentalizers,
)
from dialogue_gym_agents.masp.silver import read_jsonl, write_jsonl
from dialogue_gym_agents.masp.strategy_policy import (
    LatentProbe,
    StrategyPolicy,
    StrategySystemSeat,
    SystemFeatures,
    UserFeatures,
    as_history,
)

__all__ = [
    "KIND",
    "MASPAgent",
    "MASPModels",
    "PolicyUser",
    "build_features",
    "latest_checkpoint",
    "load_models",
    "masp",
    "save_models",
]

KIND = "masp"
"""The checkpoint kind and agent name."""

TEACHER_FILE, STUDENT_FILE, PRIOR_FILE = "teacher.pt", "student.pt", "prior.jsonl"
SYSTEM_FILE, USER_FILE = "system.pt", "user.pt"
PHASE0_DIR, PHASE1_DIR, ITERATION_PREFIX = "phase0-mentalizers", "phase1-warmstart", "iter-"


def iteration_dir(k: int) -> str:
    """The folder name of outer iteration ``k`` (``iter-0003``)."""
    return f"{ITERATION_PREFIX}{k:04d}"


@dataclasses.dataclass
class MASPModels:
    """Everything a MASP checkpoint holds that runs: mentalizers and policies.

    Attributes:
        mentalizers: Teacher, student, featurizer, latent space and renderers.
        system: The system policy (``None`` before the warm start).
        user: The user policy (``None`` before the warm start).
        system_features: The system's feature layout.
        user_features: The user's feature layout.
    """

    mentalizers: Mentalizers
    system: StrategyPolicy | None
    user: StrategyPolicy | None
    system_features: SystemFeatures
    user_features: UserFeatures


def build_features(
    card: TaskCard, mentalizers: Mentalizers, max_exchanges: int, view: str = "strategy"
) -> tuple[SystemFeatures, UserFeatures]:
    """The system and user feature extractors over the mentalizers' encoder and latent space.

    ``view``: the system's actions, ``"strategy"`` (the card's strategies) or ``"concern"``
    (listening moves).
    """
    probe = LatentProbe(card, mentalizers.latent)
    encoder = mentalizers.featurizer.encoder
    return (
        SystemFeatures(card, encoder, max_exchanges, probe, view),
        UserFeatures(card, encoder, mentalizers.latent, max_exchanges, probe),
    )


def _policy_state(policy: StrategyPolicy) -> dict[str, Any]:
    return {"net": policy.net.state_dict(), "reference": policy.reference.state_dict()}


def save_models(folder: Path, models: MASPModels) -> tuple[list[str], dict[str, Any]]:
    """Writes the models into a (staging) checkpoint folder.

    Returns:
        The artifact file names and the manifest ``info`` describing their shapes.
    """
    mentalizers = models.mentalizers
    torch.save(mentalizers.teacher.state_dict(), folder / TEACHER_FILE)
    torch.save(mentalizers.student.state_dict(), folder / STUDENT_FILE)
    write_jsonl(folder / PRIOR_FILE, (r.to_dict() for r in mentalizers.prior))
    files = [TEACHER_FILE, STUDENT_FILE, PRIOR_FILE]
    info: dict[str, Any] = {
        "encoder": mentalizers.featurizer.encoder.name,
        "max_exchanges": mentalizers.featurizer.max_exchanges,
        "latent_size": mentalizers.latent.size,
        "mentalizer_hidden": mentalizers.teacher.hidden,
        "teacher_inputs": mentalizers.teacher.n_inputs,
        "student_inputs": mentalizers.student.n_inputs,
        "system_features": list(models.system_features.names),
        "user_features": list(models.user_features.names),
        "user_acts": list(USER_ACTS),
    }
    for name, policy, file in (
        ("system", models.system, SYSTEM_FILE),
        ("user", models.user, USER_FILE),
    ):
        if policy is not None:
            torch.save(_policy_state(policy), folder / file)
            files.append(file)
            info[name] = policy.config()
    return files, info


def _load_state(path: Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # torch's text would suggest unsafe loading: not shown
        raise CorruptCheckpointError(
            f"cannot read {path}: not a valid checkpoint (it holds pickled objects other than "
            "tensor weights, which are never loaded)"
        ) from None
    except (OSError, EOFError, RuntimeError, ValueError) as exc:
        message = " ".join(str(exc).split())[:300]
        raise CorruptCheckpointError(f"cannot read {path}: {message}") from None


def load_models(ckpt: Checkpoint, card: TaskCard, cache: Sequence[BDI] | None = None) -> MASPModels:
    """Rebuilds the models of a verified MASP checkpoint.

    Args:
        ckpt: The checkpoint (from :func:`load_checkpoint`).
        card: Its task card.
        cache: The silver states for the teacher's reward-side rendering (default: the prior).

    Raises:
        CheckpointMismatchError: The card's feature layout differs from the checkpoint's.
        CorruptCheckpointError: Weights that cannot be read or do not fit.
    """
    info = ckpt.info
    try:
        encoder = make_encoder(str(ckpt.config.get("encoder", "minilm")))
        T = int(info["max_exchanges"])
        latent = LatentSpace(encoder)
        featurizer = HistoryFeaturizer(card, encoder, T)
        hidden = int(info["mentalizer_hidden"])
        teacher = MentalizerNet(int(info["teacher_inputs"]), latent.size, hidden)
        student = MentalizerNet(int(info["student_inputs"]), latent.size, hidden)
        prior = [BDI.from_dict(r) for r in read_jsonl(ckpt.file(PRIOR_FILE))]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptCheckpointError(f"checkpoint {ckpt.path} is malformed: {exc}") from None
    if latent.size != int(info["latent_size"]) or teacher.n_inputs != (
        featurizer.n_history + featurizer.n_context
    ):
        raise CheckpointMismatchError(
            f"checkpoint {ckpt.path} was trained with another encoder dimension"
        )
    try:
        teacher.load_state_dict(_load_state(ckpt.file(TEACHER_FILE)))
        student.load_state_dict(_load_state(ckpt.file(STUDENT_FILE)))
    except RuntimeError as exc:
        raise CorruptCheckpointError(
            f"mentalizer weights in {ckpt.path} do not fit: {exc}"
        ) from None
    mentalizers = Mentalizers(
        card, featurizer, latent, teacher.eval(), student.eval(), prior, cache
    )
    view = str(ckpt.config.get("view", "strategy"))
    system_features, user_features = build_features(card, mentalizers, T, view)
    if (
        tuple(info.get("system_features", ())) != system_features.names
        or tuple(info.get("user_features", ())) != user_features.names
    ):
        raise CheckpointMismatchError(
            f"checkpoint {ckpt.path} was trained on another feature layout (the card's "
            "strategies, concerns or mind texts changed): retrain it with this card"
        )
    policies: dict[str, StrategyPolicy | None] = {"system": None, "user": None}
    for name, file in (("system", SYSTEM_FILE), ("user", USER_FILE)):
        if name not in info:
            continue
        shape = info[name]
        policy = StrategyPolicy(
            int(shape["n_features"]), int(shape["n_actions"]), tuple(shape["hidden_sizes"])
        )
        state = _load_state(ckpt.file(file))
        try:
            policy.net.load_state_dict(state["net"])
            policy.reference.load_state_dict(state["reference"])
        except (KeyError, TypeError, RuntimeError) as exc:
            raise CorruptCheckpointError(
                f"{name} policy in {ckpt.path} does not fit: {exc}"
            ) from None
        policies[name] = policy
    return MASPModels(
        mentalizers, policies["system"], policies["user"], system_features, user_features
    )


def latest_checkpoint(path: str | Path | None) -> Path:
    """The checkpoint folder ``--agent masp:PATH`` means.

    ``PATH`` itself when it is a checkpoint; in a run folder, the last complete outer
    iteration, else the warm start.

    Raises:
        CheckpointNotFoundError: No path, a missing folder, or a run folder with no policy yet.
    """
    if path is None or str(path).strip() == "":
        raise CheckpointNotFoundError("a masp checkpoint folder is needed (--agent masp:DIR)")
    folder = Path(path).expanduser()
    if not folder.exists():
        raise CheckpointNotFoundError(
            f"checkpoint folder {folder} does not exist (train one with `dialogue-gym train "
            f"masp --task TASK --out {folder}`)"
        )
    if (folder / MANIFEST).is_file() or not folder.is_dir():
        return folder
    iterations = sorted(
        p for p in folder.glob(f"{ITERATION_PREFIX}[0-9]*") if (p / MANIFEST).is_file()
    )
    if iterations:
        return iterations[-1]
    if (folder / PHASE1_DIR / MANIFEST).is_file():
        return folder / PHASE1_DIR
    raise CheckpointNotFoundError(
        f"{folder} holds no MASP policy checkpoint yet (no {PHASE1_DIR} or {ITERATION_PREFIX}* "
        "folder): finish training first"
    )


class MASPAgent:
    """Plays the system seat with a MASP system policy and its own student mentalizer.

    Args:
        card: The task card.
        policy: The system policy.
        seat: The system seat (features, student, realizer).
        deterministic: Play the most likely strategy (else sample).
        seed: Default seed (overridden by :meth:`reset`).
    """

    def __init__(
        self,
        card: TaskCard,
        policy: StrategyPolicy,
        seat: StrategySystemSeat,
        deterministic: bool = True,
        seed: int | None = None,
    ) -> None:
        features = seat.features
        if policy.n_features != features.n_features or policy.n_actions != features.n_actions:
            raise ValueError(
                "the system policy does not fit the card's features and actions (strategies or "
                "listening moves)"
            )
        self.card = card
        self.policy = policy.eval()
        self.seat = seat
        self.deterministic = deterministic
        self.reset(seed)

    @property
    def last_strategy(self) -> str | None:
        """The strategy chosen last."""
        return self.seat.last_strategy

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: features, template choice and sampling are reseeded."""
        self.seat.reset(seed)
        self._generator = torch.Generator(device="cpu")
        self._generator.manual_seed(0 if seed is None else int(seed))

    def act(self, observation: Mapping[str, Any]) -> Any:
        """The next system utterance (with ẑ when the agent was built with ``emit_estimate``)."""
        context = self.seat.context(observation)
        actions, _ = self.policy.sample([context], self._generator, greedy=self.deterministic)
        return self.seat.env_action(actions[0], observation)

    def estimate(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The student's current estimate ẑ for an observation (for analysis)."""
        return self.seat.student.predict(as_history(observation["history"]))


class PolicyUser:
    """A trained MASP user policy as a user simulator: ``make(id, user=PolicyUser(...))``.

    The inner :class:`~dialogue_gym.users.CognitiveUser` keeps the mind (persona, state and the
    rational reference the rationality judge reads); the policy chooses each reply's response
    act from the user's own state and what it heard, and the persona words it. Its replies are
    marked as external (``"external_reply"``), so the judges read what it says.

    Args:
        card: The task card (the checkpoint's task).
        checkpoint: A MASP run folder or checkpoint with a user policy.
        preset: The inner simulator's preset (its dynamics and rational reference).
        personas: The persona pool (default: the card's bank).
        deterministic: Play the most likely act (default: sample, as in self-play).

    Raises:
        CheckpointError: Missing, corrupt, another kind or task, or no user policy.
    """

    def __init__(
        self,
        card: TaskCard,
        checkpoint: str | Path,
        preset: str = "hard",
        personas: Sequence[Any] | None = None,
        deterministic: bool = False,
    ) -> None:
        folder = latest_checkpoint(checkpoint)
        ckpt = load_checkpoint(folder, kind=KIND, card=card, check_strategies=True)
        models = load_models(ckpt, card)
        if models.user is None:
            raise CheckpointError(f"{folder} holds no user policy yet")
        encoder = models.mentalizers.featurizer.encoder
        pool = tuple(personas) if personas is not None else None
        self.inner = CognitiveUser(card, encoder, preset=preset, personas=pool)
        self.card = card
        self.policy = models.user.eval()
        self.features = models.user_features
        self.deterministic = deterministic
        self._history: list[dict[str, Any]] = []
        self._generator = torch.Generator(device="cpu")

    def reset(self, rng: np.random.Generator) -> BDI:
        """See :class:`~dialogue_gym.users.UserSimulator`; act sampling is seeded from ``rng``."""
        self._history = []
        self._generator.manual_seed(int(rng.integers(2**31)))
        return self.inner.reset(rng)

    def respond(self, system_text: str) -> UserTurn:
        """Chooses an act for ``system_text``, words it and lets the mind observe the reply."""
        self._history.append({"speaker": 0, "text": system_text})
        observation = {
            "history": tuple(self._history),
            "state": self.inner.state.render(),
            "exchange": self.inner.exchange,
            "role": 1,
        }
        context = self.features.observe(observation)
        acts, _ = self.policy.sample([context], self._generator, greedy=self.deterministic)
        text = self.inner.realize_act(USER_ACTS[acts[0]], system_text)
        return self.observe(system_text, text)

    def observe(self, system_text: str, user_text: str) -> UserTurn:
        """See :class:`~dialogue_gym.users.UserSimulator`."""
        if not self._history or self._history[-1] != {"speaker": 0, "text": system_text}:
            self._history.append({"speaker": 0, "text": system_text})
        self._history.append({"speaker": 1, "text": user_text})
        return self.inner.observe(system_text, user_text)

    @property
    def state(self) -> BDI:
        """The inner mind's current state."""
        return self.inner.state

    @property
    def persona(self) -> Any:
        """The persona of the episode."""
        return self.inner.persona

    def profile(self) -> str:
        """The persona's visible profile."""
        return self.inner.profile()

    def privileged(self) -> dict[str, Any]:
        """The inner mind's privileged record, marked as a policy user."""
        return {**self.inner.privileged(), "user_model": "masp-policy"}


def masp(
    card: TaskCard,
    checkpoint: str | Path | None = None,
    seed: int | None = None,
    deterministic: bool = True,
    emit_estimate: bool = False,
    temperature: float | None = None,
    backend: str | None = None,
    base_url: str | None = None,
    device: str = "auto",
    batch_size: int = 8,
    **kwargs: Any,
) -> Any:
    """The ``masp`` agent factory: ``--agent masp:DIR``.

    Args:
        card: The env's task card (must be the checkpoint's task and strategy set).
        checkpoint: A run folder (its latest policy checkpoint) or a checkpoint folder.
        seed: Default seed.
        deterministic: Play the most likely strategy.
        emit_estimate: Return ``{"utterance", "estimate": ẑ}`` so the env adds the inference
            reward term (the env's encoder must then be the checkpoint's).
        temperature: LM policies (``--policy lm``): override the evaluation temperature
            (default: the run's ``--eval-temperature``, 0.3).
        backend: LM policies: ``openai:NAME`` to generate on an OpenAI-compatible server
            serving the system adapter (``DIR/system-lm``) instead of loading it here.
        base_url: That server's URL.
        device: LM policies: torch device of the local model.
        batch_size: LM policies: rows per local ``generate`` call.
        **kwargs: Not used.

    Returns:
        A :class:`MASPAgent` (strategy-level runs) or a
        :class:`~dialogue_gym_agents.masp.lm_policy.MASPLMAgent` (``--policy lm`` runs).

    Raises:
        CheckpointError: Missing, corrupt, another kind or task, or no system policy yet.
    """
    folder = latest_checkpoint(checkpoint)
    ckpt = load_checkpoint(folder, kind=KIND, card=card, check_strategies=True)
    models = load_models(ckpt, card)
    if ckpt.config.get("policy") == "lm" and "lm_policies" in ckpt.info:
        from dialogue_gym_agents.common.lm.agent import build_lm_agent
        from dialogue_gym_agents.masp.lm_policy import LM_DIRS, MASPLMAgent

        return build_lm_agent(
            card,
            ckpt,
            LM_DIRS["system"],
            "system",
            seed=seed,
            temperature=temperature,
            default_temperature=float(ckpt.config.get("eval_temperature", 0.3)),
            max_new_tokens=None,
            backend=backend,
            base_url=base_url,
            device=device,
            batch_size=batch_size,
            base=ckpt.info["lm_policies"]["system"],
            agent_type=MASPLMAgent,
            agent_kwargs={"student": LearnedStudent(models.mentalizers)},
        )
    if models.system is None:
        raise CheckpointError(
            f"{folder} holds only the phase-0 mentalizers, no system policy: use the run "
            "folder or a later checkpoint"
        )
    seat = StrategySystemSeat(
        card, models.system_features, LearnedStudent(models.mentalizers), emit_estimate
    )
    return MASPAgent(card, models.system, seat, deterministic=deterministic, seed=seed)
