"""SI-AVPO's policy: the two views, the interface the trainer uses, the strategy-level policy.

SI-AVPO evaluates **one** policy under two views (see
:mod:`dialogue_gym_agents.siavpo.losses` for the objectives):

* the **student** view — what the deployed agent sees: the system's observation only;
* the **teacher** view — the same observation plus the user's internal persona P_int, read
  from ``infos["system"]["privileged"]`` of an env built with ``privileged=True``.

Two parameterizations train with the same trainer
(:func:`~dialogue_gym_agents.siavpo.train.run_siavpo`, ``dialogue-gym train siavpo
--policy strategy|lm``):

* **strategy** (here): the student view is the
  :class:`~dialogue_gym_agents.planner.agent.StrategyFeatures` vector (the same features as
  :class:`dialogue_gym.env.wrappers.StrategyActions`; with ``--view concern`` the listening moves'
  :class:`~dialogue_gym.env.wrappers.ListeningFeatures`), the teacher view adds P_int as a
  fixed-size vector (:class:`PrivilegedFeatures`). :class:`StrategyViewNet` is a single MLP
  over ``[features ‖ m·P_int ‖ m]`` with the view flag ``m`` (1 teacher, 0 student): the
  student view zeroes the privileged block, so there is no separate teacher model. Actions are
  card strategies, realized from the card's templates (or listening moves, ``--view concern``).
* **lm** (:mod:`dialogue_gym_agents.siavpo.lm_policy`): a LoRA causal LM writes the utterances;
  the student view is the system seat's chat prompt, the teacher view the same prompt with a
  rendered P_int block (:class:`~dialogue_gym_agents.siavpo.lm_policy.LMViewPolicy`).

The deployable agent (``--agent siavpo:DIR``: :class:`SiavpoAgent`, or
:class:`~dialogue_gym_agents.siavpo.lm_policy.SiavpoLMAgent` for an LM checkpoint; :func:`siavpo`
dispatches on the checkpoint) only ever runs the student view and never reads infos.

**The policy interface.** The trainer talks to a :class:`ViewPolicy` — ``new_episode``
returns a per-rollout :class:`PolicyEpisode` that turns an observation and the privileged
record into an opaque step input (both views' inputs: the strategy features and P_int vector,
or an LM's student prompt and teacher prompt) and an action into the utterance; ``sample``
draws actions with their log-probs under a view; ``log_probs`` rescores given actions under
either view; ``teacher_targets`` snapshots the teacher view before an update (θ_old: per-step
logits here, the adapter's weights for an LM) and ``view_kl`` is the AOPD divergence per step
against them (the teacher side detached); ``entropy`` is the view's entropy per step. Log-probs
are per step (an LM returns the sum of the response's token log-probs, the response-level
ratio that :func:`~dialogue_gym_agents.common.grpo.grpo_loss` accepts); an LM's ``view_kl``
is the token-level KL over the vocabulary averaged over the response tokens. Only building
and saving a policy are specific to its parameterization.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.planner.agent import (
    realize_view_action,
    view_action_names,
    view_features,
)
from dialogue_gym_agents.siavpo.losses import KLDirection, aopd_kl

__all__ = [
    "KIND",
    "POLICY_FILE",
    "STUDENT",
    "TEACHER",
    "PolicyEpisode",
    "PrivilegedFeatures",
    "StepInput",
    "StrategyEpisode",
    "StrategyViewNet",
    "StrategyViewPolicy",
    "View",
    "ViewPolicy",
]

KIND = "siavpo"
"""The checkpoint kind and agent name."""


POLICY_FILE = "policy.pt"
"""The policy network's weights (a torch state dict) inside a checkpoint."""


View = Literal["teacher", "student"]


TEACHER: View = "teacher"


STUDENT: View = "student"


class PrivilegedFeatures:
    """P_int — the user's internal persona — read with the dialogue, as the teacher's input.

    As in the paper, the teacher is conditioned on the *static* internal persona (which latent
    concerns the user has, how strongly, their resistance points and unlock conditions), never
    on the simulator's dynamic state (statuses, willingness: only STPR reads Δw). What an LM
    teacher would work out from P_int and the dialogue so far is computed here from P_int and
    the system's own strategy counts. Per concern of the card (card order):

    * ``<id>:present`` — 1 if this persona has it;
    * ``<id>:strength`` — its strength in [0, 1];
    * ``<id>:open`` — how much of its resistance point the system has not yet met,
      ``1 − min(n / needed, 1)`` with ``n`` the turns so far that used a strategy meeting its
      unlock conditions (one the card lists as addressing it) and ``needed`` the persona's
      resistance (0 when absent).

    Then per strategy (card order) ``unlock:<name>`` = ``min(1, Σ strength · open)`` over the
    concerns whose unlock conditions it meets: P_int's unlock conditions in strategy space.
    Read from the env's privileged record (``internal_persona.concerns``, or ``concerns``);
    ``None`` gives zeros.

    Args:
        card: The task card.
    """

    PARTS = ("present", "strength", "open")

    def __init__(
        self, card: TaskCard, actions: Sequence[tuple[str, Sequence[str]]] | None = None
    ) -> None:
        self.concern_ids = tuple(c.id for c in card.concerns)
        index = {cid: i for i, cid in enumerate(self.concern_ids)}
        # (name, concerns it addresses) per action: the card's strategies by default.
        actions = actions or [(s.name, s.addresses) for s in card.strategies]
        self._meets = np.zeros((len(self.concern_ids), len(actions)), dtype=np.float32)
        for j, (_, addresses) in enumerate(actions):
            for cid in addresses:
                if cid in index:
                    self._meets[index[cid], j] = 1.0  # concern × action
        self.feature_names = (
            *(f"{cid}:{part}" for cid in self.concern_ids for part in self.PARTS),
            *(f"unlock:{name}" for name, _ in actions),
        )

    @property
    def n_features(self) -> int:
        """Length of the vector."""
        return len(self.feature_names)

    def __call__(
        self, privileged: Mapping[str, Any] | None, used: np.ndarray | None = None
    ) -> np.ndarray:
        """The vector for a privileged record and the strategies used so far (counts)."""
        x = np.zeros(self.n_features, dtype=np.float32)
        if not privileged:
            return x
        concerns = (privileged.get("internal_persona") or {}).get("concerns")
        concerns = concerns or privileged.get("concerns") or {}
        n = len(self.concern_ids)
        counts = np.zeros(self._meets.shape[1]) if used is None else np.asarray(used, float)
        met = self._meets @ counts  # turns that met each concern's unlock conditions
        for i, cid in enumerate(self.concern_ids):
            state = concerns.get(cid)
            if state is None:
                continue
            needed = max(int(state.get("needed", 1)), 1)
            x[3 * i] = 1.0
            x[3 * i + 1] = float(state.get("strength", 1.0))
            x[3 * i + 2] = 1.0 - min(met[i] / needed, 1.0)
        pressing = x[1 : 3 * n : 3] * x[2 : 3 * n : 3]
        x[3 * n :] = pressing @ self._meets
        return np.clip(x, 0.0, 1.0, out=x)


@dataclasses.dataclass(frozen=True)
class StepInput:
    """One decision point of the strategy-level policy, holding both views' inputs.

    Attributes:
        features: The observation features (student view; the teacher view sees them too).
        privileged: The P_int features (teacher view only; zeros where unknown).
    """

    features: np.ndarray
    privileged: np.ndarray


@runtime_checkable
class PolicyEpisode(Protocol):
    """A policy's per-rollout state: observation → step input, action → utterance."""

    def encode(self, observation: Mapping[str, Any], privileged: Mapping[str, Any] | None) -> Any:
        """The step input for both views (the student view must ignore ``privileged``)."""
        ...

    def act(self, action: Any) -> str:
        """Records the chosen action and returns the utterance to say."""
        ...


@runtime_checkable
class ViewPolicy(Protocol):
    """What the SI-AVPO trainer needs from a policy (module docstring)."""

    def new_episode(self, seed: int | None = None) -> PolicyEpisode:
        """A fresh per-rollout state (its realizer seeded with ``seed``)."""
        ...

    def sample(
        self, inputs: Sequence[Any], view: View, generator: torch.Generator
    ) -> tuple[list[Any], torch.Tensor]:
        """Samples one action per input under ``view``; returns them and their log-probs."""
        ...

    def log_probs(self, inputs: Sequence[Any], actions: Sequence[Any], view: View) -> torch.Tensor:
        """``(B,)`` log-probs of the given actions under ``view`` (with gradients)."""
        ...

    def teacher_targets(self, inputs: Sequence[Any], actions: Sequence[Any]) -> Any:
        """The teacher view's distributions at these steps now, without gradients.

        Taken before an update, they are the teacher of the parameters that played the
        rollouts (θ_old), which :meth:`view_kl` then holds fixed during the update. Either a
        tensor with one row per step (a chunked update slices it by rows) or a row-independent
        object such as a snapshot of the parameters (passed whole to every chunk).
        """
        ...

    def view_kl(
        self,
        inputs: Sequence[Any],
        actions: Sequence[Any],
        direction: KLDirection,
        targets: Any = None,
    ) -> torch.Tensor:
        """``(B,)`` AOPD KL per step between the student view and the detached teacher view.

        The teacher side is ``targets`` (from :meth:`teacher_targets`) or the current view.
        """
        ...

    def entropy(
        self, inputs: Sequence[Any], view: View, actions: Sequence[Any] | None = None
    ) -> torch.Tensor:
        """``(B,)`` entropy of the action distribution under ``view``.

        The trainer passes the taken ``actions`` too: an LM's entropy is taken along the
        sampled reply (the strategy-level policy ignores them).
        """
        ...

    def parameters(self) -> Iterator[nn.Parameter]:
        """The trainable parameters."""
        ...


class StrategyViewNet(nn.Module):
    """One MLP for both views: ``[features ‖ m·P_int ‖ m] → tanh MLP → strategy logits``.

    Args:
        n_features: Observation features.
        n_privileged: P_int features.
        n_actions: Strategies.
        hidden_sizes: Hidden widths.
        generator: torch generator for the initial weights (default: the global one).
    """

    def __init__(
        self,
        n_features: int,
        n_privileged: int,
        n_actions: int,
        hidden_sizes: Sequence[int] = (64, 64),
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.n_features, self.n_privileged = int(n_features), int(n_privileged)
        self.n_actions = int(n_actions)
        self.hidden_sizes = tuple(int(h) for h in hidden_sizes)
        layers: list[nn.Module] = []
        width = self.n_features + self.n_privileged + 1
        for hidden in self.hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        layers.append(nn.Linear(width, self.n_actions))
        self.net = nn.Sequential(*layers)
        if generator is not None:
            with torch.no_grad():
                for layer in self.net:
                    if isinstance(layer, nn.Linear):
                        bound = 1.0 / float(np.sqrt(layer.in_features))
                        layer.weight.uniform_(-bound, bound, generator=generator)
                        layer.bias.uniform_(-bound, bound, generator=generator)

    def forward(self, features: torch.Tensor, privileged: torch.Tensor, view: View) -> torch.Tensor:
        """``(B, n_actions)`` logits of ``(B, n_features)`` / ``(B, n_privileged)`` inputs."""
        if view not in (TEACHER, STUDENT):
            raise ValueError(f"view must be 'teacher' or 'student', got {view!r}")
        flag = torch.full((features.shape[0], 1), float(view == TEACHER), dtype=features.dtype)
        masked = privileged if view == TEACHER else torch.zeros_like(privileged)
        return self.net(torch.cat([features, masked, flag], dim=-1))


class StrategyEpisode:
    """Per-rollout state of :class:`StrategyViewPolicy` (a :class:`PolicyEpisode`).

    Args:
        policy: The policy (card, encoder, T, P_int featurizer, action view).
        seed: Seed of the template realizer (and of the listening moves' wordings).
    """

    def __init__(self, policy: StrategyViewPolicy, seed: int | None = None) -> None:
        self.policy = policy
        self.features, self.moves = view_features(
            policy.card, policy.encoder, policy.max_exchanges, policy.view
        )
        self.realizer = TemplateRealizer(policy.card, seed)
        self.strategies: list[int] = []
        self.counts = np.zeros(len(policy.action_names), dtype=np.float32)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Starts a new episode."""
        self.features.reset()
        self.realizer.reset(seed)
        if self.moves is not None:
            self.moves.reset(seed)
        self.strategies = []
        self.counts[:] = 0.0

    def encode(
        self, observation: Mapping[str, Any], privileged: Mapping[str, Any] | None = None
    ) -> StepInput:
        """Both views' inputs for the system observation (and the privileged record)."""
        features = self.features.observe(observation)
        return StepInput(features, self.policy.privileged(privileged, self.counts))

    def act(self, action: Any) -> str:
        """Records action ``action`` and realizes it (a strategy's template, a move's wording)."""
        index = int(action)
        if not 0 <= index < len(self.policy.action_names):
            raise ValueError(f"action index {index} is out of range")
        self.features.record(index)
        self.strategies.append(index)
        self.counts[index] += 1.0
        return realize_view_action(index, self.features, self.moves, self.realizer)


class StrategyViewPolicy:
    """The strategy-level :class:`ViewPolicy`: a :class:`StrategyViewNet` over card strategies.

    With ``view="concern"`` the actions are the listening moves instead
    (:class:`~dialogue_gym.env.wrappers.ListeningMoves`: answer concern *c*, probe, acknowledge,
    reflect, ask) and the student features :class:`~dialogue_gym.env.wrappers.ListeningFeatures`;
    P_int's ``unlock:<move>`` reads an ``answer:<c>`` move as meeting concern *c*'s unlock
    conditions.

    Args:
        card: The task card (its strategies are the actions).
        encoder: Encoder (name or object) of the voiced-concern features.
        max_exchanges: T (default: the card's).
        hidden_sizes: Hidden widths of the MLP.
        generator: torch generator for the initial weights.
        net: A ready network (e.g. loaded from a checkpoint) instead of a new one.
        view: ``"strategy"`` (the card's strategies) or ``"concern"`` (listening moves).

    Raises:
        ValueError: ``net`` does not fit the card, or the card has no listening moves.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: str | Encoder = "minilm",
        max_exchanges: int | None = None,
        hidden_sizes: Sequence[int] = (64, 64),
        generator: torch.Generator | None = None,
        net: StrategyViewNet | None = None,
        view: str = "strategy",
    ) -> None:
        self.card = card
        self.encoder = make_encoder(encoder)
        self.max_exchanges = int(max_exchanges or card.max_exchanges)
        self.view = view
        probe, moves = view_features(card, self.encoder, self.max_exchanges, view)
        self.action_names = view_action_names(card, moves)
        if moves is None:
            actions = [(s.name, s.addresses) for s in card.strategies]
        else:  # an answer move meets its concern's unlock conditions
            actions = [(name, (name.partition(":")[2],)) for name in moves.names]
        self.privileged = PrivilegedFeatures(card, actions)
        self.feature_names = probe.feature_names
        shape = (probe.n_features, self.privileged.n_features, len(self.action_names))
        if net is None:
            net = StrategyViewNet(*shape, hidden_sizes=hidden_sizes, generator=generator)
        elif (net.n_features, net.n_privileged, net.n_actions) != shape:
            raise ValueError(
                f"network shape {(net.n_features, net.n_privileged, net.n_actions)} does not fit "
                f"the card's (features, P_int features, strategies) = {shape}"
            )
        self.net = net

    def new_episode(self, seed: int | None = None) -> StrategyEpisode:
        """A fresh :class:`StrategyEpisode`."""
        return StrategyEpisode(self, seed)

    def parameters(self) -> Iterator[nn.Parameter]:
        """The network's parameters."""
        return self.net.parameters()

    def logits(self, inputs: Sequence[StepInput], view: View) -> torch.Tensor:
        """``(B, k)`` strategy logits of a batch of step inputs under ``view``."""
        features = torch.as_tensor(np.stack([i.features for i in inputs]), dtype=torch.float32)
        privileged = torch.as_tensor(np.stack([i.privileged for i in inputs]), dtype=torch.float32)
        return self.net(features, privileged, view)

    def sample(
        self, inputs: Sequence[StepInput], view: View, generator: torch.Generator
    ) -> tuple[list[int], torch.Tensor]:
        """Samples strategies under ``view``; returns them and their (detached) log-probs."""
        with torch.no_grad():
            logp = torch.log_softmax(self.logits(inputs, view), dim=-1)
            actions = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        return [int(a) for a in actions], logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def log_probs(
        self, inputs: Sequence[StepInput], actions: Sequence[int], view: View
    ) -> torch.Tensor:
        """``(B,)`` log-probs of ``actions`` under ``view``."""
        logp = torch.log_softmax(self.logits(inputs, view), dim=-1)
        index = torch.as_tensor([int(a) for a in actions], dtype=torch.long).unsqueeze(-1)
        return logp.gather(-1, index).squeeze(-1)

    def teacher_targets(
        self, inputs: Sequence[StepInput], actions: Sequence[int] | None = None
    ) -> torch.Tensor:
        """``(B, k)`` teacher-view logits now, without gradients (``actions`` is unused)."""
        with torch.no_grad():
            return self.logits(inputs, TEACHER)

    def view_kl(
        self,
        inputs: Sequence[StepInput],
        actions: Sequence[int] | None = None,
        direction: KLDirection = "forward",
        targets: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``(B,)`` exact KL over strategies between the views, the teacher detached.

        See :func:`~dialogue_gym_agents.siavpo.losses.aopd_kl`. The teacher side is
        ``targets`` (logits from :meth:`teacher_targets`) or the current teacher view.
        ``actions`` is unused: the strategy-level KL sums over every strategy.
        """
        teacher = self.logits(inputs, TEACHER) if targets is None else targets
        return aopd_kl(self.logits(inputs, STUDENT), teacher, direction)

    def entropy(
        self, inputs: Sequence[StepInput], view: View, actions: Sequence[int] | None = None
    ) -> torch.Tensor:
        """``(B,)`` entropy of the strategy distribution under ``view`` (``actions`` unused)."""
        logp = torch.log_softmax(self.logits(inputs, view), dim=-1)
        return -(logp.exp() * logp).sum(dim=-1)

    def info(self) -> dict[str, Any]:
        """What a checkpoint records to rebuild the network and check the layouts."""
        return {
            "view": self.view,
            "max_exchanges": self.max_exchanges,
            "feature_names": list(self.feature_names),
            "privileged_names": list(self.privileged.feature_names),
            "n_features": self.net.n_features,
            "n_privileged": self.net.n_privileged,
            "n_actions": self.net.n_actions,
            "hidden_sizes": list(self.net.hidden_sizes),
        }
