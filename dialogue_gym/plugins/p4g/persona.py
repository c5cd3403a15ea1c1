"""Persuasion for Good: who donates, from the persuadee's pre-dialogue survey.

A P4G persona pinned to a real persuadee (``make(..., data=PATH)``, ``dialogue-gym validate``)
takes its layers from that person's survey (:mod:`dialogue_gym.users.corpus`). Its concerns and
style come from hand-written trait mappings; its *starting willingness* comes from this fit,
because willingness is the one layer a real outcome can calibrate: the survey says something
about who gives (issue 15 measured the hand-written warmth mix at AUC 0.54 on held-out
donations), and the fit learns how much.

The rule, fixed before any held-out number was looked at:

- **inputs**: the 25 numeric survey fields of :data:`SURVEY_FIELDS` (Big Five, moral
  foundations, Schwartz values, decision style, age, income), standardized by their train
  means and standard deviations; a missing field counts as the train mean;
- **label**: donated, the persuadee's real donation (``B6``) > 0 — the validity benchmark's
  real outcome;
- **model**: L2-penalized logistic regression (penalty :data:`L2` on the standardized weights,
  the intercept free), fitted by Newton's method to convergence — deterministic, numpy only;
  weights rounded to :data:`DIGITS` decimals so a refit gives the same bytes;
- **scale**: the table also holds the quantiles of the fitted train propensities at
  :data:`LEVELS`; :meth:`DonorPropensity.quantile` places a person among the train donors'
  population (the probability integral transform ESConv's intensity uses), and the persona's
  willingness is ``0.1 + 0.35 q``: the range the card's bank already draws from.

Chosen on train data only: five folds of the FullData train split by id hash gave an
out-of-fold AUC of 0.66 for donated, alike at penalties 1, 10 and 100 (10 is kept). No other
input set or model was tried.

The table holds only aggregate numbers (means, scales, weights, quantiles). P4G is
Apache-2.0, so it ships (``tables/p4g-persona.json``); ``dialogue-gym data fit p4g-persona
--data PATH`` recomputes it from the FullData train split.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.calibration.fit import CalibrationError, register, shipped_table
from dialogue_gym.types import DialogueRecord

__all__ = [
    "DIGITS",
    "L2",
    "LEVELS",
    "SURVEY_FIELDS",
    "SURVEY_SCALES",
    "TABLE",
    "DonorPropensity",
    "donated",
    "fit_p4g_persona",
    "logistic_regression",
    "shipped_propensity",
    "standardized",
    "survey_vector",
]

TABLE = "p4g-persona"
"""The table's name (``tables/p4g-persona.json``)."""
SURVEY_SCALES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Big Five (1-5)", ("extrovert", "agreeable", "conscientious", "neurotic", "open")),
    ("moral foundations (1-6)", ("care", "fairness", "loyalty", "authority", "purity")),
    (
        "values (1-6)",
        (
            "freedom",
            "conform",
            "tradition",
            "benevolence",
            "universalism",
            "self_direction",
            "stimulation",
            "hedonism",
            "achievement",
            "power",
            "security",
        ),
    ),
    ("decision style (1-5)", ("rational", "intuitive")),
)
"""The numeric survey scales of a P4G persuadee's profile (its ``<name>.x`` columns), by group
(the annotator's profile rendering reads them too)."""
SURVEY_FIELDS = (*(name for _, names in SURVEY_SCALES for name in names), "age", "income")
"""The numeric survey fields read (the profile's ``<field>.x`` columns): every survey scale
(:data:`SURVEY_SCALES`), age and income."""
L2 = 10.0
LEVELS = tuple(round(i / 20, 2) for i in range(21))
"""The quantile levels of the train propensities the table records."""
DIGITS = 4
_NEWTON_STEPS = 25


def survey_vector(profile: Mapping[str, Any]) -> list[float]:
    """The survey fields of a P4G profile in :data:`SURVEY_FIELDS` order (NaN where missing)."""
    values = []
    for name in SURVEY_FIELDS:
        value = profile.get(f"{name}.x", profile.get(name))
        number = float(value) if isinstance(value, int | float) else math.nan
        values.append(number)
    return values


def donated(profile: Mapping[str, Any]) -> bool | None:
    """Whether the persuadee gave (donation > 0); ``None`` when the profile has no donation."""
    donation = profile.get("donation")
    if not isinstance(donation, int | float) or donation != donation:
        return None
    return donation > 0


def _logistic(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def standardized(x: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``(x - mean) / scale``, with 0 (the mean) where ``x`` is missing (NaN)."""
    return np.where(np.isnan(x), 0.0, (x - mean) / scale)


def logistic_regression(
    z: np.ndarray, y: np.ndarray, l2: float, steps: int = _NEWTON_STEPS
) -> np.ndarray:
    """L2 logistic regression of ``y`` on the columns of ``z`` by Newton's method.

    Returns the weights, the (unpenalized) intercept first.
    """
    design = np.column_stack([np.ones(len(z)), z])
    penalty = l2 * np.diag([0.0] + [1.0] * z.shape[1])
    w = np.zeros(design.shape[1])
    for _ in range(steps):
        p = _logistic(design @ w)
        gradient = design.T @ (p - y) + penalty @ w
        hessian = (design * (p * (1 - p))[:, None]).T @ design + penalty
        w -= np.linalg.solve(hessian, gradient)
    return w


@register(
    TABLE,
    corpus="p4g",
    version=1,
    description="persuadee donation propensity from the survey (starting willingness)",
)
def fit_p4g_persona(dialogues: Sequence[DialogueRecord]) -> dict[str, Any]:
    """Fits the donation propensity on the train persuadees' surveys (module docstring).

    Raises:
        CalibrationError: Fewer than 20 train persuadees with a survey and a donation, only
            one outcome among them, or a survey field no one answered.
    """
    rows, labels = [], []
    for dialogue in dialogues:
        label = donated(dialogue.profile)
        vector = survey_vector(dialogue.profile)
        if label is None or all(math.isnan(v) for v in vector):
            continue
        rows.append(vector)
        labels.append(float(label))
    if len(rows) < 20 or len(set(labels)) < 2:
        raise CalibrationError(
            f"p4g-persona: needs >= 20 train persuadees with a survey and both outcomes, got "
            f"{len(rows)} ({int(sum(labels))} donated); fit the FullData format"
        )
    x = np.asarray(rows, dtype=float)
    y = np.asarray(labels)
    answered = ~np.isnan(x)
    if not answered.any(axis=0).all():
        empty = [SURVEY_FIELDS[i] for i in np.flatnonzero(~answered.any(axis=0))]
        raise CalibrationError(f"p4g-persona: no train persuadee answered {empty}")
    mean = np.round(np.asarray(np.nanmean(x, axis=0)), DIGITS)
    scale = np.round(np.asarray(np.nanstd(x, axis=0)), DIGITS)
    scale[scale == 0] = 1.0
    z = standardized(x, mean, scale)
    weights = np.round(logistic_regression(z, y, L2), DIGITS)
    fitted = _logistic(weights[0] + z @ weights[1:])
    return {
        "rule": {
            "label": "donated: donation (B6) > 0",
            "inputs": "standardized survey fields, missing = train mean",
            "model": "L2 logistic regression, Newton",
        },
        "fields": list(SURVEY_FIELDS),
        "persuadees": {"n": len(rows), "donated": int(y.sum())},
        "fit": {"l2": L2},
        "mean": [float(v) for v in mean],
        "scale": [float(v) for v in scale],
        "bias": float(weights[0]),
        "weights": [float(v) for v in weights[1:]],
        "quantiles": {
            "levels": list(LEVELS),
            "propensity": [
                round(float(v), DIGITS) for v in np.quantile(fitted, np.asarray(LEVELS))
            ],
        },
    }


class DonorPropensity:
    """P(a persuadee donates | their survey), and where that places them among train donors.

    Args:
        table: A ``p4g-persona`` calibration table (:func:`fit_p4g_persona`'s, with provenance).

    Raises:
        CalibrationError: The table is malformed (fields, weights and scales of other lengths,
            or quantiles that are not increasing).
    """

    def __init__(self, table: Mapping[str, Any]) -> None:
        try:
            part = table["parameters"]
            self.fields = tuple(str(f) for f in part["fields"])
            self.mean = np.asarray(part["mean"], dtype=float)
            self.scale = np.asarray(part["scale"], dtype=float)
            self.bias = float(part["bias"])
            self.weights = np.asarray(part["weights"], dtype=float)
            self.levels = np.asarray(part["quantiles"]["levels"], dtype=float)
            self.cuts = np.asarray(part["quantiles"]["propensity"], dtype=float)
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"p4g-persona table: malformed ({exc})") from None
        if self.fields != SURVEY_FIELDS:
            raise CalibrationError(f"p4g-persona table: fields {self.fields} != {SURVEY_FIELDS}")
        sizes = {len(self.mean), len(self.scale), len(self.weights)}
        if sizes != {len(SURVEY_FIELDS)} or (self.scale <= 0).any():
            raise CalibrationError("p4g-persona table: one mean, scale > 0 and weight per field")
        paired = len(self.levels) == len(self.cuts) >= 2
        if not paired or np.any(np.diff(self.cuts) <= 0) or np.any(np.diff(self.levels) <= 0):
            raise CalibrationError(
                "p4g-persona table: quantiles must be paired and strictly increasing"
            )

    def probability(self, profile: Mapping[str, Any]) -> float | None:
        """P(donated | survey); ``None`` when the profile answers no survey field."""
        x = np.asarray(survey_vector(profile))
        if np.isnan(x).all():
            return None
        z = standardized(x, self.mean, self.scale)
        return float(_logistic(np.asarray(self.bias + z @ self.weights)))

    def quantile(self, profile: Mapping[str, Any]) -> float | None:
        """Where the person's propensity lies among the train persuadees' (0 … 1).

        Linear between the table's quantiles; ``None`` when the profile answers no field.
        """
        p = self.probability(profile)
        if p is None:
            return None
        return float(np.interp(p, self.cuts, self.levels, left=0.0, right=1.0))


@functools.cache
def shipped_propensity() -> DonorPropensity:
    """The propensity of the shipped ``tables/p4g-persona.json`` (read once)."""
    return DonorPropensity(shipped_table(TABLE))
