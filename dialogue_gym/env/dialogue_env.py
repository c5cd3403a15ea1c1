"""The dialogue environment: a PettingZoo ``ParallelEnv`` with a system and a user seat.

Seats are filled either by an external agent (whoever calls :meth:`DialogueEnv.step`) or by an
internal policy (the user simulator, a given system policy). One ``step()`` advances the
dialogue until the next external seat must speak: with only the system external (the default)
one step is one exchange (system utterance → user reply → judges); with both seats external
(self-play) one step is one utterance and ``observation["to_speak"]`` says whose turn it is.

Rewards are paid when an exchange completes (MASP Eq. 15 and the user's counterpart):
``r_S = w_prog·Δs − w_inf·‖ẑ − z‖²_A`` (second term only with an estimate) and
``r_U = −w_prog·Δs + w_rat·q`` plus, at a rational success, the rationality of the exchanges
it spares (:func:`~dialogue_gym.mind.latent.exchange_rewards`); no exchange completed pays 0.

Actions of a seat that is not to speak are ignored (recorded in ``infos[seat]["ignored"]``).
The speaking seat's action must be a ``str`` (the system may pass ``{"utterance": str,
"estimate": BDI | Mapping | vector}``). Empty text is allowed and the user reacts to it as
silence; text longer than ``max_utterance_chars`` is truncated and lone surrogates replaced,
both flagged in ``infos[seat]["fallbacks"]``. ``step`` after the episode ended raises.

The env is *assembled, not configured*: it receives built parts (:mod:`dialogue_gym.env.parts`:
the card, the user simulator, the judges, the mind, the reward weights, the seats, plain options
and the LLM backend) and builds nothing itself. :func:`dialogue_gym.make` and
:meth:`DialogueEnv.from_options` assemble them from keyword options
(:func:`dialogue_gym.env.components.assemble_env`, which also applies the process-wide torch
thread setting); what the env reveals of the user (the privileged view, concern metrics) is in
:mod:`dialogue_gym.env.reveal`.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from dialogue_gym.argtypes import check_seed
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.components import CORPORA, assemble_env, pinned
from dialogue_gym.env.parts import (
    RENDER_MODES,
    SEATS,
    SYSTEM,
    USER,
    EnvOptions,
    Judges,
    LLMLink,
    Mind,
    Policy,
    Seats,
)
from dialogue_gym.env.reveal import (
    CONCERN_EVENTS,
    concern_metrics,
    discounted,
    privileged_view,
    public_events,
)
from dialogue_gym.env.spaces import Utterance
from dialogue_gym.judges.base import Exchange
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.latent import RewardWeights, exchange_rewards
from dialogue_gym.users.base import UserSimulator, UserTurn

__all__ = [
    "CONCERN_EVENTS",
    "CORPORA",
    "SEATS",
    "SPEAKER_ID",
    "SYSTEM",
    "USER",
    "DialogueEnv",
    "Policy",
    "public_events",
]

SPEAKER_ID = {SYSTEM: 0, USER: 1}

_Env = TypeVar("_Env", bound="DialogueEnv")


class _Assembled(type):
    """DialogueEnv's metaclass: a call with keyword options instead of built parts is assembled.

    ``DialogueEnv("p4g", user="hard", encoder="hashing")`` (the constructor's signature before
    the env was assembled from parts) still works, through
    :func:`~dialogue_gym.env.components.assemble_env`, with a ``DeprecationWarning`` naming the
    way to write it now. A call is told apart by its ``mind``: built parts always include a
    :class:`~dialogue_gym.env.parts.Mind`, keyword options never do.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        mind = kwargs.get("mind", args[3] if len(args) > 3 else None)
        if isinstance(mind, Mind):
            return super().__call__(*args, **kwargs)
        warnings.warn(
            f"{cls.__name__}(card, user=..., encoder=..., ...) with keyword options is "
            f"deprecated: call {cls.__name__}.from_options(...) with the same keywords (or "
            f"dialogue_gym.make), or pass built parts: {cls.__name__}(card, user, judges, mind, "
            f"reward, seats, options, llm) (see dialogue_gym.env.parts)",
            DeprecationWarning,
            stacklevel=2,
        )
        return super().__call__(**assemble_env(*args, **kwargs).as_kwargs())

    @property
    def __signature__(cls) -> inspect.Signature:
        """The constructor's parts (what ``help`` and ``inspect.signature`` show), not ``*args``."""
        init = inspect.signature(cls.__init__)  # type: ignore[misc]
        parameters = list(init.parameters.values())[1:]
        return init.replace(parameters=parameters, return_annotation=inspect.Signature.empty)


class DialogueEnv(ParallelEnv, metaclass=_Assembled):
    """A proactive-dialogue episode between a system and a user with a hidden BDI state.

    Built from ready parts (:mod:`dialogue_gym.env.parts`); the constructor builds, loads and
    changes nothing outside the env. To build one from keyword options (a card name, a user
    preset, ``encoder="minilm"``, ``judges="llm"``, ``threads=1``, ...) use
    :func:`dialogue_gym.make` or :meth:`from_options`. Calling ``DialogueEnv(...)`` with those
    keyword options is deprecated: it still works, with a ``DeprecationWarning``.

    Args:
        card: The task card (goal, roles, target state z*, exchange budget).
        user: The user simulator filling the user seat (and reacting to an external user's
            text when the user seat is external).
        judges: The success and rationality judges.
        mind: The latent space (and its encoder), the reward-side teacher and the optional
            student mentalizer.
        reward: Reward weights and discount (default: MASP's).
        seats: Which seats are external, and the internal system policy (default: the caller
            plays the system).
        options: Exchange budget, privileged infos, utterance limit, render mode, env id and
            corpus openings (default: :class:`~dialogue_gym.env.parts.EnvOptions`).
        llm: The LLM backend the components call (``None`` without LLM components); the env
            closes it on :meth:`close` when ``llm.owned``.

    Example:
        >>> env = DialogueEnv.from_options("p4g", user="hard", encoder="hashing")  # doctest: +SKIP
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "dialogue_gym_v0",
        "render_modes": list(RENDER_MODES),
    }

    def __init__(
        self,
        card: TaskCard,
        user: UserSimulator,
        judges: Judges,
        mind: Mind,
        reward: RewardWeights | None = None,
        seats: Seats | None = None,
        options: EnvOptions | None = None,
        llm: LLMLink | None = None,
    ) -> None:
        seats = seats or Seats()
        options = options or EnvOptions()
        self.card = card
        self.external = seats.external
        self.system_policy = seats.system_policy
        self.max_exchanges = (
            card.max_exchanges if options.max_exchanges is None else options.max_exchanges
        )
        self.weights = reward or RewardWeights()
        self.encoder = mind.encoder
        self.latent = mind.latent
        self._openings = dict(options.openings)
        self.backend = llm.backend if llm is not None else None
        self._owns_backend = llm is not None and llm.owned  # built for it: closed by it
        self.user = user
        self.privileged = options.privileged
        self.student = mind.student
        self.teacher = mind.teacher
        self.success_judge, self.rationality_judge = judges.success, judges.rationality
        self.max_utterance_chars = options.max_utterance_chars
        self.render_mode = options.render_mode
        self.env_id = options.env_id or f"{self.card.id}-custom"
        self.possible_agents = list(SEATS)
        self.agents: list[str] = []
        self._z_star = self.latent.encode(self.card.target)
        self._action_space = Utterance(max_length=self.max_utterance_chars)
        text = Utterance(max_length=100_000)
        common = {
            "role": spaces.Discrete(2),
            "to_speak": spaces.Discrete(2),
            "exchange": spaces.Discrete(self.max_exchanges + 1),
            "goal": text,
            "history": spaces.Sequence(
                spaces.Dict({"speaker": spaces.Discrete(2), "text": text}), stack=False
            ),
        }
        self._observation_spaces = {
            SYSTEM: spaces.Dict({**common, "estimate": text}),
            USER: spaces.Dict({**common, "state": text, "profile": text}),
        }
        self._rng = np.random.default_rng()
        self._done = True
        self._reset_state()

    @classmethod
    def from_options(cls: type[_Env], card: str | TaskCard, **options: Any) -> _Env:
        """Builds the env from keyword options, as :func:`dialogue_gym.make` does.

        The options are those of :func:`~dialogue_gym.env.components.assemble_env` (the
        keyword arguments of every registered spec and of ``make``): ``user``, ``encoder``,
        ``external``, ``max_exchanges``, ``judges``, ``backend``, ``data``, ``threads``, ...
        Assembling applies the torch thread setting (process-wide); the constructor does not.

        Args:
            card: Task card name (``"p4g"``), path, or a loaded :class:`TaskCard`.
            **options: Keyword options (see :func:`~dialogue_gym.env.components.assemble_env`).

        Returns:
            The env, built from the assembled parts.
        """
        return cls(**assemble_env(card, **options).as_kwargs())

    # -- PettingZoo API ------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        """The Dict observation space of ``agent`` (always the same object, as PettingZoo asks)."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """An :class:`~dialogue_gym.env.spaces.Utterance` text space for both seats."""
        return self._action_space

    def _reset_state(self) -> None:
        self.history: list[tuple[str, str]] = []
        self.exchange = 0
        self.turn = SYSTEM
        self._pending_estimate: Any = None
        self._s = 0.0
        self._trace: dict[str, list[Any]] = {
            "q": [],
            "s": [],
            "events": [],
            "labels": [],
            "scores": [],
            "r_system": [],
            "r_user": [],
            "states": [],
            "votes": [],
        }
        self._success_turn: int | None = None
        self._outcome: dict[str, Any] = {}
        self._fallback_count = 0

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Starts an episode; the same seed gives the same persona, transcript and rewards.

        Args:
            seed: Seeds the episode (persona draw, user and judge randomness): an int >= 0.
            options: ``{"persona": Persona}`` and/or ``{"listing": Listing}`` pin this episode's
                user to that persona (a seller to that listing) instead of drawing one from the
                pool, e.g. the persona built from one real dialogue
                (:func:`dialogue_gym.users.corpus.personas_from_seeds`); other keys are ignored.

        Raises:
            ValueError: A pin the user model has no pool for, or a bad seed (:func:`check_seed`).
        """
        if check_seed(seed) is not None:
            self._rng = np.random.default_rng(seed)
        self._reset_state()
        self.agents = list(self.possible_agents)
        self._done = False
        with pinned(self.user, options):
            self._z0_bdi = self.user.reset(self._rng)
        drawn = getattr(self.user, "listing", None) or getattr(self.user, "persona", None)
        self.history.extend(self._openings.get(getattr(drawn, "id", ""), ()))
        self._z0 = self.latent.encode(self._z0_bdi)
        self._state_before = self._z0_bdi
        self._z = self._z0
        self._user_before = self.user.privileged()  # Δw and transitions are measured from it
        if self.system_policy is not None and hasattr(self.system_policy, "reset"):
            self.system_policy.reset(seed=int(self._rng.integers(2**31)))
        infos: dict[str, dict[str, Any]] = {a: self._base_info(a) for a in self.agents}
        if self.privileged:  # the teacher view needs P_int before the first system turn
            for seat in self.agents:
                infos[seat]["privileged"] = privileged_view(
                    self.card, self._z0_bdi, self._z0_bdi, self._user_before, self._user_before
                )
        if SYSTEM not in self.external:
            self._internal_system_turn(infos)
        return self._observe_all(), infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        """Applies the speaking seat's action and runs internal seats until an external one.

        Raises:
            RuntimeError: The episode is over (call ``reset``).
            KeyError: No action for the seat that must speak, or an unknown seat.
            TypeError: The action is not text (or a system ``{"utterance", "estimate"}`` dict).
        """
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()")
        if not isinstance(actions, Mapping):
            raise TypeError(
                f"actions must be a dict {{seat: action}}, got {type(actions).__name__}"
            )
        speaker = self.turn
        if speaker not in actions:
            raise KeyError(f"it is the {speaker!r} seat's turn: actions must include {speaker!r}")
        unknown = set(actions) - set(self.possible_agents)
        if unknown:
            raise KeyError(f"unknown seats {sorted(unknown)}; seats are {self.possible_agents}")
        infos = {a: self._base_info(a) for a in self.possible_agents}
        for seat in actions:
            if seat != speaker:
                infos[seat]["ignored"] = True
        rewards = dict.fromkeys(self.possible_agents, 0.0)
        text, estimate = self._coerce(speaker, actions[speaker], infos[speaker])
        if speaker == SYSTEM:
            self._system_says(text, estimate)
            if USER not in self.external:
                self._complete_exchange(self.user.respond(text), rewards, infos, False)
        else:
            turn = self.user.observe(self.history[-1][1], text)
            self._complete_exchange(turn, rewards, infos, True)
        if not self._done and SYSTEM not in self.external:
            self._internal_system_turn(infos)
        for seat in self.possible_agents:
            infos[seat].update(
                exchange=self.exchange, to_speak=self.turn == seat and not self._done
            )
        success = self._success_turn is not None
        terminated: dict[str, bool] = dict.fromkeys(self.possible_agents, success)
        truncated: dict[str, bool] = dict.fromkeys(self.possible_agents, self._done and not success)
        observations = self._observe_all()
        if self._done:
            record = self._episode_record()
            for seat in self.possible_agents:
                infos[seat]["episode"] = record
            self.agents = []
        if self.render_mode == "human":
            self.render()  # prints
        return observations, rewards, terminated, truncated, infos

    def render(self) -> str | None:
        """Returns (``"ansi"``) or prints (``"human"``) the transcript."""
        lines = [f"[{self.env_id}] exchange {self.exchange}/{self.max_exchanges}"]
        lines += [f"{role:>6}: {text}" for role, text in self.history]
        out = "\n".join(lines)
        if self.render_mode == "human":
            print(out)
            return None
        return out

    def close(self) -> None:
        """Closes the LLM backend this env owns (its HTTP clients and SQLite cache file).

        The env owns a backend assembled for it from a spec (``LLMLink.owned``); a backend
        object passed in belongs to the caller and stays open.
        """
        close = getattr(self.backend, "close", None)  # not part of the Backend protocol
        if getattr(self, "_owns_backend", False) and callable(close):
            close()

    # -- internals -----------------------------------------------------------------------------

    def _coerce(self, seat: str, action: Any, info: dict[str, Any]) -> tuple[str, Any]:
        estimate = None
        if isinstance(action, Mapping):
            if seat != SYSTEM or "utterance" not in action:
                raise TypeError(
                    "a dict action must be {'utterance': str, 'estimate': ...} from the system"
                )
            # Checked (and encoded) now, so a bad estimate leaves the episode untouched.
            estimate = self._estimate_vector(action.get("estimate"))
            action = action["utterance"]
        if not isinstance(action, str):
            raise TypeError(
                f"the {seat!r} action must be a str (an utterance), got {type(action).__name__}"
            )
        fallbacks = info["fallbacks"]
        try:
            action.encode("utf-8")
        except UnicodeEncodeError:
            action = action.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            fallbacks.append("action_sanitized")
        if len(action) > self.max_utterance_chars:
            action = action[: self.max_utterance_chars]
            fallbacks.append("action_truncated")
        if not action.strip():
            fallbacks.append("empty_action")
        self._fallback_count += len(fallbacks)
        return action, estimate

    def _system_says(self, text: str, estimate: Any) -> None:
        self.history.append((SYSTEM, text))
        self.turn = USER
        if estimate is None and self.student is not None:
            estimate = self._pending_estimate
        self._pending_estimate = estimate

    def _internal_system_turn(self, infos: dict[str, dict[str, Any]]) -> None:
        assert self.system_policy is not None  # checked by Seats
        action = self.system_policy.act(self._observe(SYSTEM))
        info: dict[str, Any] = {"fallbacks": []}
        text, estimate = self._coerce(SYSTEM, action, info)
        infos[USER]["fallbacks"].extend(f"system_policy:{f}" for f in info["fallbacks"])
        self._system_says(text, estimate)

    def _estimate_vector(self, estimate: Any) -> np.ndarray | None:
        if estimate is None:
            return None
        if isinstance(estimate, BDI):
            return self.latent.encode(estimate)
        if isinstance(estimate, Mapping):
            return self.latent.encode(BDI.from_dict(estimate))
        return self.latent.check_vector(estimate)

    def _complete_exchange(
        self,
        turn: UserTurn,
        rewards: dict[str, float],
        infos: dict[str, dict[str, Any]],
        external_user: bool,
    ) -> None:
        system_text = self.history[-1][1]
        self.history.append((USER, turn.text))
        self.exchange += 1
        self.turn = SYSTEM
        z_prev = self._z
        state_before = self._state_before
        estimate = self._estimate_vector(self._pending_estimate)
        state = self.teacher.infer(self.history, self.user)
        self._state_before = state
        self._z = self.latent.encode(state)
        s_new = self.latent.progress(self._z, self._z0, self._z_star)
        delta_s = s_new - self._s
        self._s = s_new
        privileged = self.user.privileged()
        external_user = external_user or "external_reply" in turn.events
        exchange = Exchange(
            index=self.exchange,
            history=tuple(self.history),
            system=system_text,
            user=turn.text,
            turn=turn,
            privileged=privileged,
            external_user=external_user,
            state_before=state_before,
        )
        # Component fallbacks (an LLM's unusable output replaced by a template) are flagged.
        fallbacks = [e.split(":", 1)[1] for e in turn.events if e.startswith("fallback:")]
        self._fallback_count += len(fallbacks)
        judgment = self.success_judge.judge(exchange)
        q = int(self.rationality_judge.judge(exchange))
        inference_error = None if estimate is None else self.latent.sq_dist(estimate, z_prev)
        left = self.max_exchanges - self.exchange
        rewards[SYSTEM], rewards[USER] = exchange_rewards(
            delta_s, q, self.weights, inference_error, judgment.success, left
        )
        trace = self._trace
        for key, value in (
            ("q", q),
            ("s", s_new),
            ("labels", judgment.label),
            ("scores", judgment.score),
            ("r_system", rewards[SYSTEM]),
            ("r_user", rewards[USER]),
            ("events", turn.events),
            ("states", state),  # converted to dicts only when revealed()
            ("votes", list(judgment.votes)),
        ):
            trace[key].append(value)
        if judgment.success and self._success_turn is None:
            self._success_turn = self.exchange
        self._done = judgment.success or self.exchange >= self.max_exchanges
        details = {
            "success": judgment.success,
            "success_score": judgment.score,
            "success_label": judgment.label,
            "judge_votes": list(judgment.votes),
            "judge_failures": judgment.n_failed,
            "q": q,
            "s": s_new,
            "delta_s": delta_s,
            "inference_error": inference_error,
            "user_events": public_events(turn.events),
        }
        # Task-specific judge outputs (a negotiation's deal price and buyer utility).
        extra = getattr(judgment, "details", None)
        if isinstance(extra, Mapping):
            details.update(extra)
            if judgment.success:
                self._outcome = dict(extra)
        for seat in self.possible_agents:
            infos[seat].update(details)
            infos[seat]["fallbacks"].extend(fallbacks)
            if self.privileged:
                infos[seat]["privileged"] = {
                    **privileged_view(
                        self.card, turn.bdi, self._z0_bdi, self._user_before, privileged
                    ),
                    "user_events": list(turn.events),
                }
        self._user_before = privileged

    def _base_info(self, seat: str) -> dict[str, Any]:
        return {"exchange": self.exchange, "to_speak": self.turn == seat, "fallbacks": []}

    def _observe(self, seat: str) -> dict[str, Any]:
        obs: dict[str, Any] = {
            "role": SPEAKER_ID[seat],
            "to_speak": int(self.turn == seat and not self._done),
            "exchange": self.exchange,
            "goal": self.card.system_brief if seat == SYSTEM else self.card.user_goal,
            "history": tuple({"speaker": SPEAKER_ID[r], "text": t} for r, t in self.history),
        }
        if seat == SYSTEM:
            estimate = ""
            if self.student is not None:
                self._pending_estimate = self.student.estimate(self.history)
                estimate = self._pending_estimate.render()
            obs["estimate"] = estimate
        else:
            obs["state"] = self.user.state.render()
            obs["profile"] = self.user.profile()
        return obs

    def _observe_all(self) -> dict[str, Any]:
        return {seat: self._observe(seat) for seat in self.possible_agents}

    def _episode_record(self) -> dict[str, Any]:
        trace = self._trace
        return {
            "env_id": self.env_id,
            "success": self._success_turn is not None,
            "success_turn": self._success_turn,
            "turns": self.exchange,
            "T": self.max_exchanges,
            "q": list(trace["q"]),
            "s": [round(v, 6) for v in trace["s"]],
            "labels": list(trace["labels"]),
            "scores": [round(v, 6) for v in trace["scores"]],
            # Returns Σ_t γ^t r_t (γ of the reward weights, MASP's objective) and the plain sums.
            "return_system": discounted(trace["r_system"], self.weights.gamma),
            "return_user": discounted(trace["r_user"], self.weights.gamma),
            "sum_reward_system": float(sum(trace["r_system"])),
            "sum_reward_user": float(sum(trace["r_user"])),
            "fallbacks": self._fallback_count,
            **concern_metrics(self.user.privileged().get("concerns"), trace["events"]),
            **{k: v for k, v in self._outcome.items() if k in ("deal_price", "utility")},
        }

    def revealed(self) -> dict[str, Any]:
        """The hidden side of the episode so far, for reports and analysis after it ends.

        Never part of an observation or of the (unprivileged) infos: evaluators call it once an
        episode is over to show the user's mental state next to the transcript.

        Returns:
            ``initial_state`` (the user's BDI before the dialogue), ``states`` (the teacher's
            BDI after each exchange), ``votes`` (the success judge's raw votes per exchange) and
            ``user_events`` (the user's events per exchange, concern ids included).
        """
        return {
            "initial_state": self._z0_bdi.to_dict(),
            "states": [state.to_dict() for state in self._trace["states"]],
            "user_events": [list(events) for events in self._trace["events"]],
            "votes": list(self._trace["votes"]),
        }
