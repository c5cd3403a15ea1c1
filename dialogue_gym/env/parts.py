"""The built components a :class:`~dialogue_gym.env.dialogue_env.DialogueEnv` is assembled from.

The env is *assembled, not configured*: it receives ready objects — the task card, the user
simulator, the :class:`Judges`, the :class:`Mind` (latent space and mentalizers), the
:class:`~dialogue_gym.mind.latent.RewardWeights`, the :class:`Seats`, the plain
:class:`EnvOptions` and, when LLM components are used, the :class:`LLMLink` — and never builds
anything, loads a file or changes a process-wide setting itself. Turning names and keyword
options (``encoder="minilm"``, ``judges="llm"``, ``backend="openai:..."``, ``threads=1``) into
these parts is :func:`dialogue_gym.env.components.assemble_env`'s job, which
:func:`dialogue_gym.make` and :meth:`DialogueEnv.from_options` call.

Each part checks its own values when it is made (bad seats, render mode or budget fail there,
with the messages the env's keyword options always gave).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.schema import exchange_budget
from dialogue_gym.judges.base import RationalityJudge, SuccessJudge
from dialogue_gym.mentalizers import OracleTeacher, Student, Teacher
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.mind.latent import LatentSpace, RewardWeights
from dialogue_gym.users.base import UserSimulator

if TYPE_CHECKING:  # the LLM stack loads only when an env uses it
    from dialogue_gym.backends.base import Backend

__all__ = [
    "RENDER_MODES",
    "SEATS",
    "SYSTEM",
    "USER",
    "EnvOptions",
    "EnvParts",
    "Judges",
    "LLMLink",
    "Mind",
    "Opening",
    "Policy",
    "Seats",
]

SYSTEM, USER = "system", "user"
SEATS = (SYSTEM, USER)
RENDER_MODES = ("ansi", "human")

Policy = Any  # any object with ``act(observation) -> action`` (see dialogue_gym.evaluation.agents)
Opening = tuple[tuple[str, str], ...]
"""Real (role, text) turns that open an episode."""


@dataclasses.dataclass(frozen=True)
class Seats:
    """Who fills each seat: the caller of ``step`` (external) or an internal policy.

    Attributes:
        external: The seats driven by the caller of ``step``: ``("system",)`` (default),
            ``("system", "user")`` (self-play) or ``("user",)``. The user seat, when not
            external, is the env's user simulator.
        system_policy: The policy filling the system seat when it is not external.

    Raises:
        ValueError: ``external`` is empty or names an unknown seat, or the system seat is
            internal without a ``system_policy``.
    """

    external: tuple[str, ...] = (SYSTEM,)
    system_policy: Policy | None = None

    def __post_init__(self) -> None:
        external = tuple(self.external)
        if not external or any(seat not in SEATS for seat in external):
            raise ValueError(f"external must be a non-empty subset of {SEATS}, got {external!r}")
        if SYSTEM not in external and self.system_policy is None:
            raise ValueError("the system seat is internal: pass system_policy=<agent with act()>")
        object.__setattr__(self, "external", external)


@dataclasses.dataclass(frozen=True)
class Judges:
    """The per-exchange judges.

    Attributes:
        success: Decides whether the task goal was reached (label, score, votes).
        rationality: Scores the user's reply q ∈ {+1, −1, 0}.
    """

    success: SuccessJudge
    rationality: RationalityJudge


@dataclasses.dataclass(frozen=True)
class Mind:
    """The latent space the rewards are measured in, and the mentalizers that read the user.

    Attributes:
        latent: The latent space z (its encoder, shared with the embedded user, and α weights).
        teacher: The reward-side mentalizer (default: the oracle reading the simulator).
        student: The mentalizer whose estimate ẑ the system observes (rendered as text) and
            which enters r_S's inference term; ``None``: no estimate.
    """

    latent: LatentSpace
    teacher: Teacher = dataclasses.field(default_factory=OracleTeacher)
    student: Student | None = None

    @property
    def encoder(self) -> Encoder:
        """The latent space's sentence encoder."""
        return self.latent.encoder


@dataclasses.dataclass(frozen=True)
class EnvOptions:
    """Plain settings of an env (no components).

    Attributes:
        max_exchanges: Exchange budget T; ``None``: the card's (8).
        privileged: Put the teacher state and simulator internals in
            ``infos[...]["privileged"]``.
        max_utterance_chars: Longer actions are truncated (flagged).
        render_mode: ``"ansi"`` (``render()`` returns the transcript), ``"human"`` (prints) or
            ``None``.
        env_id: Registry id stamped into infos; ``None``: ``"<task id>-custom"``.
        openings: Persona (or listing) id → real turns that open its episodes (from a corpus,
            ``h0_turns``).

    Raises:
        ValueError: A bad render mode, utterance limit or exchange budget.
    """

    max_exchanges: int | None = None
    privileged: bool = False
    max_utterance_chars: int = 2000
    render_mode: str | None = None
    env_id: str | None = None
    openings: Mapping[str, Opening] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.render_mode is not None and self.render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {list(RENDER_MODES)}")
        if self.max_utterance_chars < 1:
            raise ValueError("max_utterance_chars must be positive")
        if self.max_exchanges is not None:
            object.__setattr__(self, "max_exchanges", exchange_budget(self.max_exchanges))
        object.__setattr__(self, "openings", MappingProxyType(dict(self.openings)))


@dataclasses.dataclass(frozen=True)
class LLMLink:
    """The LLM backend the env's components call, and whether the env owns it.

    Attributes:
        backend: The backend (shared by the LLM user, realizer and judges).
        owned: Built for this env, so :meth:`DialogueEnv.close` closes it; a backend the
            caller passed in stays open.
    """

    backend: Backend
    owned: bool = False


@dataclasses.dataclass(frozen=True)
class EnvParts:
    """Everything :class:`~dialogue_gym.env.dialogue_env.DialogueEnv` is built from (its arguments).

    Attributes:
        card: The task card.
        user: The user simulator filling the user seat.
        judges: The success and rationality judges.
        mind: The latent space and the mentalizers.
        reward: The reward weights and discount.
        seats: Which seats are external; the internal system policy.
        options: Budget, privileged infos, limits, rendering, id, openings.
        llm: The LLM backend, when a component uses one.
    """

    card: TaskCard
    user: UserSimulator
    judges: Judges
    mind: Mind
    reward: RewardWeights = dataclasses.field(default_factory=RewardWeights)
    seats: Seats = dataclasses.field(default_factory=Seats)
    options: EnvOptions = dataclasses.field(default_factory=EnvOptions)
    llm: LLMLink | None = None

    def as_kwargs(self) -> dict[str, Any]:
        """The parts by name, as ``DialogueEnv(**parts.as_kwargs())`` takes them."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
