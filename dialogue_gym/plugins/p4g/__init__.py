"""Persuasion for Good's plug-in (``envs/p4g.toml``: ``plugin = "dialogue_gym.plugins.p4g"``).

* :meth:`P4GPlugin.stance_reader`: :class:`~dialogue_gym.plugins.p4g.calibration.PersuadeeReader`
  from the shipped ``tables/p4g.json`` (Apache-2.0 data: the table ships).
* :meth:`P4GPlugin.persona_layers` / :meth:`P4GPlugin.persona_background`: a persuadee pinned
  to a real P4G participant takes its layers from their survey (see
  :mod:`dialogue_gym.users.corpus`): Big-Five traits, moral foundations, Schwartz values,
  decision style and demographics map onto concern strengths (e.g. low income →
  affordability, low care → detachment, a rational decision style → efficacy) and the
  speaking style (extraversion → chatty, neuroticism → skeptical …); the initial willingness
  is the person's donation propensity fitted on the train split's surveys and donations
  (:mod:`dialogue_gym.plugins.p4g.persona`), placed among the train persuadees' (quantile
  q) as ``0.1 + 0.35 q`` — the range the card's bank draws from.
* :meth:`P4GPlugin.profile_text`: the participant's demographics and survey scales for the
  BDI annotator (the donation left out).
* :meth:`P4GPlugin.real_outcome`: success = the persuadee's actual donation (``B6``) > 0;
  amount = the donation.

The package holds the task's code: the corpus loader (:mod:`~dialogue_gym.plugins.p4g.loader`),
the persuadee stance and persuader ask/appeal readers
(:mod:`~dialogue_gym.plugins.p4g.calibration`) and the donation propensity
(:mod:`~dialogue_gym.plugins.p4g.persona`), with their shipped tables in ``tables/``; importing
it registers their fitters (``p4g``, ``p4g-persona``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.task_plugin import TaskPlugin
from dialogue_gym.plugins._profile import number
from dialogue_gym.plugins.p4g import calibration as p4g_calibration
from dialogue_gym.plugins.p4g.persona import SURVEY_SCALES, donated, shipped_propensity
from dialogue_gym.types import DialogueRecord, Outcome, StanceReader
from dialogue_gym.users.persona import Persona

__all__ = ["PLUGIN", "P4GPlugin"]


def _trait(profile: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    """A numeric profile field scaled to [0, 1] (P4G columns carry a ``.x`` suffix)."""
    value = profile.get(f"{name}.x", profile.get(name))
    if not isinstance(value, (int, float)) or value != value:  # missing or NaN
        return None
    return min(1.0, max(0.0, (float(value) - low) / (high - low)))


def _p4g_layers(card: TaskCard, profile: Mapping[str, Any], base: Persona) -> dict[str, Any]:
    """Concerns, willingness, capacity and style of a P4G persuadee from their survey."""

    def t(name: str, low: float, high: float, default: float = 0.5) -> float:
        value = _trait(profile, name, low, high)
        return default if value is None else value

    income = t("income", 1, 11)
    strengths = {
        "affordability": 1.0 - income + (0.2 if profile.get("employment.x") == "Other" else 0.0),
        "trust": 1.0 - t("agreeable", 1, 5),
        "efficacy": 0.9 * t("rational", 1, 5) - 0.2 * t("intuitive", 1, 5) + 0.1,
        "other_causes": 0.8 * t("loyalty", 1, 6) + 0.2 * t("tradition", 1, 6) - 0.2,
        "pressure": 0.8 * t("freedom", 1, 6) + 0.3 * (1.0 - t("conform", 1, 6)) - 0.2,
        "information": 0.8 * (1.0 - t("open", 1, 5)) + 0.1,
        "detachment": 1.0 - 0.5 * (t("care", 1, 6) + t("universalism", 1, 6)),
        "procedure_time": 0.8 * t("conscientious", 1, 5) - 0.1,
    }
    known = {c.id for c in card.concerns}
    ranked = sorted(
        ((cid, round(min(1.0, max(0.0, s)), 3)) for cid, s in strengths.items() if cid in known),
        key=lambda pair: -pair[1],
    )
    concerns = tuple(pair for pair in ranked[:3] if pair[1] >= 0.35) or tuple(ranked[:1])
    # Where the survey answers nothing the fit reads, a hand-written warmth mix stands in.
    q = shipped_propensity().quantile(profile)
    if q is None:
        q = (t("care", 1, 6) + t("benevolence", 1, 6) + t("universalism", 1, 6)) / 3
    styles = {s.id for s in card.styles}
    traits = {
        "chatty": t("extrovert", 1, 5),
        "skeptical": t("neurotic", 1, 5),
        "warm": t("agreeable", 1, 5),
        "formal": t("conscientious", 1, 5),
    }
    style = max((s for s in traits if s in styles), key=traits.__getitem__, default=base.style)
    age = profile.get("age.x", profile.get("age"))
    return {
        "concerns": concerns,
        "initial_willingness": round(0.1 + 0.35 * q, 3),
        "capacity": round(0.25 + 1.75 * income, 2),
        "style": style,
        "age": int(age) if isinstance(age, (int, float)) and age == age else base.age,
    }


def _background(persona: Persona, profile: Mapping[str, Any]) -> str:
    # Sex is left out: the bank's first names carry no gender to agree with it.
    details = [
        str(profile[key])
        for key in ("edu.x", "employment.x", "marital.x", "ideology.x")
        if isinstance(profile.get(key), str) and profile[key]
    ]
    if not details:
        return persona.background
    return f"{persona.name} ({persona.age}): {', '.join(details).lower()}."


_P4G_DEMOGRAPHICS = (
    ("age", "age"),
    ("sex", "sex"),
    ("race", "race"),
    ("edu", "education"),
    ("marital", "marital status"),
    ("employment", "employment"),
    ("income", "income level"),
    ("religion", "religion"),
    ("ideology", "ideology"),
)


def _field(mapping: Mapping[str, Any], name: str) -> Any:
    value = mapping.get(f"{name}.x", mapping.get(name))
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def _p4g_profile(profile: Mapping[str, Any]) -> str:
    parts = []
    demographics = [
        f"{label} {number(value)}"
        for key, label in _P4G_DEMOGRAPHICS
        if (value := _field(profile, key)) not in (None, "")
    ]
    if demographics:
        parts.append("; ".join(demographics))
    for title, names in SURVEY_SCALES:
        scores = [
            f"{name.replace('_', ' ')} {number(value)}"
            for name in names
            if isinstance(value := _field(profile, name), (int, float))
        ]
        if scores:
            parts.append(f"{title}: {', '.join(scores)}")
    return ". ".join(parts) + "." if parts else ""


class P4GPlugin(TaskPlugin):
    """P4G's hooks (see the module docstring)."""

    validity_targets = MappingProxyType({"replay_auc": 0.60, "judge_auc": 0.65})
    """Issue 15's validity targets (:data:`dialogue_gym.validity.cells.TARGETS`)."""
    corpora = MappingProxyType({"p4g": "dialogue_gym.plugins.p4g.loader"})
    """The corpus loader (:mod:`dialogue_gym.plugins.p4g.loader`)."""
    ask_detectors = MappingProxyType({"p4g": p4g_calibration.shipped_ask_detector})
    """The shipped ask detector (the card's ``[corpus] ask_reader = "p4g"``)."""
    appeal_readers = MappingProxyType({"p4g": p4g_calibration.shipped_appeal_reader})
    """The shipped appeal reader (the card's ``[corpus] appeal_reader = "p4g"``)."""

    def stance_reader(
        self, train: Sequence[DialogueRecord] = (), table: str | Path | None = None
    ) -> StanceReader | None:
        """The shipped persuadee reader (``train`` and ``table`` are not needed)."""
        return p4g_calibration.shipped_reader()

    def persona_layers(self, card: TaskCard, seed: Any, base: Any) -> dict[str, Any]:
        """Concerns, willingness, capacity, style and age from a P4G persuadee's survey."""
        if seed.corpus == "p4g" and seed.profile:
            return _p4g_layers(card, seed.profile, base)
        return {}

    def persona_background(self, persona: Any, seed: Any) -> str | None:
        """Education, employment, marital status and ideology from the survey."""
        if seed.corpus == "p4g" and seed.profile:
            return _background(persona, seed.profile)
        return None

    def profile_text(self, dialogue: DialogueRecord) -> str | None:
        """Demographics and survey scales (``""`` for a dialogue without a survey)."""
        return _p4g_profile(dialogue.profile)

    def real_outcome(self, dialogue: DialogueRecord) -> Outcome | None:
        """Donated (and how much); ``None`` without a donation record."""
        gave = donated(dialogue.profile)  # the same rule the persona layer is fitted on
        return None if gave is None else Outcome(gave, float(dialogue.profile["donation"]))


PLUGIN = P4GPlugin()
