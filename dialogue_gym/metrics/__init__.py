"""Episode-level metrics for proactive dialogue evaluation (MASP-style).

An *episode* is a sequence of at most ``T`` exchanges (system utterance followed by a user
reply). After every exchange a success judge decides whether the dialogue goal has been
reached and a rationality judge scores the system turn with ``q ∈ {+1, -1, 0}``.

Episode records
---------------
Every function here takes episode records as plain mappings (``dict`` as read from JSONL;
objects with attributes are *not* supported). The keys used are:

* ``success`` (``bool``): whether the success judge ever fired.
* ``success_turn`` (``int | None``): 1-based exchange index ``τ_s`` at which success was
  judged, ``None`` if never.
* ``q`` (``list[int]``): rationality score per exchange, ``q[0]`` belongs to exchange 1. It may
  be shorter than ``T`` when the episode ended early; a missing entry counts as ``0``.
* ``errored`` (``bool``, default ``False``): an agent/backend failure. Errored episodes are
  **excluded from every rate** and only counted separately (``n_errored``).
* Optional: ``T``, ``episode``, ``seed``, ``env_id``, ``agent`` (used for pairing/reporting
  only; the horizon used by a metric is always its ``T`` argument).
* ``sl`` (``float``, tasks with a deal judge only — CraigslistBargain): the episode's
  sale-to-list ratio, see below. Records without it (every other task) get no SL anywhere.

Metrics
-------
(:mod:`dialogue_gym.metrics.rates`; summaries, pairing and the text table in
:mod:`dialogue_gym.metrics.summary`)
Let ``E`` be the non-errored episodes, ``N = |E|`` and ``𝟙[·]`` the indicator function.

* Success rate within ``t`` exchanges::

      SR@t = (1/N) Σ_e 𝟙[success_e ∧ 1 ≤ τ_s(e) ≤ t]

* Average turns, with failures (no success within ``T``) counted as ``T``::

      AT = (1/N) Σ_e (τ_s(e) if success within T else T)

* Rationality-constrained success rate with threshold ``τ_q`` (default 0.70)::

      RCSR@t = (1/N) Σ_e 𝟙[success_e ∧ τ_s(e) ≤ t ∧ (1/τ_s(e)) Σ_{k=1..τ_s(e)} q_k ≥ τ_q]

* Curves ``SR@t`` and ``RCSR@t`` for ``t = 1..T``; both are non-decreasing in ``t`` and their
  last points equal ``SR@T`` and ``RCSR@T``.
* Worst case over a user ensemble: ``min_g metric(E_g)``, reporting the minimising group.
* Sale-to-list ratio (PPDPP's SL) for negotiation tasks, whose records carry ``sl``::

      SL = (1/N) Σ_e sl_e,   sl_e = (p_deal − p_seller) / (p_buyer − p_seller), 0 without a deal

  where ``p_seller`` is the listing price (the seller's target) and ``p_buyer`` the buyer's
  target: the buyer-normalized utility of the first deal the judge recognized (1: the buyer's
  target, 0: the asking price or no deal, negative: above the asking price). SR alone can be
  gamed by capitulating ("Deal at $LISTING"), so negotiation leaderboards rank by SL
  (:func:`rank_rows`) and report it next to SR with a bootstrap CI.

Rates over an empty set (no non-errored episodes) are ``float('nan')``, never an exception.

Uncertainty
-----------
(:mod:`dialogue_gym.metrics.bootstrap`)
Confidence intervals are percentile bootstraps over episodes (default 10,000 resamples)
drawn from ``np.random.default_rng(seed)`` (the global NumPy RNG is never touched). Two runs
evaluated on the same episodes are compared with a *paired* bootstrap: episode indices are
resampled jointly, i.e. the per-episode differences ``a_i - b_i`` are resampled.

A claim about a training method is tested over training seeds instead
(:mod:`dialogue_gym.metrics.seeds`): one value per seed, a Student-t interval of their mean
(:func:`seed_level_ci`) and a paired t-interval of two methods' per-seed differences
(:func:`paired_seed_diff`).
"""

from dialogue_gym.metrics.bootstrap import (
    N_BOOTSTRAP,
    Interval,
    PairedDiff,
    bootstrap_ci,
    paired_bootstrap_diff,
)
from dialogue_gym.metrics.rates import (
    DEFAULT_T,
    TAU_Q,
    average_turns,
    episode_sl,
    rc_success_within,
    rcsr,
    rcsr_curve,
    sale_to_list,
    sl_from_steps,
    sr_curve,
    success_rate,
    success_within,
    turns_to_success,
)
from dialogue_gym.metrics.seeds import paired_seed_diff, seed_level_ci
from dialogue_gym.metrics.summary import (
    DEFAULT_COLUMNS,
    format_table,
    pair_records,
    rank_rows,
    summarize,
    worst_case,
)

__all__ = [
    "DEFAULT_COLUMNS",
    "DEFAULT_T",
    "N_BOOTSTRAP",
    "TAU_Q",
    "Interval",
    "PairedDiff",
    "average_turns",
    "bootstrap_ci",
    "episode_sl",
    "format_table",
    "pair_records",
    "paired_bootstrap_diff",
    "paired_seed_diff",
    "rank_rows",
    "rc_success_within",
    "rcsr",
    "rcsr_curve",
    "sale_to_list",
    "seed_level_ci",
    "sl_from_steps",
    "sr_curve",
    "success_rate",
    "success_within",
    "summarize",
    "turns_to_success",
    "worst_case",
]
