"""The numbers of a report, all from :mod:`dialogue_gym.metrics`.

:func:`summary_rows` recomputes the summaries ``evaluate`` writes (same order, same bootstrap
seed: same numbers), :func:`paired_rows` the paired differences of two runs and
:func:`worst_case_rows` the worst case over user types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from dialogue_gym import metrics
from dialogue_gym.report.cells import is_number
from dialogue_gym.report.load import Run

__all__ = ["group_horizon", "group_tau_q", "paired_rows", "summary_rows", "worst_case_rows"]


def group_horizon(records: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> int:
    """The exchange budget ``T`` of a group: from its records, else its config stamp."""
    horizons = [int(r["T"]) for r in records if r.get("T") is not None]
    if horizons:
        return max(horizons)
    return int(config.get("T") or metrics.DEFAULT_T)


def group_tau_q(config: Mapping[str, Any]) -> float:
    """The rationality threshold of a group: from its config stamp, else the default."""
    value = config.get("tau_q")
    return float(value) if is_number(value) else metrics.TAU_Q


def summary_rows(
    run: Run, n_resamples: int = metrics.N_BOOTSTRAP, seed: int = 0
) -> list[dict[str, Any]]:
    """One :func:`metrics.summarize` row per (agent, env id) of a run.

    With the default arguments the numbers equal those ``evaluate`` wrote to ``summary.json``
    for the same records (same order, same bootstrap seed).

    Args:
        run: The run.
        n_resamples: Bootstrap resamples for the 95% CIs.
        seed: Bootstrap seed.

    Returns:
        Rows with ``agent`` and ``env_id`` plus the :func:`metrics.summarize` keys (``n`` is
        the number of non-errored episodes, ``n_errored`` the errored ones).
    """
    rows = []
    for (agent, env_id), records in run.groups().items():
        config = run.config(agent, env_id)
        stats = metrics.summarize(
            records,
            T=group_horizon(records, config),
            tau_q=group_tau_q(config),
            n_resamples=n_resamples,
            seed=seed,
        )
        rows.append({"agent": agent, "env_id": env_id, **stats})
    return rows


def paired_rows(
    run_1: Run, run_2: Run, n_resamples: int = metrics.N_BOOTSTRAP, seed: int = 0
) -> list[dict[str, Any]]:
    """Paired bootstrap differences run 2 − run 1 per (agent, env id) present in both runs.

    Episodes are matched on their ``seed`` (the first record per seed of each run); pairs where
    either side errored are left out (:func:`metrics.pair_records`). SR, AT and RCSR use the
    smaller ``T`` of the two runs, so both sides are judged on the same budget.

    Args:
        run_1: The baseline run.
        run_2: The run compared with it.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        Rows with ``agent``, ``env_id``, ``T``, ``tau_q``, ``n_pairs``, ``left_out`` (episodes
        of either run without a usable partner) and ``sr``, ``at``, ``rcsr`` as
        :class:`metrics.PairedDiff`; negotiation tasks (both runs' records carry ``sl``) also
        ``sl``.
    """
    groups_2 = run_2.groups()
    rows = []
    for (agent, env_id), records_1 in run_1.groups().items():
        records_2 = groups_2.get((agent, env_id))
        if records_2 is None:
            continue
        config = run_1.config(agent, env_id)
        horizon = min(
            group_horizon(records_1, config), group_horizon(records_2, run_2.config(agent, env_id))
        )
        tau_q = group_tau_q(config)
        # (run 2 record, run 1 record) pairs: the differences are run 2 − run 1.
        pairs = metrics.pair_records(_by_seed(records_2), _by_seed(records_1), key=("seed",))
        values: dict[str, tuple[list[float], list[float]]] = {}
        for name, per_episode in (
            ("sr", partial(metrics.success_within, t=horizon)),
            ("at", partial(metrics.turns_to_success, T=horizon)),
            ("rcsr", partial(metrics.rc_success_within, t=horizon, tau_q=tau_q)),
        ):
            values[name] = (
                [float(per_episode(new)) for new, _ in pairs],
                [float(per_episode(old)) for _, old in pairs],
            )
        if any(metrics.episode_sl(r) is not None for pair in pairs for r in pair):
            values["sl"] = (
                [metrics.episode_sl(new) or 0.0 for new, _ in pairs],
                [metrics.episode_sl(old) or 0.0 for _, old in pairs],
            )
        rows.append(
            {
                "agent": agent,
                "env_id": env_id,
                "T": horizon,
                "tau_q": tau_q,
                "n_pairs": len(pairs),
                "left_out": len(records_1) + len(records_2) - 2 * len(pairs),
                **{
                    name: metrics.paired_bootstrap_diff(
                        new, old, n_resamples=n_resamples, seed=seed
                    )
                    for name, (new, old) in values.items()
                },
            }
        )
    return rows


def _by_seed(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The first record per seed (records without a seed cannot be paired)."""
    first: dict[int, Mapping[str, Any]] = {}
    for record in records:
        if record.get("seed") is not None:
            first.setdefault(int(record["seed"]), record)
    return list(first.values())


def _task(env_id: str) -> str:
    """The task of an env id, as :meth:`EvalResult.worst_case` defines it (``P4G``)."""
    return env_id.split("-", 1)[0]


def worst_case_rows(run: Run) -> list[dict[str, Any]]:
    """Worst SR@T and RCSR@T over user types, per agent (:func:`metrics.worst_case`).

    Per agent, every task evaluated with two or more env ids gets a row (the worst over that
    task's users, as ``dialogue-gym eval`` prints it); an agent evaluated on several tasks also
    gets an ``all`` row, the worst over every env id it was evaluated on.

    Args:
        run: The run.

    Returns:
        Rows with ``agent``, ``users`` (the task, or ``"all"``), ``env_ids``, ``T`` and
        ``sr``/``rcsr`` as ``(worst env id, value)``; the value is ``nan`` when every group
        consists of errored episodes only. Negotiation tasks (records carrying ``sl``) also
        get ``sl``, the worst mean SL.
    """
    by_agent: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for (agent, env_id), records in run.groups().items():
        by_agent.setdefault(agent, {})[env_id] = records
    rows = []
    for agent, by_env in by_agent.items():
        sets: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for env_id, records in by_env.items():
            sets.setdefault(_task(env_id), {})[env_id] = records
        chosen = {task: envs for task, envs in sets.items() if len(envs) >= 2}
        if len(sets) >= 2:
            chosen["all"] = by_env
        for users, groups in chosen.items():
            horizon = max(
                group_horizon(records, run.config(agent, env_id))
                for env_id, records in groups.items()
            )
            config = run.config(agent, next(iter(groups)))
            row = {
                "agent": agent,
                "users": users,
                "env_ids": list(groups),
                "T": horizon,
                "sr": metrics.worst_case(groups, partial(metrics.success_rate, T=horizon)),
                "rcsr": metrics.worst_case(
                    groups, partial(metrics.rcsr, T=horizon, tau_q=group_tau_q(config))
                ),
            }
            sl_groups = {
                env_id: records
                for env_id, records in groups.items()
                if any(metrics.episode_sl(r) is not None for r in records)
            }
            if sl_groups:  # negotiation env ids only: SL is undefined elsewhere
                row["sl"] = metrics.worst_case(sl_groups, metrics.sale_to_list)
            rows.append(row)
    return rows
