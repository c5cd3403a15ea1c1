"""Phase 2 of MASP: alternating GRPO self-play (Algorithm 1, lines 5–19).

Per outer iteration: roll out groups of episodes (same episode seed per group) with the user
policy frozen and update the system with GRPO on ``r_S = w_prog·Δs − w_inf·‖ẑ − z‖²_A``; roll out
against the updated system and update the user on ``r_U = −w_prog·Δs + w_rat·q`` through the
env's external user seat; refresh the student on the self-play prefixes with teacher targets
mixed with real silver prefixes. The policies are any
:class:`~dialogue_gym_agents.common.policy.GRPOPolicy` (strategy-level networks or LoRA LMs;
see :mod:`~dialogue_gym_agents.masp.parameterization`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.mind.latent import RewardWeights
from dialogue_gym.users.cognitive import CognitiveUser
from dialogue_gym_agents.common.policy import GRPOPolicy, Seat
from dialogue_gym_agents.common.seeding import (
    derive_seed,
)
from dialogue_gym_agents.common.selfplay import Rollout, grpo_update, play
from dialogue_gym_agents.masp.agent import (
    MASPModels,
    build_features,
)
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.masp.mentalizers import (
    LearnedStudent,
    LearnedTeacher,
    PrefixData,
    mentalizer_errors,
    train_student,
)
from dialogue_gym_agents.masp.silver import SilverTrajectory, persona_split
from dialogue_gym_agents.masp.strategy_policy import (
    StrategySystemSeat,
    StrategyUserSeat,
)

__all__ = ["SelfPlay"]


class SelfPlay:
    """Alternating GRPO self-play (Algorithm 1, lines 5–19) over a fixed set of envs.

    Args:
        card: The task card.
        models: The warm-started models (updated in place).
        silver: The silver cache (its train prefixes are the student refresh's real mix).
        config: The run's config.
        optim_state: Optimizer states of a previous iteration (resuming).
        policies: The ``system`` and ``user`` policies to train (default: the strategy-level
            ones in ``models``) — any :class:`~dialogue_gym_agents.common.policy.GRPOPolicy`,
            e.g. a LoRA causal LM.
        seats: ``seats(env) -> {"system": Seat, "user": Seat}`` connecting those policies to
            one env (default: the strategy-level seats).
        on_update: Called as ``on_update(seat, policy)`` after each GRPO update (e.g. pushing
            an LM adapter to the vLLM server that samples the rollouts).
    """

    def __init__(
        self,
        card: TaskCard,
        models: MASPModels,
        silver: Sequence[SilverTrajectory],
        config: MASPConfig,
        optim_state: dict[str, Any] | None = None,
        policies: Mapping[str, GRPOPolicy] | None = None,
        seats: Callable[[DialogueEnv], Mapping[str, Seat]] | None = None,
        on_update: Callable[[str, GRPOPolicy], Any] | None = None,
    ) -> None:
        self.card, self.models, self.config = card, models, config
        self.on_update = on_update
        self.policies = dict(policies or {"system": models.system, "user": models.user})
        if any(self.policies.get(seat) is None for seat in ("system", "user")):
            raise ValueError("self-play needs a system and a user policy (run the warm start)")
        mentalizers = models.mentalizers
        encoder = mentalizers.featurizer.encoder
        T = mentalizers.featurizer.max_exchanges
        self.selfplay_user = config.opponent == "policy"
        teacher = LearnedTeacher(mentalizers) if config.reward_teacher == "learned" else None
        weights = RewardWeights(config.w_prog, config.w_inf, config.w_rat, config.gamma)
        personas = persona_split(card, config.heldout_fraction)["train"]

        def make_env(external: tuple[str, ...], system_policy: Any = None) -> DialogueEnv:
            user = CognitiveUser(card, encoder, preset=config.selfplay_user, personas=personas)
            return DialogueEnv.from_options(
                card,
                user=user,
                encoder=encoder,
                external=external,
                system_policy=system_policy,
                teacher=teacher,
                max_exchanges=T,
                weights=weights,
                env_id=f"{card.id}-{config.selfplay_user}-selfplay",
            )

        make_seats = seats or self.strategy_seats
        self.envs: list[DialogueEnv] = []
        self.seats: dict[str, list[Seat]] = {"system": [], "user": []}
        for _ in range(config.groups * config.group_size):
            env = make_env(("system", "user") if self.selfplay_user else ("system",))
            self.envs.append(env)
            for name, seat in make_seats(env).items():
                self.seats[name].append(seat)
        # The first groups of each rollout may play a fixed opponent: --opponent-mix those of
        # the system's against the simulator itself, --user-opponent-mix those of the user's
        # against `scripted` (each env its own agent: it keeps per-episode state).
        self.fixed_groups = {
            "system": round(config.groups * config.opponent_mix),
            "user": round(config.groups * config.user_opponent_mix),
        }
        self.fixed_envs: dict[str, list[DialogueEnv]] = {
            "system": [make_env(("system",)) for _ in range(self._fixed("system"))],
            "user": [
                make_env(("user",), system_policy=make_agent("scripted", card=card))
                for _ in range(self._fixed("user"))
            ],
        }
        self.fixed_seats = {
            learner: [make_seats(env)[learner] for env in envs]
            for learner, envs in self.fixed_envs.items()
        }
        system, user = self.policies["system"], self.policies["user"]
        self.system_opt = torch.optim.Adam(
            system.trainable_parameters(), lr=config.learning_rate("system")
        )
        self.user_opt = torch.optim.Adam(
            user.trainable_parameters(), lr=config.learning_rate("user")
        )
        self.student_opt = torch.optim.Adam(mentalizers.student.parameters(), lr=config.student_lr)
        if optim_state is not None:
            self.system_opt.load_state_dict(optim_state["system"])
            self.user_opt.load_state_dict(optim_state["user"])
            self.student_opt.load_state_dict(optim_state["student"])
        self.real = [(h, t.profile) for t in silver if t.split == "train" for h in t.histories()]
        heldout = [t for t in silver if t.split == "heldout"]
        self.heldout = PrefixData.build(heldout, mentalizers.featurizer, mentalizers.latent)

    def _fixed(self, learner: str) -> int:
        """How many envs of each ``learner`` rollout play a fixed opponent."""
        return self.fixed_groups[learner] * self.config.group_size

    def strategy_seats(self, env: DialogueEnv) -> dict[str, Seat]:
        """The strategy-level seats of one env (the system's features count its strategies)."""
        mentalizers = self.models.mentalizers
        T = mentalizers.featurizer.max_exchanges
        system_features, _ = build_features(self.card, mentalizers, T, self.config.view)
        student = LearnedStudent(mentalizers)
        return {
            "system": StrategySystemSeat(self.card, system_features, student, True),
            "user": StrategyUserSeat(self.models.user_features, env.user),  # type: ignore[arg-type]
        }

    def optim_state(self) -> dict[str, Any]:
        """The optimizer states (saved with each iteration, for exact resumption)."""
        return {
            "system": self.system_opt.state_dict(),
            "user": self.user_opt.state_dict(),
            "student": self.student_opt.state_dict(),
        }

    def rollout(self, k: int, learner: str, generator: torch.Generator) -> Rollout:
        """Groups of episodes (one seed per group) with ``learner``'s steps kept.

        With ``--opponent-mix`` the system's rollout plays that share of its groups against the
        simulator, with ``--user-opponent-mix`` the user's against `scripted` (the first
        groups: their seeds, then the groups against the other policy).
        """
        config = self.config
        seeds, groups, seat_seeds = [], [], []
        for g in range(config.groups):
            seed = derive_seed(config.seed, "episode", k, learner, g)
            for member in range(config.group_size):
                seeds.append(seed)
                groups.append(g)
                seat_seeds.append(derive_seed(seed, "seat", member))
        seats = {"system": self.seats["system"]}
        if self.selfplay_user:
            seats["user"] = self.seats["user"]
        # The first groups against the fixed opponent, the rest against the other policy; the
        # same episode seeds as pure self-play's groups, so only the opponent changes.
        cut = self._fixed(learner)
        batches = (
            (self.fixed_envs[learner], {learner: self.fixed_seats[learner]}, slice(0, cut)),
            (self.envs, seats, slice(cut, len(seeds))),
        )
        parts = [
            play(
                envs[part],
                seeds[part],
                groups[part],
                {name: seat[part] for name, seat in seated.items()},
                self.policies,
                learner,
                generator,
                config.gamma,
                seat_seeds[part],
            )
            for envs, seated, part in batches
            if part.start < part.stop
        ]
        rollout, *rest = parts
        for other in rest:
            rollout.extend(other)
        return rollout

    def refresh_student(
        self, prefixes: Sequence[tuple[Any, str]], generator: torch.Generator
    ) -> float:
        """Student epochs on self-play prefixes + real prefixes, with frozen teacher targets."""
        config, mentalizers = self.config, self.models.mentalizers
        n_real = round(len(prefixes) * config.real_fraction / (1.0 - config.real_fraction))
        picks = (
            torch.randint(len(self.real), (n_real,), generator=generator).tolist()
            if self.real
            else []
        )
        mix = [*prefixes, *(self.real[i] for i in picks)]
        histories, profiles = [h for h, _ in mix], [p for _, p in mix]
        inputs = torch.as_tensor(mentalizers.featurizer.history(histories))
        targets = torch.as_tensor(mentalizers.teacher_z(histories, profiles), dtype=torch.float32)
        mentalizers.student.train()
        curve = train_student(
            mentalizers.student, inputs, targets, mentalizers.a_diag,
            config.student_refresh_epochs, 256, generator, self.student_opt,
        )  # fmt: skip
        mentalizers.student.eval()
        return curve[-1] if curve else 0.0

    def iteration(self, k: int) -> dict[str, float]:
        """One outer iteration: system update, user update, student refresh."""
        config, models = self.config, self.models
        generator = torch.Generator().manual_seed(derive_seed(config.seed, "iteration", k))
        update = {
            "epochs": config.update_epochs,
            "minibatch_size": config.grpo_minibatch_size(),
            "clip": config.clip,
            "beta": config.beta,
            "generator": generator,
            "max_grad_norm": config.max_grad_norm,
        }
        point: dict[str, float] = {"iteration": float(k)}
        system_rollout = self.rollout(k, "system", generator)
        point.update({f"system_{n}": v for n, v in system_rollout.stats().items()})
        stats = grpo_update(self.policies["system"], self.system_opt, system_rollout, **update)
        point.update({f"system_grpo_{n}": v for n, v in stats.items()})
        if self.on_update is not None:
            self.on_update("system", self.policies["system"])
        prefixes = list(system_rollout.prefixes)
        if self.selfplay_user and config.update_user:
            user_rollout = self.rollout(k, "user", generator)
            point.update({f"user_{n}": v for n, v in user_rollout.stats().items()})
            beta = config.beta if config.user_beta is None else config.user_beta
            stats = grpo_update(
                self.policies["user"], self.user_opt, user_rollout, **{**update, "beta": beta}
            )
            point.update({f"user_grpo_{n}": v for n, v in stats.items()})
            if self.on_update is not None:
                self.on_update("user", self.policies["user"])
            prefixes += user_rollout.prefixes
        if config.student_refresh_epochs > 0:
            point["student_refresh_loss"] = self.refresh_student(prefixes, generator)
        mentalizers = models.mentalizers
        if len(self.heldout.target):
            errors = mentalizer_errors(
                mentalizers.teacher, mentalizers.student, self.heldout, mentalizers.a_diag
            )
            point["student_heldout_error"] = errors["student_error"]
        return point
