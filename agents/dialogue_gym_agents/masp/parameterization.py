"""MASP's two parameterizations behind one interface: the trainer never asks which it has.

``--policy strategy`` (:class:`StrategyPolicies`): small torch networks choose the system's
strategy and the user's response act; phase 1 clones them (:mod:`~dialogue_gym_agents.masp.
warm_start`) and they are saved inside the MASP models. ``--policy lm`` (:class:`LMPolicies`):
LoRA causal LMs in both seats (:mod:`~dialogue_gym_agents.masp.lm_policy`); phase 1 loads their
``sft-lora`` checkpoints (or fresh adapters) and the adapters are saved next to the
mentalizers. Both then train through the same :class:`~dialogue_gym_agents.masp.selfplay.
SelfPlay` loop, because both policies are :class:`~dialogue_gym_agents.common.policy.GRPOPolicy`.

:class:`Parameterization` is what :func:`~dialogue_gym_agents.masp.train.train_masp` needs from
one; :data:`PARAMETERIZATIONS` maps ``--policy`` to it (a new parameterization adds a row).
The LM one imports torch's LM stack (transformers, peft) only when its methods run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import torch

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym_agents.common.checkpoint import Checkpoint
from dialogue_gym_agents.common.policy import GRPOPolicy, Seat
from dialogue_gym_agents.common.seeding import derive_seed, generators
from dialogue_gym_agents.masp.agent import MASPModels
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.masp.mentalizers import LearnedStudent
from dialogue_gym_agents.masp.silver import SilverTrajectory
from dialogue_gym_agents.masp.warm_start import warm_start

__all__ = [
    "PARAMETERIZATIONS",
    "LMPolicies",
    "Parameterization",
    "SelfPlaySetup",
    "StrategyPolicies",
    "WarmStart",
    "parameterization",
]


@dataclasses.dataclass
class WarmStart:
    """What phase 1 produced.

    Attributes:
        bc: The record stored as the checkpoints' ``bc`` info (per seat).
        info: More manifest info of the phase-1 checkpoint.
        saved: Policies saved beside the MASP models in the checkpoint (LM adapters), or
            ``None`` when the models already hold them.
        scalars: Per seat, the scalars logged under ``bc_SEAT/``.
    """

    bc: dict[str, Any]
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    saved: Mapping[str, Any] | None = None
    scalars: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class SelfPlaySetup:
    """How phase 2 plays: the arguments :class:`~dialogue_gym_agents.masp.selfplay.SelfPlay` takes.

    Attributes:
        policies: The ``system`` and ``user`` policies to train (``None``: the strategy-level
            ones inside the MASP models).
        seats: ``seats(env) -> {"system": Seat, "user": Seat}`` (``None``: the strategy seats).
        on_update: Called as ``on_update(seat, policy)`` after each GRPO update.
        saved: Policies saved beside the MASP models in every iteration's checkpoint.
    """

    policies: Mapping[str, GRPOPolicy] | None = None
    seats: Callable[[DialogueEnv], Mapping[str, Seat]] | None = None
    on_update: Callable[[str, Any], Any] | None = None
    saved: Mapping[str, Any] | None = None


class Parameterization(Protocol):
    """What the MASP trainer needs from a parameterization of the two seats' policies."""

    def check_sources(self, card: TaskCard, config: MASPConfig) -> None:
        """Fails before any training on what phase 1 would load."""
        ...

    def default_threads(self) -> int:
        """Torch's intra-op threads when ``--threads`` is not given."""
        ...

    def warm_start(
        self,
        card: TaskCard,
        models: MASPModels,
        silver: list[SilverTrajectory],
        config: MASPConfig,
    ) -> WarmStart:
        """Phase 1: both seats' policies, frozen as their KL references."""
        ...

    def describe_warm_start(self, bc: Mapping[str, Any]) -> str:
        """One line on phase 1 (from the checkpoint's ``bc`` record)."""
        ...

    def selfplay_setup(
        self,
        ckpt: Checkpoint,
        card: TaskCard,
        models: MASPModels,
        config: MASPConfig,
        served: Path,
    ) -> SelfPlaySetup:
        """Phase 2's policies and seats, from the checkpoint training resumes from."""
        ...


class StrategyPolicies:
    """``--policy strategy``: behaviour-cloned networks over features, inside the MASP models."""

    def check_sources(self, card: TaskCard, config: MASPConfig) -> None:
        """Nothing to load: the warm start clones from the corpus or the silver episodes."""

    def default_threads(self) -> int:
        """One thread: the networks are small, and one thread keeps runs reproducible."""
        return 1

    def warm_start(
        self,
        card: TaskCard,
        models: MASPModels,
        silver: list[SilverTrajectory],
        config: MASPConfig,
    ) -> WarmStart:
        """Clones both policies into ``models`` (see :func:`~.warm_start.warm_start`)."""
        bc = warm_start(
            card, models, silver, config, generators(derive_seed(config.seed, "phase1"))
        )
        scalars = {
            seat: {k: v for k, v in bc[seat].items() if isinstance(v, float)}
            for seat in ("system", "user")
        }
        return WarmStart(bc=bc, scalars=scalars)

    def describe_warm_start(self, bc: Mapping[str, Any]) -> str:
        """How many turns each seat was cloned on, and how well."""
        return (
            f"phase 1: system cloned on {int(bc['system']['examples'])} turns (accuracy "
            f"{bc['system']['accuracy']:.2f}), user on {int(bc['user']['examples'])} "
            f"replies (accuracy {bc['user']['accuracy']:.2f})"
        )

    def selfplay_setup(
        self,
        ckpt: Checkpoint,
        card: TaskCard,
        models: MASPModels,
        config: MASPConfig,
        served: Path,
    ) -> SelfPlaySetup:
        """The policies and seats of the loaded models (self-play's defaults)."""
        return SelfPlaySetup()


class LMPolicies:
    """``--policy lm``: LoRA causal LMs in both seats, their adapters beside the mentalizers."""

    def check_sources(self, card: TaskCard, config: MASPConfig) -> None:
        """The ``sft-lora`` checkpoints (or the base model) and the device are usable."""
        from dialogue_gym_agents.sft.warm_start import check_policy_sources

        inits = {"system": config.system_init, "user": config.user_init}
        check_policy_sources(card, inits, config.model, config.device)

    def default_threads(self) -> int:
        """All of torch's threads: LM forward passes dominate the run."""
        return torch.get_num_threads()

    def warm_start(
        self,
        card: TaskCard,
        models: MASPModels,
        silver: list[SilverTrajectory],
        config: MASPConfig,
    ) -> WarmStart:
        """Both seats' LM policies, frozen as KL references.

        Each comes from its ``sft-lora`` checkpoint (``--system-init``, ``--user-init``) or is
        a fresh adapter on ``--model``; what it was built from is recorded in the checkpoints.
        """
        from dialogue_gym_agents.sft.warm_start import build_policy

        policies, bases = {}, {}
        for seat, init, temperature in (
            ("system", config.system_init, config.temperature),
            ("user", config.user_init, config.user_temperature),
        ):
            policies[seat], bases[seat] = build_policy(
                seat=seat,
                init=init,
                model=config.model,
                lora_r=config.lora_r,
                lora_alpha=config.lora_alpha,
                seed=derive_seed(config.seed, "phase1"),
                device=config.device,
                dtype=config.dtype,
                card=card,
                temperature=temperature,
                max_new_tokens=config.max_new_tokens,
                reference=config.reference,
                batch_size=config.lm_batch_size,
            )
        return WarmStart(bc=bases, info={"lm_policies": bases}, saved=policies)

    def describe_warm_start(self, bc: Mapping[str, Any]) -> str:
        """Where each seat's policy came from."""
        return "phase 1: LM policies (frozen as KL references) — " + "; ".join(
            f"{seat}: {bc[seat]['init'] or 'a fresh adapter on ' + bc[seat]['model']}"
            for seat in ("system", "user")
        )

    def selfplay_setup(
        self,
        ckpt: Checkpoint,
        card: TaskCard,
        models: MASPModels,
        config: MASPConfig,
        served: Path,
    ) -> SelfPlaySetup:
        """The LM policies of ``ckpt``, their seats and the adapter-sync hook.

        With rollout backends, each seat's policy samples on its server, and (with
        ``--sync-adapter``) its adapter is pushed there now and after every update (version
        folders under ``served``).
        """
        from dialogue_gym.backends import make_backend
        from dialogue_gym_agents.common.lm.policy import VLLMAdapterSync
        from dialogue_gym_agents.masp.lm_policy import lm_seats, load_lm_policies

        specs = {"system": config.rollout_backend, "user": config.user_rollout_backend}
        in_flight = config.groups * config.group_size  # one request per env at a time
        backends = {
            seat: make_backend(spec, base_url=config.base_url, max_concurrency=in_flight)
            for seat, spec in specs.items()
            if spec
        }
        policies = load_lm_policies(
            ckpt,
            temperatures={"system": config.temperature, "user": config.user_temperature},
            max_new_tokens=config.max_new_tokens,
            device=config.device,
            dtype=config.dtype,
            batch_size=config.lm_batch_size,
            backends=backends,
        )
        student = LearnedStudent(models.mentalizers)
        budget = config.max_length - config.max_new_tokens
        syncs = {
            seat: VLLMAdapterSync(str(config.base_url), str(spec).split(":", 1)[1], served)
            for seat, spec in specs.items()
            if spec and config.sync_adapter
        }

        def push(seat: str, policy: Any) -> None:
            if seat in syncs:
                syncs[seat](policy)

        for seat, policy in policies.items():
            push(seat, policy)  # the server samples from the policy being trained from the start
        return SelfPlaySetup(
            policies=policies,
            seats=lm_seats(card, student, policies, budget),
            on_update=push if syncs else None,
            saved=policies,
        )


PARAMETERIZATIONS: dict[str, Parameterization] = {
    "strategy": StrategyPolicies(),
    "lm": LMPolicies(),
}
"""``--policy`` → its parameterization."""


def parameterization(config: MASPConfig) -> Parameterization:
    """The parameterization ``config.policy`` names."""
    return PARAMETERIZATIONS[config.policy]
