"""The validator's figures: each cell of the report, from the per-dialogue rows.

:func:`cells` turns the rows :func:`~dialogue_gym.validity.runner.validate_dialogues` collects
(one per real dialogue: the replay arms, the baselines, the full-transcript judgment and the
text-only reference) into named cells, each a statistic with its bootstrap 95 % interval and
n, its reference and, where issue 15 sets one, its target and whether it is met.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.cards.task_plugin import PluginTable, plugin_for_task
from dialogue_gym.validity.episodes import PERCEIVED
from dialogue_gym.validity.stats import Cell, auc, bootstrap_cell, mean, spearman

__all__ = ["SOFT_SR_TOLERANCE", "TARGETS", "cells"]

TARGETS: Mapping[str, Mapping[str, float]] = PluginTable(lambda plugin: plugin.validity_targets)
"""Issue 15's targets by task, each from its plug-in's
:attr:`~dialogue_gym.cards.task_plugin.TaskPlugin.validity_targets` (P4G, ESConv, CB): replay AUC
(CI above 0.5), replay ρ with the amount (CB utility), judge AUC on full transcripts. On soft
users human-replay SR should be within ±:data:`SOFT_SR_TOLERANCE` of the real success rate; on
every env above ``random`` (the paired CI above 0)."""
SOFT_SR_TOLERANCE = 0.15

_READ_AS = {"reason": "a reason", "pressure": "pressure", "off_topic": "off-topic"}


def _column(rows: Sequence[Mapping[str, Any]], path: str) -> list[Any]:
    values = []
    for row in rows:
        value: Any = row
        for key in path.split("."):
            value = value.get(key) if isinstance(value, Mapping) else None
        values.append(value)
    return values


def _num(values: Sequence[Any]) -> np.ndarray:
    return np.array([math.nan if v is None else float(v) for v in values])


def _cell(
    statistic: Callable[..., float],
    rows: Sequence[Mapping[str, Any]],
    x: str,
    y: str,
    n_resamples: int,
    seed: int,
) -> Cell:
    xs, ys = _num(_column(rows, x)), _num(_column(rows, y))
    keep = ~np.isnan(xs) & ~np.isnan(ys)
    return bootstrap_cell(statistic, xs[keep], ys[keep], n_resamples=n_resamples, seed=seed)


def _auc(scores: np.ndarray, real: np.ndarray) -> float:
    return auc(scores, real.astype(bool))


def _accuracy(predicted: np.ndarray, real: np.ndarray) -> float:
    return mean(predicted == real)


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    return mean(a - b)


def _first(x: np.ndarray, _y: np.ndarray) -> float:
    return mean(x)


def cells(
    task: str, env_id: str, rows: Sequence[Mapping[str, Any]], n_resamples: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Every reported figure with its reference and target (see the module docstring)."""
    targets = plugin_for_task(task).validity_targets
    soft = "soft" in env_id.lower().split("-")
    out: dict[str, dict[str, Any]] = {}

    def add(
        name: str,
        sim: Cell,
        reference: Cell | None = None,
        target: str | None = None,
        met: bool | None = None,
    ) -> None:
        out[name] = {
            "sim": sim.to_dict(),
            "reference": None if reference is None else reference.to_dict(),
            "target": target,
            "met": met,
        }

    def auc_target(cell: Cell, key: str) -> tuple[str | None, bool | None]:
        if key not in targets or math.isnan(cell.value):
            return (f">= {targets[key]:.2f}" if key in targets else None), None
        value = targets[key]
        low_ok = math.isnan(cell.low) or cell.low > 0.5
        return f">= {value:.2f}, CI > 0.5", bool(cell.value >= value and low_ok)

    # -- human replay: simulated signals → the real outcome -----------------------------------
    real = "real_success"
    for label, path in (
        ("sim success", "replay.success"),
        ("final s", "replay.s"),
        ("final willingness", "replay.willingness"),
    ):
        sim = _cell(_auc, rows, path, real, n_resamples, seed)
        if sim.n == 0:
            continue
        with_ref = [r for r in rows if _column([r], path)[0] is not None]
        reference = _cell(_auc, with_ref, "reference_replay", real, n_resamples, seed)
        target, met = auc_target(sim, "replay_auc")
        add(f"replay AUC: {label} -> real success", sim, reference, target, met)
    # What the replayed turns' acts alone predict (validity/acts.py): what a user reacting to
    # what the system does can draw from them; the text reference also reads the real user's
    # reactions in the system's words.
    acts = [r for r in rows if r.get("reference_acts") is not None]
    if acts:
        nothing = Cell(math.nan, math.nan, math.nan, 0)
        acts_auc = _cell(_auc, acts, "reference_acts", real, n_resamples, seed)
        add("act-only reference: replayed turns' acts -> real success", nothing, acts_auc)
    # Who the user is, before the dynamics: no target (the targets are on what the replay
    # produced), but it tells a persona layer's share of a replay cell from the dynamics'.
    start = _cell(_auc, rows, "replay.start_willingness", real, n_resamples, seed)
    if start.n:
        add("persona AUC: starting willingness -> real success", start)
    # ... and what the replayed turns did to it: final s is progress relative to the user's own
    # start (MASP's s), so it carries only this part, never who the user is.
    change = _cell(_auc, rows, "replay.willingness_change", real, n_resamples, seed)
    if change.n:
        add("dynamics AUC: willingness change -> real success", change)
    for label, path in (("final s", "replay.s"), ("sim success", "replay.success")):
        sim = _cell(spearman, rows, path, "real_amount", n_resamples, seed)
        if sim.n == 0:
            continue
        with_ref = [r for r in rows if r.get("real_amount") is not None]
        reference = _cell(spearman, with_ref, "reference_replay", "real_amount", n_resamples, seed)
        target = met = None
        if "replay_rho" in targets and not math.isnan(sim.value):
            target, met = (
                f">= {targets['replay_rho']:.2f}",
                bool(sim.value >= targets["replay_rho"]),
            )
        add(f"replay rho: {label} ~ real amount", sim, reference, target, met)
    sim = _cell(spearman, rows, "replay.utility", "real_amount", n_resamples, seed)
    if sim.n >= 3:
        add("replay rho: sim deal utility ~ real utility", sim)

    # -- success rates on the same pinned users -------------------------------------------------
    real_rate = _cell(_first, rows, real, real, n_resamples, seed)
    human = _cell(_first, rows, "replay.success", "replay.success", n_resamples, seed)
    target = met = None
    if soft:
        target = f"within {SOFT_SR_TOLERANCE:.2f} of real {real_rate.value:.2f}"
        met = bool(abs(human.value - real_rate.value) <= SOFT_SR_TOLERANCE + 1e-9)
    add("SR@T real people (the data)", real_rate)
    add("SR@T human replay", human, None, target, met)
    for name in rows[0]["baselines"]:
        path = f"baselines.{name}.success"
        add(f"SR@T {name}", _cell(_first, rows, path, path, n_resamples, seed))
        diff = _cell(_difference, rows, "replay.success", path, n_resamples, seed)
        if name == "random":
            above = diff.value > 0 and (math.isnan(diff.low) or diff.low > 0)
            add("SR@T human replay - random", diff, None, "> 0, CI > 0", bool(above))
        else:
            add(f"SR@T human replay - {name}", diff)
        if "open_loop" in rows[0]:
            path = f"open_loop.{name}.success"
            add(f"SR@T {name}, open loop", _cell(_first, rows, path, path, n_resamples, seed))
            diff = _cell(_difference, rows, "replay.success", path, n_resamples, seed)
            add(f"SR@T human replay - {name} open loop", diff)

    # -- the labelled arm: the same replay reading the corpus's strategy labels (no targets) ----
    labelled = [r for r in rows if "replay_labelled" in r]
    if labelled:
        arm = "replay_labelled"
        add(
            "replay AUC: final s -> real success, corpus labels read",
            _cell(_auc, labelled, f"{arm}.s", real, n_resamples, seed),
        )
        sr = _cell(_first, labelled, f"{arm}.success", f"{arm}.success", n_resamples, seed)
        add("SR@T human replay, corpus labels read", sr)
        diff = _cell(_difference, labelled, f"{arm}.success", "replay.success", n_resamples, seed)
        add("SR@T human replay, corpus labels read - without", diff)

    # -- what the user read in each arm's turns: why its SR is what it is (no targets) --------
    arms = [("human replay", "replay"), *((n, f"baselines.{n}") for n in rows[0]["baselines"])]
    if labelled:
        arms.insert(1, ("human replay, corpus labels read", "replay_labelled"))
    for kind in PERCEIVED:
        for label, path in arms:
            column = f"{path}.perceived.{kind}"
            share = _cell(_first, rows, column, column, n_resamples, seed)
            if share.n:
                add(f"exchanges read as {_READ_AS[kind]}: {label}", share)

    # -- judges on full real transcripts --------------------------------------------------------
    if "full" in rows[0]:
        with_ref = [r for r in rows if r.get("reference_user") is not None]
        ref_auc = _cell(_auc, with_ref, "reference_user", real, n_resamples, seed)
        agreement = _cell(_accuracy, rows, "full.success", real, n_resamples, seed)
        add("judge on real transcripts: agreement (accuracy)", agreement)
        for label, path in (("judged success", "full.success"), ("best score", "full.max_score")):
            sim = _cell(_auc, rows, path, real, n_resamples, seed)
            target, met = auc_target(sim, "judge_auc")
            add(
                f"judge on real transcripts: AUC {label} -> real success", sim, ref_auc, target, met
            )
        sim = _cell(spearman, rows, "full.utility", "real_amount", n_resamples, seed)
        if sim.n >= 3:
            add("judge on real transcripts: rho judged utility ~ real utility", sim)
    return out
