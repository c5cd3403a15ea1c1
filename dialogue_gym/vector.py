"""Vectorized dialogue envs: N envs stepped together, with batched encoding and LLM calls.

::

    from dialogue_gym.vector import make_vec

    vec = make_vec("P4G-hard", num_envs=16)  # any make() overrides: encoder=, judges=, ...
    obs, infos = vec.reset(seed=0)  # sub-env i gets seed 0 + i
    obs, rewards, terminations, truncations, infos = vec.step(["Hi! How are you?"] * 16)
    rewards[3]["system"]  # per sub-env, the PettingZoo dicts of a lone env

**Three views.** :class:`VectorDialogueEnv` (from :func:`make_vec`) returns, per step, *lists*
with one entry per sub-env, each exactly what a lone :class:`~dialogue_gym.DialogueEnv` returns
(dicts keyed by seat). :class:`SingleAgentVectorEnv` is one seat of it (what RL code trains:
text actions, NumPy arrays of rewards, terminations and truncations) and
:class:`StrategyVectorEnv` the :class:`~dialogue_gym.wrappers.StrategyActions` view (integer
strategy actions, an ``(N, n_features)`` float32 observation array) — the natural entry point
for PPO-style code.

**Actions.** One per sub-env, in order: the utterance of the seat whose turn it is (a ``str``,
or the system's ``{"utterance": str, "estimate": ...}``), or a full PettingZoo action dict
``{seat: action}``. ``None`` leaves a sub-env alone this step (it returns empty dicts, as a
lone env with no agents would); a sub-env with no running episode (never reset, finished with
autoreset ``"disabled"``, or errored) must get ``None``. A wrong number of actions raises
``ValueError``; a malformed action raises ``TypeError`` before any sub-env moves.

**Autoreset** (``autoreset_mode``, as Gymnasium's vector envs):

* ``"next_step"`` (default, Gymnasium's default): the step that ends an episode returns its
  final observation and infos (with the ``episode`` record) like a lone env; the *next* step
  resets that sub-env instead of stepping it — its action is ignored (``None`` is fine) and it
  returns the new episode's first observation and infos, zero rewards and no termination.
* ``"same_step"``: the step that ends an episode also resets the sub-env: it returns the new
  episode's first observation, the final step's rewards, terminations and truncations, and
  infos of the new episode with the final step's under ``"final_info"`` and its observation
  under ``"final_obs"`` (per seat for :class:`VectorDialogueEnv`).
* ``"disabled"``: a finished sub-env waits (``None`` actions) until :meth:`reset_at` — what an
  evaluator that gives each slot a specific episode seed uses.

``autoreset_mask`` says which sub-envs the last ``step`` reset. An automatic reset continues
the sub-env's own random stream (``reset(seed=None)``), so a sub-env plays exactly the
episodes a lone env would play with the same seeds and actions.

**Determinism.** A sub-env reset with seed ``s`` gives exactly the transcript, rewards and
infos of a lone ``make(...)`` env reset with ``s`` and given the same actions, whatever
``num_envs`` is and whatever the other sub-envs do: every sub-env has its own random
generators, and a text's embedding never depends on the other texts encoded with it (see
:class:`~dialogue_gym.mind.encoders.MiniLMEncoder`). For LLM components the sub-envs send the
same requests as lone envs; the answers are the backend's (exact with the fake backend, the
record/replay cache, or a server that is deterministic per request; a local ``hf:`` model
batches requests with padding, which can change a greedy token in rare cases).

**Batching.** The sub-envs share one encoder (one model, one cache) and one LLM backend. Before
stepping, the system utterances of all sub-envs are encoded in one batched call, so that each
sub-env finds its utterance in the cache. With LLM components (or ``threaded=True``) the
sub-envs step on worker threads, and their encoder misses and LLM requests are coalesced into
rounds: when every stepping sub-env waits on such a call, all waiting calls run as one encoder
call and one backend ``complete`` per component — concurrent requests for the
OpenAI-compatible backend (up to its ``max_concurrency``), one padded ``generate`` batch for
the transformers backend. A vector step of N envs with LLM judges therefore waits about one
round of latency per judge call, not N. With the embedded components the gain is bounded by
MiniLM's matrix products, which batching runs ~1.7x more efficiently on a CPU:
``benchmarks/vector_throughput.py`` measures ~1.5x the exchanges/s of independent envs at
N = 16 on 2 cores.

**Errors.** When sub-envs raise while stepping or resetting (an LLM backend failing after its
retries), the others still finish; then :class:`SubEnvError` is raised with each failure and the
results of the others, and the failed sub-envs wait for :meth:`VectorDialogueEnv.reset_at`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from dialogue_gym.backends.base import BaseBackend, Completion, SampleRequest, make_backend
from dialogue_gym.env import SEATS, SYSTEM, DialogueEnv
from dialogue_gym.mind.encoders import CachedEncoder, Encoder, make_encoder
from dialogue_gym.registry import make, spec
from dialogue_gym.wrappers.single_agent import SingleAgent
from dialogue_gym.wrappers.strategy_actions import StrategyActions

__all__ = [
    "AUTORESET_MODES",
    "BatchingBackend",
    "BatchingEncoder",
    "SingleAgentVectorEnv",
    "StepRounds",
    "StrategyVectorEnv",
    "SubEnvError",
    "VectorDialogueEnv",
    "make_vec",
]

AUTORESET_MODES = ("next_step", "same_step", "disabled")

# ``autoreset_mode`` → the value of Gymnasium's ``AutoresetMode`` (in the views' metadata).
_GYMNASIUM_AUTORESET = {"next_step": "NextStep", "same_step": "SameStep", "disabled": "Disabled"}

# Sub-env states: no running episode / running / ended in the last step (next_step autoreset).
_IDLE, _LIVE, _ENDED = "idle", "live", "ended"
_WORD = re.compile(r"\w")


class SubEnvError(RuntimeError):
    """Some sub-envs raised during a vector ``step`` or ``reset``; the others finished.

    Attributes:
        errors: Sub-env index → the exception it raised (its episode is abandoned: the
            sub-env waits for ``reset_at``).
        results: What the call returns otherwise, with empty entries for the failed sub-envs.
    """

    def __init__(self, errors: Mapping[int, BaseException], results: Any) -> None:
        first = min(errors)
        super().__init__(
            f"{len(errors)} sub-env(s) raised: {sorted(errors)}; sub-env {first}: "
            f"{type(errors[first]).__name__}: {errors[first]}"
        )
        self.errors = dict(errors)
        self.results = results


# -- coalescing calls into rounds ---------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class _Call:
    key: Any
    handler: Callable[[list[Any]], list[Any]]
    payload: Any
    result: Any = None
    error: BaseException | None = None
    done: bool = False


class StepRounds:
    """Coalesces the batchable calls of sub-envs stepped on worker threads into rounds.

    :meth:`run` runs tasks (sub-env steps) on a thread pool; they are the round's *members*. A
    member's :meth:`call` (an encoder miss, an LLM request) waits until every member still
    running waits too; then the last one to arrive runs all waiting calls, grouped by key, one
    handler call per group (groups concurrently), and everybody continues. Because each member
    stops at each of its own batchable calls, the rounds — and so what is batched with what —
    depend only on what the sub-envs do, never on thread timing. Calls from other threads, and
    calls made while a round runs, go straight to their handler.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._local = threading.local()
        self._members = 0
        self._pending: list[_Call] = []

    def run(
        self, tasks: Sequence[Callable[[], Any]], pool: ThreadPoolExecutor
    ) -> list[tuple[Any, BaseException | None]]:
        """Runs ``tasks`` as members on ``pool``; returns ``(result, exception)`` per task."""
        with self._cond:
            self._members += len(tasks)
        futures = [pool.submit(self._member, task) for task in tasks]
        return [future.result() for future in futures]

    def call(self, key: Any, handler: Callable[[list[Any]], list[Any]], payload: Any) -> Any:
        """``handler([payload])[0]``, batched with the round's other calls of the same ``key``.

        Args:
            key: Calls with equal keys share one handler call.
            handler: Maps the list of payloads of a round to the list of their results.
            payload: This call's input.

        Raises:
            BaseException: Whatever the handler raised (for every call of its group).
        """
        if getattr(self._local, "role", None) != "member":
            return handler([payload])[0]
        call = _Call(key, handler, payload)
        with self._cond:
            self._pending.append(call)
            ready = self._take_ready()
        if ready:
            self._run_round(ready)
        with self._cond:
            while not call.done:
                self._cond.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def _member(self, task: Callable[[], Any]) -> tuple[Any, BaseException | None]:
        self._local.role = "member"
        try:
            return task(), None
        except BaseException as exc:  # reported per sub-env by the caller
            return None, exc
        finally:
            self._local.role = None
            with self._cond:
                self._members -= 1
                ready = self._take_ready()
            if ready:
                self._run_round(ready)

    def _take_ready(self) -> list[_Call]:
        """The pending calls once every running member waits on one (caller holds the lock)."""
        if self._pending and len(self._pending) >= self._members:
            ready, self._pending = self._pending, []
            return ready
        return []

    def _run_round(self, calls: list[_Call]) -> None:
        role = getattr(self._local, "role", None)
        self._local.role = "round"  # calls made by the handlers go straight through
        try:
            groups: dict[Any, list[_Call]] = {}
            for call in calls:
                groups.setdefault(call.key, []).append(call)
            if len(groups) == 1:
                _run_group(next(iter(groups.values())))
            else:  # e.g. an encoder batch and a judge batch: neither waits for the other
                with ThreadPoolExecutor(len(groups)) as pool:
                    list(pool.map(_run_group, groups.values()))
        finally:
            self._local.role = role
            with self._cond:
                for call in calls:
                    call.done = True
                self._cond.notify_all()


def _run_group(calls: list[_Call]) -> None:
    try:
        results = calls[0].handler([call.payload for call in calls])
        for call, result in zip(calls, results, strict=True):
            call.result = result
    except BaseException as exc:  # every caller of the group sees the failure
        for call in calls:
            call.error = exc


class BatchingEncoder:
    """An encoder whose calls from :class:`StepRounds` members are batched per round.

    Args:
        inner: The encoder that does the work (one call per round, texts deduplicated).
        rounds: The rounds of the vector env whose sub-envs use this encoder.
    """

    def __init__(self, inner: Encoder, rounds: StepRounds) -> None:
        self.inner = inner
        self._rounds = rounds

    @property
    def name(self) -> str:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        return self.inner.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """See :class:`~dialogue_gym.mind.encoders.Encoder`."""
        return self._rounds.call(("encode", id(self)), self._encode_lists, list(texts))

    def _encode_lists(self, lists: list[list[str]]) -> list[np.ndarray]:
        unique = list(dict.fromkeys(text for texts in lists for text in texts))
        rows = np.asarray(self.inner.encode(unique), dtype=np.float32)
        row_of = {text: i for i, text in enumerate(unique)}
        return [rows[[row_of[text] for text in texts]].reshape(len(texts), -1) for texts in lists]


class BatchingBackend(BaseBackend):
    """An LLM backend whose requests from :class:`StepRounds` members are batched per round.

    All requests of a round for one component go to the inner backend as one ``complete``
    call: concurrent HTTP requests for the OpenAI-compatible backend, one padded batch for the
    transformers backend. Usage is the inner backend's (the same ``usage`` dict).

    Args:
        inner: The backend that does the work (a :class:`~dialogue_gym.backends.BaseBackend`).
        rounds: The rounds of the vector env whose sub-envs use this backend.
    """

    def __init__(self, inner: BaseBackend, rounds: StepRounds) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name
        self.usage = inner.usage
        self._rounds = rounds

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | Any]:
        """See :meth:`~dialogue_gym.backends.BaseBackend.complete`."""
        return self._rounds.call(
            ("complete", id(self), component),
            functools.partial(self._complete_lists, component),
            list(requests),
        )

    async def acomplete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | Any]:
        """The inner backend's ``acomplete`` (async callers are not coalesced)."""
        return await self.inner.acomplete(requests, component)

    def _complete_lists(
        self, component: str, lists: list[list[SampleRequest]]
    ) -> list[list[Completion | Any]]:
        flat = self.inner.complete(
            [request for requests in lists for request in requests], component
        )
        out, start = [], 0
        for requests in lists:
            out.append(list(flat[start : start + len(requests)]))
            start += len(requests)
        return out

    def close(self) -> None:
        """Closes the inner backend."""
        self.inner.close()

    def __repr__(self) -> str:
        return f"BatchingBackend({self.inner!r})"


# -- running sub-env tasks ----------------------------------------------------------------------


class _Runner:
    """Runs per-sub-env tasks in this thread or as :class:`StepRounds` members on a pool."""

    def __init__(self, num_envs: int, rounds: StepRounds) -> None:
        self.rounds = rounds
        self._num_envs = num_envs
        self._pool: ThreadPoolExecutor | None = None

    def run(
        self, tasks: Mapping[int, Callable[[], Any]], threaded: bool
    ) -> dict[int, tuple[Any, BaseException | None]]:
        if not threaded or len(tasks) <= 1:
            outcomes: dict[int, tuple[Any, BaseException | None]] = {}
            for i, task in tasks.items():
                try:
                    outcomes[i] = (task(), None)
                except Exception as exc:
                    outcomes[i] = (None, exc)
            return outcomes
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._num_envs, thread_name_prefix="dialogue_gym-vec")
        results = self.rounds.run(list(tasks.values()), self._pool)
        for _, error in results:
            if error is not None and not isinstance(error, Exception):
                raise error  # KeyboardInterrupt, SystemExit: not a sub-env failure
        return dict(zip(tasks, results, strict=True))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


# -- the common machinery of the three views -------------------------------------------------


class _VectorBase:
    """Sub-env states, autoreset, validation and error handling shared by the views.

    A view implements the per-sub-env hooks (``_slot_*``) and :meth:`_collate`.
    """

    num_envs: int
    autoreset_mode: str
    _threaded: bool

    def _init_base(self, num_envs: int, autoreset_mode: str, runner: _Runner) -> None:
        if autoreset_mode not in AUTORESET_MODES:
            raise ValueError(
                f"autoreset_mode must be one of {AUTORESET_MODES}, got {autoreset_mode!r}"
            )
        self.num_envs = num_envs
        self.autoreset_mode = autoreset_mode
        self._runner = runner
        self._states = [_IDLE] * num_envs
        self._closed = False
        self.autoreset_mask = np.zeros(num_envs, dtype=bool)

    # -- hooks ------------------------------------------------------------------------------------

    def _slot_reset(self, i: int, seed: int | None, options: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def _slot_step(self, i: int, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        raise NotImplementedError

    def _slot_finished(self, i: int, result: tuple[Any, Any, Any, Any, Any]) -> bool:
        raise NotImplementedError

    def _check_action(self, i: int, action: Any) -> None:
        """Raises ``TypeError``/``ValueError`` for an action the sub-env would reject."""

    def _prefetch(self, actions: Mapping[int, Any]) -> None:
        """Encodes the texts the stepping sub-envs will encode, in one batched call."""

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        raise NotImplementedError

    def _first_step(self, i: int, obs: Any, info: Any) -> tuple[Any, Any, Any, Any, Any]:
        """The result of a next-step autoreset: the new episode's start, nothing earned."""
        raise NotImplementedError

    def _merge_final(
        self, final: tuple[Any, Any, Any, Any, Any], obs: Any, info: Any
    ) -> tuple[Any, Any, Any, Any, Any]:
        """The result of a same-step autoreset (see the module docstring)."""
        raise NotImplementedError

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        raise NotImplementedError

    # -- API ------------------------------------------------------------------------------------

    @property
    def active(self) -> list[bool]:
        """Per sub-env: whether an episode is running (it takes an action this step)."""
        return [state == _LIVE for state in self._states]

    def reset(
        self,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, list[Any]]:
        """Starts an episode in every sub-env.

        Args:
            seed: ``int``: sub-env ``i`` gets ``seed + i``; a sequence: one seed (or ``None``)
                per sub-env; ``None``: every sub-env continues its own random stream.
            options: Passed to every sub-env's ``reset``.

        Returns:
            Observations and infos, one per sub-env (a view's ``_collate`` format).

        Raises:
            ValueError: A seed sequence of the wrong length.
            SubEnvError: Some sub-envs raised (the others were reset).
        """
        self._check_open()
        if isinstance(seed, bool):
            raise TypeError(f"reset(seed=...) takes an int or one seed per sub-env, got {seed!r}")
        seeds: list[int | None]
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(
                    f"reset(seed=...) needs one seed per sub-env ({self.num_envs}), "
                    f"got {len(seeds)}"
                )
        tasks = {
            i: functools.partial(self._slot_reset, i, seeds[i], options)
            for i in range(self.num_envs)
        }
        outcomes = self._runner.run(tasks, self._threaded)
        obs: list[Any] = []
        infos: list[Any] = []
        errors: dict[int, BaseException] = {}
        for i in range(self.num_envs):
            result, exc = outcomes[i]
            if exc is not None:
                errors[i] = exc
                self._states[i] = _IDLE
                result = self._blank(i)[0], self._blank(i)[4]
            else:
                self._states[i] = _LIVE
            obs.append(result[0])
            infos.append(result[1])
        self.autoreset_mask = np.zeros(self.num_envs, dtype=bool)
        out = self._collate_reset(obs, infos)
        if errors:
            raise SubEnvError(errors, out)
        return out

    def reset_at(
        self, index: int, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, Any]:
        """Starts an episode in sub-env ``index`` only (e.g. an evaluator's next episode seed).

        Args:
            index: The sub-env, ``0 <= index < num_envs``.
            seed: Its episode seed (``None``: continue its random stream).
            options: Passed to its ``reset``.

        Returns:
            That sub-env's observation and info.

        Raises:
            IndexError: ``index`` out of range.
        """
        self._check_open()
        if isinstance(index, bool) or not 0 <= int(index) < self.num_envs:
            raise IndexError(f"sub-env index {index!r} out of range [0, {self.num_envs})")
        index = int(index)
        self._states[index] = _IDLE
        obs, info = self._slot_reset(index, seed, options)
        self._states[index] = _LIVE
        return obs, info

    def step(self, actions: Sequence[Any]) -> tuple[Any, ...]:
        """Steps every sub-env with its action (see the module docstring for actions).

        Args:
            actions: One action per sub-env (``None``: leave it alone this step).

        Returns:
            Observations, rewards, terminations, truncations and infos (a view's format).

        Raises:
            ValueError: Not one action per sub-env.
            TypeError: A malformed action (nothing was stepped).
            RuntimeError: An action for a sub-env with no running episode, or the env is
                closed (nothing was stepped).
            SubEnvError: Some sub-envs raised (the others were stepped).
        """
        self._check_open()
        if isinstance(actions, (str, bytes, Mapping)) or not isinstance(
            actions, (Sequence, np.ndarray)
        ):
            raise TypeError(
                f"actions must be a sequence with one action per sub-env, got "
                f"{type(actions).__name__}"
            )
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(
                f"step() needs one action per sub-env: expected {self.num_envs}, got {len(actions)}"
            )
        stepping: dict[int, Any] = {}
        resetting: list[int] = []
        for i, action in enumerate(actions):
            state = self._states[i]
            if state == _ENDED and self.autoreset_mode == "next_step":
                resetting.append(i)
            elif state == _LIVE:
                if action is not None:
                    self._check_action(i, action)
                    stepping[i] = action
            elif action is not None:
                raise RuntimeError(
                    f"sub-env {i} has no running episode: pass None for it, or start one "
                    "with reset() or reset_at()"
                )
        self._prefetch(stepping)
        tasks: dict[int, Callable[[], Any]] = {
            i: functools.partial(self._slot_step, i, action) for i, action in stepping.items()
        }
        tasks.update({i: functools.partial(self._slot_reset, i, None, None) for i in resetting})
        outcomes = self._runner.run(dict(sorted(tasks.items())), self._threaded)
        results = [self._blank(i) for i in range(self.num_envs)]
        errors: dict[int, BaseException] = {}
        autoreset = np.zeros(self.num_envs, dtype=bool)
        finished: list[int] = []
        for i, (result, exc) in outcomes.items():
            if exc is not None:
                errors[i] = exc
                self._states[i] = _IDLE
            elif i in resetting:
                results[i] = self._first_step(i, *result)
                self._states[i] = _LIVE
                autoreset[i] = True
            else:
                results[i] = result
                if self._slot_finished(i, result):
                    finished.append(i)
                    self._states[i] = _ENDED if self.autoreset_mode == "next_step" else _IDLE
        if self.autoreset_mode == "same_step" and finished:
            resets = {i: functools.partial(self._slot_reset, i, None, None) for i in finished}
            for i, (result, exc) in self._runner.run(resets, self._threaded).items():
                if exc is not None:
                    errors[i] = exc
                    continue
                results[i] = self._merge_final(results[i], *result)
                self._states[i] = _LIVE
                autoreset[i] = True
        self.autoreset_mask = autoreset
        out = self._collate(results)
        if errors:
            raise SubEnvError(errors, out)
        return out

    def _collate_reset(self, obs: list[Any], infos: list[Any]) -> tuple[Any, list[Any]]:
        return obs, infos

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the vector env is closed")


# -- the parallel (PettingZoo) view -----------------------------------------------------------


class VectorDialogueEnv(_VectorBase):
    """N dialogue envs stepped together, one PettingZoo result per sub-env (see the module doc).

    Build it with :func:`make_vec`, which shares one encoder and one LLM backend between the
    sub-envs and batches their calls. Built from ready envs, it batches encoding for envs that
    share an encoder object, and steps envs with LLM backends on threads (their calls overlap
    but are not coalesced unless the envs were built with this class's ``rounds``).

    ``reset`` returns ``(observations, infos)`` and ``step``
    ``(observations, rewards, terminations, truncations, infos)``: lists with one entry per
    sub-env, each what a lone env returns (dicts keyed by seat; empty dicts for a sub-env left
    alone). Drive the sub-envs through one view at a time (this one,
    :class:`SingleAgentVectorEnv` or :class:`StrategyVectorEnv`).

    Args:
        envs: The sub-envs.
        autoreset_mode: ``"next_step"``, ``"same_step"`` or ``"disabled"``.
        threaded: Step the sub-envs on worker threads (default: when they have LLM backends).
        rounds: The :class:`StepRounds` their :class:`BatchingEncoder` /
            :class:`BatchingBackend` were built with (a new one by default).
        owned: Objects closed with this env (what :func:`make_vec` built for it).

    Attributes:
        envs: The sub-envs (``envs[i].revealed()`` after an episode, ...).
        num_envs: N.
        autoreset_mode: The autoreset policy.
        autoreset_mask: Which sub-envs the last ``step`` reset.
        encoder: The sub-envs' (first sub-env's) encoder.
        backend: The sub-envs' (first sub-env's) LLM backend, or ``None``.
        rounds: The :class:`StepRounds` coalescing the sub-envs' calls.

    Raises:
        ValueError: No envs, or an unknown ``autoreset_mode``.
    """

    metadata: Mapping[str, Any] = MappingProxyType(
        {"name": "dialogue_gym_vector_v0", "autoreset_mode": None}
    )

    def __init__(
        self,
        envs: Sequence[DialogueEnv],
        autoreset_mode: str = "next_step",
        threaded: bool | None = None,
        rounds: StepRounds | None = None,
        owned: Sequence[Any] = (),
    ) -> None:
        envs = list(envs)
        if not envs:
            raise ValueError("a vector env needs at least one sub-env")
        rounds = rounds or StepRounds()
        self._init_base(len(envs), autoreset_mode, _Runner(len(envs), rounds))
        self.envs = envs
        self.rounds = rounds
        self._dialogue_envs = [_innermost(env) for env in envs]
        self.encoder = getattr(self._dialogue_envs[0], "encoder", None)
        self.backend = getattr(self._dialogue_envs[0], "backend", None)
        if threaded is None:
            threaded = any(getattr(e, "backend", None) is not None for e in self._dialogue_envs)
        self._threaded = bool(threaded)
        self._owned = list(owned)
        self.possible_agents = list(envs[0].possible_agents)
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}

    @property
    def card(self) -> Any:
        """The task card (of the first sub-env)."""
        return self.envs[0].card

    def observation_space(self, agent: str) -> spaces.Space:
        """A sub-env's observation space of ``agent``."""
        return self.envs[0].observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """A sub-env's action space of ``agent``."""
        return self.envs[0].action_space(agent)

    def render(self) -> list[str | None]:
        """Each sub-env's ``render()``."""
        return [env.render() for env in self.envs]

    def close(self) -> None:
        """Closes the sub-envs, the worker threads and what :func:`make_vec` built (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for env in self.envs:
            env.close()
        self._runner.close()
        for thing in self._owned:
            thing.close()

    def __enter__(self) -> VectorDialogueEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        env_id = getattr(self.envs[0], "env_id", type(self.envs[0]).__name__)
        return f"<VectorDialogueEnv {env_id} x{self.num_envs} autoreset={self.autoreset_mode}>"

    # -- hooks ----------------------------------------------------------------------------------

    def _slot_reset(self, i: int, seed: int | None, options: Any) -> tuple[Any, Any]:
        return self.envs[i].reset(seed=seed, options=options)

    def _slot_step(self, i: int, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        return self.envs[i].step(self._as_dict(i, action))

    def _slot_finished(self, i: int, result: tuple[Any, Any, Any, Any, Any]) -> bool:
        return not self.envs[i].agents

    def _as_dict(self, i: int, action: Any) -> Mapping[str, Any]:
        if isinstance(action, Mapping) and "utterance" not in action:
            return action
        return {self._dialogue_envs[i].turn: action}

    def _check_action(self, i: int, action: Any) -> None:
        if isinstance(action, str):
            return
        if isinstance(action, Mapping):
            if "utterance" in action:
                turn = self._dialogue_envs[i].turn
                if turn != SYSTEM or not isinstance(action["utterance"], str):
                    raise TypeError(
                        f"sub-env {i}: a {{'utterance', 'estimate'}} action is the system's, "
                        f"with a str utterance (it is the {turn!r} seat's turn)"
                    )
                return
            unknown = set(action) - set(SEATS)
            if unknown:
                raise TypeError(
                    f"sub-env {i}: a dict action is {{seat: action}} with seats {SEATS} or the "
                    f"system's {{'utterance', 'estimate'}}; got keys {sorted(map(str, action))}"
                )
            return
        raise TypeError(
            f"sub-env {i}: an action is a str (the utterance of the seat whose turn it is), a "
            f"dict, or None; got {type(action).__name__}"
        )

    def _prefetch(self, actions: Mapping[int, Any]) -> None:
        texts: dict[int, tuple[Any, list[str]]] = {}
        for i, action in actions.items():
            env = self._dialogue_envs[i]
            if env.turn != SYSTEM:
                continue
            text = _system_text(action)
            encoder = getattr(env, "encoder", None)
            if text is None or encoder is None:
                continue
            # What the user simulator will encode: the truncated, stripped utterance.
            text = text[: env.max_utterance_chars].strip()
            if _WORD.search(text) and _encodable(text):
                texts.setdefault(id(encoder), (encoder, []))[1].append(text)
        for encoder, batch in texts.values():
            encoder.encode(list(dict.fromkeys(batch)))

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        return {}, {}, {}, {}, {}

    def _first_step(self, i: int, obs: Any, info: Any) -> tuple[Any, Any, Any, Any, Any]:
        seats = list(obs)
        return (
            obs,
            dict.fromkeys(seats, 0.0),
            dict.fromkeys(seats, False),
            dict.fromkeys(seats, False),
            info,
        )

    def _merge_final(
        self, final: tuple[Any, Any, Any, Any, Any], obs: Any, info: Any
    ) -> tuple[Any, Any, Any, Any, Any]:
        final_obs, rewards, terminations, truncations, final_info = final
        merged = {
            seat: {
                **info.get(seat, {}),
                "final_obs": final_obs.get(seat),
                "final_info": final_info.get(seat, {}),
            }
            for seat in {**final_info, **info}
        }
        return obs, rewards, terminations, truncations, merged

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        return tuple([list(column) for column in zip(*results, strict=True)])


def _innermost(env: Any) -> DialogueEnv:
    """The dialogue env under PettingZoo wrappers (``unwrapped``)."""
    return getattr(env, "unwrapped", env)


def _system_text(action: Any) -> str | None:
    """The system utterance inside a vector action, if there is one."""
    if isinstance(action, Mapping):
        action = action.get("utterance", action.get(SYSTEM))
        if isinstance(action, Mapping):
            action = action.get("utterance")
    return action if isinstance(action, str) else None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: the env repairs them first
        return False
    return True


# -- single-seat views -------------------------------------------------------------------------


# The ignore below: reset/step give infos as a list (one dict per sub-env), not Gymnasium's
# dict of arrays, so _VectorBase.reset's return type differs from VectorEnv's.
class _SeatViewBase(_VectorBase, VectorEnv):  # type: ignore[misc]
    """A view whose sub-envs are single-agent Gymnasium envs over the vector env's sub-envs.

    A ``gymnasium.vector.VectorEnv`` (``gymnasium.make_vec`` builds these views): it has
    Gymnasium's ``num_envs``, ``single_observation_space``/``single_action_space``, batched
    ``observation_space``/``action_space``, ``metadata["autoreset_mode"]`` (an
    ``AutoresetMode``), ``np_random`` and ``close``. One difference: ``infos`` is a list with
    one dict per sub-env (what each sub-env returned), not Gymnasium's dict of arrays.
    """

    def __init__(
        self, vec: VectorDialogueEnv, slots: Sequence[Any], autoreset_mode: str | None
    ) -> None:
        self.vec = vec
        self.slots = list(slots)
        self._init_base(vec.num_envs, autoreset_mode or vec.autoreset_mode, vec._runner)
        self._threaded = vec._threaded
        self.metadata = {
            **vec.metadata,
            "autoreset_mode": AutoresetMode(_GYMNASIUM_AUTORESET[self.autoreset_mode]),
        }
        self.render_mode = getattr(self.slots[0], "render_mode", None)

    def render(self) -> tuple[Any, ...] | None:
        """Each sub-env's ``render()`` (``"ansi"``: the transcripts)."""
        return tuple(slot.render() for slot in self.slots)

    def close(self, **kwargs: Any) -> None:
        """Closes the underlying :class:`VectorDialogueEnv`."""
        self._closed = True
        self.closed = True
        self.vec.close()

    def __enter__(self) -> _SeatViewBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed or self.vec._closed:
            raise RuntimeError("the vector env is closed")

    def _slot_reset(self, i: int, seed: int | None, options: Any) -> tuple[Any, Any]:
        return self.slots[i].reset(seed=seed, options=options)

    def _slot_step(self, i: int, action: Any) -> tuple[Any, Any, Any, Any, Any]:
        return self.slots[i].step(action)

    def _slot_finished(self, i: int, result: tuple[Any, Any, Any, Any, Any]) -> bool:
        return bool(result[2] or result[3])

    def _first_step(self, i: int, obs: Any, info: Any) -> tuple[Any, Any, Any, Any, Any]:
        return obs, 0.0, False, False, info

    def _merge_final(
        self, final: tuple[Any, Any, Any, Any, Any], obs: Any, info: Any
    ) -> tuple[Any, Any, Any, Any, Any]:
        final_obs, reward, terminated, truncated, final_info = final
        return (
            obs,
            reward,
            terminated,
            truncated,
            {**info, "final_obs": final_obs, "final_info": final_info},
        )

    def _arrays(
        self, results: list[tuple[Any, Any, Any, Any, Any]]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rewards = np.array([float(r[1]) for r in results], dtype=np.float64)
        terminations = np.array([bool(r[2]) for r in results], dtype=bool)
        truncations = np.array([bool(r[3]) for r in results], dtype=bool)
        return rewards, terminations, truncations


class SingleAgentVectorEnv(_SeatViewBase):
    """One seat of a :class:`VectorDialogueEnv` (a ``SingleAgent`` per sub-env), with arrays.

    What vectorized RL code trains: a :class:`~dialogue_gym.wrappers.SingleAgent` of ``seat``
    over each sub-env.

    ``reset`` returns ``(observations, infos)`` and ``step``
    ``(observations, rewards, terminations, truncations, infos)``: observations and infos are
    lists (the seat's observation dict and info per sub-env; ``None`` and ``{}`` for a sub-env
    left alone), rewards a float64 array and terminations/truncations bool arrays of shape
    ``(num_envs,)`` (0 and ``False`` for a sub-env left alone).

    Args:
        vec: The vector env (its sub-envs must have only ``seat`` external, or be self-play
            envs with ``other`` playing the other seat).
        seat: ``"system"`` or ``"user"``.
        other: A factory ``other(i) -> agent`` for the other seat of self-play sub-envs.
        autoreset_mode: Default: the vector env's.

    Attributes:
        single_observation_space: A sub-env's observation space of the seat.
        single_action_space: A sub-env's action space of the seat (text).
        observation_space: ``Tuple`` of ``num_envs`` single observation spaces.
        action_space: ``Tuple`` of ``num_envs`` single action spaces.
    """

    def __init__(
        self,
        vec: VectorDialogueEnv,
        seat: str = SYSTEM,
        other: Callable[[int], Any] | None = None,
        autoreset_mode: str | None = None,
    ) -> None:
        slots = [
            SingleAgent(env, seat=seat, other=None if other is None else other(i))
            for i, env in enumerate(vec.envs)
        ]
        super().__init__(vec, slots, autoreset_mode)
        self.seat = seat
        self.single_observation_space = slots[0].observation_space
        self.single_action_space = slots[0].action_space
        # Observations and actions are per-sub-env sequences of the seat's (text) ones.
        self.observation_space = spaces.Tuple([self.single_observation_space] * self.num_envs)
        self.action_space = spaces.Tuple([self.single_action_space] * self.num_envs)

    def _check_action(self, i: int, action: Any) -> None:
        if isinstance(action, str):
            return
        if (
            self.seat == SYSTEM
            and isinstance(action, Mapping)
            and isinstance(action.get("utterance"), str)
        ):
            return
        raise TypeError(
            f"sub-env {i}: a {self.seat} action is a str utterance"
            + (" or {'utterance': str, 'estimate': ...}" if self.seat == SYSTEM else "")
            + f", or None; got {type(action).__name__}"
        )

    def _prefetch(self, actions: Mapping[int, Any]) -> None:
        if self.seat == SYSTEM:
            self.vec._prefetch(actions)

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        return None, 0.0, False, False, {}

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        rewards, terminations, truncations = self._arrays(results)
        return [r[0] for r in results], rewards, terminations, truncations, [r[4] for r in results]

    def __repr__(self) -> str:
        return f"<SingleAgentVectorEnv seat={self.seat!r} of {self.vec!r}>"


class StrategyVectorEnv(_SeatViewBase):
    """The system seat of a :class:`VectorDialogueEnv` as strategy indices and feature arrays.

    A :class:`~dialogue_gym.wrappers.StrategyActions` over each sub-env.

    ``reset`` returns ``(observations, infos)`` and ``step``
    ``(observations, rewards, terminations, truncations, infos)`` with observations a float32
    array of shape ``(num_envs, n_features)`` (zeros for a sub-env left alone), rewards a
    float64 array, terminations/truncations bool arrays and infos a list of dicts. Actions are
    strategy indices (or names), one per sub-env (``None``: leave it alone). The sub-envs step
    on worker threads so that their utterances, realized inside each wrapper, are encoded in
    one batched call per round.

    Args:
        vec: The vector env (default seats: only the system external).
        autoreset_mode: Default: the vector env's.
        **wrapper_kwargs: Passed to every :class:`~dialogue_gym.wrappers.StrategyActions`.

    Attributes:
        single_observation_space: ``Box(0, 1, (n_features,), float32)``.
        single_action_space: ``Discrete(k)`` over the card's strategies.
        observation_space: ``Box`` of shape ``(num_envs, n_features)``.
        action_space: ``MultiDiscrete([k] * num_envs)``.
        feature_names: Names of the features (see ``StrategyActions``).
        strategy_names: The strategies, in action order.
    """

    single_observation_space: spaces.Box
    single_action_space: spaces.Discrete

    def __init__(
        self, vec: VectorDialogueEnv, autoreset_mode: str | None = None, **wrapper_kwargs: Any
    ) -> None:
        slots = [StrategyActions(env, **wrapper_kwargs) for env in vec.envs]
        super().__init__(vec, slots, autoreset_mode)
        # The realized utterances are only known inside the wrappers: coalesce on threads.
        self._threaded = True
        first = slots[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        n_features = first.observation_space.shape[0]
        self.observation_space = spaces.Box(
            0.0, 1.0, shape=(self.num_envs, n_features), dtype=np.float32
        )
        self.action_space = spaces.MultiDiscrete([int(first.action_space.n)] * self.num_envs)
        self.feature_names = first.feature_names
        self.strategy_names = first.strategy_names

    def _check_action(self, i: int, action: Any) -> None:
        names = self.strategy_names
        if isinstance(action, str):
            if action not in names:
                raise ValueError(f"sub-env {i}: unknown strategy {action!r}; strategies: {names}")
            return
        if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
            action = action.reshape(()).item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(
                f"sub-env {i}: a strategy action is an integer index in [0, {len(names)}) or a "
                f"strategy name, or None; got {action!r}"
            )
        if not 0 <= int(action) < len(names):
            raise ValueError(
                f"sub-env {i}: strategy index {int(action)} out of range [0, {len(names)})"
            )

    def _blank(self, i: int) -> tuple[Any, Any, Any, Any, Any]:
        n_features = self.single_observation_space.shape[0]
        return np.zeros(n_features, dtype=np.float32), 0.0, False, False, {}

    def _collate_reset(self, obs: list[Any], infos: list[Any]) -> tuple[Any, list[Any]]:
        return np.stack(obs).astype(np.float32), infos

    def _collate(self, results: list[tuple[Any, Any, Any, Any, Any]]) -> tuple[Any, ...]:
        rewards, terminations, truncations = self._arrays(results)
        observations = np.stack([r[0] for r in results]).astype(np.float32)
        return observations, rewards, terminations, truncations, [r[4] for r in results]

    def __repr__(self) -> str:
        return f"<StrategyVectorEnv Discrete({len(self.strategy_names)}) of {self.vec!r}>"


# -- construction -------------------------------------------------------------------------------


def make_vec(
    env_id: str,
    num_envs: int,
    *,
    autoreset_mode: str = "next_step",
    threaded: bool | None = None,
    per_env_kwargs: Callable[[int], Mapping[str, Any]] | None = None,
    **make_kwargs: Any,
) -> VectorDialogueEnv:
    """Builds ``num_envs`` copies of ``make(env_id, **make_kwargs)`` sharing their components.

    The sub-envs share one encoder (one model and one cache, with batched encoding) and, when
    the configuration uses LLM components, one backend (built once from ``backend``,
    ``backend_cache``, ``cache_mode`` and ``backend_options``) whose requests are batched per
    round. Everything else (users, judges, random generators) is per sub-env.

    Args:
        env_id: A registered id (``"P4G-hard"``).
        num_envs: N >= 1.
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        threaded: Step the sub-envs on worker threads (default: with LLM components).
        per_env_kwargs: ``per_env_kwargs(i)`` → extra overrides for sub-env ``i``, for objects
            that must not be shared, such as a stateful ``system_policy`` agent.
        **make_kwargs: Overrides for every sub-env, as for :func:`dialogue_gym.make`. Objects
            given here (judges, mentalizers, a ``system_policy``) are shared by all sub-envs.

    Returns:
        The :class:`VectorDialogueEnv`.

    Raises:
        ValueError: ``num_envs < 1`` or an unknown ``autoreset_mode``.
        TypeError: ``num_envs`` is not an int.
        RegistryError: Unknown ``env_id``.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
        raise TypeError(f"num_envs must be an int, got {num_envs!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if autoreset_mode not in AUTORESET_MODES:
        raise ValueError(f"autoreset_mode must be one of {AUTORESET_MODES}, got {autoreset_mode!r}")
    resolved = spec(env_id).resolved(**make_kwargs)
    rounds = StepRounds()
    kwargs = dict(make_kwargs)
    kwargs["encoder"] = _shared_encoder(resolved.get("encoder", "minilm"), rounds)
    owned: list[Any] = []
    backend = resolved.get("backend")
    if backend is not None:
        built = make_backend(
            backend,
            cache=resolved.get("backend_cache"),
            cache_mode=resolved.get("cache_mode", "rw"),
            **(dict(resolved.get("backend_options") or {}) if isinstance(backend, str) else {}),
        )
        if built is not backend:
            owned.append(built)  # built here from a spec or a cache: closed with the vector env
        if isinstance(built, BaseBackend):
            built = BatchingBackend(built, rounds)
        kwargs.update(backend=built, backend_cache=None, backend_options=None)
    envs = [
        make(env_id, **{**kwargs, **(per_env_kwargs(i) if per_env_kwargs else {})})
        for i in range(int(num_envs))
    ]
    return VectorDialogueEnv(
        envs, autoreset_mode=autoreset_mode, threaded=threaded, rounds=rounds, owned=owned
    )


def _shared_encoder(encoder: str | Encoder, rounds: StepRounds) -> CachedEncoder:
    """A cache for the sub-envs over the process's encoder, batching its misses per round.

    By name, ``make_encoder`` returns the process-wide cached encoder (one model, one cache):
    the sub-envs' misses are looked up there, so texts a lone env or an earlier vector env
    already encoded are not encoded again.
    """
    return CachedEncoder(BatchingEncoder(make_encoder(encoder), rounds))
