"""The ``siavpo`` agent: a trained SI-AVPO policy plays its student view.

``--agent siavpo:DIR`` loads a checkpoint of ``dialogue-gym train siavpo``: the strategy-level
policy (:class:`SiavpoAgent`) or, for ``--policy lm`` runs, the LM policy
(:class:`~dialogue_gym_agents.siavpo.lm_policy.SiavpoLMAgent`). Both see only what the student
view sees; the teacher's privileged features are never read at play time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    CorruptCheckpointError,
    check_card,
    load_checkpoint,
    load_torch_module,
)
from dialogue_gym_agents.siavpo.policy import (
    KIND,
    POLICY_FILE,
    STUDENT,
    StrategyViewNet,
    StrategyViewPolicy,
)

if TYPE_CHECKING:
    from dialogue_gym_agents.siavpo.lm_policy import SiavpoLMAgent

__all__ = ["SiavpoAgent", "load_view_policy", "siavpo"]


# -- loading the strategy-level policy -------------------------------------------------------------


def load_view_policy(
    folder: str | Path, card: TaskCard, info: Mapping[str, Any], encoder: str | Encoder
) -> StrategyViewPolicy:
    """Rebuilds the :class:`StrategyViewPolicy` of a checkpoint folder.

    Raises:
        CheckpointMismatchError: The card's feature layout differs from the checkpoint's.
        CorruptCheckpointError: The weights cannot be read or do not fit the recorded shape.
    """
    net = load_torch_module(
        lambda: StrategyViewNet(
            int(info["n_features"]),
            int(info["n_privileged"]),
            int(info["n_actions"]),
            tuple(info["hidden_sizes"]),
        ),
        Path(folder) / POLICY_FILE,
        "the siavpo policy",
    )
    try:
        policy = StrategyViewPolicy(
            card,
            encoder,
            max_exchanges=int(info["max_exchanges"]),
            net=net,
            view=str(info.get("view", "strategy")),
        )
    except ValueError as exc:
        raise CheckpointMismatchError(
            f"checkpoint {folder}: {exc}; retrain with this card"
        ) from None
    layouts = (
        (tuple(info.get("feature_names", ())), policy.feature_names),
        (tuple(info.get("privileged_names", ())), policy.privileged.feature_names),
    )
    if any(saved != current for saved, current in layouts):
        raise CheckpointMismatchError(
            f"checkpoint {folder} was trained on another feature layout (the card's concerns "
            "or strategies changed): retrain it with this card"
        )
    return policy


# -- the deployable agent --------------------------------------------------------------------------


class SiavpoAgent:
    """Plays the system seat with the **student view** only: observation → strategy → text.

    Args:
        policy: The trained policy.
        deterministic: Play the most likely strategy (else sample).
        seed: Default seed of sampling and the template realizer (overridden by ``reset``).
    """

    def __init__(
        self, policy: StrategyViewPolicy, deterministic: bool = True, seed: int | None = None
    ) -> None:
        self.policy = policy
        self.card = policy.card
        self.deterministic = deterministic
        self.episode = policy.new_episode(seed)
        self.last_strategy: str | None = None
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: clears the features, reseeds sampling and the realizer."""
        self.episode.reset(seed)
        self._generator = torch.Generator(device="cpu")
        self._generator.manual_seed(0 if seed is None else int(seed))
        self.last_strategy = None

    def choose(self, observation: Mapping[str, Any]) -> int:
        """The strategy index for an observation (not yet recorded)."""
        step = self.episode.encode(observation, None)
        if self.deterministic:
            with torch.no_grad():
                return int(torch.argmax(self.policy.logits([step], STUDENT)[0]))
        actions, _ = self.policy.sample([step], STUDENT, self._generator)
        return actions[0]

    def act(self, observation: Mapping[str, Any]) -> str:
        """The next system utterance."""
        index = self.choose(observation)
        self.last_strategy = self.policy.action_names[index]
        return self.episode.act(index)


def siavpo(
    card: TaskCard,
    checkpoint: str | Path | None = None,
    seed: int | None = None,
    deterministic: bool | None = None,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    device: str = "auto",
    batch_size: int = 8,
    **kwargs: Any,
) -> SiavpoAgent | SiavpoLMAgent:
    """The ``siavpo`` agent factory: ``--agent siavpo:DIR``.

    Dispatches on the checkpoint's ``info["policy"]``: a strategy-level checkpoint gives a
    :class:`SiavpoAgent`, an LM one (``--policy lm``) a
    :class:`~dialogue_gym_agents.siavpo.lm_policy.SiavpoLMAgent`; both play the student view only.

    Args:
        card: The task card of the env (must be the checkpoint's task; for a strategy-level
            policy also its strategy set).
        checkpoint: A folder written by ``dialogue-gym train siavpo``.
        seed: Default seed.
        deterministic: Strategy: the most likely strategy (default: as trained, normally
            ``True``). LM: ``True`` decodes greedily.
        temperature: LM: sampling temperature (default: the run's ``--eval-temperature``).
        max_new_tokens: LM: override the reply limit.
        device: LM: torch device.
        batch_size: LM: rows per ``generate`` call.
        **kwargs: Other agent options of the evaluation harness (ignored).

    Raises:
        CheckpointError: No checkpoint, or it is missing, corrupt, of another kind, or trained
            for another task, strategy set or feature layout.
        ModelNotFoundError: An LM checkpoint's base model path no longer exists.
    """
    ckpt = load_checkpoint(checkpoint, kind=KIND, card=card, check_strategies=False)
    kind = str(ckpt.info.get("policy", ckpt.config.get("policy", "strategy")))
    if kind == "lm":
        from dialogue_gym_agents.siavpo.lm_policy import load_lm_agent

        return load_lm_agent(
            ckpt,
            card,
            seed=seed,
            temperature=temperature,
            deterministic=deterministic,
            max_new_tokens=max_new_tokens,
            device=device,
            batch_size=batch_size,
        )
    if kind != "strategy":
        raise CorruptCheckpointError(f"checkpoint {ckpt.path} has an unknown policy {kind!r}")
    check_card(ckpt, card, strategies=True)
    encoder = str(ckpt.config.get("encoder", "minilm"))
    policy = load_view_policy(ckpt.path, card, ckpt.info, encoder)
    if deterministic is None:
        deterministic = bool(ckpt.config.get("deterministic", True))
    return SiavpoAgent(policy, deterministic=deterministic, seed=seed)
