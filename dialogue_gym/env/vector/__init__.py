"""Vectorized dialogue envs: N envs stepped together, with batched encoding and LLM calls.

::

    from dialogue_gym.env.vector import make_vec

    vec = make_vec("P4G-hard", num_envs=16)  # any make() overrides: encoder=, judges=, ...
    obs, infos = vec.reset(seed=0)  # sub-env i gets seed 0 + i
    obs, rewards, terminations, truncations, infos = vec.step(["Hi! How are you?"] * 16)
    rewards[3]["system"]  # per sub-env, the PettingZoo dicts of a lone env

**Three views.** :class:`VectorDialogueEnv` (from :func:`make_vec`) returns, per step, *lists*
with one entry per sub-env, each exactly what a lone :class:`~dialogue_gym.DialogueEnv` returns
(dicts keyed by seat). :class:`SingleAgentVectorEnv` is one seat of it (what RL code trains:
text actions, NumPy arrays of rewards, terminations and truncations) and
:class:`StrategyVectorEnv` the :class:`~dialogue_gym.env.wrappers.StrategyActions` view (integer
strategy actions, an ``(N, n_features)`` float32 observation array) — the natural entry point
for PPO-style code; :class:`ConcernVectorEnv` the same over the listening moves of
:class:`~dialogue_gym.env.wrappers.ConcernActions`.

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

from dialogue_gym.env.vector.base import AUTORESET_MODES, SubEnvError
from dialogue_gym.env.vector.batching import BatchingBackend, BatchingEncoder, StepRounds
from dialogue_gym.env.vector.dialogue import VectorDialogueEnv
from dialogue_gym.env.vector.factory import make_vec
from dialogue_gym.env.vector.seat_views import (
    ConcernVectorEnv,
    SingleAgentVectorEnv,
    StrategyVectorEnv,
)

__all__ = [
    "AUTORESET_MODES",
    "BatchingBackend",
    "BatchingEncoder",
    "ConcernVectorEnv",
    "SingleAgentVectorEnv",
    "StepRounds",
    "StrategyVectorEnv",
    "SubEnvError",
    "VectorDialogueEnv",
    "make_vec",
]
