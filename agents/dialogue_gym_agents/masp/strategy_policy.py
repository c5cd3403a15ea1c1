"""Strategy-level MASP policies: small torch networks over features, and the seats they play.

The GRPO trainer (:mod:`dialogue_gym_agents.common.selfplay`) talks to a policy only through
:class:`~dialogue_gym_agents.common.policy.GRPOPolicy` and to the env only through a
:class:`~dialogue_gym_agents.common.policy.Seat`. Another parameterization (a LoRA causal LM
whose context is a prompt and whose action is a token sequence,
:mod:`dialogue_gym_agents.masp.lm_policy`) plugs in by implementing the same two protocols.

Here both are strategy-level:

* the **system** (:class:`StrategySystemSeat`) sees the planner's features of its action view
  plus :class:`LatentProbe` features of the student's estimate ẑ = M(h) (never the hidden
  state), and chooses one of the card's strategies, realized from the card's templates
  (``--view strategy``, the paper's), or one listening move (``--view concern``: answer concern
  *c*, probe, acknowledge, reflect, ask; :class:`~dialogue_gym.env.wrappers.ListeningMoves`); it
  hands the env ``{"utterance", "estimate": ẑ}`` so that r_S carries the inference term;
* the **user** (:class:`StrategyUserSeat`) sees its own current BDI state z_t (rendered in its
  observation), the stance it stated last, and how it perceives the system's utterance
  (:class:`UserFeatures`), chooses a response act of
  :data:`~dialogue_gym.users.cognitive.USER_ACTS` and has the env's
  :class:`~dialogue_gym.users.CognitiveUser` word it in the persona's style
  (:meth:`~dialogue_gym.users.CognitiveUser.realize_act`).

:class:`StrategyPolicy` keeps the frozen reference copy and gives the exact categorical KL to
it (:func:`~dialogue_gym_agents.common.grpo.categorical_kl`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.env.wrappers.concern_actions import ListeningFeatures
from dialogue_gym.env.wrappers.strategy_actions import STANCES
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.mind.latent import LatentSpace
from dialogue_gym.users.analysis import UtteranceAnalyzer
from dialogue_gym.users.cognitive import USER_ACTS, CognitiveUser
from dialogue_gym_agents.common.grpo import categorical_kl
from dialogue_gym_agents.common.policy import History, PolicyOutput
from dialogue_gym_agents.masp.mentalizers import LearnedStudent
from dialogue_gym_agents.planner.agent import (
    StrategyPolicyNet,
    realize_view_action,
    view_action_names,
    view_features,
)

__all__ = [
    "LatentProbe",
    "StrategyPolicy",
    "StrategySystemSeat",
    "StrategyUserSeat",
    "SystemFeatures",
    "UserFeatures",
    "as_history",
    "parse_rendered_bdi",
]

ROLES = ("system", "user")


def as_history(turns: Sequence[Mapping[str, Any]]) -> History:
    """An observation's ``history`` as ``(role, text)`` pairs."""
    return tuple((ROLES[int(t["speaker"])], str(t["text"])) for t in turns)


# -- the strategy-level policy ---------------------------------------------------------------------


class StrategyPolicy(nn.Module):
    """A categorical policy over a small action set with a frozen reference copy.

    Args:
        n_features: Context (feature vector) size.
        n_actions: Number of actions (strategies, or user acts).
        hidden_sizes: Hidden widths of the MLP (the planner's :class:`StrategyPolicyNet`).
        generator: torch generator for the initial weights.
    """

    def __init__(
        self,
        n_features: int,
        n_actions: int,
        hidden_sizes: Sequence[int] = (64, 64),
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.net = StrategyPolicyNet(n_features, n_actions, hidden_sizes, generator=generator)
        self.reference = copy.deepcopy(self.net).requires_grad_(False)

    @property
    def n_features(self) -> int:
        """Context size."""
        return self.net.n_features

    @property
    def n_actions(self) -> int:
        """Number of actions."""
        return self.net.n_actions

    def freeze_reference(self) -> None:
        """See :class:`GRPOPolicy`."""
        self.reference.load_state_dict(self.net.state_dict())

    def trainable_parameters(self) -> list[nn.Parameter]:
        """See :class:`GRPOPolicy`."""
        return list(self.net.parameters())

    def _inputs(self, contexts: Sequence[Any]) -> torch.Tensor:
        return torch.as_tensor(np.asarray(contexts, dtype=np.float32)).reshape(-1, self.n_features)

    def logits(self, contexts: Sequence[Any]) -> torch.Tensor:
        """Action logits ``(B, n_actions)`` (with gradients)."""
        return self.net(self._inputs(contexts))

    def sample(
        self, contexts: Sequence[Any], generator: torch.Generator, greedy: bool = False
    ) -> tuple[list[Any], list[torch.Tensor]]:
        """See :class:`GRPOPolicy`; ``greedy`` takes the most likely action."""
        with torch.no_grad():
            logp = torch.log_softmax(self.logits(contexts), dim=-1)
            if greedy:
                actions = logp.argmax(dim=-1)
            else:
                actions = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1)
            chosen = logp.gather(1, actions[:, None]).squeeze(1)
        return [int(a) for a in actions], list(chosen)

    def evaluate(self, contexts: Sequence[Any], actions: Sequence[Any]) -> PolicyOutput:
        """See :class:`GRPOPolicy`: the exact categorical KL to the reference."""
        x = self._inputs(contexts)
        logits = self.net(x)
        with torch.no_grad():
            ref_logits = self.reference(x)
        index = torch.as_tensor([int(a) for a in actions], dtype=torch.long)[:, None]
        logp = torch.log_softmax(logits, dim=-1).gather(1, index).squeeze(1)
        logp_ref = torch.log_softmax(ref_logits, dim=-1).gather(1, index).squeeze(1)
        return PolicyOutput(logp, None, categorical_kl(logits, ref_logits), logp_ref)

    def config(self) -> dict[str, Any]:
        """The shape, for checkpoint manifests."""
        return {
            "n_features": self.n_features,
            "n_actions": self.n_actions,
            "hidden_sizes": list(self.net.hidden_sizes),
        }


# -- features --------------------------------------------------------------------------------------


_RENDERED = re.compile(
    r"Belief: (?P<belief>[^\n]*)\nDesire: (?P<desire>[^\n]*)\nIntention: (?P<intention>[^\n]*)\n"
    r"Receptivity: (?P<r>\S+) Confidence: (?P<c>\S+) Valence: (?P<v>\S+)"
)


def parse_rendered_bdi(text: str) -> BDI:
    """Reads a :meth:`BDI.render` block back (the user's ``state`` observation).

    Raises:
        ValueError: ``text`` is not a rendered BDI block.
    """
    match = _RENDERED.search(text)
    if match is None:
        raise ValueError(f"not a rendered BDI block: {text[:120]!r}")
    return BDI(
        match["belief"],
        match["desire"],
        match["intention"],
        float(np.clip(float(match["r"]), 0.0, 1.0)),
        float(np.clip(float(match["c"]), 0.0, 1.0)),
        float(np.clip(float(match["v"]), -1.0, 1.0)),
    )


class LatentProbe:
    """Compact features of a latent vector z: its scalars and cosines to the card's anchors.

    Features: ρ, c, v (√α undone); the cosine of the belief block to the target belief and to
    each concern's unresolved belief; of the desire block to the target desire and the open
    desire; of the intention block to each stance's intention (refused, neutral, positive and
    the target's for agree). A student estimate thus tells the system which concern it thinks
    blocks and how far the user is from deciding.

    Args:
        card: The task card (target, concerns, mind texts).
        latent: The latent space z lives in.
        alphas: Its scalar weights.
    """

    def __init__(
        self, card: TaskCard, latent: LatentSpace, alphas: Sequence[float] = (1.0, 1.0, 1.0)
    ) -> None:
        self.d = latent.d
        self.scale = np.sqrt(np.asarray(alphas, dtype=np.float64))
        mind = card.mind
        anchors = [
            ("belief", "target", card.target.belief),
            *(("belief", f"concern:{c.id}", c.belief_unresolved) for c in card.concerns),
            ("desire", "target", card.target.desire),
            ("desire", "open", mind["desire_open"]),
            ("intention", "refused", mind["refused"]),
            ("intention", "neutral", mind["neutral"]),
            ("intention", "positive", mind["positive"]),
            ("intention", "agree", card.target.intention),
        ]
        blocks = {"belief": 0, "desire": 1, "intention": 2}
        self._block = np.asarray([blocks[b] for b, _, _ in anchors])
        rows = np.asarray(latent.encoder.encode([text for _, _, text in anchors]), np.float64)
        self._anchors = rows
        self.names: tuple[str, ...] = (
            "rho",
            "confidence",
            "valence",
            *(f"{block}~{name}" for block, name, _ in anchors),
        )

    @property
    def n_features(self) -> int:
        """Number of features."""
        return len(self.names)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """The features of one z (``(3d + 3,)``) as float32."""
        z = np.asarray(z, dtype=np.float64)
        d = self.d
        blocks = z[: 3 * d].reshape(3, d)
        norms = np.maximum(np.linalg.norm(blocks, axis=1), 1e-12)
        cosines = np.einsum("ij,ij->i", blocks[self._block], self._anchors) / norms[self._block]
        scalars = z[3 * d : 3 * d + 3] / np.maximum(self.scale, 1e-12)
        return np.concatenate([scalars, cosines]).astype(np.float32)


class SystemFeatures:
    """The system's context: the features of its action view + the probe of ẑ.

    With the card's strategies (``view="strategy"``) the view's features are the planner's
    :class:`~dialogue_gym_agents.planner.agent.StrategyFeatures`; with listening moves
    (``view="concern"``) they are :class:`~dialogue_gym.env.wrappers.ListeningFeatures` — what the
    user's replies showed of each concern (voiced, open, partly answered, settled) — and
    :attr:`moves` realizes the actions.

    Args:
        card: The task card.
        encoder: The encoder (reply features).
        max_exchanges: T.
        probe: The :class:`LatentProbe` of the student's estimate.
        view: ``"strategy"`` or ``"concern"``.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        max_exchanges: int,
        probe: LatentProbe,
        view: str = "strategy",
    ) -> None:
        self.view = view
        self.tracker, self.moves = view_features(card, encoder, max_exchanges, view)
        self.action_names = view_action_names(card, self.moves)
        self.probe = probe
        self.names = (
            *self.tracker.feature_names,
            *(f"estimate:{name}" for name in probe.names),
        )

    @property
    def n_features(self) -> int:
        """Context size."""
        return len(self.names)

    @property
    def n_actions(self) -> int:
        """How many actions the view has (strategies or listening moves)."""
        return len(self.action_names)

    def reset(self) -> None:
        """Starts an episode."""
        self.tracker.reset()

    def observe(self, observation: Mapping[str, Any], estimate: np.ndarray) -> np.ndarray:
        """The feature vector of a system observation and the student's estimate ẑ."""
        return np.concatenate([self.tracker.observe(observation), self.probe(estimate)])

    def record(self, action: int | np.ndarray) -> None:
        """Counts the chosen action (an index, or a distribution over strategies)."""
        if isinstance(self.tracker, ListeningFeatures):
            # A move is one thing done; a soft label counts as its likeliest move.
            self.tracker.record(int(np.argmax(action)) if np.ndim(action) else int(action))
        else:
            self.tracker.record(action)

    def realize(self, index: int, realizer: TemplateRealizer) -> str:
        """The utterance of action ``index``: a strategy's template, or a move's wording."""
        return realize_view_action(index, self.tracker, self.moves, realizer)


class UserFeatures:
    """The user's context: its own state, its last stance and how it hears the system.

    Features: exchange / T and the system's requests so far / T; the :class:`LatentProbe` of
    its own current state z_t (read from the ``state`` observation); the one-hot stance of its
    own last reply; how it perceives the system utterance it answers (empty, off-topic,
    request, question, greeting, pressure wording, repetition of an earlier system turn) and,
    per concern, how strongly the utterance addresses it or hits its anti-pattern.

    Args:
        card: The task card.
        encoder: The encoder (perception).
        latent: The latent space (encodes its own state).
        max_exchanges: T.
        probe: The :class:`LatentProbe`.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        latent: LatentSpace,
        max_exchanges: int,
        probe: LatentProbe,
    ) -> None:
        self.card = card
        self.encoder = encoder
        self.latent = latent
        self.max_exchanges = int(max_exchanges)
        self.probe = probe
        self.analyzer = UtteranceAnalyzer(card, encoder)
        self.concern_ids = tuple(c.id for c in card.concerns)
        self._asks = tuple(card.cues.get("ask", ()))
        self.names: tuple[str, ...] = (
            "exchange",
            "asks",
            *(f"state:{name}" for name in probe.names),
            *(f"said:{s}" for s in STANCES),
            "heard:empty",
            "heard:off_topic",
            "heard:ask",
            "heard:question",
            "heard:greeting",
            "heard:pressure",
            "heard:repetition",
            *(f"addresses:{cid}" for cid in self.concern_ids),
            *(f"anti:{cid}" for cid in self.concern_ids),
        )

    @property
    def n_features(self) -> int:
        """Context size."""
        return len(self.names)

    def observe(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The feature vector of a user observation (its ``state``, ``history``, ``exchange``)."""
        history = as_history(observation["history"])
        system = [t for r, t in history if r == "system"]
        replies = [t for r, t in history if r == "user"]
        heard = system[-1] if history and history[-1][0] == "system" else ""
        T = float(self.max_exchanges)
        asks = sum(any(p.search(t) for p in self._asks) for t in system)
        state = self.probe(self.latent.encode(parse_rendered_bdi(observation["state"])))
        said = np.zeros(len(STANCES), np.float32)
        said[STANCES.index(classify_stance(replies[-1], self.card) if replies else "none")] = 1.0
        p = self.analyzer.perceive(heard)
        repetition = 0.0
        if heard and len(system) > 1 and not p.empty:
            earlier = np.asarray(self.encoder.encode(system[:-1]), np.float32)
            repetition = float(float((earlier @ p.embedding).max()) >= 0.9)
        flags = [p.empty, p.off_topic, p.ask, p.question, p.greeting, p.pressure_cue]
        return np.concatenate(
            [
                [observation["exchange"] / T, min(asks, T) / T],
                state,
                said,
                np.asarray([*map(float, flags), repetition], np.float32),
                [p.unlock[cid] for cid in self.concern_ids],
                [p.anti[cid] for cid in self.concern_ids],
            ]
        ).astype(np.float32)


# -- seats -----------------------------------------------------------------------------------------


class StrategySystemSeat:
    """The system seat of a strategy-level policy (see the module docstring).

    Args:
        card: The task card.
        features: The system features (one tracker per seat: it counts strategies).
        student: The student mentalizer giving ẑ.
        emit_estimate: Hand the env ``{"utterance", "estimate": ẑ}`` (training: the
            inference reward term) instead of plain text (evaluation: the env's encoder may
            differ from the agent's).
    """

    def __init__(
        self,
        card: TaskCard,
        features: SystemFeatures,
        student: LearnedStudent,
        emit_estimate: bool = True,
    ) -> None:
        self.card = card
        self.features = features
        self.student = student
        self.emit_estimate = emit_estimate
        self.realizer = TemplateRealizer(card)
        self.last_strategy: str | None = None
        self._estimate: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        """See :class:`Seat`."""
        self.features.reset()
        self.realizer.reset(seed)
        if self.features.moves is not None:
            self.features.moves.reset(seed)
        self.last_strategy = None
        self._estimate = None

    def context(self, observation: Mapping[str, Any]) -> np.ndarray:
        """See :class:`Seat`: the student estimates ẑ from the visible history only."""
        self._estimate = self.student.predict(as_history(observation["history"]))
        return self.features.observe(observation, self._estimate)

    def env_action(self, action: Any, observation: Mapping[str, Any]) -> Any:
        """See :class:`Seat`: the action's wording (with ẑ when ``emit_estimate``)."""
        index = int(action)
        self.features.record(index)
        self.last_strategy = self.features.action_names[index]
        text = self.features.realize(index, self.realizer)
        if self.emit_estimate and self._estimate is not None:
            return {"utterance": text, "estimate": self._estimate}
        return text


class StrategyUserSeat:
    """The user seat of a strategy-level policy: response acts worded by the env's user.

    Args:
        features: The user features.
        user: The env's :class:`~dialogue_gym.users.CognitiveUser` (its persona words the act).
    """

    def __init__(self, features: UserFeatures, user: CognitiveUser) -> None:
        if not callable(getattr(user, "realize_act", None)):
            raise TypeError(
                f"a strategy-level user policy needs a CognitiveUser to word its acts, got "
                f"{type(user).__name__}"
            )
        self.features = features
        self.user = user

    def reset(self, seed: int | None = None) -> None:
        """See :class:`Seat` (the user's own state lives in the env)."""

    def context(self, observation: Mapping[str, Any]) -> np.ndarray:
        """See :class:`Seat`."""
        return self.features.observe(observation)

    def env_action(self, action: Any, observation: Mapping[str, Any]) -> str:
        """See :class:`Seat`: the act worded in the persona's style."""
        history = observation["history"]
        heard = history[-1]["text"] if history and int(history[-1]["speaker"]) == 0 else ""
        return self.user.realize_act(USER_ACTS[int(action)], heard)
