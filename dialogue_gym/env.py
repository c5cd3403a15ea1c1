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

Everything task-specific comes from the card (``card=``): the user model, judges, target state
and, with ``data=``, the real corpus its ``[corpus] name`` names. The user, the judges and the
LLM backend are built in :mod:`dialogue_gym.env_components`; what the env reveals of the user
(the privileged view, concern metrics) in :mod:`dialogue_gym.env_reveal`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from dialogue_gym.argtypes import check_seed
from dialogue_gym.card_schema import exchange_budget
from dialogue_gym.cards import TaskCard, load_card
from dialogue_gym.env_components import (
    CORPORA,
    corpus_pools,
    make_backend_for,
    make_judges,
    make_user,
    pinned,
)
from dialogue_gym.env_reveal import (
    CONCERN_EVENTS,
    concern_metrics,
    discounted,
    privileged_view,
    public_events,
)
from dialogue_gym.judges.base import Exchange, RationalityJudge, SuccessJudge
from dialogue_gym.mentalizers import OracleTeacher, Student, Teacher
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym.mind.latent import LatentSpace, RewardWeights, exchange_rewards
from dialogue_gym.spaces import Utterance
from dialogue_gym.threads import apply_threads
from dialogue_gym.users.base import UserSimulator, UserTurn
from dialogue_gym.users.cognitive import UserPreset

if TYPE_CHECKING:  # the LLM stack loads only when an env uses it
    from dialogue_gym.backends.base import Backend

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

SYSTEM, USER = "system", "user"
SEATS = (SYSTEM, USER)
SPEAKER_ID = {SYSTEM: 0, USER: 1}


Policy = Any  # any object with ``act(observation) -> action`` (see dialogue_gym.agents)


class DialogueEnv(ParallelEnv):
    """A proactive-dialogue episode between a system and a user with a hidden BDI state.

    Args:
        card: Task card name (``"p4g"``), path, or a loaded :class:`TaskCard`.
        user: User preset name (``"soft"``/``"hard"``), a :class:`UserPreset`, or a ready
            :class:`UserSimulator`.
        encoder: Encoder name (``"minilm"``, ``"hashing"``) or object, shared by the latent
            space and the embedded user.
        external: The seats driven by the caller of ``step``: ``("system",)`` (default),
            ``("system", "user")`` (self-play) or ``("user",)``.
        system_policy: Policy filling the system seat when it is not external.
        max_exchanges: Exchange budget T (default: the card's, 8).
        weights: Reward weights (w_prog, w_inf, w_rat, γ).
        alphas: Scalar weights (α_ρ, α_c, α_v) of the latent space.
        privileged: Put the teacher state and simulator internals in ``infos[...]["privileged"]``.
        student: Student mentalizer whose estimate ẑ the system observes (rendered as text)
            and which enters r_S's inference term.
        teacher: Reward-side mentalizer (default: the oracle reading the simulator).
        success_judge: Success judge (default: the embedded state judge).
        rationality_judge: Rationality judge (default: the embedded state judge).
        max_utterance_chars: Longer actions are truncated (flagged).
        render_mode: ``"ansi"`` (``render()`` returns the transcript) or ``"human"`` (prints).
        env_id: Registry id, stamped into infos.
        data: Draw episodes from the task's real corpus instead of the persona bank: a corpus
            folder or file, or ``True`` for the folder in ``$DIALOGUE_GYM_DATA``. Each
            episode's user is built from a real participant profile or situation of the
            ``split`` (see :mod:`dialogue_gym.users.corpus`).
        split: The corpus split to draw from (the held-out ``"test"`` split by default).
        h0_turns: With ``data``, open every episode with this many real turns of the source
            dialogue (context only: the user's state starts from its profile, not from them).
        judges: ``"embedded"`` (default: read the simulator's state) or ``"llm"`` (the paper's
            LLM success judge with n sampled votes and the rationality judge, on ``backend``).
            Explicit ``success_judge``/``rationality_judge`` objects take precedence.
        realizer: ``"template"`` (default) or ``"llm"``: the user's state machine decides and
            the LLM words the reply in the persona's style (cognitive users only).
        backend: The LLM backend for ``judges="llm"``, ``realizer="llm"`` and the
            ``"llm-soft"``/``"llm-hard"`` users: a spec such as ``"openai:gpt-4o-mini"``,
            ``"hf:smollm2"`` or ``"fake"``, or a backend object.
        backend_cache: SQLite record/replay cache for the backend's calls.
        cache_mode: ``"rw"`` (record and replay), ``"replay"`` (replay only: a miss is an error,
            never a call) or ``"off"``.
        backend_options: Keyword arguments for the backend (e.g. ``base_url``,
            ``max_concurrency``, ``api_key_env``, ``timeout``, ``max_retries``).
        threads: Torch intra-op threads for the small encoder (process-wide); ``None``: one
            thread unless ``DIALOGUE_GYM_THREADS`` / ``OMP_NUM_THREADS`` say otherwise (see
            :mod:`dialogue_gym.threads`).

    The user may also be ``"llm-soft"`` / ``"llm-hard"``: an LLM conditioned on its current BDI
    state, profile and goal writes the replies, while the card's simulator tracks the state.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "dialogue_gym_v0",
        "render_modes": ["ansi", "human"],
    }

    def __init__(
        self,
        card: str | TaskCard = "p4g",
        user: str | UserPreset | UserSimulator = "hard",
        encoder: str | Encoder = "minilm",
        external: Sequence[str] = (SYSTEM,),
        system_policy: Policy | None = None,
        max_exchanges: int | None = None,
        weights: RewardWeights | Mapping[str, float] | None = None,
        alphas: Sequence[float] = (1.0, 1.0, 1.0),
        privileged: bool = False,
        student: Student | None = None,
        teacher: Teacher | None = None,
        success_judge: SuccessJudge | Callable[[TaskCard], SuccessJudge] | None = None,
        rationality_judge: RationalityJudge | Callable[[TaskCard], RationalityJudge] | None = None,
        max_utterance_chars: int = 2000,
        render_mode: str | None = None,
        env_id: str | None = None,
        data: str | Path | bool | None = None,
        split: str = "test",
        h0_turns: int = 0,
        judges: str = "embedded",
        realizer: str = "template",
        backend: Any = None,
        backend_cache: str | Path | None = None,
        cache_mode: str = "rw",
        backend_options: Mapping[str, Any] | None = None,
        threads: int | None = None,
    ) -> None:
        apply_threads(threads)  # before any torch model is built (small batches: 1 thread)
        self.card = card if isinstance(card, TaskCard) else load_card(card)
        external = tuple(external)
        if not external or any(seat not in SEATS for seat in external):
            raise ValueError(f"external must be a non-empty subset of {SEATS}, got {external!r}")
        if SYSTEM not in external and system_policy is None:
            raise ValueError("the system seat is internal: pass system_policy=<agent with act()>")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        if max_utterance_chars < 1:
            raise ValueError("max_utterance_chars must be positive")
        self.external = external
        self.system_policy = system_policy
        self.max_exchanges = (
            self.card.max_exchanges if max_exchanges is None else exchange_budget(max_exchanges)
        )
        if weights is None:
            weights = RewardWeights()
        elif isinstance(weights, Mapping):
            weights = RewardWeights(**weights)
        self.weights = weights
        self.encoder = make_encoder(encoder)
        self.latent = LatentSpace(self.encoder, *alphas)
        self._openings: dict[str, tuple[tuple[str, str], ...]] = {}
        if judges not in ("embedded", "llm") or realizer not in ("template", "llm"):
            raise ValueError(
                f"judges must be 'embedded' or 'llm' and realizer 'template' or 'llm', got "
                f"judges={judges!r}, realizer={realizer!r}"
            )
        needs_llm = judges == "llm" or realizer == "llm" or str(user).startswith("llm-")
        if needs_llm and backend is None:
            raise ValueError("LLM components need backend=<spec or object>, e.g. 'openai:MODEL'")
        self.backend: Backend | None = (
            make_backend_for(backend, backend_cache, cache_mode, backend_options or {})
            if needs_llm
            else None
        )
        self._owns_backend = needs_llm and isinstance(backend, str)  # built here: closed here
        if isinstance(user, (str, UserPreset)):
            pools: Mapping[str, Any] = {}
            if data not in (None, False):
                pools = corpus_pools(self.card, data, split, h0_turns)
                self._openings.update(pools.openings)
            user = make_user(self.card, self.encoder, user, realizer, self.backend, pools)
        elif data not in (None, False):
            raise ValueError("data= draws personas for the built-in users; pass a preset as user")
        self.user = user
        self.privileged = privileged
        self.student = student
        self.teacher = teacher or OracleTeacher()
        self.success_judge, self.rationality_judge = make_judges(
            self.card, judges, self.backend, success_judge, rationality_judge
        )
        self.max_utterance_chars = max_utterance_chars
        self.render_mode = render_mode
        self.env_id = env_id or f"{self.card.id}-custom"
        self.possible_agents = list(SEATS)
        self.agents: list[str] = []
        self._z_star = self.latent.encode(self.card.target)
        self._action_space = Utterance(max_length=max_utterance_chars)
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

    # -- PettingZoo API ------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        """The Dict observation space of ``agent`` (always the same object, as PettingZoo asks)."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """An :class:`~dialogue_gym.spaces.Utterance` text space for both seats."""
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
        """Closes the LLM backend this env built (its HTTP clients and SQLite cache file).

        A backend object passed in belongs to the caller and stays open.
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
        assert self.system_policy is not None  # checked in __init__
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
