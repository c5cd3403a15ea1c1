"""The success judge's part of a task card: ``[judge.success]`` read into a spec."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dialogue_gym.cards import schema
from dialogue_gym.cards.schema import CardError

__all__ = ["STANCES", "SuccessJudgeSpec", "parse_success_judge"]

STANCES = ("refused", "neutral", "positive", "agree")
"""The simulator's stances, which ``decision_labels`` map onto a task's labels."""


@dataclasses.dataclass(frozen=True)
class SuccessJudgeSpec:
    """Label set, label→reward map, success rule and number of sampled judgments.

    Attributes:
        labels: Label → reward.
        threshold: Success when the mean reward reaches it (rule ``"mean"``); for the deal
            judges (``kind = "deal"``), the buyer-normalized utility a deal must reach.
        n: Number of sampled judgments (votes).
        question: The judge's question (for LLM judges and people).
        kind: Embedded judge implementation: ``"state"`` (reads the user's stance) or
            ``"deal"`` (negotiation: deal detection and price extraction).
        rule: ``"mean"`` (mean reward ≥ threshold) or ``"label"`` (the majority label must be
            ``success_label``; EmpatheticDialogues).
        success_label: The label required by rule ``"label"``.
        decision_labels: Maps the simulator's stances (refused / neutral / positive / agree)
            onto this task's labels (identity when the task uses the stances as labels).
        inclusive: Whether a value exactly *at* ``threshold`` passes (``value >= threshold``,
            the default and the papers' convention) or only one above it (``value >
            threshold``). Card field ``judge.success.inclusive`` (optional, default ``true``);
            the shipped CB card sets ``false``, so a deal at the listing price (utility 0) is
            not a success. Read through :meth:`passes`.
    """

    labels: Mapping[str, float]
    threshold: float
    n: int
    question: str
    kind: str = "state"
    rule: str = "mean"
    success_label: str | None = None
    decision_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    inclusive: bool = True

    def passes(self, value: float, eps: float = 1e-9) -> bool:
        """Whether ``value`` meets the threshold (``>=`` when inclusive, else ``>``)."""
        if self.inclusive:
            return value >= self.threshold - eps
        return value > self.threshold + eps


def parse_success_judge(judge: Mapping[str, Any]) -> SuccessJudgeSpec:
    """Reads the card's ``[judge.success]`` table (a bad value raises :class:`CardError`)."""
    where = "judge.success"
    label_table = schema.table(judge, "labels", where)
    if not label_table:
        raise CardError(f"{where}.labels: expected at least one label")
    bound = schema.MAX_LABEL_ABS
    labels = {
        str(k): schema.number(label_table, k, f"{where}.labels", -bound, bound) for k in label_table
    }
    kind = schema.text(judge, "kind", where, default="state", empty=False)
    rule = schema.choice(judge, "rule", where, ("mean", "label"), "mean")
    if kind == "state" and rule == "mean":
        low, high = min(labels.values()), max(labels.values())
    else:  # a deal judge's buyer-normalized utility, or a label rule that ignores it
        low, high = -bound, bound
    threshold = schema.number(judge, "threshold", where, low, high, default=0.5)
    success_label = schema.text(judge, "success_label", where) if "success_label" in judge else None
    if success_label is not None and success_label not in labels:
        raise CardError(
            f"{where}.success_label: {success_label!r} is not one of the labels {sorted(labels)}"
        )
    if rule == "label" and success_label is None:
        raise CardError(f"{where}.success_label: rule = 'label' needs a label from the labels")
    mapping_table = schema.table(judge, "decision_labels", where, default={})
    mapping = {
        str(k): schema.text(mapping_table, k, f"{where}.decision_labels") for k in mapping_table
    }
    if not mapping and set(labels) == set(STANCES):
        mapping = {s: s for s in STANCES}
    if mapping and set(mapping) != set(STANCES):
        raise CardError(
            f"{where}.decision_labels: must map exactly the stances {STANCES} onto labels, got "
            f"{sorted(mapping)}"
        )
    for stance, label in mapping.items():
        if label not in labels:
            raise CardError(
                f"{where}.decision_labels.{stance}: {label!r} is not one of the labels "
                f"{sorted(labels)}"
            )
    return SuccessJudgeSpec(
        labels=labels,
        threshold=threshold,
        n=schema.integer(judge, "n", where, 1, schema.MAX_JUDGE_N, default=3),
        question=schema.text(judge, "question", where, default=""),
        kind=kind,
        rule=rule,
        success_label=success_label,
        decision_labels=mapping,
        inclusive=schema.boolean(judge, "inclusive", where, default=True),
    )
