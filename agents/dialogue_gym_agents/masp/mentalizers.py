"""MASP Phase 0: silver BDI trajectories, the teacher ``F(h, p_u, g)`` and student ``M(h)``.

Both mentalizers are small torch MLPs over encoder features of the dialogue history
(:class:`HistoryFeaturizer`); the teacher also sees the user's profile and the task goal. They
predict the latent vector ``z = [e_B; e_D; e_I; √α_ρ·ρ; √α_c·c; √α_v·v]`` of
:class:`~dialogue_gym.mind.LatentSpace` and are trained with the paper's losses in the A-metric
(Appendix B.3, Eqs. 19–21)::

    L_F = λ_reg · mean_t ‖F(h_t) − z̄_t‖²_A
        + λ_dyn · mean_t ‖(F(h_{t+1}) − F(h_t)) − (z̄_{t+1} − z̄_t)‖²_A
    L_M = mean_t ‖M(h_t) − sg(F(h_t))‖²_A

(the paper writes sums over t; means differ from them only by the batch's prefix count).

A continuous estimate becomes text again by cosine nearest neighbours (:class:`BDIRenderer`,
Appendix B.5): the texts of the closest record of the BDI prior (the initial states of the
training split) with the estimate's own scalars, or — for the reward side — each text field
from the closest text of the silver cache. :class:`LearnedStudent` implements the env's
``Student`` protocol (``estimate(history) -> BDI``) and :class:`LearnedTeacher` its ``Teacher``
protocol, so an env can use them (``make(id, student=..., teacher=...)``, or the
``Mind(latent, teacher, student)`` part of a ``DialogueEnv``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.wrappers.strategy_actions import STANCES
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.mind.latent import LatentSpace
from dialogue_gym.users.base import UserSimulator
from dialogue_gym_agents.common.policy import History
from dialogue_gym_agents.common.seeding import RunGenerators
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.masp.silver import SilverTrajectory

__all__ = [
    "BDIRenderer",
    "HistoryFeaturizer",
    "LearnedStudent",
    "LearnedTeacher",
    "MentalizerNet",
    "Mentalizers",
    "PrefixData",
    "a_sq_norm",
    "mentalizer_errors",
    "student_loss",
    "teacher_loss",
    "train_student",
    "train_teacher",
]


_FIELDS = ("belief", "desire", "intention", "receptivity", "confidence", "valence")


# -- features --------------------------------------------------------------------------------------


class HistoryFeaturizer:
    """Encoder features of a dialogue prefix (and, for the teacher, of profile and goal).

    History features: the embeddings of the last user and last system utterance, the means of
    all user and all system utterances, the exchange count / T and the one-hot stance of the
    last user reply (``none`` before one) — ``4d + 1 + 5`` values. Context features (teacher
    only): the embeddings of the profile and of the task goal — ``2d`` values.

    Args:
        card: The task card (goal, reply cues).
        encoder: The sentence encoder (its rows are unit vectors of dimension d).
        max_exchanges: T.
    """

    def __init__(self, card: TaskCard, encoder: Encoder, max_exchanges: int) -> None:
        self.card = card
        self.encoder = encoder
        self.d = int(encoder.dim)
        self.max_exchanges = int(max_exchanges)
        self.n_history = 4 * self.d + 1 + len(STANCES)
        self.n_context = 2 * self.d

    def history(self, histories: Sequence[History]) -> np.ndarray:
        """``(len(histories), n_history)`` float32 features (all texts encoded in one call)."""
        texts = list(dict.fromkeys(t for h in histories for _, t in h))
        rows = np.asarray(self.encoder.encode(texts), np.float32) if texts else None
        index = {text: i for i, text in enumerate(texts)}
        d = self.d
        out = np.zeros((len(histories), self.n_history), dtype=np.float32)
        for i, history in enumerate(histories):
            for slot, role in ((0, "user"), (1, "system")):
                own = [index[t] for r, t in history if r == role]
                if own and rows is not None:
                    out[i, slot * d : (slot + 1) * d] = rows[own[-1]]
                    out[i, (slot + 2) * d : (slot + 3) * d] = rows[own].mean(axis=0)
            exchanges = sum(r == "user" for r, _ in history)
            out[i, 4 * d] = min(exchanges, self.max_exchanges) / self.max_exchanges
            replies = [t for r, t in history if r == "user"]
            stance = classify_stance(replies[-1], self.card) if replies else "none"
            out[i, 4 * d + 1 + STANCES.index(stance)] = 1.0
        return out

    def context(self, profiles: Sequence[str]) -> np.ndarray:
        """``(len(profiles), n_context)`` features: the profile's and the goal's embeddings."""
        texts = list(dict.fromkeys([self.card.goal, *profiles]))
        rows = dict(zip(texts, np.asarray(self.encoder.encode(texts), np.float32), strict=True))
        goal = rows[self.card.goal]
        return np.stack([np.concatenate([rows[p], goal]) for p in profiles]).astype(np.float32)

    def teacher_inputs(self, histories: Sequence[History], profiles: Sequence[str]) -> np.ndarray:
        """``[history features; context features]`` per prefix (the teacher's input)."""
        return np.concatenate([self.history(histories), self.context(profiles)], axis=1)


# -- the networks and their losses -----------------------------------------------------------------


class MentalizerNet(nn.Module):
    """An MLP from features to a latent vector z: ``Linear → tanh → Linear → tanh → Linear``.

    Args:
        n_inputs: Feature size.
        n_outputs: The latent size 3d + 3.
        hidden: Width of the two hidden layers.
        generator: torch generator for the initial weights (default: the global one).
    """

    def __init__(
        self,
        n_inputs: int,
        n_outputs: int,
        hidden: int = 256,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.n_inputs, self.n_outputs, self.hidden = int(n_inputs), int(n_outputs), int(hidden)
        self.net = nn.Sequential(
            nn.Linear(self.n_inputs, self.hidden),
            nn.Tanh(),
            nn.Linear(self.hidden, self.hidden),
            nn.Tanh(),
            nn.Linear(self.hidden, self.n_outputs),
        )
        if generator is not None:
            with torch.no_grad():
                for layer in self.net:
                    if isinstance(layer, nn.Linear):
                        bound = 1.0 / float(np.sqrt(layer.in_features))
                        layer.weight.uniform_(-bound, bound, generator=generator)
                        layer.bias.uniform_(-bound, bound, generator=generator)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """The predicted z, ``[..., n_outputs]``."""
        return self.net(features)


def a_sq_norm(x: torch.Tensor, a_diag: torch.Tensor) -> torch.Tensor:
    """``‖x‖²_A = xᵀAx`` per row for a diagonal A."""
    return (x * x * a_diag).sum(dim=-1)


def teacher_loss(
    pred: torch.Tensor,
    target: torch.Tensor,
    pairs: torch.Tensor,
    a_diag: torch.Tensor,
    lambda_reg: float = 1.0,
    lambda_dyn: float = 1.0,
) -> torch.Tensor:
    """The teacher loss L_F (Eq. 19): regression plus dynamics, both in the A-metric.

    Args:
        pred: ``F(h_t)`` per prefix, ``(N, D)``.
        target: The silver ``z̄_t`` per prefix, ``(N, D)``.
        pairs: ``(P, 2)`` row indices ``(t, t+1)`` of consecutive prefixes of one dialogue.
        a_diag: The diagonal of A, ``(D,)``.
        lambda_reg: λ_reg.
        lambda_dyn: λ_dyn (the dynamics term is 0 without pairs).

    Returns:
        ``λ_reg · mean ‖F − z̄‖²_A + λ_dyn · mean ‖ΔF − Δz̄‖²_A``.
    """
    target = target.detach()
    loss = lambda_reg * a_sq_norm(pred - target, a_diag).mean()
    if len(pairs) and lambda_dyn:
        first, second = pairs[:, 0], pairs[:, 1]
        delta_pred = pred[second] - pred[first]
        delta_target = target[second] - target[first]
        loss = loss + lambda_dyn * a_sq_norm(delta_pred - delta_target, a_diag).mean()
    return loss


def student_loss(pred: torch.Tensor, teacher: torch.Tensor, a_diag: torch.Tensor) -> torch.Tensor:
    """The student loss L_M (Eq. 21): ``mean ‖M(h_t) − sg(F(h_t))‖²_A``."""
    return a_sq_norm(pred - teacher.detach(), a_diag).mean()


# -- rendering -------------------------------------------------------------------------------------


class BDIRenderer:
    """Maps a continuous latent vector back to a BDI record by cosine nearest neighbours.

    Args:
        records: The pool (the BDI prior, or the silver cache's states).
        latent: The latent space that encodes them.
        alphas: The scalar weights the latent space was built with (to undo √α scaling).
    """

    def __init__(
        self,
        records: Sequence[BDI],
        latent: LatentSpace,
        alphas: Sequence[float] = (1.0, 1.0, 1.0),
    ) -> None:
        if not records:
            raise ValueError("the BDI pool to render from is empty")
        self.records = list(records)
        self.latent = latent
        self.d = latent.d
        self.scale = np.sqrt(np.asarray(alphas, dtype=np.float64))
        self._pool = _unit_rows(latent.encode_batch(self.records))
        self._fields: list[tuple[list[str], np.ndarray]] = []
        for name in ("belief", "desire", "intention"):
            texts = list(dict.fromkeys(getattr(r, name) for r in self.records))
            self._fields.append((texts, np.asarray(latent.encoder.encode(texts), np.float64)))

    def nearest(self, z: np.ndarray) -> int:
        """Index of the pool record whose encoded z is closest in cosine (Appendix B.5)."""
        return int(np.argmax(self._pool @ _unit_rows(np.asarray(z, np.float64)[None])[0]))

    def scalars(self, z: np.ndarray) -> tuple[float, float, float]:
        """The estimate's own ρ, c, v (√α scaling undone, clipped into range)."""
        raw = np.asarray(z, np.float64)[3 * self.d :] / np.maximum(self.scale, 1e-12)
        return (
            float(np.clip(raw[0], 0.0, 1.0)),
            float(np.clip(raw[1], 0.0, 1.0)),
            float(np.clip(raw[2], -1.0, 1.0)),
        )

    def render(self, z: np.ndarray) -> BDI:
        """The nearest record's texts with the estimate's own scalars."""
        record = self.records[self.nearest(z)]
        rho, c, v = self.scalars(z)
        return BDI(record.belief, record.desire, record.intention, rho, c, v)

    def render_fields(self, z: np.ndarray) -> BDI:
        """Each text field from its nearest pool text (block cosine), scalars from ``z``."""
        z = np.asarray(z, np.float64)
        texts = []
        for block, (candidates, rows) in enumerate(self._fields):
            part = z[block * self.d : (block + 1) * self.d]
            texts.append(candidates[int(np.argmax(rows @ part))])
        return BDI(*texts, *self.scalars(z))


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


# -- the trained pair ------------------------------------------------------------------------------


class Mentalizers:
    """The teacher and student networks with what they need to run.

    Args:
        card: The task card.
        featurizer: Shared history/context features.
        latent: The latent space of the targets.
        teacher: ``F(h, p_u, g)``.
        student: ``M(h)``.
        prior: The BDI prior (student rendering).
        cache: The silver states (the teacher's per-field rendering; default: the prior).
        alphas: The latent space's scalar weights.
    """

    def __init__(
        self,
        card: TaskCard,
        featurizer: HistoryFeaturizer,
        latent: LatentSpace,
        teacher: MentalizerNet,
        student: MentalizerNet,
        prior: Sequence[BDI],
        cache: Sequence[BDI] | None = None,
        alphas: Sequence[float] = (1.0, 1.0, 1.0),
    ) -> None:
        self.card = card
        self.featurizer = featurizer
        self.latent = latent
        self.teacher = teacher
        self.student = student
        self.prior = list(prior)
        self.prior_renderer = BDIRenderer(self.prior, latent, alphas)
        self.cache_renderer = BDIRenderer(list(cache) if cache else self.prior, latent, alphas)
        self.a_diag = torch.as_tensor(latent.a_diag, dtype=torch.float32)

    def teacher_z(self, histories: Sequence[History], profiles: Sequence[str]) -> np.ndarray:
        """``F(h, p_u, g)`` per prefix, ``(N, 3d + 3)`` (no gradients)."""
        x = torch.as_tensor(self.featurizer.teacher_inputs(histories, profiles))
        with torch.no_grad():
            return self.teacher(x).numpy().astype(np.float64)

    def student_z(self, histories: Sequence[History]) -> np.ndarray:
        """``M(h)`` per prefix, ``(N, 3d + 3)`` (no gradients)."""
        x = torch.as_tensor(self.featurizer.history(histories))
        with torch.no_grad():
            return self.student(x).numpy().astype(np.float64)


class LearnedStudent:
    """The student as the env's ``Student``: ``estimate(history) -> BDI`` (rendered over the prior).

    Args:
        mentalizers: The trained pair.
    """

    def __init__(self, mentalizers: Mentalizers) -> None:
        self.mentalizers = mentalizers

    def predict(self, history: Sequence[tuple[str, str]]) -> np.ndarray:
        """The continuous estimate ẑ = M(h), its scalars clipped to the BDI ranges."""
        raw = self.mentalizers.student_z([tuple(history)])[0]
        return self.mentalizers.latent.clip_scalars(raw)

    def estimate(self, history: Sequence[tuple[str, str]]) -> BDI:
        """ẑ rendered as text: the nearest prior record's texts with ẑ's scalars."""
        return self.mentalizers.prior_renderer.render(self.predict(history))


class LearnedTeacher:
    """The frozen teacher as the env's reward-side ``Teacher``: ``infer(history, user) -> BDI``.

    The prediction ``F(h, p_u, g)`` is rendered field by field over the silver cache's texts
    (so intentions and beliefs that occur only mid-dialogue are reachable) with its own
    scalars; the env then encodes that record as z_t.

    Args:
        mentalizers: The trained pair.
    """

    def __init__(self, mentalizers: Mentalizers) -> None:
        self.mentalizers = mentalizers

    def infer(self, history: Sequence[tuple[str, str]], user: UserSimulator) -> BDI:
        """See :class:`dialogue_gym.mentalizers.Teacher`."""
        z = self.mentalizers.teacher_z([tuple(history)], [user.profile()])[0]
        return self.mentalizers.cache_renderer.render_fields(z)


# -- training --------------------------------------------------------------------------------------


@dataclasses.dataclass
class PrefixData:
    """Flattened silver prefixes of a set of trajectories, as tensors.

    Attributes:
        teacher_x: Teacher inputs per prefix, ``(N, n_history + n_context)``.
        student_x: Student inputs per prefix, ``(N, n_history)``.
        target: Silver z̄ per prefix, ``(N, D)``.
        pairs: ``(P, 2)`` consecutive-prefix row pairs.
        trajectory: ``(N,)`` the trajectory index of each row.
    """

    teacher_x: torch.Tensor
    student_x: torch.Tensor
    target: torch.Tensor
    pairs: torch.Tensor
    trajectory: torch.Tensor

    @classmethod
    def build(
        cls,
        trajectories: Sequence[SilverTrajectory],
        featurizer: HistoryFeaturizer,
        latent: LatentSpace,
    ) -> PrefixData:
        """Featurizes every prefix of ``trajectories`` (one encoder call per text)."""
        histories: list[History] = []
        profiles: list[str] = []
        states: list[BDI] = []
        pairs: list[tuple[int, int]] = []
        owner: list[int] = []
        for index, trajectory in enumerate(trajectories):
            start = len(histories)
            histories += trajectory.histories()
            profiles += [trajectory.profile] * len(trajectory.states)
            states += trajectory.states
            owner += [index] * len(trajectory.states)
            pairs += [(start + t, start + t + 1) for t in range(len(trajectory.states) - 1)]
        history_x = featurizer.history(histories)
        teacher_x = np.concatenate([history_x, featurizer.context(profiles)], axis=1)
        return cls(
            teacher_x=torch.as_tensor(teacher_x),
            student_x=torch.as_tensor(history_x),
            target=torch.as_tensor(latent.encode_batch(states), dtype=torch.float32),
            pairs=torch.as_tensor(pairs, dtype=torch.long).reshape(-1, 2),
            trajectory=torch.as_tensor(owner, dtype=torch.long),
        )

    def select(self, trajectories: torch.Tensor) -> PrefixData:
        """The rows (and pairs, reindexed) of the given trajectory indices."""
        keep = torch.isin(self.trajectory, trajectories)
        rows = torch.nonzero(keep).squeeze(1)
        new_index = torch.full((len(self.trajectory),), -1, dtype=torch.long)
        new_index[rows] = torch.arange(len(rows))
        pairs = new_index[self.pairs]
        pairs = pairs[(pairs >= 0).all(dim=1)]
        return PrefixData(
            self.teacher_x[rows],
            self.student_x[rows],
            self.target[rows],
            pairs,
            self.trajectory[rows],
        )


def train_teacher(
    net: MentalizerNet,
    data: PrefixData,
    a_diag: torch.Tensor,
    epochs: int,
    lr: float,
    batch_trajectories: int,
    generator: torch.Generator,
    lambda_reg: float = 1.0,
    lambda_dyn: float = 1.0,
) -> list[float]:
    """Fits the teacher with :func:`teacher_loss` on minibatches of whole trajectories.

    Returns:
        The mean loss of each epoch.
    """
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    ids = torch.unique(data.trajectory)
    curve: list[float] = []
    for _ in range(epochs):
        order = ids[torch.randperm(len(ids), generator=generator)]
        total, batches = 0.0, 0
        for start in range(0, len(order), batch_trajectories):
            batch = data.select(order[start : start + batch_trajectories])
            loss = teacher_loss(
                net(batch.teacher_x), batch.target, batch.pairs, a_diag, lambda_reg, lambda_dyn
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + float(loss.detach()), batches + 1
        curve.append(total / max(batches, 1))
    return curve


def train_student(
    net: MentalizerNet,
    inputs: torch.Tensor,
    teacher_targets: torch.Tensor,
    a_diag: torch.Tensor,
    epochs: int,
    batch_size: int,
    generator: torch.Generator,
    optimizer: torch.optim.Optimizer,
) -> list[float]:
    """Fits the student to frozen teacher targets with :func:`student_loss`.

    Returns:
        The mean loss of each epoch.
    """
    curve: list[float] = []
    for _ in range(epochs):
        order = torch.randperm(len(inputs), generator=generator)
        total, batches = 0.0, 0
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            loss = student_loss(net(inputs[rows]), teacher_targets[rows], a_diag)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + float(loss.detach()), batches + 1
        curve.append(total / max(batches, 1))
    return curve


def mentalizer_errors(
    teacher: MentalizerNet, student: MentalizerNet, data: PrefixData, a_diag: torch.Tensor
) -> dict[str, float]:
    """Mean A-metric errors on (held-out) prefixes.

    Returns:
        ``teacher_error`` (‖F − z̄‖²_A), ``student_error`` (‖M − z̄‖²_A),
        ``student_teacher_gap`` (‖M − F‖²_A), ``scalar_mae_teacher`` and
        ``scalar_mae_student`` (mean absolute error of the three pre-scaled scalars) and
        ``prefixes``.
    """
    with torch.no_grad():
        f = teacher(data.teacher_x)
        m = student(data.student_x)
    target = data.target
    return {
        "teacher_error": float(a_sq_norm(f - target, a_diag).mean()),
        "student_error": float(a_sq_norm(m - target, a_diag).mean()),
        "student_teacher_gap": float(a_sq_norm(m - f, a_diag).mean()),
        "scalar_mae_teacher": float((f[:, -3:] - target[:, -3:]).abs().mean()),
        "scalar_mae_student": float((m[:, -3:] - target[:, -3:]).abs().mean()),
        "prefixes": float(len(target)),
    }


def train_mentalizers(
    card: TaskCard,
    encoder: Encoder,
    T: int,
    silver: Sequence[SilverTrajectory],
    config: MASPConfig,
    run: RunGenerators,
) -> tuple[Mentalizers, dict[str, float]]:
    """Trains the teacher, then the student on its targets; returns them and held-out errors."""
    featurizer, latent = HistoryFeaturizer(card, encoder, T), LatentSpace(encoder)
    train = [t for t in silver if t.split == "train"]
    train_data = PrefixData.build(train, featurizer, latent)
    heldout_data = PrefixData.build([t for t in silver if t.split == "heldout"], featurizer, latent)
    a_diag = torch.as_tensor(latent.a_diag, dtype=torch.float32)
    n_in = featurizer.n_history + featurizer.n_context
    teacher = MentalizerNet(n_in, latent.size, config.mentalizer_hidden, generator=run.torch)
    teacher_curve = train_teacher(
        teacher, train_data, a_diag, config.mentalizer_epochs, config.mentalizer_lr,
        config.mentalizer_batch, run.torch, config.lambda_reg, config.lambda_dyn,
    )  # fmt: skip
    student = MentalizerNet(featurizer.n_history, latent.size, config.mentalizer_hidden, run.torch)
    with torch.no_grad():
        targets = teacher(train_data.teacher_x)
    student_curve = train_student(
        student, train_data.student_x, targets, a_diag, config.mentalizer_epochs,
        16 * config.mentalizer_batch, run.torch,
        torch.optim.Adam(student.parameters(), lr=config.mentalizer_lr),
    )  # fmt: skip
    prior = list({tuple(t.states[0].to_dict().items()): t.states[0] for t in train}.values())
    cache = [s for t in silver for s in t.states]
    mentalizers = Mentalizers(
        card, featurizer, latent, teacher.eval(), student.eval(), prior, cache
    )
    errors = mentalizer_errors(teacher, student, heldout_data, a_diag)
    mean = train_data.target.mean(dim=0)
    constant = ((heldout_data.target - mean) ** 2 * a_diag).sum(dim=-1).mean()
    errors.update(
        constant_error=float(constant),
        teacher_train_loss=teacher_curve[-1] if teacher_curve else float("nan"),
        student_train_loss=student_curve[-1] if student_curve else float("nan"),
        train_prefixes=float(len(train_data.target)),
        prior_records=float(len(prior)),
    )
    return mentalizers, errors
